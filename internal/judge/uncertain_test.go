package judge

import (
	"strings"
	"testing"
	"time"
)

// TestModelOutcomeUnknown: outcome_unknown is an answer only for an
// operation that may have run and is uncertain (an earlier call of it was
// not told nothing ran, and no result of it came back first), whose record
// may have gone unwritten for the stale-lock threshold, and whose answer
// names a debit that stands; it is final, never retryable, and ends an
// explored operation as decided.
func TestModelOutcomeUnknown(t *testing.T) {
	staleFacts := full
	staleFacts.StaleLockSeconds = 60
	charged := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	refunded := LedgerRead{Baseline: 100, Balance: 100, Entries: []EffectValue{
		{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}}}
	lost := func(h *hist, v CallValue) {
		inv := h.call("A", v)
		h.answer("A", inv, Info, CallValue{Token: v.Token, Error: "EOF"})
	}
	// unsure is a call answered outcome_unknown naming receipt ("" none).
	unsure := func(h *hist, v CallValue, receipt string, retryable bool) {
		inv := h.call("B", v)
		h.answer("B", inv, Fail, CallValue{Tool: v.Tool, Token: v.Token, Reason: ReasonOutcomeUnknown, Receipt: receipt, Retryable: retryable, Status: 200})
	}
	// advance freezes the gateway clock d past the wall clock.
	advance := func(h *hist, d time.Duration) {
		now := h.now.Add(d)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
	}
	stale := func(h *hist) { advance(h, 61*time.Second) }
	// twice answers a retry past the threshold outcome_unknown, reads the
	// ledger as between, and answers the next retry the same.
	twice := func(h *hist, between LedgerRead) {
		lost(h, write)
		stale(h)
		unsure(h, write, "r1", false)
		h.read(between)
		unsure(h, write, "r1", false)
	}
	for _, tc := range []struct {
		name    string
		facts   Facts // staleFacts (a threshold of 60 s) when zero
		build   func(h *hist)
		decided bool
		want    string // kind/harm of each violation, comma-joined
	}{
		// Allowed.
		{"past the threshold after a call whose answer was lost", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, ""},
		{"past the threshold after an in-progress answer, then again", Facts{}, func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonInProgress, true)
			stale(h)
			unsure(h, write, "r1", false)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, ""},
		{"unkeyed, past the threshold after a call whose answer was lost", Facts{}, func(h *hist) {
			lost(h, unkeyed(write))
			stale(h)
			unsure(h, unkeyed(write), "r1", false)
			h.read(charged)
		}, false, ""},
		{"then the owner finishes and the retry replays", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
			h.dispatch("op1")
			h.result("B", write, "r1", "d1")
			h.read(charged)
		}, false, ""},
		{"ends an explored operation decided", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, true, ""},
		{"past a threshold lowered during the scenario", Facts{}, func(h *hist) {
			lost(h, write)
			h.env(EnvValue{Kind: EnvSetting, StaleLockSeconds: price(1)})
			advance(h, 2*time.Second)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, ""},
		// The model cannot know the threshold, so it cannot say the owner
		// is still within it: the spec's answer may be this one.
		{"at once, the threshold unknown", full, func(h *hist) {
			lost(h, write)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, ""},
		{"a free tool's, naming no receipt", Facts{}, func(h *hist) {
			free := with(write, func(v *CallValue) { v.Price = price(0) })
			lost(h, free)
			stale(h)
			unsure(h, free, "", false)
		}, false, ""},
		{"with no ledger read to look the receipt up in", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
		}, false, ""},
		// An operator may settle it refunded after the answer; a retry
		// then runs it afresh.
		{"its debit refunded after the answer", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
			h.read(refunded)
		}, false, ""},
		// Answered outcome_unknown again after a read that shows the debit
		// still charged (crash-02), then settled refunded by an operator:
		// the refund after them takes back nothing either answer said.
		{"again after a read of its debit charged, then refunded by an operator", Facts{}, func(h *hist) {
			twice(h, charged)
			h.env(EnvValue{Kind: EnvSettle, Outcome: SettleRefunded, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Client: "B"})
			h.read(refunded)
		}, false, ""},

		// Refused.
		{"at once after a dropped connection", Facts{}, func(h *hist) {
			lost(h, with(write, func(v *CallValue) { v.Dropped = true }))
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"for an overlapping twin still running", Facts{}, func(h *hist) {
			inv := h.call("A", write)
			unsure(h, write, "r1", false)
			h.dispatch("op1")
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d1", Served: "op1"})
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"short of a threshold raised during the scenario", Facts{}, func(h *hist) {
			lost(h, write)
			h.env(EnvValue{Kind: EnvSetting, StaleLockSeconds: price(600)})
			stale(h)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"for a stale reservation never charged", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", false)
			h.read(LedgerRead{Baseline: 100, Balance: 100})
		}, false, "answer/wrong-refusal"},
		{"naming no receipt for a priced tool", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "", false)
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"naming a debit refunded before the call", Facts{}, func(h *hist) {
			lost(h, write)
			h.read(refunded)
			stale(h)
			unsure(h, write, "r1", false)
			h.read(refunded)
		}, false, "answer/wrong-refusal"},
		// The gateway refunded the debit as it answered outcome_unknown
		// (uncertain-refunded): the first answer stands, but a read shows
		// the refund before the second, whose data.receipt names a debit
		// given back already. Only the second is failed.
		{"again after the gateway refunded the debit at its first answer", Facts{}, func(h *hist) {
			twice(h, refunded)
			h.read(refunded)
		}, false, "answer/wrong-refusal"},
		{"marked retryable", Facts{}, func(h *hist) {
			lost(h, write)
			stale(h)
			unsure(h, write, "r1", true)
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"for the first call of an operation", Facts{}, func(h *hist) {
			unsure(h, write, "r1", false)
		}, false, "answer/wrong-refusal"},
		{"for an operation whose result came back", Facts{}, func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			stale(h)
			unsure(h, write, "r1", false)
			h.read(charged)
		}, false, "answer/wrong-refusal"},
		{"for an operation only ever told nothing ran", Facts{}, func(h *hist) {
			h.refused("A", write, ReasonFunds, false)
			stale(h)
			unsure(h, write, "r1", false)
		}, false, "answer/wrong-refusal"},
		{"for an operation that must be refused", Facts{}, func(h *hist) {
			ro := with(unkeyed(write), func(v *CallValue) { v.Role = RoleReadOnly })
			lost(h, ro)
			stale(h)
			unsure(h, ro, "r1", false)
		}, false, "answer/wrong-refusal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			if f.Capabilities == nil {
				f = staleFacts
			}
			h := newHist(f)
			tc.build(h)
			got := violations(Model(h.ops, Options{Decided: tc.decided}))
			if strings.Join(got, ",") != tc.want {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops, Options{Decided: tc.decided})))
			}
		})
	}
}

