package soak

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// cleanHistory is a small run a correct gateway could have produced: a
// keyed call retried, unkeyed twins where one waited in progress, a
// gateway drop, a client drop, a planned pre-dispatch failure refunded and
// run once by its retry on another process, and an unplanned one on a
// shared wallet refunded on a receipt no client saw (a call the client had
// left).
func cleanHistory() History {
	res := func(proc int, tok, rcpt string) Attempt {
		return Attempt{Proc: proc, Kind: KindResult, Token: tok, Receipt: rcpt, Result: judge.CallValue{ResultType: "complete", Digest: "d-" + rcpt}}
	}
	return timed(History{
		Tool: "probe.write.soak", Price: 3, WindowSeconds: 120, GatewayDispatches: 5,
		Ops: []Op{
			{Index: 0, Token: "t0", Key: "k0", Wallet: "w1", Shape: ShapePlain,
				Attempts: []Attempt{res(0, "t0", "r0"), res(2, "t0", "r0")}},
			{Index: 1, Token: "t1", Wallet: "w1", Shape: ShapeTwins, Attempts: []Attempt{
				res(1, "t1", "r1"), {Proc: 3, Kind: KindInProgress, Reason: "idempotency_in_progress", Retryable: true}, res(0, "t1", "r1")}},
			{Index: 2, Token: "t2", Wallet: "w2", Shape: ShapeGatewayDrop, Attempts: []Attempt{
				{Proc: 1, Kind: KindTransport, Detail: "EOF"}, res(1, "t2", "r2")}},
			{Index: 3, Token: "t3", Key: "k3", Wallet: "w1", Shape: ShapeClientDrop, Attempts: []Attempt{
				{Proc: 2, Kind: KindAbandoned}, res(3, "t3", "r3")}},
			{Index: 4, Token: "t4", Wallet: "w3", Shape: ShapeFailBefore, Attempts: []Attempt{
				failedBefore(2), res(0, "t4", "r4"), res(1, "t4", "r4")}},
		},
		Probe: map[string]int{"t0": 1, "t1": 1, "t2": 1, "t3": 1, "t4": 1},
		Wallets: []Wallet{
			{ID: "w1", Balance: 100 - 9, Ledger: []judge.LedgerEntry{
				{ID: "c", Kind: "credit", Amount: 100},
				{ID: "d0", Kind: "debit", Amount: 3, Receipt: "r0"},
				{ID: "d1", Kind: "debit", Amount: 3, Receipt: "r1"},
				{ID: "dx", Kind: "debit", Amount: 3, Receipt: "r-refunded"},
				{ID: "fx", Kind: "refund", Amount: 3, Receipt: "r-refunded"},
				{ID: "d3", Kind: "debit", Amount: 3, Receipt: "r3"},
			}},
			{ID: "w2", Balance: 30 - 3, Ledger: []judge.LedgerEntry{
				{ID: "c2", Kind: "credit", Amount: 30},
				{ID: "d2", Kind: "debit", Amount: 3, Receipt: "r2"},
			}},
			{ID: "w3", Balance: 30 - 3, Ledger: []judge.LedgerEntry{
				{ID: "c3", Kind: "credit", Amount: 30},
				{ID: "d4x", Kind: "debit", Amount: 3, Receipt: "r4-failed"},
				{ID: "f4x", Kind: "refund", Amount: 3, Receipt: "r4-failed"},
				{ID: "d4", Kind: "debit", Amount: 3, Receipt: "r4"},
			}},
		},
	})
}

// timed gives the calls their times: one after another, 10 ms apart and
// answered in 5, but a twin pair's two calls sent together.
func timed(h History) History {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for i := range h.Ops {
		o := &h.Ops[i]
		for j := range o.Attempts {
			a := &o.Attempts[j]
			if !(o.Shape == ShapeTwins && j == 1) {
				at = at.Add(10 * time.Millisecond)
			}
			a.Start, a.End = at, at.Add(5*time.Millisecond)
			if o.Shape == ShapeTwins && j == 1 {
				a.End = at.Add(7 * time.Millisecond)
			}
		}
	}
	return h
}

// failedBefore is the answer to a call failed before dispatch and refunded.
func failedBefore(proc int) Attempt {
	return Attempt{Proc: proc, Kind: KindError, Reason: reasonDispatchFailed, Retryable: true,
		Detail: "http 200, code -32007: the call failed before the tool ran and was refunded: retry"}
}

