package repro

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/mcpconform/mcpconform/internal/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reference/idemkey"
	"github.com/mcpconform/mcpconform/reports"
)

// TestScriptGolden renders each testdata/*.json input (a recorded scenario,
// its catalog entry and the target) and compares it with testdata/*.sh.
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
			goldenfile.Equal(t, golden, res.Script)
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
		"set -uo pipefail",
		"# Scenario:    retry-03",
		"# Requirement: Unkeyed mutating calls",
		// Fixtures come from the recorded control calls, ids from the replay's answers.
		`ctl POST '/wallets' '{"balance":100}'`,
		`C01_WALLET_ID=$(field wallet_id < "$TMP/c01.body")`,
		`'"${PROBE}"'/mcp`,
		// The key is the one the replay created; tokens and tool names are fresh.
		`-H 'Authorization: Bearer '"${C02_API_KEY}"`,
		`"token":"'"${RUN}"'r`,
		// The decision re-observes the violated check's witness.
		`observe 'distinct receipts among x04, x03' "$(distinct x04 x03)" 2`,
		"\nverdict\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	for _, bad := range []string{"***", "# Step:", "then:"} {
		if strings.Contains(s, bad) {
			t.Errorf("script contains %q", bad)
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v, want none", res.Warnings)
	}
}

// TestScriptFromRecordNotSteps: the script is made from what happened, so
// a scenario whose steps no grammar here knows replays all the same.
func TestScriptFromRecordNotSteps(t *testing.T) {
	in := load(t, "lost-01")
	in.Scenario.Steps = []reports.StepResult{{Keyword: "When ", Text: "a step nobody taught repro", Status: "passed"}}
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	// The probe's hold and the client's drop are replayed from the record.
	for _, want := range []string{"probe stall ", "probe wait ", "probe unstall ", `kill "$PID_x03"`} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
}

// TestScriptWithoutControlAPI: a scenario against a gateway the harness
// reaches only over MCP and its probe (the external case) replays with the
// profile's key from the environment, and asks for no control token.
func TestScriptWithoutControlAPI(t *testing.T) {
	in := load(t, "lost-01")
	in.Target.Kind = "url"
	var probeOnly []reports.Exchange
	for _, c := range in.Scenario.Control {
		if c.Lane == "probe" {
			probeOnly = append(probeOnly, c)
		}
	}
	in.Scenario.Control = probeOnly
	for i := range in.Scenario.Checks {
		if w := in.Scenario.Checks[i].Witness; w != nil {
			w.Ledger = nil // no ledger to see
		}
	}
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	fp := strings.TrimPrefix(in.Scenario.Exchanges[0].RequestHeaders["Authorization"], "Bearer ***")
	for _, want := range []string{`need KEY_` + fp + ` "`, `-H 'Authorization: Bearer '"${KEY_` + fp + `}"`, `need PROBE "`, "probe stall "} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if strings.Contains(s, "CONTROL_TOKEN:?") || strings.Contains(s, "\nctl ") {
		t.Error("a script for a gateway without a control API calls it")
	}
	if len(res.Warnings) == 0 {
		t.Error("no warning that the key comes from the environment")
	}
}

