package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func TestSelection(t *testing.T) {
	entries := []catalog.Entry{
		{ID: "retry-01", Tags: []string{"@retry-01", "@must"}},
		{ID: "retry-02", Tags: []string{"@retry-02", "@must", "@needs-clock"}},
		{ID: "cache-01", Tags: []string{"@cache-01", "@should"}},
	}
	for _, tc := range []struct {
		name       string
		tags       string
		ids        []string
		wantTags   string
		wantFilter string
		wantErr    string
	}{
		{name: "everything", wantFilter: ""},
		{name: "cucumber", tags: "@must and not @needs-clock", wantTags: "@must and not @needs-clock", wantFilter: "@retry-01"},
		{name: "godog", tags: "@must && ~@needs-clock", wantTags: "@must && ~@needs-clock", wantFilter: "@retry-01"},
		{name: "grouped", tags: "(@should or @needs-clock) and not @retry-01", wantTags: "(@should or @needs-clock) and not @retry-01", wantFilter: "@retry-02,@cache-01"},
		{name: "ids", ids: []string{"cache-01", "retry-01"}, wantTags: "@cache-01 or @retry-01", wantFilter: "@retry-01,@cache-01"},
		{name: "ids and tags", tags: "@must", ids: []string{"cache-01", "retry-01"}, wantTags: "(@must) and (@cache-01 or @retry-01)", wantFilter: "@retry-01"},
		{name: "bad expression", tags: "@must &&", wantErr: `--tags: tag expression "@must &&": expression ends after "&&"`},
		{name: "nothing matches", tags: "@must and @should", wantErr: `no scenario matched "@must and @should"`},
		{name: "unknown id", ids: []string{"nope-01"}, wantErr: `no scenario with ID "nope-01"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tags, filter, err := selection(Config{Tags: tc.tags, IDs: tc.ids}, entries)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !IsSetup(err) {
					t.Fatalf("err = %v, want a set-up error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tags != tc.wantTags || filter != tc.wantFilter {
				t.Errorf("selection = %q, %q; want %q, %q", tags, filter, tc.wantTags, tc.wantFilter)
			}
		})
	}
}

// A run that fails before its scenarios replaces an earlier report with
// the record of the failure, and never touches a directory that is no report.
func TestSetupFailureReplacesTheOldReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	old := reports.Run{Tool: "mcpconform", Level: reports.LevelWire, Scenarios: []reports.Scenario{{ID: "retry-01", Level: "must", Verdict: judge.Passed,
		Checks: []judge.Check{{Step: "s", State: judge.Held}}}}}
	if err := reports.Write(dir, old); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Config{Tags: "@must &&", Out: dir})
	if !IsSetup(err) {
		t.Fatalf("Run = %v, want a set-up error", err)
	}
	for _, gone := range []string{reports.SummaryFile, reports.ReportFile, "evidence"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s of the earlier run survived a failed set-up", gone)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.ErrorFile))
	if err != nil || !strings.Contains(string(b), `"@must &&"`) {
		t.Errorf("error.txt = %q, %v; want the parser's message", b, err)
	}

	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Run(context.Background(), Config{Out: foreign}); !IsSetup(err) {
		t.Fatalf("Run into a foreign directory = %v, want a set-up error", err)
	}
	if entries, _ := os.ReadDir(foreign); len(entries) != 1 {
		t.Errorf("the foreign directory now holds %d entries", len(entries))
	}
}
