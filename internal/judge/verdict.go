package judge

import (
	"fmt"
	"strings"
)

// Verdict is a scenario's verdict, as summary.json and the other outputs
// write it.
type Verdict string

// Scenario verdicts. Nothing is "passed" unless its checks were observed.
const (
	Passed Verdict = "passed" // every check observed and held, at least one
	Failed Verdict = "failed" // a check was observed and violated
	// Incomplete: nothing violated, but some check could not be observed
	// (the target lacks the capability that would observe it).
	Incomplete Verdict = "incomplete"
	// Skipped: the situation could not be created at all (no clock to move,
	// no fault point to pause at); the scenario names the capability.
	Skipped   Verdict = "skipped"
	Undefined Verdict = "undefined" // a step without a definition (a harness defect)
	// NotApplicable: decided before the scenario runs: it is for another
	// unkeyed policy, an MCP version the target does not serve, or a
	// feature the profile does not declare. It does not count.
	NotApplicable   Verdict = "not-applicable"
	Interrupted     Verdict = "interrupted" // the run was stopped before it finished
	ExpectedFailure Verdict = "expected-failure"
	UnexpectedPass  Verdict = "unexpected-pass" // listed as an expected failure but passed: fails the run
)

// String is the verdict as written.
func (v Verdict) String() string { return string(v) }

// Ending is how a scenario's steps ended, besides its checks: what the
// verdict rule needs to know that the checks do not say.
type Ending struct {
	// NotApplicable is why the scenario does not apply to the target,
	// decided before it ran; "" when it applies.
	NotApplicable string
	// Interrupted: the run was stopped while the scenario ran.
	Interrupted bool
	// Undefined is the error of a step without a definition.
	Undefined string
	// Skip is why a step could not create its situation, and Missing the
	// capability that would have let it.
	Skip, Missing string
	// Error is any other step error: the harness could not drive the
	// scenario (a call that never came back, a step that failed).
	Error string
}

// Decision is a scenario's verdict and the reason shown with it.
type Decision struct {
	Verdict Verdict
	Reason  string
	// First is the index in the checks of the finding: the violated check
	// that leads (the most harmful, then the first), -1 when none.
	First int
}

// Decide is the one verdict rule, used live, at the end-of-run recount, by
// recheck, by bundle verify and by explore:
//
//   - undefined when a step has no definition (the harness is at fault);
//   - interrupted when the run was stopped while the scenario ran;
//   - failed when any check was violated, whatever else is true of the
//     scenario (a scenario that ran and violated a check is never "not
//     applicable", "skipped" or "incomplete");
//   - not-applicable when it was decided so before it ran;
//   - skipped when its situation could not be created before a step
//     checked anything (the model's checks of what little ran do not
//     count, unless violated); incomplete when that came after a step's
//     check;
//   - failed when a step failed for another reason, or nothing was checked;
//   - incomplete when some check was not observed;
//   - passed when every check held.
func Decide(checks []Check, end Ending) Decision {
	first := Finding(checks)
	var unobserved []string
	stepChecks := 0
	for _, c := range checks {
		if c.Status() == NotObserved {
			unobserved = append(unobserved, fmt.Sprintf("%s (needs %s)", c.Step, c.Capability))
		}
		if !c.Model {
			stepChecks++
		}
	}
	switch {
	case end.Undefined != "":
		return Decision{Verdict: Undefined, Reason: end.Undefined, First: first}
	case end.Interrupted:
		return Decision{Verdict: Interrupted, Reason: "the run was interrupted", First: first}
	case first >= 0:
		return Decision{Verdict: Failed, First: first}
	case end.NotApplicable != "":
		return Decision{Verdict: NotApplicable, Reason: end.NotApplicable, First: -1}
	case end.Skip != "" && stepChecks > 0:
		return Decision{Verdict: Incomplete, Reason: "a later step was skipped: " + end.Skip, First: -1}
	case end.Skip != "":
		return Decision{Verdict: Skipped, Reason: end.Skip, First: -1}
	case end.Error != "":
		return Decision{Verdict: Failed, Reason: end.Error, First: -1}
	case len(checks) == 0:
		return Decision{Verdict: Failed, Reason: "no check was recorded", First: -1}
	case len(unobserved) > 0:
		return Decision{Verdict: Incomplete, Reason: "not observed: " + strings.Join(unobserved, "; "), First: -1}
	}
	return Decision{Verdict: Passed, First: -1}
}

// Finding is the index of the violated check a failure leads with: the
// most harmful (Harms order; a check without a harm after those with one),
// the earliest of equal harm; -1 when nothing was violated.
func Finding(checks []Check) int {
	best := -1
	for i, c := range checks {
		if c.Status() != Violated {
			continue
		}
		if best < 0 || c.Harm.Rank() < checks[best].Harm.Rank() {
			best = i
		}
	}
	return best
}
