package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReproRetry03 runs `mcpconform repro retry-03 --bug random-unkeyed-key`,
// then runs the repro.sh it wrote against freshly started reference gateways:
// with the bug it shows the double charge, without it one debit.
func TestReproRetry03(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	t.Setenv(beMain, "1")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, []string{"repro", "retry-03", "--bug", "random-unkeyed-key", "--out", out}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("repro exit %d, want 1 (the scenario fails under the bug)\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "retry-03: failed") {
		t.Errorf("stdout does not report the failure:\n%s", stdout.String())
	}
	for _, f := range []string{"report.html", "summary.json", "evidence/retry-03.json", "repro.sh"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("repro left no %s: %v", f, err)
		}
	}
	script := filepath.Join(out, "repro.sh")
	if b, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n repro.sh: %v\n%s", err, b)
	}

	debits := regexp.MustCompile(`(?m)^observed: (\d+) debit\(s\)`)
	for _, tc := range []struct {
		name string
		bugs []string
		want string
	}{
		{"with the bug", []string{"--bug", "random-unkeyed-key"}, "2"},
		{"without the bug", nil, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startReproGateway(t, tc.bugs)
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(sctx, bash, script)
			cmd.Env = append(os.Environ(), "GATEWAY=http://"+addr, "CONTROL_TOKEN=repro-test-token")
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("repro.sh: %v\n%s", err, b)
			}
			m := debits.FindSubmatch(b)
			if m == nil || string(m[1]) != tc.want {
				t.Fatalf("repro.sh shows %q debits, want %s:\n%s", m, tc.want, b)
			}
			if !strings.Contains(string(b), "expected: 1 debit(s) and 0 refund(s), 1 dispatch(es)") {
				t.Errorf("no expected line:\n%s", b)
			}
		})
	}
}

// startReproGateway starts the reference gateway (this test binary) on a free
// loopback port with a control token, and returns its address.
func startReproGateway(t *testing.T, extra []string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"gateway", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(t.TempDir(), "gw.db"),
		"--control-token", "repro-test-token"}, extra...)
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
		t.Fatal("the gateway did not start within 20s")
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
