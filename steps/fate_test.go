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
		want   judge.Verdict
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

// The target's read tool (effects) observes what the probe would count,
// so a scenario that only counts dispatches passes there; one whose
// situation needs the probe itself (a held dispatch) is skipped, naming
// upstream, as without either.
func TestFateWithEffects(t *testing.T) {
	counts := catalog.Entry{ID: "retry-01", Steps: []catalog.Step{
		{Keyword: "Given ", Text: `an upstream tool "write" priced 3 credits`},
		{Keyword: "When ", Text: `"A" calls "write" with {"token":"$op1"} using key "$k1"`},
		{Keyword: "Then ", Text: `the probe saw "$op1" dispatched 1 time`},
		{Keyword: "And ", Text: `no operation was dispatched twice`},
	}}
	holds := catalog.Entry{ID: "twins-03", Steps: []catalog.Step{
		{Keyword: "Given ", Text: `an upstream tool "write" priced 3 credits`},
		{Keyword: "And ", Text: `the probe stalls "$op1"`},
		{Keyword: "Then ", Text: `the probe saw "$op1" dispatched 1 time`},
	}}
	p := &fakeProbe{}
	for _, tc := range []struct {
		name        string
		env         *Env
		counts      judge.Verdict
		holds       judge.Verdict
		missing     string
		holdMissing string
	}{
		{"probe", &Env{Probe: p, Caps: map[string]bool{judge.CapUpstream: true}}, judge.Passed, judge.Passed, "", ""},
		{"read tool", &Env{Probe: p, Effects: fakeEffects{p}, Caps: map[string]bool{judge.CapEffects: true}}, judge.Passed, judge.Skipped, "", judge.CapUpstream},
		{"neither", &Env{Probe: p, Caps: map[string]bool{}}, judge.Skipped, judge.Skipped, judge.CapUpstream, judge.CapUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f := tc.env.Fate(counts); f.Verdict != tc.counts || f.Capability != tc.missing {
				t.Errorf("counting scenario: %+v, want %s (%q)", f, tc.counts, tc.missing)
			}
			if f := tc.env.Fate(holds); f.Verdict != tc.holds || f.Capability != tc.holdMissing {
				t.Errorf("holding scenario: %+v, want %s (%q)", f, tc.holds, tc.holdMissing)
			}
		})
	}
}

// A crash is a fault action the target must list too: a control API with
// faults whose fault_actions leave out "crash" skips the crash scenarios,
// naming faults, like a fault point it does not list.
func TestFateOfACrash(t *testing.T) {
	entry := catalog.Entry{ID: "crash-01", Steps: []catalog.Step{
		{Keyword: "Given ", Text: `a crash is armed at "reserve.done" for "write"`},
		{Keyword: "Then ", Text: `"A" lost the connection without an answer`},
	}}
	faults := map[string]bool{judge.CapFaults: true}
	for _, tc := range []struct {
		name    string
		caps    map[string]bool
		actions []string
		points  []string
		want    judge.Verdict
	}{
		{"no faults", map[string]bool{}, nil, nil, judge.Skipped},
		{"crash listed", faults, []string{"pause", "crash"}, []string{"reserve.done"}, judge.Passed},
		{"no action list", faults, nil, nil, judge.Passed},
		{"crash not listed", faults, []string{"pause", "fail", "drop_response"}, nil, judge.Skipped},
		{"the point not listed", faults, []string{"crash"}, []string{"dispatch.before"}, judge.Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Env{Caps: tc.caps, FaultPoints: tc.points, FaultActions: tc.actions}
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
