package judge

import (
	"testing"
	"time"
)

// TestModelListedUncertain: a retry answered in progress for an operation
// whose holder charged it and waits at a pause is wrong once the gateway
// itself lists the operation uncertain right after (same gateway time,
// the holder still waiting, no other call of it between): the answer had
// to be outcome_unknown. Without the listing, or with the clock moved,
// the holder woken or the operation not among those listed, in progress
// stands (a gateway may renew a live holder's lease).
func TestModelListedUncertain(t *testing.T) {
	facts := full
	facts.StaleLockSeconds = 60
	charged := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	// stalled: A begins op1 and waits at dispatch.before (charged), the
	// clock passes the threshold, B is answered in progress.
	stalled := func(h *hist) int {
		holder := h.call("A", write)
		h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.before", Client: "A"})
		now := h.now.Add(61 * time.Second)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
		h.refused("B", write, ReasonInProgress, true)
		return holder
	}
	listed := func(h *hist, receipts ...string) {
		h.env(EnvValue{Kind: EnvListed, Receipts: append([]string{}, receipts...)})
	}
	woken := func(h *hist, holder int) {
		h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.before"})
		h.dispatch("op1")
		h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1"})
		h.read(charged)
	}
	for _, tc := range []struct {
		name  string
		build func(h *hist)
		want  string
	}{
		{"listed uncertain right after the in-progress answer", func(h *hist) {
			holder := stalled(h)
			listed(h, "r1")
			woken(h, holder)
		}, "answer/wrong-refusal"},
		{"no listing: a renewed lease may explain it", func(h *hist) {
			woken(h, stalled(h))
		}, ""},
		{"listed, but not this operation", func(h *hist) {
			holder := stalled(h)
			listed(h, "r7")
			woken(h, holder)
		}, ""},
		{"listed only after the clock moved on", func(h *hist) {
			holder := stalled(h)
			now := h.now.Add(63 * time.Second) // 2 s past the last freeze
			h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
			listed(h, "r1")
			woken(h, holder)
		}, ""},
		{"listed only after the holder woke", func(h *hist) {
			holder := stalled(h)
			woken(h, holder)
			listed(h, "r1")
		}, ""},
		{"another call of the operation between", func(h *hist) {
			holder := stalled(h)
			inv := h.call("C", write)
			h.answer("C", inv, Fail, CallValue{Tool: "write", Token: "op1", Reason: ReasonOutcomeUnknown, Receipt: "r1", Status: 200})
			listed(h, "r1")
			woken(h, holder)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(facts)
			tc.build(h)
			got := violations(Model(h.ops))
			if !flags(got, tc.want) {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops)))
			}
		})
	}
}
