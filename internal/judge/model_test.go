package judge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// hist builds a history event by event, each a millisecond after the last
// unless a call runs in the background.
type hist struct {
	ops []Op
	now time.Time
}

func newHist(f Facts) *hist {
	h := &hist{now: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	h.add("harness", OK, FTarget, f)
	return h
}

func (h *hist) add(process, typ, f string, v any) int {
	h.now = h.now.Add(time.Millisecond)
	b, _ := json.Marshal(v)
	h.ops = append(h.ops, Op{Index: len(h.ops), Process: process, Type: typ, F: f, Value: b, Time: h.now})
	return len(h.ops) - 1
}

// call is a call's invoke; answer its outcome.
func (h *hist) call(process string, v CallValue) int { return h.add(process, Invoke, FCall, v) }

func (h *hist) answer(process string, inv int, typ string, v CallValue) {
	v.Call = &inv
	h.add(process, typ, FCall, v)
}

// result is a call answered with a result carrying the probe's answer to
// its token (digest names the content).
func (h *hist) result(process string, v CallValue, receipt, digest string) {
	inv := h.call(process, v)
	h.answer(process, inv, OK, CallValue{Tool: v.Tool, Token: v.Token, Receipt: receipt, Digest: digest, Served: v.Token, Wire: v.Wire, ResultType: resultTypeOf(v.Wire)})
}

func resultTypeOf(wire string) string {
	if wire == "2026-07-28" {
		return "complete"
	}
	return ""
}

// lost is a call whose answer never came (the connection dropped).
func (h *hist) lost(process string, v CallValue) {
	inv := h.call(process, v)
	h.answer(process, inv, Info, CallValue{Tool: v.Tool, Token: v.Token})
}

// marked is a call answered with the probe's answer to its token under
// receipt, its replay mark saying replayed.
func (h *hist) marked(process string, v CallValue, receipt string, replayed bool) {
	inv := h.call(process, v)
	h.answer(process, inv, OK, CallValue{Tool: v.Tool, Token: v.Token, Receipt: receipt, Digest: "d-" + receipt, Served: v.Token, Replayed: boolP(replayed)})
}

func (h *hist) refused(process string, v CallValue, reason string, retryable bool) {
	inv := h.call(process, v)
	typ := Fail
	if retryable {
		typ = Info
	}
	h.answer(process, inv, typ, CallValue{Tool: v.Tool, Token: v.Token, Reason: reason, Retryable: retryable, Status: 200})
}

func (h *hist) dispatch(token string) { h.add("upstream", OK, FDispatch, EffectValue{Token: token}) }

func (h *hist) env(e EnvValue) { h.add("harness", OK, FEnv, e) }

func (h *hist) read(r LedgerRead) {
	r.Final = true
	h.add("ledger", OK, FLedgerRead, r)
}

func price(p int64) *int64 { return &p }

func boolP(b bool) *bool { return &b }

func timeP(t time.Time) *time.Time { return &t }

var (
	full = Facts{Policy: PolicyDerived, WindowSeconds: 120, Capabilities: []string{CapUpstream, CapLedger, CapWire}}
	// retained is full with a day's retention stated.
	retained = Facts{Policy: PolicyDerived, WindowSeconds: 120, RetentionSeconds: 86400, Capabilities: []string{CapUpstream, CapLedger, CapWire}}
	write    = CallValue{Tool: "write", Token: "op1", Key: "k1", Arguments: map[string]any{"token": "op1"}, Role: "write", Price: price(3)}
)

func unkeyed(v CallValue) CallValue { v.Key = ""; return v }

func withProbeAnswers(f Facts) Facts { f.ProbeAnswers = true; return f }

func with(v CallValue, f func(*CallValue)) CallValue { f(&v); return v }

// violations are the model's violated checks, as kind/harm.
func violations(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if c.State == Violated {
			out = append(out, c.Kind+"/"+string(c.Harm))
		}
	}
	return out
}

// aDayOn starts a history whose target keeps records a day: the clock
// frozen, A's keyed call run (r1, op1), then the clock moved by.
func aDayOn(h *hist, by time.Duration) {
	h.ops[0].Value, _ = json.Marshal(retained)
	now := h.now
	h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
	h.result("A", write, "r1", "d1")
	h.dispatch("op1")
	later := now.Add(by)
	h.env(EnvValue{Kind: EnvClock, Now: &later, Frozen: true})
}

