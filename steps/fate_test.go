package steps

import (
	"testing"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// A fault point the target's control API does not list is a situation the
// harness cannot create there, like a missing capability: the scenario is
// skipped with the capability named, never run to a failure at the arm.
func TestFateOfAFaultPoint(t *testing.T) {
	entry := catalog.Entry{ID: "lock-05", Steps: []catalog.Step{
		{Keyword: "Given ", Text: `a pause is armed at "reserve.done" for "write"`},
		{Keyword: "And ", Text: `a pause is armed at "takeover.read" for "write"`},
		{Keyword: "Then ", Text: `"B" is refused with retryable "idempotency_in_progress"`},
	}}
	for _, tc := range []struct {
		name   string
		caps   map[string]bool
		points []string
		want   string
	}{
		{"no faults", map[string]bool{}, nil, judge.Skipped},
		{"faults, every point listed", map[string]bool{judge.CapFaults: true}, []string{"reserve.done", "takeover.read"}, judge.Passed},
		{"faults, no list", map[string]bool{judge.CapFaults: true}, nil, judge.Passed},
		{"faults, the point not listed", map[string]bool{judge.CapFaults: true}, []string{"reserve.done", "dispatch.before"}, judge.Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Env{Caps: tc.caps, FaultPoints: tc.points}
			f := e.Fate(entry)
			if f.Verdict != tc.want {
				t.Fatalf("fate %+v, want %s", f, tc.want)
			}
			if tc.want == judge.Skipped && f.Capability != judge.CapFaults {
				t.Errorf("skipped for %q, want %q", f.Capability, judge.CapFaults)
			}
		})
	}
}
