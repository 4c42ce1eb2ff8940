package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReproReplays runs `mcpconform repro ID --bug BUG` for scenarios whose
// check the bug breaks, then runs the repro.sh it wrote against freshly
// started reference gateways, a probe and an identity provider: with the
// bug the script says REPRODUCED (exit 0), without it NOT REPRODUCED (exit
// 1). retry-03 retries without a key; iga-01..04 act as principals, whose
// tokens the script mints anew at IDP after registering it as the run
// registered its own identity provider.
func TestReproReplays(t *testing.T) {
	bash := replayTools(t)
	probe := startListening(t, "probe", "--addr", "127.0.0.1:0")
	idp := startListening(t, "idp", "--addr", "127.0.0.1:0")
	for _, sc := range []struct{ id, bug string }{
		{"retry-03", "random-unkeyed-key"}, // the retry runs again under a new receipt
		{"iga-01", "principal-unbound"},    // bob gets alice's result
		{"iga-02", "replay-before-iga"},    // revoked alice gets her stored result
		{"iga-03", "replay-before-iga"},
		{"iga-04", "replay-before-iga"},
	} {
		t.Run(sc.id, func(t *testing.T) {
			if testing.Short() && sc.id != "retry-03" {
				t.Skip("-short replays retry-03 only")
			}
			script := reproScript(t, bash, sc.id, sc.bug)
			for _, tc := range []struct {
				name string
				bugs []string
				code int
				last string
			}{
				{"with the bug", []string{"--bug", sc.bug}, 0, "REPRODUCED"},
				{"without the bug", nil, 1, "NOT REPRODUCED"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					args := append([]string{"gateway", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(t.TempDir(), "gw.db"),
						"--control-token", "repro-test-token"}, tc.bugs...)
					addr := startListening(t, args...)
					replay(t, bash, script, tc.code, tc.last, "GATEWAY=http://"+addr, "CONTROL_TOKEN=repro-test-token", "PROBE=http://"+probe, "IDP=http://"+idp)
				})
			}
		})
	}
}

// replayTools skips a test that runs repro.sh where bash or curl is
// missing, and returns bash; dispatch runs this test binary as mcpconform.
func replayTools(t *testing.T) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	t.Setenv(beMain, "1")
	return bash
}

// replay runs a repro.sh with env and wants its exit code and last line.
func replay(t *testing.T, bash, script string, code int, last string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, script)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	got := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		got = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("repro.sh: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if got != code || lines[len(lines)-1] != last {
		t.Fatalf("repro.sh exit %d, last line %q; want %d, %q:\n%s", got, lines[len(lines)-1], code, last, b)
	}
}