// TestScriptPrincipalsRegistered: the run registered its identity provider
// through the control API, so the replay registers IDP in its place, under
// fresh subjects, and sends tokens minted there, never the recorded ones.
func TestScriptPrincipalsRegistered(t *testing.T) {
	in := load(t, "iga-01")
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		`need IDP "`,
		`ctl POST '/trust' '{"provider":"harness","issuer":"'"${IDP}"'","jwks_url":"'"${IDP}"'/jwks.json","audience":"mcpconform"}'`,
		`"subject":"'"${RUN}"'alice-02e53c78"`,
		`PTOKEN_1=$(mint '{"aud":"mcpconform","sub":"'"${RUN}"'alice-02e53c78"}' 600) || die`,
		`PTOKEN_2=$(mint '{"aud":"mcpconform","sub":"'"${RUN}"'bob-850210dc"}' 600) || die`,
		`-H 'X-Principal-Token: '"${PTOKEN_1}"`,
		`-H 'X-Principal-Token: '"${PTOKEN_2}"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	for _, bad := range []string{in.Scenario.Exchanges[0].RequestHeaders["X-Principal-Token"], "127.0.0.1:46149", "TOKEN_alice"} {
		if strings.Contains(s, bad) {
			t.Errorf("script contains %q", bad)
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v, want none", res.Warnings)
	}
	if diff := cmp.Diff([]string{"CONTROL_TOKEN", "PROBE", "IDP"}, res.Env); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

// TestScriptPrincipalsFixedIssuer: a gateway without a control API trusts
// a fixed issuer the script cannot register. The script says which tokens
// the reader must give (TOKEN_<subject>), or mints them at IDP when that is
// the issuer, and runs with either; without both it stops, saying so.
func TestScriptPrincipalsFixedIssuer(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	// Recorded against the reference without its control API, trusting the
	// harness's identity provider at a pinned address (profile identity
	// harness_idp, subjects ext-alice and ext-bob).
	in := load(t, "iga-01-no-control")
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(res.Script)
	for _, want := range []string{
		`PTOKEN_1="${TOKEN_ext_alice:-}"`,
		`mint '{"aud":"mcpconform","sub":"ext-alice"}' 600`,
		"TOKEN_ext_bob (a principal token for subject ext-bob that the gateway accepts; without it, IDP: the identity provider the gateway trusts, http://127.0.0.1:9261, e.g. `mcpconform idp --addr 127.0.0.1:9261",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if slices.Contains(res.Env, "IDP") || strings.Contains(s, `IDP:?`) {
		t.Error("the script requires IDP although tokens may come from the environment")
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "TOKEN_ext_alice") }) {
		t.Errorf("no warning names TOKEN_ext_alice: %v", res.Warnings)
	}

	// A curl that answers nothing but records what it was asked, and mints
	// "minted" at the IdP's token endpoint.
	dir := t.TempDir()
	script, log := filepath.Join(dir, "repro.sh"), filepath.Join(dir, "curl.log")
	fake := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + log + "\ncase \"$*\" in *idp/v1/token*) printf '{\"token\":\"minted\"}';; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "curl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, res.Script, 0o755); err != nil {
		t.Fatal(err)
	}
	fp := strings.TrimPrefix(in.Scenario.Exchanges[0].RequestHeaders["Authorization"], "Bearer ***")
	base := []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "PROBE=http://127.0.0.1:1", "GATEWAY=http://127.0.0.1:1", "KEY_" + fp + "=k"}
	for _, tc := range []struct {
		name string
		env  []string
		code int
		out  string   // in the script's output
		sent []string // in what curl was asked
	}{
		{"neither", nil, 2, "set TOKEN_ext_alice to a principal token for subject ext-alice that the gateway accepts, or IDP", nil},
		{"tokens given", []string{"TOKEN_ext_alice=tok-a", "TOKEN_ext_bob=tok-b"}, 1, "NOT REPRODUCED",
			[]string{"X-Principal-Token: tok-a", "X-Principal-Token: tok-b"}},
		{"minted at IDP", []string{"IDP=http://127.0.0.1:2"}, 1, "NOT REPRODUCED",
			[]string{`{"claims":{"aud":"mcpconform","sub":"ext-alice"},"ttl_seconds":600} http://127.0.0.1:2/idp/v1/token`, "X-Principal-Token: minted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(log)
			cmd := exec.Command(bash, script)
			cmd.Env = append(append(os.Environ(), base...), tc.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			}
			if code != tc.code || !strings.Contains(string(out), tc.out) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.out, out)
			}
			sent, _ := os.ReadFile(log)
			for _, w := range tc.sent {
				if !strings.Contains(string(sent), w) {
					t.Errorf("curl was not asked %q:\n%s", w, sent)
				}
			}
		})
	}
}

func TestScriptNothingRecorded(t *testing.T) {
	in := load(t, "retry-03")
	in.Scenario.Verdict, in.Scenario.Reason = judge.Skipped, "target lacks capability faults"
	in.Scenario.Exchanges, in.Scenario.Control, in.Scenario.Checks = nil, nil, nil
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) == 0 {
		t.Error("a scenario that sent nothing should warn")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	path := filepath.Join(t.TempDir(), "repro.sh")
	if err := os.WriteFile(path, res.Script, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bash, path).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasSuffix(strings.TrimSpace(string(out)), "NOT REPRODUCED (nothing the recorded run's checks looked at can be observed again)") {
		t.Errorf("a script with nothing to observe: %v\n%s", err, out)
	}
}

