package bench

import (
	"strings"
	"testing"
	"time"
)

// finish states what the probe's counts show: a replay or a storm that
// reached the probe again is a DOUBLE DISPATCH line, one dispatch is not.
func TestTargetFindings(t *testing.T) {
	phase := func(name string, sent, dispatches int) TargetPhase {
		return TargetPhase{Stats: Stats{Name: name, Calls: sent, Rate: 100, P99: time.Millisecond}, Sent: sent, Dispatches: dispatches}
	}
	storm := func(d int) []TargetStorm {
		return []TargetStorm{{Through: "bare", N: 8, Dispatches: 8}, {Through: "gateway", N: 8, Dispatches: d}}
	}
	for _, tc := range []struct {
		name   string
		rounds [][]TargetPhase
		storms []TargetStorm
		double []string // substrings of the DOUBLE DISPATCH lines, in order
	}{
		{"correct", [][]TargetPhase{{phase(TargetBare, 10, 10), phase(TargetKeyedFirst, 10, 10), phase(TargetReplays, 10, 0)}}, storm(1), nil},
		{"plain proxy", [][]TargetPhase{{phase(TargetBare, 10, 10), phase(TargetKeyedFirst, 10, 10), phase(TargetReplays, 10, 10)}}, storm(8),
			[]string{"10 replays", "a storm of 8 identical keyed calls dispatched 8 times"}},
		{"dispatches summed over rounds", [][]TargetPhase{{phase(TargetReplays, 5, 0)}, {phase(TargetReplays, 5, 2)}}, nil,
			[]string{"10 replays (same key, same arguments) reached the probe again 2 times"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := TargetResults{Rounds: tc.rounds, Storms: tc.storms}
			r.finish()
			var double []string
			for _, f := range r.Findings {
				if strings.HasPrefix(f, "DOUBLE DISPATCH") {
					double = append(double, f)
				}
			}
			if len(double) != len(tc.double) {
				t.Fatalf("findings %q, want %d double dispatch lines", r.Findings, len(tc.double))
			}
			for i, want := range tc.double {
				if !strings.Contains(double[i], want) {
					t.Errorf("finding %q lacks %q", double[i], want)
				}
			}
		})
	}
}

// The summary is the median over rounds, and a phase that answered
// nothing has a p99 ratio of 0 (JSON holds no +Inf), not a failure to
// encode.
func TestTargetSummaryMedians(t *testing.T) {
	r := TargetResults{Rounds: [][]TargetPhase{
		{{Stats: Stats{Name: TargetBare, Calls: 1, Rate: 100}, Ratio: 1}},
		{{Stats: Stats{Name: TargetBare, Calls: 1, Rate: 300}, Ratio: 1}},
		{{Stats: Stats{Name: TargetBare, Calls: 1, Rate: 200}, Ratio: 1}},
	}}
	r.finish()
	if len(r.Summary) != 1 || r.Summary[0].Rate != 200 || r.Summary[0].Calls != 3 {
		t.Errorf("summary %+v, want the median rate 200 over 3 calls", r.Summary)
	}
	if got := finite(P99Ratio(Stats{}, Stats{P99: time.Millisecond})); got != 0 {
		t.Errorf("p99 ratio of a phase that answered nothing: %v, want 0", got)
	}
}