func TestModel(t *testing.T) {
	oneDebit := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  []string // kind/harm of each violation, in order; nil: none
	}{
		{"a keyed retry replays", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("A", write, "r1", "d1")
			h.read(oneDebit)
		}, nil},
		{"a keyed retry gets a new receipt and runs again", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"an upstream's refusal before the tool ran is dispatch_failed, refunded, and the retry runs", func(h *hist) {
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r0"}, {Kind: EntryRefund, Amount: 3, Receipt: "r0"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, nil},
		{"an upstream's refusal whose debit is kept", func(h *hist) {
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r0"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/double-charge"}},
		{"an upstream's refusal in the gateway's own words, retryable", func(h *hist) {
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", write, "acme_upstream_failed", true)
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
		}, nil},
		{"a refusal in the gateway's own words with nothing to explain it", func(h *hist) {
			h.refused("A", write, "acme_upstream_failed", true)
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal"}},
		{"dispatch_failed with no failure to explain it", func(h *hist) {
			h.refused("A", write, ReasonDispatchFailed, true)
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal"}},
		{"an upstream's one refusal answered again to the retry", func(h *hist) {
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.refused("A", write, ReasonDispatchFailed, true)
		}, []string{"answer/wrong-refusal"}},
		{"an upstream's refusal met by a later call, one refused before dispatch having come first", func(h *hist) {
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", write, ReasonFunds, false)
			h.refused("W", with(write, func(v *CallValue) { v.Wallet = "other" }), ReasonDispatchFailed, true)
		}, nil},
		{"a wallet that began in debt, charged right", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: -10, Balance: -13, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, nil},
		{"a wallet charged below zero", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 2, Balance: -1, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/wrong-amount"}},
		{"a replay that drops its content", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("A", write, "r1", "d-other")
		}, []string{"answer/lost-outcome"}},
		{"an unkeyed retry inside the window gets a new operation", func(h *hist) {
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.result("A", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"an unkeyed retry past the window may run again", func(h *hist) {
			now := h.now
			h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			later := now.Add(121 * time.Second)
			h.env(EnvValue{Kind: EnvClock, Now: &later, Frozen: true})
			h.result("A", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		// The retention (a day here) counts on the gateway clock: inside it
		// a keyed retry must replay; past it a new operation, a replay or
		// a reuse of the key with other arguments that runs are all allowed.
		{"a keyed retry inside the retention gets a new operation", func(h *hist) {
			aDayOn(h, 24*time.Hour-time.Second)
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"a keyed retry past the retention may run again", func(h *hist) {
			aDayOn(h, 24*time.Hour+time.Second)
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
			h.result("A", write, "r2", "d2")
		}, nil},
		{"a keyed retry after the clock went past the retention and back may run again", func(h *hist) {
			aDayOn(h, 24*time.Hour+time.Second)
			back := h.now
			h.env(EnvValue{Kind: EnvClock, Now: &back, Frozen: true})
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"an unkeyed retry after the clock went past the retention and back may run again", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(retained)
			h.env(EnvValue{Kind: EnvSetting, RetentionSeconds: price(180)})
			now := h.now
			h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			later := now.Add(302 * time.Second)
			h.env(EnvValue{Kind: EnvClock, Now: &later, Frozen: true})
			back := now.Add(5 * time.Second)
			h.env(EnvValue{Kind: EnvClock, Now: &back, Frozen: true})
			h.result("A", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"a retention a scenario set shorter bounds the key's life", func(h *hist) {
			h.env(EnvValue{Kind: EnvSetting, RetentionSeconds: price(180)})
			aDayOn(h, 181*time.Second)
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"inside a retention a scenario set, a keyed retry replays", func(h *hist) {
			h.env(EnvValue{Kind: EnvSetting, RetentionSeconds: price(180)})
			aDayOn(h, 150*time.Second)
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"a keyed retry past the retention may still replay", func(h *hist) {
			aDayOn(h, 48*time.Hour)
			h.result("A", write, "r1", "d1")
		}, nil},
		{"a key reused with other arguments past the retention may run", func(h *hist) {
			aDayOn(h, 24*time.Hour+time.Second)
			h.result("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), "r2", "d2")
			h.dispatch("op2")
		}, nil},
		{"a key reused with other arguments inside the retention may not run", func(h *hist) {
			aDayOn(h, 24*time.Hour-time.Second)
			h.result("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), "r2", "d2")
			h.dispatch("op2")
		}, []string{"answer/wrong-refusal"}},
		{"a key whose retention nobody states names its operation for good", func(h *hist) {
			aDayOn(h, 1000*time.Hour)
			h.ops[0].Value, _ = json.Marshal(full) // no retention stated
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"an unknown window holds a retry to a replay for a second only", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(Facts{Capabilities: []string{CapUpstream}})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.now = h.now.Add(2 * time.Second)
			h.result("A", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"two integers past 2^53 are two operations", func(h *hist) {
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":9007199254740993}`) }), "r1", "d1")
			h.dispatch("op1")
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":9007199254740992}`) }), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"1 and 1.0 may be two operations", func(h *hist) {
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":1}`) }), "r1", "d1")
			h.dispatch("op1")
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":1.0}`) }), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"1 and 1.0 may be one operation", func(h *hist) {
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":1}`) }), "r1", "d1")
			h.dispatch("op1")
			h.result("A", with(unkeyed(write), func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":1.0}`) }), "r1", "d1")
		}, nil},
		{"the same key with a different big integer is refused", func(h *hist) {
			h.result("A", with(write, func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":9007199254740993}`) }), "r1", "d1")
			h.dispatch("op1")
			h.refused("A", with(write, func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","n":9007199254740992}`) }), ReasonKeyReused, false)
		}, nil},
		{"arguments with a repeated member refused", func(h *hist) {
			h.refused("A", with(write, func(v *CallValue) { v.Arguments = json.RawMessage(`{"token":"op1","token":"op1"}`) }), "invalid_arguments", false)
		}, nil},
		{"a key past 255 characters refused", func(h *hist) {
			h.refused("A", with(write, func(v *CallValue) { v.Key = strings.Repeat("k", 300) }), "idempotency_key_invalid", false)
		}, nil},
		{"a well-formed key refused as invalid", func(h *hist) {
			h.refused("A", write, "idempotency_key_invalid", false)
		}, []string{"answer/wrong-refusal"}},
		{"in progress with nothing running", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", write, ReasonInProgress, true)
		}, []string{"answer/wrong-refusal"}},
		{"in progress while a twin runs", func(h *hist) {
			inv := h.call("A", write)
			h.refused("B", write, ReasonInProgress, true)
			h.dispatch("op1")
			h.answer("A", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
		}, nil},
		{"in progress after a dropped call", func(h *hist) {
			inv := h.call("A", write)
			h.dispatch("op1")
			h.answer("A", inv, Info, CallValue{Token: "op1", Error: "EOF"})
			h.refused("A", write, ReasonInProgress, true)
			h.result("A", write, "r1", "d1")
		}, nil},
		{"in progress not marked retryable", func(h *hist) {
			inv := h.call("A", write)
			h.refused("B", write, ReasonInProgress, false)
			h.answer("A", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
			h.dispatch("op1")
		}, nil}, // a missing retryable mark is the explicit step's to judge; the meaning is allowed
		{"a final refusal marked retryable", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), ReasonKeyReused, true)
		}, []string{"answer/wrong-refusal"}},
		{"the same key with other arguments is refused", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), ReasonKeyReused, false)
		}, nil},
		{"the same key with other arguments runs", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), "r2", "d2")
			h.dispatch("op2")
		}, []string{"answer/wrong-refusal"}},
		{"the same key with other arguments replays the first", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			inv := h.call("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }))
			h.answer("A", inv, OK, CallValue{Token: "op2", Receipt: "r1", Digest: "d1", Served: "op1"})
		}, []string{"answer/lost-outcome"}},
		{"another API key gets the first caller's result", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			inv := h.call("B", with(write, func(v *CallValue) { v.Credential = "second-key" }))
			h.answer("B", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
		}, []string{"answer/cross-scope-replay", "dispatches/lost-outcome"}},
		{"another API key gets its own operation", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("B", with(write, func(v *CallValue) { v.Credential = "second-key" }), "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"another principal's content under a new receipt", func(h *hist) {
			h.result("alice", with(unkeyed(write), func(v *CallValue) { v.Principal = "alice" }), "r1", "d1")
			h.dispatch("op1")
			h.result("bob", with(unkeyed(write), func(v *CallValue) { v.Principal = "bob" }), "r2", "d1")
		}, []string{"answer/cross-scope-replay", "dispatches/lost-outcome"}},
		{"another principal gets the stored result, marked a replay", func(h *hist) {
			alice := with(unkeyed(write), func(v *CallValue) { v.Principal = "alice" })
			inv := h.call("alice", alice)
			h.answer("alice", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(false)})
			h.dispatch("op1")
			bob := with(alice, func(v *CallValue) { v.Principal = "bob" })
			inv = h.call("bob", bob)
			h.answer("bob", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(true)})
		}, []string{"answer/cross-scope-replay", "dispatches/lost-outcome"}},
		{"a refunded call's retry under a one-call permit is refused as if the permit were spent", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Permit = "pmt-1" })
			h.env(EnvValue{Kind: EnvPermit, Permit: "pmt-1", Budget: price(3)})
			h.env(EnvValue{Kind: EnvUpstreamFail, Token: "op1", Action: UpstreamRefuse})
			h.refused("A", v, ReasonDispatchFailed, true)
			h.refused("A", v, "permit_exhausted", false)
		}, []string{"answer/wrong-refusal"}},
		{"a second operation under a one-call permit is refused permit_exhausted", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Permit = "pmt-1" })
			h.env(EnvValue{Kind: EnvPermit, Permit: "pmt-1", Budget: price(3)})
			h.result("A", v, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", with(v, func(v *CallValue) { v.Token, v.Key, v.Arguments = "op2", "k2", map[string]any{"token": "op2"} }), "permit_exhausted", false)
		}, nil},
		{"a replay marked as a first run", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(false)})
			h.dispatch("op1")
			inv = h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(false)})
		}, []string{"answer/lost-outcome"}},
		{"a first run marked as a replay", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(true)})
			h.dispatch("op1")
		}, []string{"answer/lost-outcome"}},
		// The first answer is lost, so no result says which call the tool
		// ran for; the dispatches do, when the harness saw the one there
		// was behind a call that ended before the retry began.
		{"a retry after a dropped call gets the stored result unmarked", func(h *hist) {
			h.lost("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.marked("A", write, "r1", false)
		}, []string{"answer/lost-outcome"}},
		{"a retry after a dropped call gets the stored result marked", func(h *hist) {
			h.lost("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.marked("A", write, "r1", true)
		}, nil},
		{"a retry after a dropped call runs again, unmarked: the dispatches say it, not the mark", func(h *hist) {
			h.lost("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.marked("A", write, "r2", false)
			h.dispatch("op1")
		}, []string{"dispatches/double-dispatch"}},
		{"a retry after a response failed at dispatch.after gets the stored result unmarked", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "fail", Tool: "write"})
			h.refused("A", write, ReasonResponseFailed, true)
			h.dispatch("op1")
			h.marked("A", write, "r1", false)
		}, []string{"answer/lost-outcome"}},
		{"a retry after a response dropped at dispatch.after gets the stored result unmarked", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "drop_response", Tool: "write"})
			h.lost("A", unkeyed(write))
			h.dispatch("op1")
			h.marked("A", unkeyed(write), "r1", false)
		}, []string{"answer/lost-outcome"}},
		{"a retry after a call seen waiting past its dispatch gets the stored result unmarked", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "pause", Tool: "write"})
			inv := h.call("A", write)
			h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.after", Client: "A"})
			h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.after"})
			h.answer("A", inv, Info, CallValue{Tool: "write", Token: "op1"})
			h.dispatch("op1")
			h.marked("A", write, "r1", false)
		}, []string{"answer/lost-outcome"}},
		{"a retry after a call lost nobody saw reach its dispatch may be the one the tool ran for", func(h *hist) {
			h.lost("A", write)
			h.dispatch("op1")
			h.marked("A", write, "r1", false)
		}, nil},
		{"a retry after a dropped call gets the stored result marked, under a receipt the ledger never debited", func(h *hist) {
			h.lost("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.marked("A", write, "r2", true)
			h.read(oneDebit)
		}, []string{"ledger/lost-outcome"}},
		{"a replay whose receipt says another charge, and a ledger that disagrees with the receipt", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(false), Charged: price(4)})
			h.dispatch("op1")
			inv = h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(true), Charged: price(3)})
			h.read(oneDebit)
		}, []string{"answer/wrong-amount", "ledger/wrong-amount"}},
		{"receipts that say it right", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(false), Charged: price(3)})
			h.dispatch("op1")
			inv = h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Replayed: boolP(true), Charged: price(3)})
			h.read(oneDebit)
		}, nil},
		{"a receipt that answered another operation in another scenario", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvReceiptElsewhere, Receipt: "r1", Token: "op9", Elsewhere: "retry-01"})
		}, []string{"answer/lost-outcome"}},
		{"a receipt seen elsewhere for this very operation", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvReceiptElsewhere, Receipt: "r1", Token: "op1", Elsewhere: "retry-01"})
		}, nil},
		{"a revoked principal gets the stored result", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Principal = "alice" })
			h.result("alice", v, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRevoke, Principal: "alice"})
			h.result("alice", v, "r1", "d1")
		}, []string{"answer/cross-scope-replay"}},
		{"a revoked principal is refused", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Principal = "alice" })
			h.result("alice", v, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRevoke, Principal: "alice"})
			h.refused("alice", v, ReasonPrincipalDenied, false)
		}, nil},
		{"the refuse policy runs an unkeyed call", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(Facts{Policy: PolicyRefuse, Capabilities: []string{CapUpstream}})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal", "dispatches/lost-outcome"}},
		{"an unkeyed read-only call is refused and not run", func(h *hist) {
			v := with(unkeyed(write), func(v *CallValue) { v.Role = RoleReadOnly })
			h.refused("A", v, ReasonKeyRequired, false)
			h.refused("A", v, ReasonKeyRequired, false)
		}, nil},
		{"an unkeyed read-only call is refused but dispatched", func(h *hist) {
			v := with(unkeyed(write), func(v *CallValue) { v.Role = RoleReadOnly })
			h.refused("A", v, ReasonKeyRequired, false)
			h.dispatch("op1")
		}, []string{"dispatches/lost-outcome"}},
		{"a refusal the contract has no place for", func(h *hist) {
			h.refused("A", write, ReasonFunds, false)
			h.read(LedgerRead{Baseline: 100, Balance: 100})
		}, nil}, // the wallet's balance is unknown to this history: funds may be short
		{"insufficient funds on a full wallet", func(h *hist) {
			b := int64(100)
			h.env(EnvValue{Kind: EnvWallet, Balance: &b})
			h.refused("A", write, ReasonFunds, false)
		}, []string{"answer/wrong-refusal"}},
		{"a vendor code that means one of several reasons", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			inv := h.call("A", with(write, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }))
			h.answer("A", inv, Fail, CallValue{Token: "op2", Status: 200, Means: []string{ReasonUnknownTool, ReasonKeyReused}})
		}, nil},
		{"a 5xx", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, Info, CallValue{Token: "op1", Reason: "internal_error", Status: 500})
		}, []string{"answer/wrong-refusal"}},
		{"2025-11-25 results may carry a resultType", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Wire = "2025-11-25" })
			inv := h.call("A", v)
			h.answer("A", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Wire: "2025-11-25", ResultType: "complete"})
			h.dispatch("op1")
		}, nil},
		{"2026-07-28 results must say complete", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Wire = "2026-07-28" })
			inv := h.call("A", v)
			h.answer("A", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Wire: "2026-07-28"})
			h.dispatch("op1")
		}, []string{"shape/protocol-shape"}},
		{"a 2025-11-25 result without content", func(h *hist) {
			v := with(write, func(v *CallValue) { v.Wire = "2025-11-25" })
			inv := h.call("A", v)
			h.answer("A", inv, OK, CallValue{Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Wire: "2025-11-25", NoContent: true})
			h.dispatch("op1")
		}, []string{"shape/protocol-shape"}},
		{"a result the probe never produced", func(h *hist) {
			h.result("A", write, "r1", "d1")
		}, []string{"dispatches/lost-outcome"}},
		{"after a call whose connection its client dropped, the only result lacks the probe's answer the wiring call showed this target hands on", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(withProbeAnswers(full))
			first := h.call("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.answer("A", first, Info, CallValue{Tool: "write", Token: "op1", Error: "EOF"})
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", IsError: true})
		}, []string{"answer/lost-outcome"}},
		{"after a call whose connection its client dropped, the only result lacks the probe's answer, and no wiring call showed one", func(h *hist) {
			first := h.call("A", with(write, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.answer("A", first, Info, CallValue{Tool: "write", Token: "op1", Error: "EOF"})
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", IsError: true})
		}, nil},
		{"an answer the gateway lost on its own (no client gave up) is an isError result, stored and charged", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(withProbeAnswers(full))
			inv := h.call("A", write)
			h.dispatch("op1")
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", IsError: true})
		}, nil},
		{"after a call whose connection its client dropped, a read-only call's result lacks the probe's answer the wiring call showed for the write tool", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(withProbeAnswers(full))
			ro := with(write, func(v *CallValue) { v.Role = RoleReadOnly })
			first := h.call("A", with(ro, func(v *CallValue) { v.Dropped = true }))
			h.dispatch("op1")
			h.answer("A", first, Info, CallValue{Tool: "write", Token: "op1", Error: "EOF"})
			inv := h.call("A", ro)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1"})
		}, nil},
		{"a result carrying the probe's answer to a token no call of the history has", func(h *hist) {
			inv := h.call("A", write)
			h.dispatch("op1")
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "run-doctor-1"})
		}, []string{"answer/lost-outcome"}},
		{"charged twice", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/double-charge"}},
		{"charged twice the price", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{{Kind: EntryDebit, Amount: 6, Receipt: "r1"}}})
		}, []string{"ledger/wrong-amount"}},
		{"a fee on a refusal", func(h *hist) {
			h.refused("A", with(unkeyed(write), func(v *CallValue) { v.Role = RoleReadOnly }), ReasonKeyRequired, false)
			h.read(LedgerRead{Baseline: 100, Balance: 99, Entries: []EffectValue{{Kind: "fee", Amount: 1}}})
		}, []string{"ledger/wrong-amount"}},
		{"a refused call's debit refunded", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.before", Action: "fail", Tool: "write"})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, nil},
		{"a refused call's debit kept", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.before", Action: "fail", Tool: "write"})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/wrong-amount"}},
		{"a failure armed for one tool outlives the release of a pause at its point for another", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "fail", Tool: "write"})
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "pause", Tool: "write2"})
			h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.after", Action: "pause", Tool: "write2"})
			h.refused("A", write, ReasonResponseFailed, true)
			h.dispatch("op1")
			h.marked("A", write, "r1", true)
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, nil},
		{"dispatch failed with no cause", func(h *hist) {
			h.refused("A", write, ReasonDispatchFailed, true)
		}, []string{"answer/wrong-refusal"}},
		{"charged under a receipt no answer carried", func(h *hist) {
			inv := h.call("A", write)
			h.dispatch("op1")
			h.answer("A", inv, Info, CallValue{Token: "op1", Error: "EOF"})
			h.result("A", write, "r2", "d1")
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/lost-outcome"}},
		{"never charged", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 100})
		}, []string{"ledger/wrong-amount"}},
		{"the balance moved by more than the entries", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 96, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, []string{"ledger/wrong-amount"}},
		// explore-3-3 (seed 3, reference on SQLite): A held at fence.read
		// past its window; once released, A's operation ends a moment
		// before B's overlapping call takes effect, which, past the
		// window, may start the operation anew.
		{"an unkeyed call overlapping the end of an operation past its window", func(h *hist) {
			a := h.call("A", unkeyed(write))
			h.env(EnvValue{Kind: EnvWaiting, Point: "fence.read", Client: "A"})
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.env(EnvValue{Kind: EnvRelease, Point: "fence.read"})
			b := h.call("B", unkeyed(write))
			h.dispatch("op1")
			h.answer("A", a, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
			h.dispatch("op1")
			h.answer("B", b, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r2", Digest: "d2", Served: "op1"})
		}, nil},
		// explore-4-3 (seed 4): A waits at dispatch.after, its outcome
		// stored; past the window B's call is a new operation.
		{"an unkeyed call while an operation past its window waits after its outcome", func(h *hist) {
			a := h.call("A", unkeyed(write))
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.after", Client: "A"})
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.result("B", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.after"})
			h.answer("A", a, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
		}, nil},
		// explore-15-1 (seed 15): past the window a retry may be a new
		// operation, which the wallet, having paid for the first, cannot.
		{"an unkeyed retry past its window the wallet cannot pay for", func(h *hist) {
			h.env(EnvValue{Kind: EnvWallet, Balance: price(5)})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.refused("A", unkeyed(write), ReasonFunds, false)
		}, nil},
		{"an unkeyed retry inside its window refused for funds", func(h *hist) {
			h.env(EnvValue{Kind: EnvWallet, Balance: price(5)})
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.refused("A", unkeyed(write), ReasonFunds, false)
		}, []string{"answer/wrong-refusal"}},
		// explore-14-9 (seed 14): an explicit permit with no key names one
		// operation; other arguments under it are a reuse of it.
		{"an explicit permit used again with other arguments", func(h *hist) {
			permit := unkeyed(with(write, func(v *CallValue) { v.Permit = "P1" }))
			h.result("A", permit, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", with(permit, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), ReasonKeyReused, false)
		}, nil},
		{"an explicit permit used again with other arguments runs again", func(h *hist) {
			permit := unkeyed(with(write, func(v *CallValue) { v.Permit = "P1" }))
			h.result("A", permit, "r1", "d1")
			h.dispatch("op1")
			h.result("A", with(permit, func(v *CallValue) { v.Token, v.Arguments = "op2", map[string]any{"token": "op2"} }), "r2", "d2")
			h.dispatch("op2")
		}, []string{"answer/wrong-refusal"}},
		// An explicit permit names one operation of each principal: another
		// principal's call under it, with the same arguments, runs its own.
		{"an explicit permit's arguments from another principal run again", func(h *hist) {
			permit := unkeyed(with(write, func(v *CallValue) { v.Permit = "P1" }))
			h.result("alice", with(permit, func(v *CallValue) { v.Principal = "alice" }), "r1", "d1")
			h.dispatch("op1")
			h.result("A", permit, "r2", "d2")
			h.dispatch("op1")
		}, nil},
		{"an explicit permit's result handed to another principal", func(h *hist) {
			permit := unkeyed(with(write, func(v *CallValue) { v.Permit = "P1" }))
			h.result("alice", with(permit, func(v *CallValue) { v.Principal = "alice" }), "r1", "d1")
			h.dispatch("op1")
			h.result("A", permit, "r1", "d1")
		}, []string{"answer/cross-scope-replay", "dispatches/lost-outcome"}},
		// explore-20-3 (seed 20): window 0 turns derived keys off; an
		// explicit permit still names its operation, replayed.
		{"an explicit permit's operation replayed with the window at 0", func(h *hist) {
			permit := unkeyed(with(write, func(v *CallValue) { v.Permit = "P1" }))
			h.result("A", permit, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvSetting, WindowSeconds: price(0)})
			h.result("A", permit, "r1", "d1")
		}, nil},
		{"a multi-round call asks again for input past the retention: its key is forgotten", func(h *hist) {
			h.ops[0].Value, _ = json.Marshal(retained)
			ask := with(write, func(v *CallValue) { v.Role = RoleAsk; v.Wire = "2026-07-28" })
			now := h.now
			h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
			inv := h.call("A", ask)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", ResultType: "input_required", InputRequired: true, Wire: "2026-07-28"})
			h.result("A", ask, "r1", "d1")
			h.dispatch("op1")
			later := now.Add(25 * time.Hour)
			h.env(EnvValue{Kind: EnvClock, Now: &later, Frozen: true})
			inv = h.call("A", ask)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", ResultType: "input_required", InputRequired: true, Wire: "2026-07-28"})
		}, nil},
		{"a multi-round call asks again for input once it finished", func(h *hist) {
			ask := with(write, func(v *CallValue) { v.Role = RoleAsk; v.Wire = "2026-07-28" })
			inv := h.call("A", ask)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", ResultType: "input_required", InputRequired: true, Wire: "2026-07-28"})
			h.result("A", ask, "r1", "d1")
			h.dispatch("op1")
			inv = h.call("A", ask)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", ResultType: "input_required", InputRequired: true, Wire: "2026-07-28"})
		}, []string{"answer/lost-outcome"}},
		// The harness records the protocol version on the answer, not the
		// call (replay-resulttype-missing was never seen by the model).
		{"a 2026-07-28 result without resultType, the version on the answer", func(h *hist) {
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1", Wire: "2026-07-28"})
			h.dispatch("op1")
		}, []string{"shape/protocol-shape"}},
		// removed-tool-takeover: a pause holds one call; another, of a
		// removed tool, is answered dispatch_failed, which nothing failed.
		{"a call refused dispatch_failed while another is held at a pause", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "reserve.done", Action: "pause", Tool: "write"})
			a := h.call("A", write)
			h.env(EnvValue{Kind: EnvWaiting, Point: "reserve.done", Client: "A"})
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.refused("B", write, ReasonDispatchFailed, true)
			h.env(EnvValue{Kind: EnvRelease, Point: "reserve.done"})
			h.answer("A", a, Info, CallValue{Tool: "write", Token: "op1", Reason: ReasonInProgress, Retryable: true, Status: 200})
		}, []string{"answer/wrong-refusal"}},
		// rounds-to-legacy-client: an empty success of a tool that never ran.
		{"a result without the probe's answer where the others carry it", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			inv := h.call("A", with(write, func(v *CallValue) { v.Token, v.Key = "op2", "k2" }))
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op2", Receipt: "r2", Digest: "d2"})
		}, []string{"answer/lost-outcome"}},
		{"a raw body answered HTTP 500", func(h *hist) {
			h.add("A", Invoke, FRaw, map[string]int{"bytes": 10})
			h.add("A", Fail, FRaw, CallValue{Status: 500, Reason: "parse_error"})
		}, []string{"answer/wrong-refusal"}},
		// window-04: the same, B answered while A still waits: B joins A.
		{"an unkeyed call while an operation past its window waits", func(h *hist) {
			a := h.call("A", unkeyed(write))
			h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.before", Client: "A"})
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.result("B", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.before"})
			h.dispatch("op1")
			h.answer("A", a, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch"}},
		{"an operation charged again under the receipt of a later answer", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.result("A", write, "r2", "d2")
			h.dispatch("op1")
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, []string{"answer/lost-outcome", "dispatches/double-dispatch", "ledger/double-charge"}},
		{"a removed tool starts work", func(h *hist) {
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal"}},
		{"a removed tool replays what it stored", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", write, "r1", "d1")
		}, nil},
		// explore-1-1 (seed 1, reference on SQLite): the tool ran, its
		// answer failed after dispatch, the tool was removed; the retry
		// is the stored outcome, the first result the client sees.
		{"a removed tool serves the outcome a failed answer stored", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "fail", Tool: "write"})
			h.refused("A", write, ReasonResponseFailed, true)
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", write, "r1", "d1")
		}, nil},
		// explore-10-7 (seed 9's sweep, reference on SQLite): past the
		// window an unkeyed call starts a new operation whose answer a
		// drop_response fault loses (stored, not answered), the tool is
		// removed, and the retry is that new operation's stored outcome.
		{"a removed tool serves a new unkeyed operation's outcome whose answer was lost", func(h *hist) {
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "drop_response", Tool: "write"})
			h.lost("A", unkeyed(write))
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", unkeyed(write), "r2", "d2")
		}, nil},
		{"a removed tool starts a new unkeyed operation past the window", func(h *hist) {
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", unkeyed(write), "r2", "d2")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal"}},
		{"a removed tool runs an operation refused before its removal", func(h *hist) {
			h.env(EnvValue{Kind: EnvFault, Point: "dispatch.before", Action: "fail", Tool: "write"})
			h.refused("A", write, ReasonDispatchFailed, true)
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
		}, []string{"answer/wrong-refusal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(full)
			tc.build(h)
			got := violations(Model(h.ops))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops)))
			}
		})
	}
}

