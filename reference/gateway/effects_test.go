package gateway_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// An effect is what one bug switch changes, observed on a fresh env: what
// the observation reads with the switch off and with it on. Each effect is
// also a scenario of the catch table (its observation must read off), so
// TestScenariosCatchBugs holds every switch to it as well.
type effect struct {
	bug     string
	name    string
	observe func(e *env) string
	off, on string
}

var effects = []effect{
	{
		bug:  bugs.NoIdempotency,
		name: "retries replay and unkeyed calls are refused where a key is required; refusals that need no key stay",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			var lines []string
			for _, r := range []struct {
				what string
				req  req
			}{
				{"keyed", req{key: key}},
				{"keyed retry", req{key: key}},
				{"unkeyed", req{args: `{"text":"u"}`}},
				{"unkeyed retry", req{args: `{"text":"u"}`}},
				{"unkeyed read-only", req{tool: e.read}},
				{"unkeyed approval-gated", req{tool: e.approve}},
				{"unknown tool", req{tool: "no.such.tool", key: "k-" + uuid.NewString()}},
				{"bad arguments", req{args: `[1]`, key: "k-" + uuid.NewString()}},
				{"no caller", req{caller: &gateway.Caller{}, key: "k-" + uuid.NewString()}},
			} {
				lines = append(lines, r.what+": "+answer(e.call(r.req)))
			}
			poor := e.newCaller(e.newWallet(price - 1))
			lines = append(lines, "keyed, too little balance: "+answer(e.call(req{caller: &poor, key: "k-" + uuid.NewString()})))
			l := e.ledger()
			return strings.Join(append(lines, fmt.Sprintf("runs of the write tool %d, debits %d", e.disp.count(e.write), l.debits)), "\n")
		},
		off: strings.Join([]string{
			"keyed: ran", "keyed retry: replayed", "unkeyed: ran", "unkeyed retry: replayed",
			"unkeyed read-only: " + gateway.ReasonKeyRequired, "unkeyed approval-gated: " + gateway.ReasonKeyRequired,
			"unknown tool: " + gateway.ReasonUnknownTool, "bad arguments: " + gateway.ReasonInvalidArguments,
			"no caller: " + gateway.ReasonUnauthenticated, "keyed, too little balance: " + gateway.ReasonInsufficient,
			"runs of the write tool 2, debits 2"}, "\n"),
		on: strings.Join([]string{
			"keyed: ran", "keyed retry: ran", "unkeyed: ran", "unkeyed retry: ran",
			"unkeyed read-only: ran", "unkeyed approval-gated: ran",
			"unknown tool: " + gateway.ReasonUnknownTool, "bad arguments: " + gateway.ReasonInvalidArguments,
			"no caller: " + gateway.ReasonUnauthenticated, "keyed, too little balance: " + gateway.ReasonInsufficient,
			"runs of the write tool 4, debits 6"}, "\n"),
	},
	{
		bug:  bugs.KeyScopeTool,
		name: "the same client key and arguments on another tool is another operation",
		observe: func(e *env) string {
			other := e.write + ".other"
			e.must(e.st.PutTool(e.ctx, store.Tool{Name: other, Price: price}))
			return sameKeyTwice(e, req{}, req{tool: other}, other)
		},
		off: "second caller: ran, own receipt; runs 1 and 1; debits 2",
		on:  "second caller: replayed, first caller's receipt; runs 1 and 0; debits 1",
	},
	{
		bug:  bugs.KeyScopeAPIKey,
		name: "the same client key and arguments from another API key of the wallet is another operation",
		observe: func(e *env) string {
			other := e.newCaller(e.wallet)
			return sameKeyTwice(e, req{}, req{caller: &other}, e.write)
		},
		off: "second caller: ran, own receipt; runs 2 and 2; debits 2",
		on:  "second caller: replayed, first caller's receipt; runs 1 and 1; debits 1",
	},
	{
		bug:  bugs.KeyScopeWallet,
		name: "the same client key and arguments from another wallet is another operation",
		observe: func(e *env) string {
			other := e.newCaller(e.newWallet(startFunds))
			out := sameKeyTwice(e, req{}, req{caller: &other}, e.write)
			entries, err := e.st.Ledger(e.ctx, other.WalletID)
			e.must(err)
			return fmt.Sprintf("%s; other wallet's ledger entries %d", out, len(entries))
		},
		off: "second caller: ran, own receipt; runs 2 and 2; debits 1; other wallet's ledger entries 1",
		on:  "second caller: replayed, first caller's receipt; runs 1 and 1; debits 1; other wallet's ledger entries 0",
	},
	{
		bug:  bugs.CancelForgets,
		name: "a call whose client cancels while the tool runs is stored and charged once; a same-key retry replays it",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			o := e.cancelledWhileRunning(key)
			first := answer(o.resp, o.err)
			resp, err := e.call(req{key: key})
			retry := answer(resp, err)
			if err == nil && o.err == nil {
				a, _, aerr := receiptOf(o.resp)
				b, _, berr := receiptOf(resp)
				e.must(errors.Join(aerr, berr))
				if a.ID == b.ID {
					retry += ", the cancelled call's receipt"
				} else {
					retry += ", a new receipt"
				}
			}
			n, err := e.dispatches(e.write)
			e.must(err)
			l := e.ledger()
			return fmt.Sprintf("cancelled call: %s; retry: %s; runs %d; debits %d, refunds %d, balance %d",
				first, retry, n, l.debits, l.refunds, l.balance)
		},
		off: "cancelled call: ran; retry: replayed, the cancelled call's receipt; runs 1; debits 1, refunds 0, balance 97",
		on:  "cancelled call: internal; retry: ran; runs 2; debits 2, refunds 1, balance 97",
	},
	{
		bug:  bugs.DoublePrice,
		name: "a call is debited the tool's price, and its receipt says so",
		observe: func(e *env) string {
			rc, err := ok(run(e.call(req{key: "k-" + uuid.NewString()})))
			e.must(err)
			l := e.ledger()
			return fmt.Sprintf("debits %d of %d credits; receipt charged %d", l.debits, l.debited, rc.Charged)
		},
		off: "debits 1 of 3 credits; receipt charged 3",
		on:  "debits 1 of 6 credits; receipt charged 6",
	},
	{
		bug:  bugs.RefusalFee,
		name: "a call refused for too little balance writes no ledger entry",
		observe: func(e *env) string {
			poor := e.newCaller(e.newWallet(price - 1))
			got := answer(e.call(req{caller: &poor, key: "k-" + uuid.NewString()}))
			entries, err := e.st.Ledger(e.ctx, poor.WalletID)
			e.must(err)
			var rows []string
			for _, en := range entries {
				if en.Kind != store.EntryCredit {
					rows = append(rows, fmt.Sprintf("%s %d", en.Kind, en.Amount))
				}
			}
			w, err := e.st.Wallet(e.ctx, poor.WalletID)
			e.must(err)
			return fmt.Sprintf("%s; entries %v; balance %d", got, rows, w.Balance)
		},
		off: gateway.ReasonInsufficient + "; entries []; balance 2",
		on:  gateway.ReasonInsufficient + "; entries [fee 5]; balance -3",
	},
	{
		bug:  bugs.FreshReceiptOnReplay,
		name: "a replay carries the receipt of the operation it replays",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			a, err := ok(run(e.call(req{key: key})))
			e.must(err)
			resp, err := e.call(req{key: key})
			b, _, rerr := receiptOf(resp)
			e.must(errors.Join(err, rerr))
			whose := "the first receipt"
			if b.ID != a.ID {
				whose = "a fresh receipt"
			}
			return fmt.Sprintf("replay: %s, %s; debits %d", answer(resp, err), whose, e.ledger().debits)
		},
		off: "replay: replayed, the first receipt; debits 1",
		on:  "replay: replayed, a fresh receipt; debits 1",
	},
	{
		bug:  bugs.KeyReuseReplays,
		name: "a client key reused with other arguments is refused, not answered with the first arguments' result",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			_, err := ok(run(e.call(req{key: key, args: `{"text":"one"}`})))
			e.must(err)
			got := answer(e.call(req{key: key, args: `{"text":"two"}`}))
			return fmt.Sprintf("other arguments: %s; runs %d; debits %d", got, e.disp.count(e.write), e.ledger().debits)
		},
		off: "other arguments: " + gateway.ReasonKeyReused + "; runs 1; debits 1",
		on:  "other arguments: replayed; runs 1; debits 1",
	},
	{
		bug:  bugs.LateDebit,
		name: "a call is debited once, also well after its answer",
		observe: func(e *env) string {
			_, err := ok(run(e.call(req{key: "k-" + uuid.NewString()})))
			e.must(err)
			e.g.WaitLateForTest()
			l := e.ledger()
			return fmt.Sprintf("debits %d; balance %d", l.debits, l.balance)
		},
		off: "debits 1; balance 97",
		on:  "debits 2; balance 94",
	},
	{
		bug:  bugs.ReplayRevalidates,
		name: "a replay runs nothing, also well after its answer",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			_, err := ok(run(e.call(req{key: key})))
			e.must(err)
			retry := answer(e.call(req{key: key}))
			e.g.WaitLateForTest()
			return fmt.Sprintf("retry: %s; runs %d; debits %d", retry, e.disp.count(e.write), e.ledger().debits)
		},
		off: "retry: replayed; runs 1; debits 1",
		on:  "retry: replayed; runs 2; debits 1",
	},
	{
		bug:  bugs.ReplayUnmarkedUndelivered,
		name: "the retry of a call whose response failed after the tool ran is marked a replay",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			e.arm(faults.DispatchAfter, faults.Fail, e.write)
			first := answer(e.call(req{key: key}))
			retry := answer(e.call(req{key: key}))
			again := answer(e.call(req{key: key}))
			return fmt.Sprintf("first: %s; retry: %s; again: %s; runs %d; debits %d", first, retry, again, e.disp.count(e.write), e.ledger().debits)
		},
		off: "first: " + gateway.ReasonResponseFailed + "; retry: replayed; again: replayed; runs 1; debits 1",
		on:  "first: " + gateway.ReasonResponseFailed + "; retry: ran; again: replayed; runs 1; debits 1",
	},
	{
		bug:  bugs.RemovedToolRuns,
		name: "a removed tool starts no work: a refunded call's retry and a new key are refused",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			e.arm(faults.DispatchBefore, faults.Fail, e.write)
			first := answer(e.call(req{key: key}))
			e.must(e.st.RemoveTool(e.ctx, e.write))
			retry := answer(e.call(req{key: key}))
			fresh := answer(e.call(req{key: "k-" + uuid.NewString()}))
			l := e.ledger()
			return fmt.Sprintf("first: %s; retry: %s; new key: %s; runs %d; debits %d, refunds %d",
				first, retry, fresh, e.disp.count(e.write), l.debits, l.refunds)
		},
		off: "first: " + gateway.ReasonDispatchFailed + "; retry: " + gateway.ReasonUnknownTool + "; new key: " + gateway.ReasonUnknownTool + "; runs 0; debits 1, refunds 1",
		on:  "first: " + gateway.ReasonDispatchFailed + "; retry: ran; new key: ran; runs 2; debits 3, refunds 1",
	},
	{
		bug:  bugs.KeyScopeBilling,
		name: "a caller of another wallet reusing a client key pays for its own operation",
		observe: func(e *env) string {
			key := "k-" + uuid.NewString()
			_, err := ok(run(e.call(req{key: key})))
			e.must(err)
			other := e.newWallet(startFunds)
			c := e.newCaller(other)
			got := answer(e.call(req{caller: &c, key: key}))
			theirs, err := e.st.Wallet(e.ctx, other)
			e.must(err)
			return fmt.Sprintf("other wallet's call: %s; first wallet's debits %d; other wallet's balance %d", got, e.ledger().debits, theirs.Balance)
		},
		off: "other wallet's call: ran; first wallet's debits 1; other wallet's balance 97",
		on:  "other wallet's call: ran; first wallet's debits 2; other wallet's balance 100",
	},
	{
		bug:  bugs.ForeignContent,
		name: "every call that runs is answered with its own run's content",
		observe: func(e *env) string {
			var foreign []int
			for i := 1; i <= 14; i++ {
				resp, err := e.call(req{key: "k-" + uuid.NewString(), args: fmt.Sprintf(`{"n":%d}`, i)})
				e.must(err)
				_, res, err := receiptOf(resp)
				e.must(err)
				if !strings.Contains(string(res.StructuredContent), fmt.Sprintf(`"args":{"n":%d}`, i)) {
					foreign = append(foreign, i)
				}
			}
			return fmt.Sprintf("runs %d; debits %d; calls answered with another's content %v", e.disp.count(e.write), e.ledger().debits, foreign)
		},
		off: "runs 14; debits 14; calls answered with another's content []",
		on:  "runs 14; debits 14; calls answered with another's content [14]",
	},
}