// dropEntry removes ledger entry id from wallet w, and its amount from the
// balance as a gateway that never wrote it would have.
func dropEntry(h *History, w int, id string) {
	wl := &h.Wallets[w]
	i := slices.IndexFunc(wl.Ledger, func(e judge.LedgerEntry) bool { return e.ID == id })
	switch e := wl.Ledger[i]; e.Kind {
	case "refund":
		wl.Balance -= e.Amount
	case "debit":
		wl.Balance += e.Amount
	}
	wl.Ledger = slices.Delete(wl.Ledger, i, i+1)
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name string
		bug  func(h *History)
		want []string // the model's kinds of check that must fail, and no other
	}{
		{"clean", func(*History) {}, nil},
		{"double dispatch", func(h *History) {
			h.Probe["t1"] = 2
		}, []string{"dispatches"}},
		{"double debit on one receipt", func(h *History) {
			w := &h.Wallets[0]
			w.Ledger = append(w.Ledger, judge.LedgerEntry{ID: "d0b", Kind: "debit", Amount: 3, Receipt: "r0"})
			w.Balance -= 3 // the wallet adds up: only the operation is charged twice
		}, []string{"ledger"}},
		{"receipt mismatch", func(h *History) {
			h.Ops[0].Attempts[1].Receipt = "r0-other"
		}, []string{"answer"}},
		{"balance does not add up", func(h *History) {
			h.Wallets[1].Balance++
		}, []string{"ledger"}},
		{"debit without an operation", func(h *History) {
			w := &h.Wallets[1]
			w.Ledger = append(w.Ledger, judge.LedgerEntry{ID: "dz", Kind: "debit", Amount: 3, Receipt: "r-nobody"})
			w.Balance -= 3
		}, []string{"ledger"}},
		{"debit booked on another wallet", func(h *History) {
			h.Wallets[1].Ledger[1].Receipt = "r0"
		}, []string{"ledger"}},
		{"debit of another amount", func(h *History) {
			h.Wallets[1].Ledger[1].Amount = 4
			h.Wallets[1].Balance--
		}, []string{"ledger"}},
		{"refund missing on a shared wallet", func(h *History) {
			dropEntry(h, 0, "fx")
		}, []string{"ledger"}},
		// The planned failure's debit kept (refund-missing): the retry is
		// charged again, so the operation paid twice although its one
		// result carries one receipt with one debit.
		{"planned failure: refund missing", func(h *History) {
			dropEntry(h, 2, "f4x")
		}, []string{"ledger"}},
		{"planned failure: refunded twice", func(h *History) {
			w := &h.Wallets[2]
			w.Ledger = append(w.Ledger, judge.LedgerEntry{ID: "f4y", Kind: "refund", Amount: 3, Receipt: "r4-failed"})
			w.Balance += 3
		}, []string{"ledger"}},
		{"planned failure: refunded on the retry's receipt", func(h *History) {
			h.Wallets[2].Ledger[2].Receipt = "r4"
		}, []string{"ledger"}},
		// The failure answered but the tool ran anyway, and so did the retry.
		{"planned failure: dispatched by the failed call too", func(h *History) {
			h.Probe["t4"] = 2
		}, []string{"dispatches"}},
		// Nothing charged before the failure: nothing to give back.
		{"planned failure: failed before its debit", func(h *History) {
			dropEntry(h, 2, "f4x")
			dropEntry(h, 2, "d4x")
		}, nil},
		{"dispatch_failed where none was planned", func(h *History) {
			o := &h.Ops[0]
			o.Attempts = append([]Attempt{failedBefore(1)}, o.Attempts...)
			*h = timed(*h)
		}, []string{"answer"}},
		{"dispatch_failed again on the planned failure's retry", func(h *History) {
			o := &h.Ops[4]
			o.Attempts = slices.Insert(o.Attempts, 1, failedBefore(3))
			*h = timed(*h)
		}, []string{"answer"}},
		{"planned failure answered otherwise", func(h *History) {
			h.Ops[4].Attempts[0].Reason = "internal_error"
		}, []string{"answer"}},
		{"another operation's result", func(h *History) {
			h.Ops[2].Attempts[1].Token = "t0"
		}, []string{"answer"}},
		{"internal error answer", func(h *History) {
			o := &h.Ops[0]
			o.Attempts = append(o.Attempts, Attempt{Proc: 1, Kind: KindError, Reason: "internal_error", Status: 200})
			*h = timed(*h)
		}, []string{"answer"}},
		{"an HTTP 500", func(h *History) {
			o := &h.Ops[0]
			o.Attempts = append(o.Attempts, Attempt{Proc: 1, Kind: KindError, Reason: "", Status: 500, Detail: "http 500"})
			*h = timed(*h)
		}, []string{"answer"}},
		// What the contract allows, the model does: a tool's error result is
		// a result, and a connection broken before an answer decides nothing.
		{"tool error result", func(h *History) {
			h.Ops[3].Attempts[1].IsError = true
		}, nil},
		{"broken connection without a planned drop", func(h *History) {
			h.Ops[2].Shape = ShapePlain
		}, nil},
		{"never decided, dispatched twice", func(h *History) {
			o := &h.Ops[3]
			o.Attempts = o.Attempts[:1]
			h.Probe["t3"] = 2
			dropEntry(h, 0, "d3") // r3 was never charged
		}, []string{"decided", "dispatches"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := cleanHistory()
			c.bug(&h)
			vs := Judge(h)
			var got []string
			for _, v := range vs {
				if !slices.Contains(got, v.Check) {
					got = append(got, v.Check)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Errorf("checks failed: %v, want %v; violations:\n%s", got, want, list(vs))
			}
			for _, v := range vs {
				if v.Expected == "" || v.Actual == "" || v.Harm == "" {
					t.Errorf("violation without expected, actual and harm: %+v", v)
				}
			}
		})
	}
}

// The violation names the operation, what the model expected and what it
// saw, and the harm.
func TestViolationNamesWhatBroke(t *testing.T) {
	h := cleanHistory()
	h.Probe["t1"] = 2
	vs := Judge(h)
	if len(vs) != 1 {
		t.Fatalf("violations: %s", list(vs))
	}
	if v := vs[0]; v.Check != "dispatches" || v.Harm != string(judge.HarmDoubleDispatch) || v.Op != "t1" || !strings.Contains(v.String(), "dispatched 2 time") {
		t.Errorf("violation %+v reads %q", v, v.String())
	}
}

func list(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}
