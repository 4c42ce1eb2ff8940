package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func TestBundleVerifyCmd(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "report")
	run := reports.Run{Tool: "mcpconform", Version: "0.1.0", Level: reports.LevelWire, Target: reports.Target{Kind: "reference"}, Scenarios: []reports.Scenario{{ID: "retry-01", Level: "must",
		Verdict: judge.Passed, Checks: []judge.Check{{Step: "held", State: judge.Held}}}}}
	if err := reports.Write(dir, run); err != nil {
		t.Fatal(err)
	}
	do := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := dispatch(context.Background(), args, &out, &errs)
		return code, out.String() + errs.String()
	}
	key, other, archive := filepath.Join(tmp, "k"), filepath.Join(tmp, "other"), filepath.Join(tmp, "b.tgz")
	for _, k := range []string{key, other} {
		if code, out := do("bundle", "keygen", k); code != 0 {
			t.Fatalf("keygen: %d %s", code, out)
		}
	}
	if code, out := do("bundle", "keygen", key); code != 2 || !strings.Contains(out, "not overwriting") {
		t.Errorf("keygen over an existing key: %d %s", code, out)
	}
	if code, out := do("bundle", dir, "--sign-key", key, "-o", archive); code != 0 || !strings.Contains(out, "verdict PASS") {
		t.Fatalf("bundle: %d %s", code, out)
	}
	if code, out := do("verify", archive, "--pub-key", key+".pub"); code != 0 || !strings.Contains(out, "VERIFIED") {
		t.Errorf("verify: %d %s", code, out)
	}
	if code, out := do("verify", "--pub-key", other+".pub", archive); code != 1 || !strings.Contains(out, "not by the given key") {
		t.Errorf("verify with another key: %d %s", code, out)
	}
	if code, out := do("verify", archive); code != 0 || !strings.Contains(out, "VERIFIED (integrity only: signed by a key not given with --pub-key)") {
		t.Errorf("verify without the key: %d %s", code, out)
	}
	profile := filepath.Join("..", "..", "drivers", "target", "testdata", "profile.example.json")
	if code, out := do("verify", archive, "--profile", profile); code != 1 || !strings.Contains(out, "the bundle names no profile") {
		t.Errorf("verify for a profile the bundle is not for: %d %s", code, out)
	}
	if code, out := do("bundle", dir, "--profile", profile, "-o", archive+".2"); code != 2 || !strings.Contains(out, `but the run tested a "reference" target`) {
		t.Errorf("bundle with a profile the run did not use: %d %s", code, out)
	}
	junk := filepath.Join(tmp, "junk.tgz")
	os.WriteFile(junk, []byte("junk"), 0o644)
	if code, _ := do("verify", junk); code != 2 {
		t.Errorf("verify junk: exit %d, want 2", code)
	}
	if code, _ := do("bundle"); code != 2 {
		t.Errorf("bundle without DIR: exit %d, want 2", code)
	}
}