func dump(cs []Check) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString("  " + c.State + " " + c.Kind + " " + string(c.Harm) + ": " + c.Step + " | observed " + c.Actual + " | expected " + c.Expected + "\n")
	}
	return b.String()
}

// Every check the model makes names what observes it, and a held check is
// made only of a kind it could judge.
func TestModelSaysWhatItLookedAt(t *testing.T) {
	h := newHist(full)
	h.result("A", write, "r1", "d1")
	h.dispatch("op1")
	h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
	kinds := map[string]string{}
	for _, c := range Model(h.ops) {
		if c.State != Held || !c.Model || c.StepIndex != -1 {
			t.Errorf("check %+v", c)
		}
		kinds[c.Kind] = c.Capability
	}
	want := map[string]string{KindAnswer: CapWire, KindDispatches: CapUpstream, KindLedger: CapLedger}
	for k, cp := range want {
		if kinds[k] != cp {
			t.Errorf("kinds %v, want %v", kinds, want)
		}
	}
	// Without the probe and the ledger, only the answers are judged.
	h = newHist(Facts{Policy: PolicyDerived})
	h.result("A", write, "r1", "d1")
	if got := Model(h.ops); len(got) != 1 || got[0].Kind != KindAnswer {
		t.Errorf("model of a wire-only history: %s", dump(got))
	}
}

