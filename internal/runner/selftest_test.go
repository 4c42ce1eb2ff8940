package runner

import (
	"testing"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// A catch counts only when the check named for the bug is violated: a lock
// scenario that failed because A never reached its pause has not shown the
// second dispatch the bug causes.
func TestCatchCountsOnlyTheNamedCheck(t *testing.T) {
	steps := []reports.StepResult{{Text: `"A" waits at "fence.read"`}, {Text: `the probe saw "$op1" dispatched 1 time`}}
	scenario := func(violatedAt ...int) reports.Scenario {
		s := reports.Scenario{ID: "lock-01", Verdict: judge.Passed, Steps: steps}
		for _, i := range violatedAt {
			s.Checks = append(s.Checks, judge.Check{Step: "some check", State: judge.Violated, StepIndex: i, Actual: "2 dispatch(es)"})
			s.Verdict = judge.Failed
		}
		return s
	}
	named := []bugmap.Check{{Scenario: "lock-01", Step: `the probe saw "$op1" dispatched 1 time`}}
	for _, tc := range []struct {
		name string
		s    reports.Scenario
		ok   bool
	}{
		{"failed at the named check", scenario(1), true},
		{"failed at the pause and the named check", scenario(0, 1), true},
		{"failed at the pause only", scenario(0), false},
		{"passed", scenario(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := catchRow(reports.Run{Scenarios: []reports.Scenario{tc.s}}, "stale-lock-no-fence", named, nil)
			if row.OK != tc.ok || len(row.Checks) != 1 || row.Checks[0].Violated != tc.ok {
				t.Errorf("catch row %+v, want ok=%v", row, tc.ok)
			}
		})
	}
}