// TestModelSettled: once an operator settles an uncertain operation, its
// later calls are answered as the settlement says: settled completed, the
// settled result replayed under the debit's receipt (never outcome_unknown,
// never a result of its own); settled refunded, never outcome_unknown, and
// the next call may run it afresh under a new debit.
func TestModelSettled(t *testing.T) {
	facts := full
	facts.StaleLockSeconds = 60
	charged := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	refunded := LedgerRead{Baseline: 100, Balance: 100, Entries: []EffectValue{
		{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}}}
	rerun := LedgerRead{Baseline: 100, Balance: 97, Entries: append(append([]EffectValue(nil), refunded.Entries...),
		EffectValue{Kind: EntryDebit, Amount: 3, Receipt: "r2"})}
	// uncertain: a call whose answer was lost, the clock past the
	// threshold, a retry answered outcome_unknown naming r1.
	uncertain := func(h *hist) {
		h.lost("A", write)
		now := h.now.Add(61 * time.Second)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
		inv := h.call("B", write)
		h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
	}
	settle := func(h *hist, outcome string) {
		h.env(EnvValue{Kind: EnvSettle, Outcome: outcome, Token: "op1", Wallet: write.Wallet, Receipt: "r1"})
	}
	// settleB names the operation as the steps do: B's last call's, with
	// the settled result's digest.
	settleB := func(h *hist, outcome string) {
		h.env(EnvValue{Kind: EnvSettle, Outcome: outcome, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Client: "B", Digest: "settled"})
	}
	// settledReplay is a result of the operator's (no probe answer).
	settledReplay := func(h *hist, receipt string, replayed bool) {
		inv := h.call("B", write)
		h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: receipt, Digest: "settled", Replayed: boolP(replayed)})
	}
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"completed: the settled result replayed", func(h *hist) {
			uncertain(h)
			settle(h, SettleCompleted)
			settledReplay(h, "r1", true)
			settledReplay(h, "r1", true)
			h.read(charged)
		}, ""},
		{"refunded: the next call runs it afresh", func(h *hist) {
			uncertain(h)
			settle(h, SettleRefunded)
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			h.read(rerun)
		}, ""},
		{"completed: outcome_unknown after it", func(h *hist) {
			uncertain(h)
			settle(h, SettleCompleted)
			inv := h.call("B", write)
			h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(charged)
		}, "answer/wrong-refusal"},
		{"refunded: outcome_unknown after it", func(h *hist) {
			uncertain(h)
			settle(h, SettleRefunded)
			inv := h.call("B", write)
			h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(refunded)
		}, "answer/wrong-refusal"},
		{"completed: in progress after it", func(h *hist) {
			uncertain(h)
			settle(h, SettleCompleted)
			h.refused("B", write, ReasonInProgress, true)
			h.read(charged)
		}, "answer/wrong-refusal"},
		{"completed: a result under another receipt (the woken owner's over it)", func(h *hist) {
			uncertain(h)
			settle(h, SettleCompleted)
			settledReplay(h, "r9", true)
			h.read(charged)
		}, "answer/lost-outcome,ledger/lost-outcome"},
		{"completed: the settled result not marked a replay", func(h *hist) {
			uncertain(h)
			settle(h, SettleCompleted)
			settledReplay(h, "r1", false)
			h.read(charged)
		}, "answer/lost-outcome"},
		{"completed: the settled result replayed, named by B's last call", func(h *hist) {
			uncertain(h)
			settleB(h, SettleCompleted)
			settledReplay(h, "r1", true)
			h.read(charged)
		}, ""},
		{"completed: the debit's receipt, but content of its own (the woken owner's written over it)", func(h *hist) {
			uncertain(h)
			settleB(h, SettleCompleted)
			inv := h.call("B", write)
			h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "owner's", Replayed: boolP(true)})
			h.read(charged)
		}, "answer/lost-outcome"},
		{"completed: the same key and arguments from another API key are another operation, run afresh", func(h *hist) {
			uncertain(h)
			settleB(h, SettleCompleted)
			h.dispatch("op1")
			h.marked("C", with(write, func(v *CallValue) { v.Credential = "second-key" }), "r2", false)
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, ""},
		{"completed: the holder woken after it gets the settled result, where other results carry the probe's answer", func(h *hist) {
			other := with(write, func(v *CallValue) { v.Token, v.Key, v.Arguments = "op2", "k2", map[string]any{"token": "op2"} })
			h.dispatch("op2")
			h.marked("C", other, "r5", false)
			holder := h.call("A", write)
			now := h.now.Add(61 * time.Second)
			h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
			inv := h.call("B", write)
			h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			settleB(h, SettleCompleted)
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r5"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
		}, ""},
		{"refunded: its refund never written", func(h *hist) {
			uncertain(h)
			settle(h, SettleRefunded)
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, "ledger/double-charge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(facts)
			tc.build(h)
			got := violations(Model(h.ops))
			if strings.Join(got, ",") != tc.want {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops)))
			}
		})
	}
}
