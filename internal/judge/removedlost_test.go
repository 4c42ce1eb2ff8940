package judge

import (
	"testing"
	"time"
)

// A removed tool starts new work for an unkeyed call past the window,
// marked not a replay, after an earlier unkeyed call's answer was lost
// (nothing shows it ran: no dispatch before the removal).
func TestModelRemovedToolAfterALostCall(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		dispatchBeforeRemoval bool
		replayed              *bool
	}{
		{"fresh result marked not a replay, dispatch after removal", false, boolP(false)},
		{"fresh result no marker, dispatch after removal", false, nil},
		{"fresh result marked not a replay, lost call dispatched before removal (2 dispatches after r1)", true, boolP(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(full)
			h.result("A", unkeyed(write), "r1", "d1")
			h.dispatch("op1")
			h.env(EnvValue{Kind: EnvClock, Now: timeP(h.now.Add(121 * time.Second)), Frozen: true})
			h.lost("A", unkeyed(write))
			if tc.dispatchBeforeRemoval {
				h.dispatch("op1")
			}
			h.env(EnvValue{Kind: EnvRemoveTool, Tool: "write"})
			inv := h.call("A", unkeyed(write))
			h.dispatch("op1")
			h.answer("A", inv, OK, CallValue{Tool: "write", Token: "op1", Receipt: "r2", Digest: "d-r2", Served: "op1", Replayed: tc.replayed})
			got := violations(Model(h.ops))
			t.Logf("violations %q", got)
			if len(got) == 0 {
				t.Errorf("no violation\n%s", dump(Model(h.ops)))
			}
		})
	}
}
