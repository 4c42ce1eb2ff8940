package reports

import "github.com/mcpconform/mcpconform/internal/judge"

// Outcome is how a scenario counts in every output a CI reads: the
// console's last line, the JSON lines summary, report.html's totals, JUnit
// and Cucumber JSON. It is decided once, here, so they cannot disagree.
type Outcome string

const (
	// OutcomePassed: the scenario passed and nothing about it keeps the
	// run from a PASS.
	OutcomePassed Outcome = "passed"
	// OutcomeFailed: it fails the run: a violated check, an unexpected
	// pass, a verdict its checks contradict, an unknown verdict.
	OutcomeFailed Outcome = "failed"
	// OutcomeError: it fails the run through a harness defect (an
	// undefined step), a JUnit <error>.
	OutcomeError Outcome = "error"
	// OutcomeSkipped: everything else: skipped, incomplete, not
	// applicable, waived, and interrupted (a stopped run is never a
	// failure of the target). Whether a skip makes the run INCOMPLETE is
	// the run's verdict, not the count.
	OutcomeSkipped Outcome = "skipped"
)

// Outcomes gives each scenario of run its Outcome, in run order.
func Outcomes(run Run) []Outcome {
	failing := map[int]bool{}
	for _, p := range problems(run) {
		if p.fails {
			failing[p.index] = true
		}
	}
	out := make([]Outcome, len(run.Scenarios))
	for i, s := range run.Scenarios {
		switch {
		case s.Verdict == judge.Interrupted:
			out[i] = OutcomeSkipped
		case failing[i] && s.Verdict == judge.Undefined:
			out[i] = OutcomeError
		case failing[i]:
			out[i] = OutcomeFailed
		case s.Verdict == judge.Passed:
			out[i] = OutcomePassed
		default:
			out[i] = OutcomeSkipped
		}
	}
	return out
}
