package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/mcpconform/mcpconform/internal/golden"
)

const profiles = "../../drivers/target/testdata/"

func profileCheck(args ...string) (code int, stdout, stderr string) {
	var out, errw bytes.Buffer
	code = dispatch(context.Background(), append([]string{"profile"}, args...), &out, &errw)
	return code, out.String(), errw.String()
}

// TestProfileCheckExample: the summary of the example profile, which uses
// every field, is exactly the golden file.
func TestProfileCheckExample(t *testing.T) {
	code, stdout, stderr := profileCheck("check", profiles+"profile.example.json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	goldenfile.Equal(t, filepath.Join("testdata", "profile-check.golden"), []byte(stdout))
}

// TestProfileCheckShowsNoSecret: keys, tokens and the control token of the
// valid fixtures appear only as a prefix.
func TestProfileCheckShowsNoSecret(t *testing.T) {
	secrets := []string{"mcpk_k1_example", "mcpk_k9_example", "ct_example", "eyJhbGciOiJFUzI1NiJ9.e30.sig", "sk-live-aaaaaaaa", "sk-live-cccccccc", "tok-alice"}
	for _, f := range []string{"profile.example.json", "good-tools.json"} {
		code, stdout, _ := profileCheck("check", profiles+f)
		if code != 0 {
			t.Fatalf("%s: exit %d", f, code)
		}
		for _, s := range secrets {
			if strings.Contains(stdout, s) {
				t.Errorf("%s: summary shows the secret %q:\n%s", f, s, stdout)
			}
		}
	}
	_, stdout, _ := profileCheck("check", profiles+"good-tools.json")
	for _, want := range []string{"sk-liv…", "alice tok-…, bob tok…", "protocol      negotiated", "unkeyed       refuse", "approval     notes.publish\n",
		"capabilities  upstream, principal-tokens\n", "other wallet (none): api key sk-liv…"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("good-tools.json summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestProfileCheckSummaries(t *testing.T) {
	tests := map[string][]string{
		"good-minimal.json": {"control       none", "tools         write        none", "credentials   wallet (none): api key sk…",
			"capabilities  none (scenarios needing any are skipped)", "key           header Idempotency-Key"},
		"good-no-control.json": {"key           params._meta[\"io.acme/idempotency\"]", "auth          X-Api-Key: <api key>;",
			"tools         write        acme.probe.write\n", "capabilities  upstream\n"},
		"good-harness-idp.json":      {"identity      harness IdP; subjects alice=u-100, bob=u-200", "capabilities  principal-tokens\n"},
		"good-legacy-same-tool.json": {"write        w (4 credits)", "capabilities  upstream (implied)"},
		"good-key-header.json":       {"key           header X-Request-Key\n"},
		"good-key-params.json":       {"key           params[\"idempotencyKey\"] of tools/call\n"},
		"good-effects.json": {"effects       write send_message with {\"channel\":\"conformance\",\"text\":\"{token} {extra}\"}\n",
			"read list_messages with {\"contains\":\"{token}\"}, count at result.structuredContent.messages (the target reports its own effects)",
			"capabilities  effects (implied)\n"},
		"good-key-argument.json": {"key           arguments at ['io.acme/request'].idempotency_key (left out of the arguments the harness compares)\n"},
	}
	for f, wants := range tests {
		code, stdout, stderr := profileCheck("check", profiles+f)
		if code != 0 || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q", f, code, stderr)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: summary lacks %q:\n%s", f, want, stdout)
			}
		}
	}
}

// TestProfileCheckInvalid: every bad fixture exits 1 with its problems one
// a line, each naming the file; bad-many.json has four.
func TestProfileCheckInvalid(t *testing.T) {
	files, err := filepath.Glob(profiles + "bad-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad fixtures: %v", err)
	}
	for _, f := range files {
		code, stdout, stderr := profileCheck("check", f)
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if code != 1 || stderr != "" || stdout == "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 and problems", f, code, stdout, stderr)
			continue
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, f+": ") {
				t.Errorf("%s: line %q does not name the file", f, l)
			}
		}
	}
	_, stdout, _ := profileCheck("check", profiles+"bad-many.json")
	want := strings.Join([]string{
		`unkeyed_policy "never": want "derived" or "refuse"`,
		"body_limit_bytes -5: want a positive number of bytes",
		"reasons.parse_error[0]: http status 200: want 400..599",
		`tools.approval: "a" is tools.write already; every role needs a tool of its own`,
	}, "\n"+profiles+"bad-many.json: ")
	if stdout != profiles+"bad-many.json: "+want+"\n" {
		t.Errorf("bad-many.json:\n%s", stdout)
	}
}

func TestProfileCheckUsage(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout bool // the usage text on stdout (help), else on stderr
	}{
		{nil, 2, false},
		{[]string{"check"}, 2, false},
		{[]string{"check", "a.json", "b.json"}, 2, false},
		{[]string{"check", "--nope", "a.json"}, 2, false},
		{[]string{"lint", "a.json"}, 2, false},
		{[]string{"-h"}, 0, true},
		{[]string{"check", "-h"}, 0, true},
	}
	for _, tt := range tests {
		code, stdout, stderr := profileCheck(tt.args...)
		where := stderr
		if tt.stdout {
			where = stdout
		}
		if code != tt.code || !strings.Contains(where, "Usage: mcpconform profile check FILE") {
			t.Errorf("profile %q: exit %d, stdout %q, stderr %q", tt.args, code, stdout, stderr)
		}
	}
	code, stdout, stderr := profileCheck("check", filepath.Join(t.TempDir(), "missing.json"))
	if code != 2 || stdout != "" || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var out bytes.Buffer
	if dispatch(context.Background(), []string{"help"}, &out, &out) != 0 || !strings.Contains(out.String(), "mcpconform profile check FILE") {
		t.Error("the usage does not name profile check")
	}
}

func TestSecret(t *testing.T) {
	tests := map[string]string{"mcpk_k1_example": "mcpk_k…", "abcdefghijkl": "abcdef…", "abcd": "ab…", "k": "…", "": "…", "ééééééééééééé": "éééééé…", "ééééééé": "ééé…"}
	for in, want := range tests {
		if got := secret(in); got != want {
			t.Errorf("secret(%q) = %q, want %q", in, got, want)
		}
	}
}
