package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/runner"
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

func verdicts(run reports.Run) map[string]string {
	m := map[string]string{}
	for _, s := range run.Scenarios {
		m[s.ID] = s.Verdict
	}
	return m
}

// A URL target with a control API in its profile runs the whole suite; with
// one URL only the split-twins scenario is skipped, and it says why.
func TestExternalTargetWithControlAPI(t *testing.T) {
	ref := startGateway(t)
	prof := writeProfile(t, map[string]any{"control_url": ref.ControlURLs[0], "control_token": ref.ControlToken})
	out, err := runner.Run(context.Background(), runner.Config{Target: ref.URLs[0], Profile: prof, Seed: 5, Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	for id, v := range verdicts(out.Run) {
		want := reports.Passed
		if id == "twins-04" {
			want = reports.Skipped
		}
		if v != want {
			t.Errorf("%s: verdict %s, want %s", id, v, want)
		}
	}
	if !out.OK {
		t.Errorf("run not ok: %v", out.Why)
	}
}

// Without a control API the harness cannot create fixtures or read effects:
// every scenario needing them is SKIPPED with the reason, never passed, and
// --strict turns those skips into a failed run.
func TestExternalTargetWithoutControlAPIIsSkippedNotPassed(t *testing.T) {
	ref := startGateway(t)
	ctl := ref.Control(0)
	w, err := ctl.CreateWallet(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ctl.CreateKey(context.Background(), w.WalletID)
	if err != nil {
		t.Fatal(err)
	}
	prof := writeProfile(t, map[string]any{"credentials": map[string]any{"api_keys": []string{k.APIKey}, "wallet_id": w.WalletID}})
	out, err := runner.Run(context.Background(), runner.Config{Target: ref.URLs[0], Profile: prof, Strict: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, s := range out.Run.Scenarios {
		switch {
		case len(s.Tags) > 0 && hasNeeds(s.Tags) && s.Verdict != reports.Skipped:
			t.Errorf("%s needs a capability the target lacks but was %s", s.ID, s.Verdict)
		case s.Verdict == reports.Skipped && s.Reason == "":
			t.Errorf("%s skipped without a reason", s.ID)
		case s.Verdict == reports.Passed:
			passed++
		}
	}
	if passed == 0 {
		t.Error("no scenario without needs passed (refusals need only the wire)")
	}
	if out.OK || out.Code != runner.ExitFailed {
		t.Errorf("strict run with skipped @must scenarios: ok=%v code=%d, want not ok, exit 1", out.OK, out.Code)
	}
}

func hasNeeds(tags []string) bool {
	for _, t := range tags {
		if len(t) > 7 && t[:7] == "@needs-" {
			return true
		}
	}
	return false
}
