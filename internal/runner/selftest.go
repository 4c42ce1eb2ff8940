package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reports"
)

// Catches compares a run's failures with the checks named for its bugs.
// A row is OK when every named check was violated and every failure is a
// catcher or the bug's known collateral: nothing failed for another reason.
func Catches(run reports.Run, names []string) []reports.Catch {
	var rows []reports.Catch
	for _, b := range names {
		rows = append(rows, catchRow(run, b, bugmap.Catchers[b], bugmap.Collateral[b]))
	}
	return rows
}

// catchRow holds one bug's run to its named checks and collateral. A
// scenario that failed is not enough: the check named for the bug must be
// the one violated (a lock scenario failing because A never reached its
// pause has not seen the second dispatch the bug causes).
func catchRow(run reports.Run, bug string, catchers []bugmap.Check, collateral []string) reports.Catch {
	var failed []string
	byID := map[string]*reports.Scenario{}
	for i, s := range run.Scenarios {
		byID[s.ID] = &run.Scenarios[i]
		if s.Verdict == judge.Failed || s.Verdict == judge.Undefined {
			failed = append(failed, s.ID)
		}
	}
	sort.Strings(failed)
	want := bugmap.Scenarios(catchers)
	ok := true
	var checks []reports.CatchCheck
	for _, c := range catchers {
		cc := caughtAt(byID[c.Scenario], c)
		ok = ok && cc.Violated
		checks = append(checks, cc)
	}
	for _, id := range failed {
		// A scenario beyond the named catchers may fail by the model's
		// checks: the judge saw the bug's harm where no step looks for it,
		// which is what the model is for. Failing by a step's check there
		// would be a failure for another reason.
		ok = ok && (slices.Contains(want, id) || slices.Contains(collateral, id) || onlyModel(byID[id]))
	}
	var contradicted []string
	for _, s := range run.Scenarios {
		if _, mismatch := reports.Recheck(s); mismatch {
			contradicted = append(contradicted, s.ID)
		}
	}
	return reports.Catch{Bug: bug, Expected: want, CaughtBy: failed, Checks: checks, Contradicted: contradicted, OK: ok && len(contradicted) == 0}
}

// caughtAt finds the named check among a scenario's violated checks.
func caughtAt(s *reports.Scenario, c bugmap.Check) reports.CatchCheck {
	out := reports.CatchCheck{Scenario: c.Scenario, Step: c.Step}
	if s == nil {
		out.Observed = "the scenario did not run"
		return out
	}
	var others []string
	for _, ch := range s.Checks {
		if ch.Status() != judge.Violated {
			continue
		}
		if ch.StepIndex >= 0 && ch.StepIndex < len(s.Steps) && s.Steps[ch.StepIndex].Text == c.Step {
			out.Violated, out.Observed = true, ch.Actual
			return out
		}
		others = append(others, ch.Step)
	}
	switch {
	case len(others) > 0:
		out.Observed = "not violated; the scenario failed at: " + strings.Join(others, "; ")
	default:
		out.Observed = fmt.Sprintf("not violated; the scenario %s: %s", s.Verdict, s.Reason)
	}
	return out
}

// SelfTest runs the suite once per bug switch (only, when given, the named
// ones), each on the store where its bug lives, and returns the catch
// table. cfg is the template of every run.
func SelfTest(ctx context.Context, cfg Config, only []string, progress func(reports.Catch)) ([]reports.Catch, error) {
	var table []reports.Catch
	for _, b := range bugs.All {
		if len(only) > 0 && !slices.Contains(only, b.Name) {
			continue
		}
		c := cfg
		if c.Workers == 0 {
			c.Workers = 2 // twins-04 splits its twins across two processes
		}
		c.Bugs = []string{b.Name}
		if b.Store != "" {
			c.Store = b.Store
		}
		if c.Out != "" {
			c.Out = cfg.Out + "/" + b.Name
		}
		out, err := Run(ctx, c)
		if err != nil {
			return table, fmt.Errorf("self-test %s: %w", b.Name, err)
		}
		row := Catches(out.Run, []string{b.Name})[0]
		table = append(table, row)
		if progress != nil {
			progress(row)
		}
	}
	return table, nil
}

// onlyModel says every violated check of a scenario is the model's.
func onlyModel(s *reports.Scenario) bool {
	any := false
	for _, c := range s.Checks {
		if c.Status() == judge.Violated {
			if !c.Model {
				return false
			}
			any = true
		}
	}
	return any
}
