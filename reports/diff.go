package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Change is one scenario whose standing differs between two runs.
type Change struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Old    string `json:"old,omitempty"` // verdict before; "" when new
	New    string `json:"new,omitempty"` // verdict now; "" when removed
	Reason string `json:"reason,omitempty"`
}

// Diff is what changed from one run to the next, for a release gate.
type Diff struct {
	OldResult, NewResult string
	// Regressions passed before and do not now; Fixes did not and do.
	Regressions []Change `json:"regressions"`
	Fixes       []Change `json:"fixes"`
	// Changed were not passed in either run, with another verdict now
	// (skipped before, failed now).
	Changed []Change `json:"changed"`
	New     []Change `json:"new"`
	Removed []Change `json:"removed"`
	// Notes are differences between the runs that make the comparison
	// weaker: another level, another target, an interrupted run.
	Notes []string `json:"notes"`
}

// Regressed reports whether the new run lost a pass: the gate's answer.
func (d Diff) Regressed() bool { return len(d.Regressions) > 0 }

// Compare lists, by scenario ID, what changed from old to new.
func Compare(old, new Summary) Diff {
	d := Diff{OldResult: old.Result, NewResult: new.Result}
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
		case o.Verdict == Passed && s.Verdict != Passed:
			d.Regressions = append(d.Regressions, c)
		case o.Verdict != Passed && s.Verdict == Passed:
			c.Reason = ""
			d.Fixes = append(d.Fixes, c)
		case o.Verdict != s.Verdict:
			d.Changed = append(d.Changed, c)
		}
	}
	for _, s := range old.Scenarios {
		if !now[s.ID] {
			d.Removed = append(d.Removed, Change{ID: s.ID, Title: s.Title, Old: s.Verdict})
		}
	}
	for _, l := range [][]Change{d.Regressions, d.Fixes, d.Changed, d.New, d.Removed} {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	if ol, nl := levelOf(old), levelOf(new); ol != nl {
		d.Notes = append(d.Notes, fmt.Sprintf("the runs claim different levels: %s before, %s now", ol, nl))
	}
	if a, b := subjectKey(old.Target), subjectKey(new.Target); a != b {
		d.Notes = append(d.Notes, fmt.Sprintf("the runs tested different servers: %s before, %s now", a, b))
	}
	if new.Interrupted {
		d.Notes = append(d.Notes, "the new run was interrupted: scenarios it did not finish count as regressions")
	}
	if old.Interrupted {
		d.Notes = append(d.Notes, "the old run was interrupted")
	}
	return d
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
				line += " (" + termText(c.New, 0) + ")"
			case c.New == "":
				line += " (was " + termText(c.Old, 0) + ")"
			default:
				line += fmt.Sprintf(" %s -> %s", termText(c.Old, 0), termText(c.New, 0))
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
	fmt.Fprintf(w, "%d regressions, %d fixed, %d changed, %d new, %d removed\n",
		len(d.Regressions), len(d.Fixes), len(d.Changed), len(d.New), len(d.Removed))
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
