package reports

import (
	"encoding/xml"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// tree lists the files under dir, slash-separated, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestRewriteDropsEarlierEvidence(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	if err := Write(dir, loadFixture(t)); err != nil {
		t.Fatal(err)
	}
	second := Run{Tool: "mcpconform", Scenarios: []Scenario{{ID: "retry-01", Level: "must", Verdict: judge.Failed, Reason: "second run"}}}
	if err := Write(dir, second); err != nil {
		t.Fatal(err)
	}
	want := []string{CucumberFile, "evidence/retry-01.json", "history/retry-01.ndjson", JUnitFile, ReportFile, SummaryFile, MarkdownFile}
	slices.Sort(want)
	if got := tree(t, dir); !slices.Equal(got, want) {
		t.Errorf("after the second run %s holds %q, want %q", dir, got, want)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only out (no temporary directory left)", parent, len(entries))
	}
}

func TestWriteRefusesAForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "thesis.tex")
	if err := os.WriteFile(precious, []byte("years of work"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckOut(dir); err == nil {
		t.Error("CheckOut accepted a directory holding no report")
	}
	err := Write(dir, loadFixture(t))
	if err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Fatalf("Write = %v, want a refusal", err)
	}
	if got := tree(t, dir); !slices.Equal(got, []string{"thesis.tex"}) {
		t.Errorf("directory now holds %q", got)
	}
}

func TestSetupFailureReplacesAnOldPass(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := Write(dir, loadFixture(t)); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	err := WriteError(dir, SetupFailure{Tool: "mcpconform", Version: "1.2.3", Target: "http://gw.invalid/mcp", At: at,
		Err: "set-up: read target capabilities: connection refused"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); !slices.Equal(got, []string{ErrorFile, JUnitFile, MarkdownFile}) {
		t.Fatalf("after a set-up failure %s holds %q, want only error.txt, junit.xml and summary.md", dir, got)
	}
	if md := string(readFile(t, filepath.Join(dir, MarkdownFile))); !strings.HasPrefix(md, "## mcpconform: ERROR\n") || !strings.Contains(md, "connection refused") {
		t.Errorf("summary.md of a set-up failure:\n%s", md)
	}
	txt := string(readFile(t, filepath.Join(dir, ErrorFile)))
	for _, want := range []string{"ERROR", "connection refused", "http://gw.invalid/mcp", "2026-12-03T12:00:00Z", "not a verdict"} {
		if !strings.Contains(txt, want) {
			t.Errorf("error.txt lacks %q:\n%s", want, txt)
		}
	}
	var suites junitSuites
	if err := xml.Unmarshal(readFile(t, filepath.Join(dir, JUnitFile)), &suites); err != nil {
		t.Fatal(err)
	}
	if suites.Tests != 1 || suites.Errors != 1 || suites.Failures != 0 || suites.Suites[0].Cases[0].Error == nil {
		t.Errorf("junit.xml = %+v, want one errored test case", suites)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "that run wrote no report") {
		t.Errorf("Load = %v, want it to say the run wrote no report", err)
	}
	// The error directory is a report directory: the next run replaces it.
	if err := Write(dir, loadFixture(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ErrorFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error.txt survived the next run: %v", err)
	}
}

func TestInterruptedSetUpSaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteError(dir, SetupFailure{Tool: "mcpconform", Target: "reference", Err: "context canceled", Interrupted: true}); err != nil {
		t.Fatal(err)
	}
	txt := string(readFile(t, filepath.Join(dir, ErrorFile)))
	if !strings.HasPrefix(txt, "INTERRUPTED: ") || strings.Contains(txt, "ERROR") {
		t.Errorf("error.txt = %q, want it to say INTERRUPTED", txt)
	}
}

// A run killed while it writes its report never leaves a mixture, a half
// report, or the earlier run's verdict under --out: killed before the
// swap, --out holds the record of a run under way (WriteRunning); killed
// between the two renames, it holds nothing (that record sits in a hidden
// sibling). The next run then writes as usual.
func TestKilledWhileWriting(t *testing.T) {
	for _, stage := range []string{"written", "aside"} {
		t.Run(stage, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			if err := Write(dir, loadFixture(t)); err != nil {
				t.Fatal(err)
			}
			// runner.Run records a run under way before it starts.
			if err := WriteRunning(dir, SetupFailure{Tool: "mcpconform", Target: "reference", At: time.Now()}); err != nil {
				t.Fatal(err)
			}
			before := tree(t, dir)
			second := Run{Tool: "mcpconform", Scenarios: []Scenario{{ID: "retry-01", Level: "must", Verdict: judge.Failed, Reason: "second run"}}}
			killPoint = func(s string) {
				if s == stage {
					panic("killed")
				}
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("publish never reached the kill point")
					}
				}()
				Write(dir, second)
			}()
			killPoint = nil
			switch stage {
			case "written":
				if got := tree(t, dir); !slices.Equal(got, before) || !slices.Equal(got, []string{ErrorFile, JUnitFile, MarkdownFile}) {
					t.Errorf("killed before the swap, %s holds %q, want the record of the run under way %q", dir, got, before)
				}
				if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "wrote no report") {
					t.Errorf("Load = %v, want a refusal", err)
				}
				if txt := readFile(t, filepath.Join(dir, ErrorFile)); !strings.HasPrefix(string(txt), "UNFINISHED: ") {
					t.Errorf("error.txt = %q", txt)
				}
			case "aside":
				if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("killed between the renames, %s exists: %v", dir, err)
				}
			}
			for _, e := range mustReadDir(t, parent) {
				if e.Name() != "out" && !strings.HasPrefix(e.Name(), ".out.new-") {
					t.Errorf("%s holds %s, neither the report nor a hidden leftover", parent, e.Name())
				}
			}
			if err := Write(dir, second); err != nil {
				t.Fatal(err)
			}
			if sum, err := LoadSummary(dir); err != nil || sum.Total != 1 || sum.Scenarios[0].Reason != "second run" {
				t.Errorf("the next run's report: %+v, %v", sum, err)
			}
		})
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// A killed run's hidden directories are deleted once they are old enough
// that no publish can still be writing them; a fresh one (another run's,
// mid-publish) and anything not named as publish names them stay.
func TestLeftoversRemoved(t *testing.T) {
	parent := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(p, "evidence"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	mk(".out.new-111", time.Hour)
	mk(".out.new-222.old", time.Hour)
	mk(".out.new-333", time.Second)
	mk(".other.new-444", time.Hour)
	mk("out", time.Hour)
	removeLeftovers(parent, "out", now)
	var got []string
	for _, e := range mustReadDir(t, parent) {
		got = append(got, e.Name())
	}
	if want := []string{".other.new-444", ".out.new-333", "out"}; !slices.Equal(got, want) {
		t.Errorf("after removeLeftovers %s holds %q, want %q", parent, got, want)
	}
}
