package repro

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/reference/idemkey"
	"github.com/mcpconform/mcpconform/reports"
)

var update = flag.Bool("update", false, "rewrite the golden testdata/*.sh files")

// TestScriptGolden renders each testdata/*.json input (a recorded scenario,
// its catalog entry and steps) and compares it with testdata/*.sh.
func TestScriptGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata inputs (%v)", err)
	}
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var in Input
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			res, err := Script(in)
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(path, ".json") + ".sh"
			if *update {
				if err := os.WriteFile(golden, res.Script, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(res.Script)); diff != "" {
				t.Errorf("repro.sh for %s (-want +got):\n%s", name, diff)
			}
			if bash, err := exec.LookPath("bash"); err == nil {
				if out, err := exec.Command(bash, "-n", golden).CombinedOutput(); err != nil {
					t.Errorf("bash -n %s: %v\n%s", golden, err, out)
				}
			}
		})
	}
}

func TestScriptShape(t *testing.T) {
	in := load(t, "retry-03")
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		"set -euo pipefail",
		"# Scenario:    retry-03",
		"# Requirement: Unkeyed mutating calls",
		"# Source:      seeds/sel-498",
		`"local_tool":"partner.echo","price":3`,
		`-H "Authorization: Bearer $KEY"`,
		`ctl GET "/wallets/$WALLET/ledger"`,
		`ctl GET "/dispatches?wallet_id=$WALLET"`,
		"echo 'expected: 1 debit(s) and 0 refund(s), 1 dispatch(es)'",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if strings.Contains(s, "***") {
		t.Error("script still carries the redacted credential")
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v, want none", res.Warnings)
	}
}

func TestScriptWarnsOnPrincipals(t *testing.T) {
	res, err := Script(load(t, "iga-01"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(string(res.Script), "exit 3") {
		t.Errorf("a principal scenario should warn and stop unless forced; warnings %v", res.Warnings)
	}
}

func TestScriptSkippedScenario(t *testing.T) {
	in := load(t, "retry-03")
	in.Scenario.Verdict, in.Scenario.Reason, in.Scenario.Exchanges = reports.Skipped, "target lacks capability faults", nil
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) == 0 {
		t.Error("a skipped scenario should warn: it has nothing recorded to replay")
	}
	// The calls are built from the steps instead.
	if !strings.Contains(string(res.Script), `"name":"repro.write"`) {
		t.Errorf("no call built from the steps:\n%s", res.Script)
	}
}

func TestScriptNoID(t *testing.T) {
	if _, err := Script(Input{}); err == nil {
		t.Error("Script without a scenario ID: no error")
	}
}

func TestSteps(t *testing.T) {
	es, err := catalog.Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	by := catalog.ByID(es)
	steps, err := Steps(features.FS, by["lost-01"])
	if err != nil {
		t.Fatal(err)
	}
	// Background first, then the scenario's own steps.
	want := []string{
		"a wallet with 100 credits and an API key",
		`an upstream tool "write" priced 3 credits`,
		`the probe stalls "$op1"`,
	}
	if diff := cmp.Diff(want, steps[:3]); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for _, e := range es {
		if _, err := Steps(features.FS, e); err != nil {
			t.Errorf("%s: %v", e.ID, err)
		}
	}
	if _, err := Steps(features.FS, catalog.Entry{ID: "nope-01", File: "retries.feature"}); err == nil {
		t.Error("no error for an unknown ID")
	}
}

func load(t *testing.T, name string) Input {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestSynthesizedKeyHeader: a call the script builds itself sends its key as
// a Structured Field string, so a key with a comma, semicolon, quote or
// backslash reaches the gateway as that key: the header, as bash hands it to
// curl, parses back to the key with the gateway's own parser.
func TestSynthesizedKeyHeader(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to evaluate the script's words")
	}
	cases := []struct {
		name, key string // key as the step names it
		recorded  string // the recorded run's value of $k1, if any
		want      string // the header value curl sends
	}{
		{"plain", "k-1", "", `"k-1"`},
		{"comma", "a,b", "", `"a,b"`},
		{"semicolon", "a;p=1", "", `"a;p=1"`},
		{"shell characters", "$HOME'`x`", "", `"$HOME'` + "`x`" + `"`},
		{"recorded quote and backslash", "$k1", `q"uote\`, `"q\"uote\\"`},
		{"recorded comma", "$k1", "k1-a,b", `"k1-a,b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &gen{vars: map[string]string{}, last: map[string]int{}}
			if c.recorded != "" {
				g.vars["$k1"] = c.recorded
			}
			g.synthesize("A", "repro.write", `{}`, c.key)
			var word string
			for _, line := range strings.Split(g.b.String(), "\n") {
				if w, ok := strings.CutPrefix(strings.TrimSpace(line), "-H "); ok && strings.Contains(w, "Idempotency-Key") {
					word = strings.TrimSuffix(w, " \\")
				}
			}
			if word == "" {
				t.Fatalf("no Idempotency-Key header:\n%s", g.b.String())
			}
			out, err := exec.Command(bash, "-c", "printf '%s' "+word).Output()
			if err != nil {
				t.Fatalf("bash on %s: %v", word, err)
			}
			value, ok := strings.CutPrefix(string(out), "Idempotency-Key: ")
			if !ok || value != c.want {
				t.Fatalf("curl gets %q, want Idempotency-Key: %s", out, c.want)
			}
			wantKey := c.key
			if c.recorded != "" {
				wantKey = c.recorded
			}
			if got, err := idemkey.Parse(value); err != nil || got != wantKey {
				t.Fatalf("the gateway reads %q (%v), want %q", got, err, wantKey)
			}
		})
	}
}
