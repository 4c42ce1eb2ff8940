package reports

import (
	"fmt"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Recheck recomputes, from a scenario's history alone, every check it can
// (through the judge: each step's check by its kind, the model's by
// judging the history again), and holds the verdict to the checks: the
// verdict rule applied to the recorded checks and ending must give the
// recorded verdict, and a passed scenario needs at least one check, every
// one held, one for each Then step. Each returned check carries the
// recomputed outcome; mismatch says the scenario's recorded word is
// contradicted.
func Recheck(s Scenario) (out []judge.Check, mismatch bool) {
	out, mismatch = judge.Recheck(s.Checks, s.History)
	why := ""
	if s.Ending != nil {
		d := judge.Decide(s.Checks, *s.Ending)
		if v := runVerdict(s.Verdict); v != d.Verdict {
			why = fmt.Sprintf("the verdict rule gives %q for the recorded checks and ending, the record says %q", d.Verdict, s.Verdict)
		}
	}
	if why == "" && s.Verdict == judge.Passed {
		for _, c := range s.Checks {
			if c.Status() != judge.Held {
				why = fmt.Sprintf("the check %q is %s", c.Step, c.Status())
				break
			}
		}
		if why == "" {
			why = uncheckedThen(s)
		}
		if len(s.Checks) == 0 {
			why = "no check was recorded"
		}
	}
	if why != "" {
		out = append(out, judge.Check{Step: "the verdict (recomputed from the checks)", State: judge.Violated,
			Expected: "the verdict the rule gives: passed only with at least one check, every check held", Actual: why})
		mismatch = true
	}
	return out, mismatch
}

// runVerdict is the verdict the rule gave before the run weighed its
// expected failures: a waived failure was failed, an unexpected pass passed.
func runVerdict(v judge.Verdict) judge.Verdict {
	switch v {
	case judge.ExpectedFailure:
		return judge.Failed
	case judge.UnexpectedPass:
		return judge.Passed
	}
	return v
}

// uncheckedThen names the first Then step of a scenario that recorded no
// check: every Then step of the suite checks something, so a passed
// scenario without a check at one of them had a check removed (a report
// edited to say passed), or never observed it.
func uncheckedThen(s Scenario) string {
	checked := map[int]bool{}
	for _, c := range s.Checks {
		checked[c.StepIndex] = true
	}
	kind := ""
	for i, st := range s.Steps {
		switch kw := strings.TrimSpace(st.Keyword); kw {
		case "And", "But", "*", "":
		default:
			kind = kw
		}
		if kind == "Then" && !checked[i] {
			return fmt.Sprintf("the step %q recorded no check", st.Text)
		}
	}
	return ""
}

// LateSuffixes end the step of a check that recounted a probe count once
// the probe settled (the scenario's end, or the run's), or read a ledger
// again at the run's end.
var LateSuffixes = []string{" (still, once the probe settled)", " (still, at the end of the run)"}

// Rechecked is what a run's files say once recomputed: the run verdict
// judged afresh from the scenarios, and every check recomputed from its
// scenario's history.
type Rechecked struct {
	Result string
	Why    []string
	// Checks is how many checks were recomputed from histories.
	Checks int
	// Contradicted names, one a line, each recomputed check of a scenario
	// whose history contradicts what the run recorded.
	Contradicted []string
	// Scenarios is how many scenarios are contradicted by their history.
	Scenarios int
}

// OK reports whether the run is a PASS and no history contradicts it.
func (r Rechecked) OK() bool { return r.Result == RunPass && r.Scenarios == 0 }

// RecheckRun recomputes a loaded run (see Load): what `mcpconform recheck`
// prints and `mcpconform verify` compares with what a bundle claims.
func RecheckRun(run Run) Rechecked {
	var r Rechecked
	for _, s := range run.Scenarios {
		checks, mismatch := Recheck(s)
		r.Checks += len(checks)
		if !mismatch {
			continue
		}
		r.Scenarios++
		for _, c := range checks {
			r.Contradicted = append(r.Contradicted, fmt.Sprintf("%s (%s): %s: %s, expected %s, history shows %s", s.ID, s.Verdict, c.Step, c.Status(), c.Expected, c.Actual))
		}
	}
	r.Result, r.Why = Judge(run)
	return r
}
