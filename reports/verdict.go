package reports

import (
	"fmt"
	"strings"
)

// Verdict decides whether a run is green, from the scenarios alone, so the
// same answer comes out of a live run and out of files read back by Load.
//
// The run fails when a scenario
//   - failed, or is an unexpected pass (an expected failure that passed);
//   - is skipped or undefined and the run is Strict and the scenario is
//     @must (a scenario with a level other than "should", including none, is
//     treated as @must here: a missing level tag must not soften --strict);
//   - claims "passed" while one of its recorded checks failed (evidence that
//     contradicts its verdict);
//   - has a verdict that is none of the known ones (nothing is passed unless
//     its checks were observed).
//
// why has one line per problem, in scenario order; it is empty when ok.
func Verdict(run Run) (ok bool, why []string) {
	for _, p := range problems(run) {
		why = append(why, p.why)
	}
	return len(why) == 0, why
}

// problem is one reason a run fails, tied to the scenario that caused it.
type problem struct {
	index int // into run.Scenarios
	why   string
}

func problems(run Run) []problem {
	var out []problem
	for i, s := range run.Scenarios {
		if why := scenarioProblem(s, run.Strict); why != "" {
			out = append(out, problem{index: i, why: why})
		}
	}
	return out
}

// scenarioProblem says why s fails the run, or "" when it does not.
func scenarioProblem(s Scenario, strict bool) string {
	name := fmt.Sprintf("%s [%s]", displayID(s.ID), displayLevel(s.Level))
	switch s.Verdict {
	case Passed:
		for _, c := range s.Checks {
			if !c.OK {
				return fmt.Sprintf("%s: verdict %q but check %q failed", name, Passed, firstLine(c.Step))
			}
		}
		return ""
	case ExpectedFailure:
		return ""
	case Failed:
		return withReason(name+": failed", s.Reason)
	case UnexpectedPass:
		return withReason(name+": unexpected pass (listed as an expected failure, but passed)", s.Reason)
	case Skipped, Undefined:
		if strict && isMust(s.Level) {
			return withReason(fmt.Sprintf("%s: %s under --strict", name, s.Verdict), s.Reason)
		}
		return ""
	default:
		return withReason(fmt.Sprintf("%s: unknown verdict %q", name, s.Verdict), s.Reason)
	}
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
var knownVerdicts = []string{Passed, Failed, Skipped, Undefined, ExpectedFailure, UnexpectedPass}

// countVerdicts counts scenarios per verdict; every known verdict is present,
// zero or not, and an unknown verdict gets a key of its own.
func countVerdicts(ss []Scenario) map[string]int {
	m := make(map[string]int, len(knownVerdicts))
	for _, v := range knownVerdicts {
		m[v] = 0
	}
	for _, s := range ss {
		m[verdictKey(s.Verdict)]++
	}
	return m
}

func verdictKey(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

func levelKey(l string) string {
	if l == "" {
		return "(none)"
	}
	return l
}

// totals are the three numbers of the last line of PrintSummary. failed is
// the number of scenarios that fail the run (so "0 failed" exactly when
// Verdict is ok), passed the number of clean passes, skipped all the rest:
// skipped, undefined and expected failures that do not fail the run.
type totals struct{ passed, failed, skipped int }

func computeTotals(run Run) totals {
	bad := make(map[int]bool)
	for _, p := range problems(run) {
		bad[p.index] = true
	}
	var t totals
	for i, s := range run.Scenarios {
		switch {
		case bad[i]:
			t.failed++
		case s.Verdict == Passed:
			t.passed++
		default:
			t.skipped++
		}
	}
	return t
}