func TestScriptNoID(t *testing.T) {
	if _, err := Script(Input{}); err == nil {
		t.Error("Script without a scenario ID: no error")
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

// TestReplayedKeyHeader: a recorded key is replayed with the script's run
// prefix as a Structured Field string, so a key with a comma, semicolon,
// quote or backslash reaches the gateway as one key, fresh to the run.
func TestReplayedKeyHeader(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to evaluate the script's words")
	}
	for _, key := range []string{"k-1", "a,b", "a;p=1", `q"uote\`, "$HOME'`x`"} {
		t.Run(key, func(t *testing.T) {
			ex := reports.Exchange{Label: "A: write", Lane: "A", Method: "POST", URL: "http://127.0.0.1:1/mcp",
				RequestHeaders: map[string]string{"Idempotency-Key": sfString(key)}, RequestBody: json.RawMessage(`{}`)}
			g := &gen{bound: map[string]bool{}}
			g.bindFresh([]action{{ex: ex, mcp: true}})
			var word string
			for _, h := range g.headers(ex) {
				if strings.Contains(h, "Idempotency-Key") {
					word = strings.TrimPrefix(h, "-H ")
				}
			}
			out, err := exec.Command(bash, "-c", "RUN=rp1-; printf '%s' "+word).Output()
			if err != nil {
				t.Fatalf("bash on %s: %v", word, err)
			}
			value, ok := strings.CutPrefix(string(out), "Idempotency-Key: ")
			if !ok {
				t.Fatalf("curl gets %q", out)
			}
			if got, err := idemkey.Parse(value); err != nil || got != "rp1-"+key {
				t.Fatalf("the gateway reads %q (%v), want %q", got, err, "rp1-"+key)
			}
		})
	}
}

// sfString writes a key as the harness sends it: a Structured Field string.
func sfString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestScriptCrowdOnlyWhenOverlapping: two principals' calls that started
// within crowdGap of each other go out together only if the second started
// before the first had its answer; one that followed an answer, however
// soon (an idle machine runs the next step within a millisecond), is sent
// after it, or the replay reorders the run.
func TestScriptCrowdOnlyWhenOverlapping(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bobAfter  time.Duration // bob's first request's start after alice's write's start
		wantCrowd bool
	}{
		{"bob after alice's answer", 3 * time.Millisecond, false},
		{"bob before alice's answer", time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := load(t, "iga-01")
			ex := in.Scenario.Exchanges
			w := slices.IndexFunc(ex, func(e reports.Exchange) bool { return e.Label == "alice: write" })
			if w < 0 || w+1 >= len(ex) || ex[w+1].Lane != "bob" {
				t.Fatalf("iga-01's record changed: no alice write followed by bob's requests")
			}
			start := ex[w].Started
			ex[w].Finished = start.Add(2 * time.Millisecond)
			shift := start.Add(tc.bobAfter).Sub(ex[w+1].Started)
			for i := w + 1; i < len(ex); i++ {
				ex[i].Started, ex[i].Finished = ex[i].Started.Add(shift), ex[i].Finished.Add(shift)
			}
			res, err := Script(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(res.Script), "mkfifo"); got != tc.wantCrowd {
				t.Errorf("sent together: %v, want %v:\n%s", got, tc.wantCrowd, res.Script)
			}
		})
	}
}

// A replay that cannot run (a variable missing, a gateway or probe that
// does not answer) ends with exit 2, never NOT REPRODUCED's exit 1, which
// a reviewer would read as the bug being fixed. GATEWAY defaults to the
// URL target the run tested.
func TestScriptSetUpProblemsAreExit2(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	closed := "http://127.0.0.1:1"
	for _, tc := range []struct {
		name, input string
		env         []string
		want        string
	}{
		{"no control token", "retry-03", []string{"GATEWAY=" + closed, "PROBE=" + closed}, "set CONTROL_TOKEN"},
		{"no gateway", "retry-03", []string{"GATEWAY=" + closed, "PROBE=" + closed, "CONTROL_TOKEN=t"}, "no server answers at GATEWAY=" + closed},
		{"no probe variable", "iga-01-no-control", []string{"GATEWAY=" + closed}, "start mcpconform probe and set PROBE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Script(load(t, tc.input))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "repro.sh")
			if err := os.WriteFile(path, res.Script, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, path)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tc.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %v, want 2 saying %q:\n%s", err, tc.want, out)
			}
		})
	}
	in := load(t, "iga-01-no-control")
	res, err := Script(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gateway != origin(in.Target.URLs[0]) || res.Gateway == DefaultGateway {
		t.Errorf("GATEWAY defaults to %q for a URL target at %v", res.Gateway, in.Target.URLs)
	}
}