// TestReproPrincipalsFixedIssuer: a gateway without a control API that
// trusts the harness's identity provider at a pinned address and key (set
// up once by its operator, here the reference's fixtures). The script
// cannot register an IdP; it mints its tokens at IDP, the same address and
// key file started again as `mcpconform idp`, or takes them from
// TOKEN_<subject>, here signed by `mcpconform idp token`.
func TestReproPrincipalsFixedIssuer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs repro and three replays")
	}
	bash := replayTools(t)
	dir := t.TempDir()
	probe := startListening(t, "probe", "--addr", "127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idpAddr := ln.Addr().String()
	ln.Close()
	issuer, key := "http://"+idpAddr, filepath.Join(dir, "idp.pem")
	keys := []string{"mcpk_exta_0123456789abcdef0123456789abcdef", "mcpk_extb_0123456789abcdef0123456789abcdef", "mcpk_extc_0123456789abcdef0123456789abcdef"}
	fixtures := writeProfile(t, map[string]any{ // a JSON file like any other
		"wallets": []any{
			map[string]any{"id": "w-ext-1", "balance": 1 << 20, "api_keys": keys[:2]},
			map[string]any{"id": "w-ext-2", "balance": 1 << 20, "api_keys": keys[2:]},
		},
		"tools": []any{map[string]any{"name": "ext.write", "upstream_url": "http://" + probe + "/mcp", "upstream_tool": "probe.write", "price": 3}},
		"trust": []any{map[string]any{"provider": "harness", "issuer": issuer, "jwks_url": issuer + "/jwks.json", "audience": "mcpconform"}},
		"principals": []any{
			map[string]any{"provider": "harness", "issuer": issuer, "subject": "ext-alice", "tools": []string{}},
			map[string]any{"provider": "harness", "issuer": issuer, "subject": "ext-bob", "tools": []string{}},
		},
	})
	gateway := func(bugs ...string) string {
		args := []string{"gateway", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(t.TempDir(), "gw.db"), "--fixtures", fixtures}
		for _, b := range bugs {
			args = append(args, "--bug", b)
		}
		return startListening(t, args...)
	}
	buggy := gateway("principal-unbound")
	profile := writeProfile(t, map[string]any{
		"name": "reference without a control API", "urls": []string{"http://" + buggy + "/mcp"},
		"tools":       map[string]any{"write": map[string]any{"name": "ext.write", "price": 3}},
		"credentials": map[string]any{"api_keys": keys[:2], "wallet_id": "w-ext-1", "other_wallet": map[string]any{"wallet_id": "w-ext-2", "api_key": keys[2]}},
		"identity":    map[string]any{"harness_idp": true, "subjects": map[string]string{"alice": "ext-alice", "bob": "ext-bob"}},
	})
	script := reproScript(t, bash, "iga-01", "", "--target", "http://"+buggy+"/mcp", "--profile", profile,
		"--probe-url", "http://"+probe, "--idp-addr", idpAddr, "--idp-key", key)
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`need KEY_([0-9a-f]+) `).FindSubmatch(b)
	if m == nil || !bytes.Contains(b, []byte("TOKEN_ext_alice")) {
		t.Fatalf("the script names no KEY_ or TOKEN_ext_alice:\n%s", b)
	}
	env := []string{"PROBE=http://" + probe, "KEY_" + string(m[1]) + "=" + keys[0]}
	clean := gateway()
	replay(t, bash, script, 2, "NOT REPRODUCED (the replay could not run)", slices.Concat(env, []string{"GATEWAY=http://" + buggy})...)

	startListening(t, "idp", "--addr", idpAddr, "--key", key)
	replay(t, bash, script, 0, "REPRODUCED", slices.Concat(env, []string{"IDP=" + issuer, "GATEWAY=http://" + buggy})...)
	replay(t, bash, script, 1, "NOT REPRODUCED", slices.Concat(env, []string{"IDP=" + issuer, "GATEWAY=http://" + clean})...)

	var tokens []string
	for _, sub := range []string{"ext-alice", "ext-bob"} {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), []string{"idp", "token", "--key", key, "--issuer", issuer, "--subject", sub}, &out, &errb); code != 0 {
			t.Fatalf("idp token: exit %d: %s", code, errb.String())
		}
		tokens = append(tokens, "TOKEN_"+strings.ReplaceAll(sub, "-", "_")+"="+strings.TrimSpace(out.String()))
	}
	replay(t, bash, script, 0, "REPRODUCED", slices.Concat(env, tokens, []string{"GATEWAY=http://" + buggy})...)
}

// reproScript runs `mcpconform repro ID --bug BUG` (and flags), which must
// report the scenario failed, and returns the path of the repro.sh it wrote.
func reproScript(t *testing.T, bash, id, bug string, flags ...string) string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if bug != "" {
		flags = append(flags, "--bug", bug)
	}
	code := dispatch(ctx, append([]string{"repro", id, "--out", out}, flags...), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("repro exit %d, want 1 (the scenario fails under the bug)\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), id+": failed") {
		t.Errorf("stdout does not report the failure:\n%s", stdout.String())
	}
	for _, f := range []string{"report.html", "summary.json", "evidence/" + id + ".json", "repro.sh"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("repro left no %s: %v", f, err)
		}
	}
	script := filepath.Join(out, "repro.sh")
	if b, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n repro.sh: %v\n%s", err, b)
	}
	return script
}

// startListening starts this test binary as a server (the reference
// gateway, the probe) on a free loopback port and returns its address,
// which it prints as "listening on http://ADDR".
func startListening(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), beMain+"=1")
	cmd.Stderr = io.Discard
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on http://"); ok {
				found <- a
			}
		}
	}()
	select {
	case a := <-found:
		return a
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not start within 20s", args[0])
	}
	return ""
}

func TestReproUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{
		{"repro"},
		{"repro", "retry-03"},
		{"repro", "nope-99", "--out", t.TempDir()},
		{"repro", "retry-03", "extra", "--out", t.TempDir()},
	} {
		if code := dispatch(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := dispatch(context.Background(), []string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "mcpconform repro") {
		t.Errorf("usage does not name repro:\n%s", stdout.String())
	}
}
