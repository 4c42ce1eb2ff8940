package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
)

// A known bug listed as expected failures keeps the run green; an expected
// failure that starts passing is reported and fails the run.
func TestExpectedFailures(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	for _, tc := range []struct {
		name, file, list string
		ok               bool
		verdicts         map[string]judge.Verdict
	}{
		{"bug's catchers listed", "expected.txt", "# floor-bucket is known\nwindow-01 no previous-bucket join yet\nwindow-02 # the same bug\n", true,
			map[string]judge.Verdict{"window-01": judge.ExpectedFailure, "window-02": judge.ExpectedFailure, "retry-01": judge.Passed}},
		{"a passing scenario listed", "expected.txt", "window-01 boundary bug\nwindow-02 boundary bug\nretry-01 # fixed since\n", false,
			map[string]judge.Verdict{"window-01": judge.ExpectedFailure, "retry-01": judge.UnexpectedPass}},
		// The official MCP conformance suite's format, as its baselines write it.
		{"the official suite's YAML", "expected-failures.yml", "server:\n  # no previous-bucket join yet\n  - window-01\n  - window-02 # the same bug\n", true,
			map[string]judge.Verdict{"window-01": judge.ExpectedFailure, "window-02": judge.ExpectedFailure, "retry-01": judge.Passed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, []byte(tc.list), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runner.Run(context.Background(), runner.Config{
				Target: "reference", Binary: exe, Bugs: []string{"floor-bucket"},
				IDs: []string{"window-01", "window-02", "retry-01"}, ExpectedFailures: path,
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.OK != tc.ok {
				t.Errorf("ok = %v (%v), want %v", out.OK, out.Why, tc.ok)
			}
			got := verdicts(out.Run)
			for id, want := range tc.verdicts {
				if got[id] != want {
					t.Errorf("%s: verdict %s, want %s", id, got[id], want)
				}
			}
		})
	}
}

// A waiver names a real scenario and says why; anything else is a set-up
// error, before any target is started.
func TestExpectedFailuresRejectsBadWaivers(t *testing.T) {
	for _, list := range []string{"retry-99 no such scenario\n", "retry-01\n", "retry-01 #\n", "server:\n  # gone\n  - retry-99\n", "server:\n  - retry-01\n"} {
		name := "expected.txt"
		if strings.HasPrefix(list, "server:") {
			name = "expected.yml"
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runner.Run(context.Background(), runner.Config{Target: "reference", ExpectedFailures: path})
		if err == nil || !runner.IsSetup(err) {
			t.Errorf("%q: run = %v, want a set-up error", list, err)
		}
	}
}
