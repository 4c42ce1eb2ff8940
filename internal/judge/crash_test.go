package judge

import (
	"testing"
	"time"
)

// TestModelCrash: the gateway process serving A is killed at a fault point
// (EnvCrash, its crash fault gone with it: EnvRelease); A's call ends with
// no answer and the retries reach another process. The crashed holder never
// wakes: its call is one that may have run, nothing more. want is the
// verdict a correct judge gives.
func TestModelCrash(t *testing.T) {
	facts := full
	facts.StaleLockSeconds = 60
	crash := func(h *hist, point string) {
		h.env(EnvValue{Kind: EnvFault, Point: point, Action: "crash", Tool: "write"})
		h.lost("A", write)
		h.env(EnvValue{Kind: EnvCrash, Point: point, Client: "A", Tool: "write"})
		h.env(EnvValue{Kind: EnvRelease, Point: point, Action: "crash", Tool: "write"})
	}
	// ranThenCrashed: A's tool ran and its outcome was stored (r1) when
	// its process was killed at dispatch.after.
	ranThenCrashed := func(h *hist) {
		h.env(EnvValue{Kind: EnvFault, Point: "dispatch.after", Action: "crash", Tool: "write"})
		inv := h.call("A", write)
		h.dispatch("op1")
		h.answer("A", inv, Info, CallValue{Tool: "write", Token: "op1"})
		h.env(EnvValue{Kind: EnvCrash, Point: "dispatch.after", Client: "A", Tool: "write"})
		h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.after", Action: "crash", Tool: "write"})
	}
	pastStale := func(h *hist) {
		now := h.now.Add(61 * time.Second)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
	}
	one := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"reserve.done: taken over past the threshold, run once, then replayed", func(h *hist) {
			crash(h, "reserve.done")
			pastStale(h)
			h.dispatch("op1")
			h.marked("B", write, "r1", false)
			h.marked("B", write, "r1", true)
			h.read(one)
		}, ""},
		{"reserve.done: the takeover's fresh run marked a replay", func(h *hist) {
			crash(h, "reserve.done")
			pastStale(h)
			h.dispatch("op1")
			h.marked("B", write, "r1", true)
			h.read(one)
		}, "answer/lost-outcome"},
		{"reserve.done: the takeover runs it twice", func(h *hist) {
			crash(h, "reserve.done")
			pastStale(h)
			h.dispatch("op1")
			h.dispatch("op1")
			h.marked("B", write, "r1", false)
			h.read(one)
		}, "dispatches/double-dispatch"},
		{"dispatch.before: outcome_unknown past the threshold, settled refunded, run afresh, replayed", func(h *hist) {
			crash(h, "dispatch.before")
			pastStale(h)
			inv := h.call("B", write)
			h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.env(EnvValue{Kind: EnvSettle, Outcome: SettleRefunded, Token: "op1", Wallet: write.Wallet, Receipt: "r1", Client: "B"})
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			h.marked("B", write, "r2", true)
			h.read(LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, ""},
		{"dispatch.before: outcome_unknown before the threshold", func(h *hist) {
			crash(h, "dispatch.before")
			inv := h.call("B", write)
			h.answer("B", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(one)
		}, "answer/wrong-refusal"},
		// A killed process renews no lease: past the threshold since the
		// crash, in progress would have the client retry for ever.
		{"dispatch.before: in progress past the threshold since the crash", func(h *hist) {
			crash(h, "dispatch.before")
			pastStale(h)
			h.refused("B", write, ReasonInProgress, true)
			h.read(one)
		}, "answer/wrong-refusal"},
		{"reserve.done: in progress past the threshold since the crash", func(h *hist) {
			crash(h, "reserve.done")
			pastStale(h)
			h.refused("B", write, ReasonInProgress, true)
		}, "answer/wrong-refusal"},
		{"dispatch.before: in progress within the threshold", func(h *hist) {
			crash(h, "dispatch.before")
			h.refused("B", write, ReasonInProgress, true)
			h.read(one)
		}, ""},
		{"dispatch.before: in progress past the threshold while another call of it runs", func(h *hist) {
			crash(h, "dispatch.before")
			pastStale(h)
			c := h.call("C", write)
			h.refused("B", write, ReasonInProgress, true)
			h.answer("C", c, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			h.read(one)
		}, ""},
		{"dispatch.after: the retry replays the stored outcome", func(h *hist) {
			ranThenCrashed(h)
			h.marked("B", write, "r1", true)
			h.read(one)
		}, ""},
		{"dispatch.after: the retry runs it again", func(h *hist) {
			ranThenCrashed(h)
			h.dispatch("op1")
			h.marked("B", write, "r2", false)
			h.read(LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{
				{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}})
		}, "dispatches/double-dispatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(facts)
			tc.build(h)
			got := violations(Model(h.ops))
			if !flags(got, tc.want) {
				t.Errorf("violations %v, want %q", got, tc.want)
			}
		})
	}
}
