package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

// startGateway runs the reference gateway as an external target would be:
// the harness only learns its URL from a profile.
func startGateway(t *testing.T) *target.Target {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	ref, err := target.Reference(context.Background(), target.Options{Binary: exe, Store: "sqlite", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return ref
}

// harnessBinary is this test binary, which runs as mcpconform when a child
// process starts it (the reference gateway), for a test that runs the
// suite: skipped under -short, saying why.
func harnessBinary(t *testing.T, why string) string {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func writeProfile(t *testing.T, p map[string]any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func verdicts(run reports.Run) map[string]judge.Verdict {
	m := map[string]judge.Verdict{}
	for _, s := range run.Scenarios {
		m[s.ID] = s.Verdict
	}
	return m
}

// A URL target with a control API in its profile runs the whole suite. One
// URL cannot split twins across processes or send a retry to another, so
// the highest level it can claim is metered, and the scenarios that need
// two URLs (a full-level situation) are skipped, or incomplete when they
// made checks before the step that needs the second URL, without keeping
// the run from a PASS at that level.
func TestExternalTargetWithControlAPI(t *testing.T) {
	ref := startGateway(t)
	prof := writeProfile(t, map[string]any{"control_url": ref.ControlURLs[0], "control_token": ref.ControlToken})
	out, err := runner.Run(context.Background(), runner.Config{Target: ref.URLs[0], Profile: prof, Seed: 5, Concurrency: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Run.Scenarios {
		want := []judge.Verdict{judge.Passed}
		switch {
		case slices.Contains(s.Tags, "@needs-two-urls"):
			want = []judge.Verdict{judge.Skipped, judge.Incomplete}
		case s.ID == "refuse-10":
			want = []judge.Verdict{judge.NotApplicable} // the reference derives unkeyed keys
		}
		if !slices.Contains(want, s.Verdict) {
			t.Errorf("%s: verdict %s, want %s", s.ID, s.Verdict, want)
		}
	}
	if out.Result != reports.RunPass || out.Run.Level != reports.LevelMetered || out.Code != runner.ExitOK {
		t.Errorf("run: %s at level %s, exit %d, want PASS at metered, exit 0: %v", out.Result, out.Run.Level, out.Code, out.Why)
	}
}

// The reference without its control API, seen only through the wire, the
// probe and the identity provider it trusts: nothing fails, nothing that
// needed the ledger, the clock or the faults is passed, and the run is a
// PASS at level wire.
func TestExternalTargetWithoutControlAPI(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	out, err := runner.ExternalRun(context.Background(), runner.Config{Binary: exe, Seed: 5, Concurrency: 64}, bugmap.ModeWirePrincipals, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Run.Scenarios {
		switch s.Verdict {
		case judge.Failed, judge.Undefined, judge.UnexpectedPass:
			t.Errorf("%s: %s on a correct gateway: %s", s.ID, s.Verdict, s.Reason)
		case judge.Passed:
			for _, c := range s.Checks {
				if c.Status() != judge.Held {
					t.Errorf("%s passed with check %q %s", s.ID, c.Step, c.Status())
				}
			}
		case judge.Skipped:
			if s.Missing == "" || reports.WithinLevel(s.Missing, reports.LevelWire) {
				t.Errorf("%s skipped for %q at level wire: %s", s.ID, s.Missing, s.Reason)
			}
		}
	}
	v := verdicts(out.Run)
	for id, want := range map[string]judge.Verdict{
		"retry-01": judge.Incomplete, // the probe saw one dispatch; the ledger is not observable
		"scope-02": judge.Passed,     // wire and probe only
		"iga-01":   judge.Incomplete, // principals by the harness's tokens; its ledger check is not observed
		"lock-01":  judge.Skipped,    // no clock to move
	} {
		if v[id] != want {
			t.Errorf("%s: verdict %s, want %s", id, v[id], want)
		}
	}
	if out.Result != reports.RunPass || out.Run.Level != reports.LevelWire || out.Code != runner.ExitOK {
		t.Errorf("run: %s at level %s, exit %d, want PASS at wire, exit 0: %v", out.Result, out.Run.Level, out.Code, out.Why)
	}
	// Claimed at metered, the same run cannot pass: the ledger checks of
	// that level were not observed.
	out.Run.Level = reports.LevelMetered
	if got, _ := reports.Judge(out.Run); got != reports.RunIncomplete {
		t.Errorf("judged at metered: %s, want INCOMPLETE", got)
	}
}

// Each bug switch the wire and the probe can see is caught with the
// reference seen as a vendor's gateway, in both unkeyed policies.
func TestExternalSelfTestCatchesWireBugs(t *testing.T) {
	t.Parallel()
	exe := harnessBinary(t, "runs the suite once per bug switch")
	for _, mode := range []string{bugmap.ModeWire, bugmap.ModeWirePrincipals, bugmap.ModeWireRefuse} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			selfTestExternal(t, exe, mode)
		})
	}
}

func selfTestExternal(t *testing.T, exe, mode string) {
	table, err := runner.SelfTestExternal(context.Background(), runner.Config{Binary: exe, Seed: 7, Concurrency: 64}, mode, nil,
		func(c reports.Catch) { t.Logf("%s %-20s caught by %v", mode, c.Bug, c.CaughtBy) })
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range table {
		if !row.OK {
			t.Errorf("%s: bug %s: failures %v, want every one of %v and nothing else", mode, row.Bug, row.CaughtBy, row.Expected)
		}
	}
}

// The correct reference seen as a vendor's gateway in the other two modes
// (the probe only; the refuse policy) fails nothing and passes at wire.
func TestExternalTargetWithoutControlAPIOtherModes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	for _, mode := range []string{bugmap.ModeWire, bugmap.ModeWireRefuse} {
		out, err := runner.ExternalRun(context.Background(), runner.Config{Binary: exe, Seed: 9, Concurrency: 64}, mode, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out.Run.Scenarios {
			if s.Verdict == judge.Failed || s.Verdict == judge.Undefined {
				t.Errorf("%s: %s: %s on a correct gateway: %s", mode, s.ID, s.Verdict, s.Reason)
			}
		}
		if out.Result != reports.RunPass || out.Run.Level != reports.LevelWire {
			t.Errorf("%s: run %s at level %s, want PASS at wire: %v", mode, out.Result, out.Run.Level, out.Why)
		}
	}
}
