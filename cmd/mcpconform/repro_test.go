package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	t.Setenv(beMain, "1")
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
					sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					cmd := exec.CommandContext(sctx, bash, script)
					cmd.Env = append(os.Environ(), "GATEWAY=http://"+addr, "CONTROL_TOKEN=repro-test-token", "PROBE=http://"+probe, "IDP=http://"+idp)
					b, err := cmd.CombinedOutput()
					got := 0
					var exit *exec.ExitError
					if errors.As(err, &exit) {
						got = exit.ExitCode()
					} else if err != nil {
						t.Fatalf("repro.sh: %v\n%s", err, b)
					}
					lines := strings.Split(strings.TrimSpace(string(b)), "\n")
					if got != tc.code || lines[len(lines)-1] != tc.last {
						t.Fatalf("repro.sh exit %d, last line %q; want %d, %q:\n%s", got, lines[len(lines)-1], tc.code, tc.last, b)
					}
				})
			}
		})
	}
}

// reproScript runs `mcpconform repro ID --bug BUG`, which must report the
// scenario failed, and returns the path of the repro.sh it wrote.
func reproScript(t *testing.T, bash, id, bug string) string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, []string{"repro", id, "--bug", bug, "--out", out}, &stdout, &stderr)
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
