package reports

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpconform/mcpconform/internal/judge"
)

func TestCompare(t *testing.T) {
	fixture := func(name string) Summary {
		t.Helper()
		s, err := ReadSummary(filepath.Join("testdata", "diff", name+".summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name, old, new string
		want           Diff
	}{
		{name: "same run", old: "base", new: "base", want: Diff{OldResult: "FAIL", NewResult: "FAIL"}},
		{name: "next release", old: "base", new: "next", want: Diff{
			OldResult: "FAIL", NewResult: "FAIL",
			Regressions: []Change{{ID: "gone-01", Title: "A scenario since deleted", Old: judge.Passed, Reason: notInNewRun},
				{ID: "retry-01", Title: "A keyed retry replays", Old: judge.Passed, New: judge.Failed, Reason: "the ledger has 2 debits"}},
			Fixes:   []Change{{ID: "twins-03", Title: "Twins dispatch once", Old: judge.Failed, New: judge.Passed}},
			Changed: []Change{{ID: "clock-01", Title: "The window closes", Old: judge.Skipped, New: judge.Failed, Reason: "replayed after the window"}},
			New:     []Change{{ID: "new-01", Title: "A scenario added since", New: judge.Passed}},
			Notes:   []string{"the runs claim different levels: full before, wire now"},
		}},
		{name: "back again", old: "next", new: "base", want: Diff{
			OldResult: "FAIL", NewResult: "FAIL",
			Regressions: []Change{{ID: "new-01", Title: "A scenario added since", Old: judge.Passed, Reason: notInNewRun},
				{ID: "twins-03", Title: "Twins dispatch once", Old: judge.Passed, New: judge.Failed, Reason: "the probe counted 2 dispatches"}},
			Fixes:   []Change{{ID: "retry-01", Title: "A keyed retry replays", Old: judge.Failed, New: judge.Passed}},
			Changed: []Change{{ID: "clock-01", Title: "The window closes", Old: judge.Failed, New: judge.Skipped, Reason: "no clock"}},
			New:     []Change{{ID: "gone-01", Title: "A scenario since deleted", New: judge.Passed}},
			Notes:   []string{"the runs claim different levels: wire before, full now"},
		}},
		{name: "interrupted, other server", old: "base", new: "interrupted", want: Diff{
			OldResult: "FAIL", NewResult: "INTERRUPTED", Interrupted: true,
			Removed: []Change{{ID: "clock-01", Title: "The window closes", Old: judge.Skipped}, {ID: "twins-03", Title: "Twins dispatch once", Old: judge.Failed}},
			Unfinished: []Change{{ID: "gone-01", Title: "A scenario since deleted", Old: judge.Passed, Reason: "not reached before the interrupt"},
				{ID: "retry-02", Title: "A retry with another body is refused", Old: judge.Passed, New: judge.Interrupted, Reason: "interrupt signal received"}},
			Notes: []string{"the runs tested different servers: acme-gateway before, other-gateway now",
				"the new run was interrupted: what it did not finish is unfinished, not a regression, and the comparison is inconclusive"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(fixture(tc.old), fixture(tc.new))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
			if got.Regressed() != (len(tc.want.Regressions) > 0 || tc.want.Worse) {
				t.Errorf("Regressed = %v", got.Regressed())
			}
		})
	}
}

const notInNewRun = "not in the new run: deselected (--tags, --id) or gone from the suite"

// How a release gate classifies each kind of change, and its answer.
func TestCompareClassifies(t *testing.T) {
	run := func(result string, interrupted bool, verdicts ...any) Summary { // ID, judge.Verdict, ...
		s := Summary{Result: result, Interrupted: interrupted, Version: "0.1.0", Commit: "abc"}
		for i := 0; i+1 < len(verdicts); i += 2 {
			s.Scenarios = append(s.Scenarios, SummaryScenario{ID: verdicts[i].(string), Verdict: verdicts[i+1].(judge.Verdict)})
		}
		return s
	}
	type gate int
	const (
		pass gate = iota
		regressed
		inconclusive
	)
	for _, tc := range []struct {
		name     string
		old, new Summary
		list     func(Diff) []Change // where the change must be listed
		want     gate
	}{
		{"skipped, now passed", run(RunIncomplete, false, "a-01", judge.Skipped), run(RunPass, false, "a-01", judge.Passed), func(d Diff) []Change { return d.Fixes }, pass},
		{"passed, now incomplete", run(RunPass, false, "a-01", judge.Passed), run(RunIncomplete, false, "a-01", judge.Incomplete), func(d Diff) []Change { return d.Regressions }, regressed},
		{"passed, now waived", run(RunPass, false, "a-01", judge.Passed), run(RunPass, false, "a-01", judge.ExpectedFailure), func(d Diff) []Change { return d.Regressions }, regressed},
		{"passed, now deselected", run(RunPass, false, "a-01", judge.Passed, "a-02", judge.Passed), run(RunPass, false, "a-02", judge.Passed), func(d Diff) []Change { return d.Regressions }, regressed},
		{"renamed", run(RunPass, false, "a-01", judge.Passed), run(RunPass, false, "a-09", judge.Passed), func(d Diff) []Change { return d.Regressions }, regressed},
		{"failing scenario removed", run(RunFail, false, "a-01", judge.Passed, "a-02", judge.Failed), run(RunPass, false, "a-01", judge.Passed), func(d Diff) []Change { return d.Removed }, pass},
		{"a new scenario fails", run(RunPass, false, "a-01", judge.Passed), run(RunFail, false, "a-01", judge.Passed, "a-02", judge.Failed), func(d Diff) []Change { return d.New }, regressed},
		{"interrupted before it", run(RunPass, false, "a-01", judge.Passed, "a-02", judge.Passed), run(RunInterrupted, true, "a-01", judge.Passed), func(d Diff) []Change { return d.Unfinished }, inconclusive},
		{"interrupted during it", run(RunPass, false, "a-01", judge.Passed), run(RunInterrupted, true, "a-01", judge.Interrupted), func(d Diff) []Change { return d.Unfinished }, inconclusive},
		{"interrupted after a regression", run(RunPass, false, "a-01", judge.Passed, "a-02", judge.Passed), run(RunInterrupted, true, "a-01", judge.Failed, "a-02", judge.Interrupted), func(d Diff) []Change { return d.Regressions }, regressed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.old, tc.new)
			if len(tc.list(d)) != 1 {
				t.Errorf("not listed where expected: %+v", d)
			}
			got := pass
			switch {
			case d.Regressed():
				got = regressed
			case d.Inconclusive():
				got = inconclusive
			}
			if got != tc.want {
				t.Errorf("gate = %d, want %d: %+v", got, tc.want, d)
			}
		})
	}
}

func TestPrintDiffGolden(t *testing.T) {
	old, err := ReadSummary(filepath.Join("testdata", "diff", "base.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	new, err := ReadSummary(filepath.Join("testdata", "diff", "next.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	PrintDiff(&buf, Compare(old, new))
	golden(t, "diff.txt", buf.Bytes())
}

func TestReadSummaryOfADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := Write(dir, loadFixture(t)); err != nil {
		t.Fatal(err)
	}
	fromDir, err := ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := ReadSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromDir, fromFile); diff != "" {
		t.Errorf("directory and file differ:\n%s", diff)
	}
	if _, err := ReadSummary(filepath.Join(dir, ReportFile)); err == nil {
		t.Error("ReadSummary accepted report.html")
	}
}