// Decided: an operation left in progress after its retries is stuck.
func TestModelDecided(t *testing.T) {
	h := newHist(full)
	inv := h.call("A", write)
	h.answer("A", inv, Info, CallValue{Token: "op1", Error: "EOF"})
	h.refused("A", write, ReasonInProgress, true)
	if got := violations(Model(h.ops, Options{Decided: true})); strings.Join(got, ",") != "decided/lost-outcome" {
		t.Errorf("violations %q, want the stuck operation", got)
	}
	if got := violations(Model(h.ops)); len(got) != 0 {
		t.Errorf("violations %q without Decided", got)
	}
	// The harness's mark in the history asks for the same.
	h.env(EnvValue{Kind: EnvDecide})
	if got := violations(Model(h.ops)); strings.Join(got, ",") != "decided/lost-outcome" {
		t.Errorf("violations %q with the history marked, want the stuck operation", got)
	}
}

// explore-3-2 (seed 3, reference on SQLite): a principal's answer was
// lost, the principal was revoked, and every retry is refused: the
// operation stays unknown to it, rightly, and is decided for it.
func TestModelDecidedForTheCaller(t *testing.T) {
	alice := with(write, func(v *CallValue) { v.Principal = "alice" })
	for _, tc := range []struct {
		name  string
		lost  CallValue // the call whose answer was lost
		build func(h *hist)
		want  string
	}{
		{"revoked", alice, func(h *hist) {
			h.env(EnvValue{Kind: EnvRevoke, Principal: "alice"})
			h.refused("alice", alice, ReasonPrincipalDenied, false)
		}, ""},
		{"tool removed", alice, func(h *hist) {
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			h.refused("alice", alice, ReasonUnknownTool, false)
		}, ""},
		// explore-2-12 (seed 2): the unkeyed call was cancelled while its
		// dispatch was held, the clock moved past its window, and its
		// retry got a result: a new operation or the first one's
		// outcome, either way decided for the client.
		{"an unkeyed operation its window outlived", unkeyed(alice), func(h *hist) {
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(241 * time.Second)), Frozen: true})
			h.result("alice", unkeyed(alice), "r2", "d2")
		}, ""},
		// explore-23-20 (seed 23, reference on SQLite): an unkeyed call's
		// answer was dropped after its dispatch, the window was then set
		// to 0, and its retry is refused idempotency_key_required: the
		// operator's setting keeps the outcome from the client, rightly.
		{"an unkeyed operation whose window was set to 0", unkeyed(alice), func(h *hist) {
			zero := int64(0)
			h.env(EnvValue{Kind: EnvSetting, WindowSeconds: &zero})
			h.refused("alice", unkeyed(alice), ReasonKeyRequired, false)
		}, ""},
		{"an unkeyed operation refused idempotency_key_required with the window unchanged", unkeyed(alice), func(h *hist) {
			h.refused("alice", unkeyed(alice), ReasonKeyRequired, false)
		}, "answer/wrong-refusal,decided/lost-outcome"},
		{"refused with no reason to", alice, func(h *hist) {
			h.refused("alice", alice, ReasonPrincipalDenied, false)
		}, "answer/wrong-refusal,decided/lost-outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(full)
			inv := h.call("alice", tc.lost)
			h.answer("alice", inv, Info, CallValue{Token: "op1", Error: "EOF"})
			h.dispatch("op1")
			tc.build(h)
			if got := violations(Model(h.ops, Options{Decided: true})); strings.Join(got, ",") != tc.want {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops, Options{Decided: true})))
			}
		})
	}
}