func init() {
	for _, ef := range effects {
		scenarios = append(scenarios, scenario{name: ef.name, catches: []string{ef.bug}, run: func(e *env) error {
			return want(ef.name, ef.observe(e), ef.off)
		}})
	}
}

// answer sums up a call's outcome: ran, replayed, or the refusal's reason.
func answer(resp gateway.CallResponse, err error) string {
	if err != nil {
		return reason(err)
	}
	rc, _, rerr := receiptOf(resp)
	switch {
	case rerr != nil:
		return rerr.Error()
	case rc.Replayed:
		return "replayed"
	}
	return "ran"
}

// sameKeyTwice makes first, then second, with one client key and the same
// arguments, and says what second got: its answer, whose receipt, the runs
// of first's tool and of secondTool, and the env wallet's debits.
func sameKeyTwice(e *env, first, second req, secondTool string) string {
	key := "k-" + uuid.NewString()
	first.key, second.key = key, key
	a, err := ok(run(e.call(first)))
	e.must(err)
	resp, err := e.call(second)
	got := answer(resp, err)
	whose := "own receipt"
	if err == nil {
		b, _, rerr := receiptOf(resp)
		e.must(rerr)
		if b.ID == a.ID {
			whose = "first caller's receipt"
		}
	}
	return fmt.Sprintf("second caller: %s, %s; runs %d and %d; debits %d", got, whose,
		e.disp.count(e.write), e.disp.count(secondTool), e.ledger().debits)
}

// TestBugEffects shows each switch's own effect: the observation reads one
// way with the switch off and the other with it on.
func TestBugEffects(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			b.check(t)
			for _, ef := range effects {
				for _, c := range []struct {
					state string
					on    []string
					want  string
				}{{"off", nil, ef.off}, {"on", []string{ef.bug}, ef.on}} {
					t.Run(ef.bug+"/"+c.state, func(t *testing.T) {
						t.Parallel()
						var got string
						err := runScenario(t, b, func(e *env) error { got = ef.observe(e); return nil }, c.on...)
						if err != nil {
							t.Fatal(err)
						}
						if got != c.want {
							t.Fatalf("with %s %s:\n%s\nwant:\n%s", ef.bug, c.state, got, c.want)
						}
					})
				}
			}
		})
	}
}
