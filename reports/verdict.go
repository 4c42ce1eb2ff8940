package reports

import (
	"fmt"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Run verdicts, each with its own exit code in `mcpconform run`.
const (
	RunPass        = "PASS"
	RunFail        = "FAIL"
	RunIncomplete  = "INCOMPLETE"
	RunInterrupted = "INTERRUPTED"
)

// Judge decides a run's verdict from the scenarios alone, so the same answer
// comes out of a live run and out of files read back by Load. It judges
// against the run's claimed Level (full when none is recorded):
//
//   - FAIL when a scenario failed, is an unexpected pass (an expected
//     failure that passed), has an undefined step (a harness defect), or
//     claims a verdict its record contradicts (passed with a check not
//     held, with no check at all, or with a step that did not pass);
//   - INCOMPLETE when nothing failed but a @must scenario within the level
//     was skipped, or left a check of the level unobserved (a scenario
//     without a level tag counts as @must: a missing tag must not soften
//     the verdict);
//   - INTERRUPTED when the run was stopped before it finished (an
//     interrupted scenario, whatever its checks saw, only keeps a run that
//     was not stopped from a PASS: INCOMPLETE);
//   - PASS otherwise. Checks beyond the claimed level are shown but do not
//     make the run incomplete; a violated one still fails it.
//
// why has one line per problem, in scenario order; it is empty on PASS.
func Judge(run Run) (result string, why []string) {
	failed, incomplete := false, false
	for _, p := range problems(run) {
		why = append(why, p.why)
		failed = failed || p.fails
		incomplete = incomplete || !p.fails
	}
	switch {
	case run.Interrupted:
		return RunInterrupted, append(why, "the run was interrupted before every scenario finished")
	case failed:
		return RunFail, why
	case incomplete:
		return RunIncomplete, why
	}
	return RunPass, why
}

// Verdict reports whether the run is a PASS, and why not.
func Verdict(run Run) (ok bool, why []string) {
	result, why := Judge(run)
	return result == RunPass, why
}

// ClaimedLevel is the level a run is judged at: its own, or full for files
// written before levels existed.
func ClaimedLevel(run Run) string {
	if run.Level == "" {
		return LevelFull
	}
	return run.Level
}

// problem is one reason a run is not a PASS, tied to the scenario that
// caused it; fails tells a failure from a gap in what was observed.
type problem struct {
	index int // into run.Scenarios
	why   string
	fails bool
}

func problems(run Run) []problem {
	var out []problem
	level := ClaimedLevel(run)
	for i, s := range run.Scenarios {
		if why, fails := scenarioProblem(s, level); why != "" {
			out = append(out, problem{index: i, why: why, fails: fails})
		}
	}
	return out
}

// scenarioProblem says why s keeps the run from a PASS at level, and
// whether that is a failure (or only something not observed); "" when it
// does not.
func scenarioProblem(s Scenario, level string) (why string, fails bool) {
	name := fmt.Sprintf("%s [%s]", displayID(s.ID), displayLevel(s.Level))
	for _, c := range s.Checks {
		// An interrupted scenario's violated check is no contradiction: the
		// runner puts the stop first, as what the steps saw after it is not
		// the target's doing, and it counts as skipped (Outcomes).
		if c.Status() == judge.Violated && s.Verdict != judge.Failed && s.Verdict != judge.ExpectedFailure && s.Verdict != judge.Interrupted {
			return fmt.Sprintf("%s: verdict %q but check %q was violated", name, s.Verdict, firstLine(c.Step)), true
		}
	}
	switch s.Verdict {
	case judge.Passed:
		if len(s.Checks) == 0 {
			return fmt.Sprintf("%s: verdict %q but no check was recorded", name, judge.Passed), true
		}
		for _, c := range s.Checks {
			if c.Status() != judge.Held {
				return fmt.Sprintf("%s: verdict %q but check %q was %s", name, judge.Passed, firstLine(c.Step), c.Status()), true
			}
		}
		// The runner passes a scenario only when every step passed; older
		// files have no steps.
		for _, st := range s.Steps {
			if st.Status != "passed" {
				return fmt.Sprintf("%s: verdict %q but step %q was %s", name, judge.Passed, firstLine(st.Text), st.Status), true
			}
		}
		return "", false
	case judge.ExpectedFailure, judge.NotApplicable:
		return "", false
	case judge.Failed:
		return withReason(name+": failed", s.Reason), true
	case judge.UnexpectedPass:
		return withReason(name+": unexpected pass (listed as an expected failure, but passed)", s.Reason), true
	case judge.Undefined:
		return withReason(name+": undefined step", s.Reason), true
	case judge.Interrupted:
		return withReason(name+": interrupted", s.Reason), false
	case judge.Skipped:
		missing := s.Missing
		if missing == "" {
			missing = judge.CapFixtures // a skip that names nothing is judged as a full-level gap
		}
		if isMust(s.Level) && WithinLevel(missing, level) && inScope(s, level) {
			return withReason(fmt.Sprintf("%s: skipped, needs %s (level %s)", name, missing, CapabilityLevel(missing)), s.Reason), false
		}
		return "", false
	case judge.Incomplete:
		if !isMust(s.Level) || !inScope(s, level) {
			return "", false
		}
		var gaps []string
		for _, c := range s.Checks {
			if c.Status() == judge.NotObserved && WithinLevel(capOf(c), level) {
				gaps = append(gaps, fmt.Sprintf("%q (needs %s)", firstLine(c.Step), capOf(c)))
			}
		}
		// A later step skipped for a capability of the level left the
		// scenario's checks of it unmade, as a skipped scenario's are.
		if s.Missing != "" && WithinLevel(s.Missing, level) {
			gaps = append(gaps, fmt.Sprintf("the steps after one that needs %s", s.Missing))
		}
		if len(gaps) == 0 {
			return "", false
		}
		return fmt.Sprintf("%s: incomplete at level %s, not observed: %s", name, level, strings.Join(gaps, ", ")), false
	default:
		return withReason(fmt.Sprintf("%s: unknown verdict %q", name, s.Verdict), s.Reason), true
	}
}

// inScope reports whether every situation a scenario needs (its @needs-*
// tags) belongs to the level: a scenario that needs a clock is not part of
// what a wire-level run claims, however far it got.
func inScope(s Scenario, level string) bool {
	for _, t := range s.Tags {
		if need, ok := strings.CutPrefix(t, "@needs-"); ok && !WithinLevel(need, level) {
			return false
		}
	}
	return true
}

// capOf is the capability a check needs; a check that names none is judged
// as needing everything.
func capOf(c judge.Check) string {
	if c.Capability == "" {
		return judge.CapFixtures
	}
	return c.Capability
}

func withReason(msg, reason string) string {
	if r := firstLine(reason); r != "" {
		return msg + ": " + r
	}
	return msg
}

// isMust reports whether a level counts as @must for --strict.
func isMust(level string) bool { return level != "should" }

func displayID(id string) string {
	if id == "" {
		return "(no id)"
	}
	return id
}

func displayLevel(level string) string {
	if level == "" {
		return "no level"
	}
	return level
}

// firstLine is the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// knownVerdicts, in the order reports show them.
var knownVerdicts = []judge.Verdict{judge.Passed, judge.Failed, judge.Incomplete, judge.Skipped, judge.Undefined, judge.NotApplicable, judge.Interrupted, judge.ExpectedFailure, judge.UnexpectedPass}

// countVerdicts counts scenarios per verdict; every known verdict is present,
// zero or not, and an unknown verdict gets a key of its own.
func countVerdicts(ss []Scenario) map[string]int {
	m := make(map[string]int, len(knownVerdicts))
	for _, v := range knownVerdicts {
		m[string(v)] = 0
	}
	for _, s := range ss {
		m[verdictKey(s.Verdict)]++
	}
	return m
}

func verdictKey(v judge.Verdict) string {
	if v == "" {
		return "(none)"
	}
	return string(v)
}

func levelKey(l string) string {
	if l == "" {
		return "(none)"
	}
	return l
}

// totals are the three numbers of the last line of PrintSummary, the same
// as JUnit's: failed counts the scenarios that fail the run (JUnit's
// failures and errors), passed the clean passes, skipped all the rest
// (JUnit's skipped), whether or not they make the run INCOMPLETE.
type totals struct{ passed, failed, skipped int }

func computeTotals(run Run) totals {
	var t totals
	for _, o := range Outcomes(run) {
		switch o {
		case OutcomePassed:
			t.passed++
		case OutcomeFailed, OutcomeError:
			t.failed++
		default:
			t.skipped++
		}
	}
	return t
}