// The model judges dispatches seen by the target's read tool (effects) as
// it judges the probe's, naming the capability that saw them; a history
// with neither observer is not judged on dispatches at all.
func TestModelDispatchesByObserver(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps []string
		want string // the dispatch check's capability; "" for none
	}{
		{"probe", []string{CapWire, CapUpstream}, CapUpstream},
		{"read tool", []string{CapWire, CapEffects}, CapEffects},
		{"neither", []string{CapWire}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(Facts{Policy: PolicyDerived, Capabilities: tc.caps})
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.dispatch("op1")
			got := ""
			for _, c := range Model(h.ops) {
				if c.Kind != KindDispatches {
					continue
				}
				got = c.Capability
				if c.State != Violated || c.Harm != HarmDoubleDispatch {
					t.Errorf("two dispatches of one operation: %s %s, want violated double dispatch", c.State, c.Harm)
				}
			}
			if got != tc.want {
				t.Errorf("dispatch check by %q, want %q", got, tc.want)
			}
		})
	}
}

// Through the target's read tool no result carries a token, so the write
// tool's own result is what says its effect was made: a result with no
// effect counted is a lost outcome, as it is behind the probe. A tool
// error says the tool ran, not that it wrote, and another tool's result
// says nothing of the write tool's effects.
func TestModelEffectsAtLeastOnce(t *testing.T) {
	effects := Facts{Policy: PolicyRefuse, Capabilities: []string{CapWire, CapEffects}}
	for _, tc := range []struct {
		name       string
		call       CallValue
		answer     CallValue
		dispatches int
		settled    string // an operator's settlement before the call
		want       string
	}{
		{"written", write, CallValue{Receipt: "r1", Digest: "d1"}, 1, "", ""},
		{"answered, never written", write, CallValue{Receipt: "r1", Digest: "d1"}, 0, "", "dispatches/lost-outcome"},
		// The operator's result after a completed settlement is no write
		// of the tool's (settle-02 behind a control API).
		{"settled completed, never written", write, CallValue{Receipt: "r1", Digest: "d1"}, 0, SettleCompleted, ""},
		{"settled refunded, answered, never written", write, CallValue{Receipt: "r1", Digest: "d1"}, 0, SettleRefunded, "dispatches/lost-outcome"},
		{"a tool error, never written", write, CallValue{Receipt: "r1", Digest: "d1", IsError: true}, 0, "", ""},
		{"another tool, never written", CallValue{Tool: "other", Token: "op1", Key: "k1", Role: "write_other"}, CallValue{Receipt: "r1", Digest: "d1"}, 0, "", ""},
		{"written twice", write, CallValue{Receipt: "r1", Digest: "d1"}, 2, "", "dispatches/double-dispatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(effects)
			if tc.settled != "" {
				h.env(EnvValue{Kind: EnvSettle, Outcome: tc.settled, Token: tc.call.Token, Wallet: tc.call.Wallet, Receipt: "r1"})
			}
			inv := h.call("A", tc.call)
			tc.answer.Tool, tc.answer.Token = tc.call.Tool, tc.call.Token
			h.answer("A", inv, OK, tc.answer)
			for range tc.dispatches {
				h.dispatch("op1")
			}
			var got []string
			for _, v := range violations(Model(h.ops)) {
				if strings.HasPrefix(v, KindDispatches+"/") {
					got = append(got, v)
				}
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("dispatch violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops)))
			}
		})
	}
}

