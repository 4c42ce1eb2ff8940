package judge

import (
	"testing"
	"time"
)

// The listing rule fails no correct gateway whose holder charged late
// (held at reserve.done first): the retry is in progress (its record 59.7 s
// old), the operation crosses the threshold half a second later and is
// listed then.
func TestModelListedAfterALateCharge(t *testing.T) {
	facts := full
	facts.StaleLockSeconds = 60
	charged := LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}}
	h := newHist(facts)
	t0 := h.now
	at := func(d time.Duration) {
		now := t0.Add(d)
		h.env(EnvValue{Kind: EnvClock, Now: &now, Frozen: true})
	}
	at(0)
	h.env(EnvValue{Kind: EnvFault, Point: "reserve.done", Action: "pause", Tool: "write"})
	h.env(EnvValue{Kind: EnvFault, Point: "dispatch.before", Action: "pause", Tool: "write"})
	holder := h.call("A", write)
	h.env(EnvValue{Kind: EnvWaiting, Point: "reserve.done", Client: "A"})
	at(10 * time.Second)
	h.env(EnvValue{Kind: EnvRelease, Point: "reserve.done", Tool: "write", Action: "pause"})
	h.env(EnvValue{Kind: EnvWaiting, Point: "dispatch.before", Client: "A"})
	at(69700 * time.Millisecond)
	h.refused("B", write, ReasonInProgress, true)
	at(70200 * time.Millisecond)
	h.env(EnvValue{Kind: EnvListed, Receipts: []string{"r1"}})
	h.env(EnvValue{Kind: EnvRelease, Point: "dispatch.before", Tool: "write", Action: "pause"})
	h.dispatch("op1")
	h.answer("A", holder, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r1", Digest: "d-r1", Served: "op1"})
	h.read(charged)
	got := violations(Model(h.ops))
	if len(got) != 0 {
		t.Errorf("violations %q on a correct gateway\n%s", got, dump(Model(h.ops)))
	}
}
