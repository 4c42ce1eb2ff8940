package reports

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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
			Regressions: []Change{{ID: "retry-01", Title: "A keyed retry replays", Old: Passed, New: Failed, Reason: "the ledger has 2 debits"}},
			Fixes:       []Change{{ID: "twins-03", Title: "Twins dispatch once", Old: Failed, New: Passed}},
			Changed:     []Change{{ID: "clock-01", Title: "The window closes", Old: Skipped, New: Failed, Reason: "replayed after the window"}},
			New:         []Change{{ID: "new-01", Title: "A scenario added since", New: Passed}},
			Removed:     []Change{{ID: "gone-01", Title: "A scenario since deleted", Old: Passed}},
			Notes:       []string{"the runs claim different levels: full before, wire now"},
		}},
		{name: "back again", old: "next", new: "base", want: Diff{
			OldResult: "FAIL", NewResult: "FAIL",
			Regressions: []Change{{ID: "twins-03", Title: "Twins dispatch once", Old: Passed, New: Failed, Reason: "the probe counted 2 dispatches"}},
			Fixes:       []Change{{ID: "retry-01", Title: "A keyed retry replays", Old: Failed, New: Passed}},
			Changed:     []Change{{ID: "clock-01", Title: "The window closes", Old: Failed, New: Skipped, Reason: "no clock"}},
			New:         []Change{{ID: "gone-01", Title: "A scenario since deleted", New: Passed}},
			Removed:     []Change{{ID: "new-01", Title: "A scenario added since", Old: Passed}},
			Notes:       []string{"the runs claim different levels: wire before, full now"},
		}},
		{name: "interrupted, other server", old: "base", new: "interrupted", want: Diff{
			OldResult: "FAIL", NewResult: "INTERRUPTED",
			Regressions: []Change{{ID: "retry-02", Title: "A retry with another body is refused", Old: Passed, New: Interrupted, Reason: "interrupt signal received"}},
			Removed: []Change{{ID: "clock-01", Title: "The window closes", Old: Skipped}, {ID: "gone-01", Title: "A scenario since deleted", Old: Passed},
				{ID: "twins-03", Title: "Twins dispatch once", Old: Failed}},
			Notes: []string{"the runs tested different servers: acme-gateway before, other-gateway now",
				"the new run was interrupted: scenarios it did not finish count as regressions"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compare(fixture(tc.old), fixture(tc.new))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
			if got.Regressed() != (len(tc.want.Regressions) > 0) {
				t.Errorf("Regressed = %v", got.Regressed())
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
