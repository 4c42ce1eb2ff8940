package judge

import (
	"strings"
	"testing"
	"time"
)

// flags says got is no violation when want is "", else holds each of want's.
func flags(got []string, want string) bool {
	if want == "" {
		return len(got) == 0
	}
	for _, w := range strings.Split(want, ",") {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestModelSettledHolder: a settlement met by the holder that waited over
// it, by calls of another operation sharing its token or key, and by a
// gateway that runs, marks or serves what the settlement forbids. want is
// the verdict a correct judge gives.
func TestModelSettledHolder(t *testing.T) {
	facts := full
	facts.StaleLockSeconds = 60
	charged := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	settleB := func(h *hist, outcome string) {
		d := "settled"
		if outcome == SettleRefunded {
			d = ""
		}
		h.env(EnvValue{Kind: EnvSettle, Outcome: outcome, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Client: "B", Digest: d})
	}
	settledReplay := func(h *hist, receipt string, replayed bool) {
		inv := h.call("B", write)
		h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: receipt, Digest: "settled", Replayed: boolP(replayed)})
	}
	// probeElsewhere: another operation whose result carries the probe's
	// answer, so the target is one that hands the probe's answers on.
	probeElsewhere := func(h *hist) {
		other := with(write, func(v *CallValue) { v.Token, v.Key, v.Arguments = "op2", "k2", map[string]any{"token": "op2"} })
		h.dispatch("op2")
		h.marked("C", other, "r5", false)
	}
	withOther := LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
		{Kind: EntryDebit, Amount: 3, Receipt: "r5"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	// holderStalls: A begins op1 and waits at dispatch.before (charged),
	// the clock passes the threshold, B is answered outcome_unknown r1.
	holderStalls := func(h *hist, v CallValue) int {
		holder := h.call("A", v)
		h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.before", Client: "A"})
		now := h.now.Add(61 * time.Second)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
		inv := h.call("B", v)
		h.answer("B", inv, Fail, CallValue{Tool: v.Tool, Token: v.Token, Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
		return holder
	}
	release := func(h *hist) { h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.before"}) }

	for _, tc := range []struct {
		name  string
		facts *Facts
		build func(h *hist)
		want  string
	}{
		// ---- (3) the holder's early return
		{"R1 holder gets the settled result NOT marked a replay", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(false)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R2 holder woken after a completed settlement runs the tool and gets its own result; nobody calls after", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(false)})
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R3 as R2, and later retries get the settled result (two results for one operation)", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(false)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R4 holder waiting at dispatch.before when settled completed runs the tool, then answered the settled replay", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "dispatches/double-dispatch"},
		{"R5 holder settled replay but the tool dispatched twice", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.dispatch("op1")
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "dispatches/double-dispatch"},
		{"R6 holder of ANOTHER operation (second API key) answered op1's settled result (held)", nil, func(h *hist) {
			probeElsewhere(h)
			other := with(write, func(v *CallValue) { v.Credential = "second-key" })
			oh := h.call("D", other)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.answer("D", oh, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R7 holder answered the settled result under a wrong receipt", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r9", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R8 the holder's own result stored over the settlement and replayed to a later retry", nil, func(h *hist) {
			probeElsewhere(h)
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(false)})
			inv := h.call("B", write)
			h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(true)})
			h.read(withOther)
		}, "answer/lost-outcome"},
		{"R9 refunded, no ledger capability: the holder runs and its result under the REFUNDED receipt is served, also to a retry", &Facts{Policy: PolicyDerived, WindowSeconds: 120, StaleLockSeconds: 60, Capabilities: []string{CapUpstream, CapWire}}, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleRefunded)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(false)})
			h.marked("B", write, "r1", true)
		}, "answer/wrong-refusal"},
		// ---- refunded
		{"F1 (settle-01, correct) holder in progress after a refund; retry runs afresh", nil, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleRefunded)
			release(h)
			h.answer("A", holder, Info, CallValue{Tool: "write", Token: "op1", Reason: ReasonInProgress, Retryable: true, Status: 200})
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, ""},
		{"F2 holder woken after a REFUND runs the tool and gets its own result under a new debit", nil, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleRefunded)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r2", Digest: "d-r2", Served: "op1", Replayed: boolP(false)})
			h.marked("B", write, "r2", true)
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, "answer/wrong-refusal"},
		{"F4 holder woken after a REFUND and after a retry ran it afresh gets that run's result", nil, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleRefunded)
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			release(h)
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r2", Digest: "d-r2", Served: "op1", Replayed: boolP(true)})
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, ""},
		{"F3 holder woken after a REFUND gets its own result under the refunded receipt", nil, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleRefunded)
			release(h)
			h.dispatch("op1")
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1", Replayed: boolP(false)})
			h.read(LedgerRead{Baseline: 100, Balance: 100, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}}})
		}, "ledger/wrong-amount"},
		// ---- effects observer
		{"E1 (settle-02 behind a read tool, correct) the holder's settled replay proves no write", &Facts{Policy: PolicyDerived, WindowSeconds: 120, StaleLockSeconds: 60, Capabilities: []string{CapWire, CapEffects, CapLedger}}, func(h *hist) {
			holder := holderStalls(h, write)
			settleB(h, SettleCompleted)
			settledReplay(h, "r1", true)
			release(h)
			h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			settledReplay(h, "r1", true)
			h.read(charged)
		}, ""},
		// ---- lastOpOf
		{"L1 (correct gateway) unkeyed: settled completed, B's retry past the window replays the settled result", &Facts{Policy: PolicyDerived, WindowSeconds: 30, StaleLockSeconds: 60, Capabilities: []string{CapUpstream, CapLedger, CapWire}}, func(h *hist) {
			probeElsewhere(h)
			u := unkeyed(write)
			holderStalls(h, u)
			settleB(h, SettleCompleted)
			inv := h.call("B", u)
			h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			h.read(withOther)
		}, ""},
		{"L1-old the same, settlement without Client (token/wallet)", &Facts{Policy: PolicyDerived, WindowSeconds: 30, StaleLockSeconds: 60, Capabilities: []string{CapUpstream, CapLedger, CapWire}}, func(h *hist) {
			probeElsewhere(h)
			u := unkeyed(write)
			holderStalls(h, u)
			h.env(EnvValue{Kind: EnvSettle, Outcome: SettleCompleted, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Digest: "settled"})
			inv := h.call("B", u)
			h.answer("B", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "settled", Replayed: boolP(true)})
			h.read(withOther)
		}, ""},
		{"L2 (correct gateway) D's last call was op2 in progress (no receipt): the steps settle the wallet's first uncertain op, op1", nil, func(h *hist) {
			probeElsewhere(h)
			op3 := with(write, func(v *CallValue) { v.Token, v.Key, v.Arguments = "op3", "k3", map[string]any{"token": "op3"} })
			holderStalls(h, write) // op1 uncertain, receipt r1
			h.call("E", op3)       // op3's holder, stalls
			h.refused("D", op3, ReasonInProgress, true)
			// steps: D's last answer names no receipt, so uncertainOf takes
			// the wallet's first listed uncertain operation (op1); the event
			// names D, D's last call's token, and got.Receipt (r1).
			h.env(EnvValue{Kind: EnvSettle, Outcome: SettleCompleted, Token: "op3", Wallet: write.Wallet, Receipt: "r1", Client: "D", Digest: "settled"})
			settledReplay(h, "r1", true) // op1 replays its settlement: right
			h.read(withOther)
		}, ""},
		{"L4 B's last call before the settlement reused k1 with other arguments (key_reused, no receipt): op1 answered outcome_unknown after its settlement", nil, func(h *hist) {
			holderStalls(h, write)
			reuse := with(write, func(v *CallValue) { v.Arguments = map[string]any{"token": "op1", "n": 2} })
			h.refused("B", reuse, ReasonKeyReused, false)
			// steps: receipt "" -> the wallet's only uncertain operation, op1, is settled; the event names B and B's last call's token (op1).
			settleB(h, SettleCompleted)
			inv := h.call("C", write)
			h.answer("C", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(charged)
		}, "answer/wrong-refusal"},
		{"L3 Client names B, whose last call is another wallet's operation: op1 answered outcome_unknown after its settlement", nil, func(h *hist) {
			holderStalls(h, write)
			w2 := with(write, func(v *CallValue) {
				v.Token, v.Key, v.Wallet, v.Arguments = "op4", "k4", "w2", map[string]any{"token": "op4"}
			})
			h.dispatch("op4")
			h.marked("B", w2, "r4", false)
			h.env(EnvValue{Kind: EnvSettle, Outcome: SettleCompleted, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Client: "B", Digest: "settled"})
			inv := h.call("C", write)
			h.answer("C", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(charged)
		}, "answer/wrong-refusal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts
			if tc.facts != nil {
				f = *tc.facts
			}
			h := newHist(f)
			tc.build(h)
			got := violations(Model(h.ops))
			t.Logf("model: %q", got)
			if !flags(got, tc.want) {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops)))
			}
		})
	}
}