// TestModelEffectsUnread: where the target's read tool could not count a
// token, a count below what the answers prove is not observed, never a lost
// outcome; a count above what may have run is still a double dispatch.
func TestModelEffectsUnread(t *testing.T) {
	effects := Facts{Policy: PolicyRefuse, Capabilities: []string{CapWire, CapEffects}}
	for _, tc := range []struct {
		name       string
		unread     bool
		dispatches int
		want       string // the dispatch check's state
		harm       Harm
	}{
		{"read, never written", false, 0, Violated, HarmLostOutcome},
		{"unread, none read", true, 0, NotObserved, ""},
		{"unread, written twice", true, 2, Violated, HarmDoubleDispatch},
		{"read, written", false, 1, Held, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(effects)
			inv := h.call("A", write)
			h.answer("A", inv, OK, CallValue{Tool: write.Tool, Token: write.Token, Receipt: "r1", Digest: "d1"})
			for range tc.dispatches {
				h.dispatch("op1")
			}
			if tc.unread {
				h.env(EnvValue{Kind: EnvUnread, Token: "op1", Action: "read tool failed"})
			}
			var got []Check
			for _, c := range Model(h.ops) {
				if c.Kind == KindDispatches {
					got = append(got, c)
				}
			}
			if len(got) != 1 || got[0].Status() != tc.want || got[0].Harm != tc.harm {
				t.Errorf("dispatch checks %+v, want one %s (harm %q)", got, tc.want, tc.harm)
			}
		})
	}
}
