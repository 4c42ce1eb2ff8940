package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Change is one scenario whose standing differs between two runs.
type Change struct {
	ID     string        `json:"id"`
	Title  string        `json:"title,omitempty"`
	Old    judge.Verdict `json:"old,omitempty"` // verdict before; "" when new
	New    judge.Verdict `json:"new,omitempty"` // verdict now; "" when removed
	Reason string        `json:"reason,omitempty"`
}

// Diff is what changed from one run to the next, for a release gate.
type Diff struct {
	OldResult, NewResult string
	// Regressions passed before and do not now, or are not in the new run
	// at all (deselected, or gone from the suite): either way the pass is
	// lost. Fixes did not pass and do.
	Regressions []Change `json:"regressions"`
	Fixes       []Change `json:"fixes"`
	// Changed were not passed in either run, with another verdict now
	// (skipped before, failed now).
	Changed []Change `json:"changed"`
	New     []Change `json:"new"`
	// Removed did not pass before and are not in the new run.
	Removed []Change `json:"removed"`
	// Unfinished passed before and were stopped, or never reached, by an
	// interrupted new run: not regressions, nor shown to be fine.
	Unfinished []Change `json:"unfinished,omitempty"`
	// Worse: the run verdict itself got worse (PASS to INCOMPLETE or
	// FAIL, INCOMPLETE to FAIL), e.g. through a new scenario that fails.
	Worse bool `json:"worse,omitempty"`
	// Interrupted: the new run was stopped before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// Notes are differences between the runs that make the comparison
	// weaker: another level, another target, another harness build, an
	// interrupted run.
	Notes []string `json:"notes"`
}

// Regressed reports whether the new run lost a pass or got a worse
// verdict: the gate's answer.
func (d Diff) Regressed() bool { return len(d.Regressions) > 0 || d.Worse }

// Inconclusive reports whether the gate cannot answer: nothing regressed
// among what the new run finished, but it was interrupted.
func (d Diff) Inconclusive() bool { return !d.Regressed() && d.Interrupted }

// verdictRank orders the run verdicts a finished run can have.
var verdictRank = map[string]int{RunPass: 0, RunIncomplete: 1, RunFail: 2}

// Compare lists, by scenario ID, what changed from old to new.
func Compare(old, new Summary) Diff {
	d := Diff{OldResult: old.Result, NewResult: new.Result, Interrupted: new.Interrupted}
	before := map[string]SummaryScenario{}
	for _, s := range old.Scenarios {
		before[s.ID] = s
	}
	now := map[string]bool{}
	for _, s := range new.Scenarios {
		now[s.ID] = true
		o, ok := before[s.ID]
		c := Change{ID: s.ID, Title: s.Title, Old: o.Verdict, New: s.Verdict, Reason: firstLine(s.Reason)}
		switch {
		case !ok:
			d.New = append(d.New, c)
		case o.Verdict == judge.Passed && s.Verdict == judge.Interrupted:
			d.Unfinished = append(d.Unfinished, c)
		case o.Verdict == judge.Passed && s.Verdict != judge.Passed:
			d.Regressions = append(d.Regressions, c)
		case o.Verdict != judge.Passed && s.Verdict == judge.Passed:
			c.Reason = ""
			d.Fixes = append(d.Fixes, c)
		case o.Verdict != s.Verdict:
			d.Changed = append(d.Changed, c)
		}
	}
	for _, s := range old.Scenarios {
		if now[s.ID] {
			continue
		}
		c := Change{ID: s.ID, Title: s.Title, Old: s.Verdict}
		switch {
		case s.Verdict == judge.Passed && new.Interrupted:
			c.Reason = "not reached before the interrupt"
			d.Unfinished = append(d.Unfinished, c)
		case s.Verdict == judge.Passed:
			c.Reason = "not in the new run: deselected (--tags, --id) or gone from the suite"
			d.Regressions = append(d.Regressions, c)
		default:
			d.Removed = append(d.Removed, c)
		}
	}
	for _, l := range [][]Change{d.Regressions, d.Fixes, d.Changed, d.New, d.Removed, d.Unfinished} {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	ro, okOld := verdictRank[old.Result]
	rn, okNew := verdictRank[new.Result]
	if okOld && okNew && rn > ro {
		d.Worse = true
		d.Notes = append(d.Notes, fmt.Sprintf("the run verdict got worse: %s before, %s now", old.Result, new.Result))
	}
	if ol, nl := levelOf(old), levelOf(new); ol != nl {
		d.Notes = append(d.Notes, fmt.Sprintf("the runs claim different levels: %s before, %s now", ol, nl))
	}
	if a, b := subjectKey(old.Target), subjectKey(new.Target); a != b {
		d.Notes = append(d.Notes, fmt.Sprintf("the runs tested different servers: %s before, %s now", a, b))
	}
	if a, b := harnessKey(old), harnessKey(new); a != b {
		d.Notes = append(d.Notes, fmt.Sprintf("the runs used different harness builds (%s before, %s now): scenarios may have joined or left the suite", a, b))
	}
	if new.Interrupted {
		d.Notes = append(d.Notes, "the new run was interrupted: what it did not finish is unfinished, not a regression, and the comparison is inconclusive")
	}
	if old.Interrupted {
		d.Notes = append(d.Notes, "the old run was interrupted")
	}
	return d
}

func harnessKey(s Summary) string {
	if s.Commit == "" {
		return s.Version + " (commit unknown)"
	}
	return s.Version + " commit " + s.Commit
}

func levelOf(s Summary) string {
	if s.Level == "" {
		return LevelFull
	}
	return s.Level
}

func subjectKey(t Target) string {
	if t.ServerName == "" {
		return "(unnamed)"
	}
	return t.ServerName
}

// PrintDiff writes the diff for a terminal, one change a line, regressions
// first, and a closing count line.
func PrintDiff(w io.Writer, d Diff) {
	fmt.Fprintf(w, "run verdict: %s -> %s\n", orDash(d.OldResult), orDash(d.NewResult))
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", termText(n, 0))
	}
	section := func(label string, cs []Change) {
		for _, c := range cs {
			line := fmt.Sprintf("%-10s %s", label, termText(displayID(c.ID), 0))
			switch {
			case c.Old == "":
				line += " (" + termText(string(c.New), 0) + ")"
			case c.New == "":
				line += " (was " + termText(string(c.Old), 0) + ")"
			default:
				line += fmt.Sprintf(" %s -> %s", termText(string(c.Old), 0), termText(string(c.New), 0))
			}
			if c.Reason != "" {
				line += ": " + termText(c.Reason, maxReasonRunes)
			}
			fmt.Fprintln(w, line)
		}
	}
	section("REGRESSION", d.Regressions)
	section("FIXED", d.Fixes)
	section("CHANGED", d.Changed)
	section("NEW", d.New)
	section("REMOVED", d.Removed)
	section("UNFINISHED", d.Unfinished)
	fmt.Fprintf(w, "%d regressions, %d fixed, %d changed, %d new, %d removed",
		len(d.Regressions), len(d.Fixes), len(d.Changed), len(d.New), len(d.Removed))
	if len(d.Unfinished) > 0 {
		fmt.Fprintf(w, ", %d unfinished", len(d.Unfinished))
	}
	fmt.Fprintln(w)
}

// ReadSummary reads summary.json from a report directory, or the file
// itself when path is one.
func ReadSummary(path string) (Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("reports: %w", err)
	}
	if fi.IsDir() {
		return LoadSummary(path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("reports: %w", err)
	}
	defer root.Close()
	return readSummaryFile(root, base)
}
