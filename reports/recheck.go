package reports

import "fmt"

// Rechecked is what a run's files say once recomputed: the run verdict
// judged afresh from the scenarios, and every dispatch check recomputed
// from its scenario's history.
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
			r.Contradicted = append(r.Contradicted, fmt.Sprintf("%s (%s): %s: ok=%v, expected %s, history shows %s", s.ID, s.Verdict, c.Step, c.OK, c.Expected, c.Actual))
		}
	}
	r.Result, r.Why = Judge(run)
	return r
}
