package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/bench"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
)

// benchArgs keep every bench test short (CI is near its limit): one round,
// few calls, a small storm. Nothing here asserts on time: only shapes and
// the probe's counts.
var benchArgs = []string{"--rounds", "1", "--calls", "30", "--concurrency", "2", "--storm", "8", "--budget", "4s"}

// runBenchCmd runs mcpconform bench with args and reads its bench.json.
func runBenchCmd(t *testing.T, args ...string) (int, bench.TargetResults, string) {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), append(append([]string{"bench", "--out", out}, benchArgs...), args...), &stdout, &stderr)
	var res bench.TargetResults
	b, err := os.ReadFile(filepath.Join(out, "bench.json"))
	if err != nil {
		t.Fatalf("exit %d, no bench.json: %v\nstderr: %s", code, err, stderr.String())
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("bench.json: %v", err)
	}
	if md, err := os.ReadFile(filepath.Join(out, "bench.md")); err != nil || !bytes.Equal(md, stdout.Bytes()) {
		t.Errorf("bench.md is not what was printed (err %v)", err)
	}
	if !strings.Contains(stderr.String(), "bench: round 1/1: keyed first calls") {
		t.Errorf("no progress line on stderr: %s", stderr.String())
	}
	return code, res, stderr.String()
}

// checkBenchShape holds bench.json to the phases asked for, each with
// calls and a ratio to the bare probe, and to the two storms.
func checkBenchShape(t *testing.T, res bench.TargetResults, phases []string) {
	t.Helper()
	if res.Err != "" {
		t.Errorf("stopped part-way: %s", res.Err)
	}
	var got []string
	for _, s := range res.Summary {
		got = append(got, s.Name)
		if s.Calls == 0 || s.Rate <= 0 || s.Ratio <= 0 || s.P99 <= 0 {
			t.Errorf("%s: no figures: %+v", s.Name, s)
		}
	}
	if strings.Join(got, "|") != strings.Join(phases, "|") {
		t.Errorf("phases %q, want %q", got, phases)
	}
	if len(res.Rounds) != 1 || len(res.Storms) != 2 || res.Storms[0].Through != "bare" || res.Storms[1].Through != "gateway" {
		t.Fatalf("rounds %d, storms %+v: want 1 round, a bare and a gateway storm", len(res.Rounds), res.Storms)
	}
	if bare := res.Storms[0]; bare.Dispatches != bare.N {
		t.Errorf("bare storm: %d dispatches of %d calls: the probe miscounts", bare.Dispatches, bare.N)
	}
}

// The reference: every phase measured, replays and the storm dispatch once.
func TestBenchReference(t *testing.T) {
	t.Setenv(beMain, "1") // the reference starts from this test binary
	code, res, stderr := runBenchCmd(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkBenchShape(t, res, []string{bench.TargetBare, bench.TargetKeyedFirst, bench.TargetReplays, bench.TargetUnkeyed})
	wantOneDispatch(t, res)
}

// A third-party gateway through its profile: the correct one dispatches a
// storm once, the plain proxy (no idempotency) shows its double dispatches
// as findings and exits 1. Its refuse policy leaves unkeyed calls out.
func TestBenchVendorGateway(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode vendorgw.Mode
		code int
	}{
		{"idempotent", vendorgw.Idempotent, 0},
		{"plain proxy", vendorgw.Naive, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := vendorTarget(t, tc.mode)
			code, res, stderr := runBenchCmd(t, "--target", cfg.Target, "--profile", cfg.Profile, "--probe-url", cfg.ProbeURL)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			checkBenchShape(t, res, []string{bench.TargetBare, bench.TargetKeyedFirst, bench.TargetReplays})
			for _, f := range res.Findings {
				t.Logf("finding: %s", f)
			}
			if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "refuse") {
				t.Errorf("skipped %q: want unkeyed calls left out for the refuse policy", res.Skipped)
			}
			if tc.mode == vendorgw.Idempotent {
				wantOneDispatch(t, res)
				return
			}
			if st := res.Storms[1]; st.Dispatches <= 1 {
				t.Errorf("plain proxy: storm of %d made %d dispatches, want more than 1", st.N, st.Dispatches)
			}
			if !strings.HasPrefix(strings.Join(res.Findings, "\n"), "DOUBLE DISPATCH") || !strings.Contains(strings.Join(res.Findings, "\n"), "a storm of 8 identical keyed calls dispatched") {
				t.Errorf("plain proxy: findings %q do not state the double dispatches", res.Findings)
			}
		})
	}
}

// wantOneDispatch: replays reach the probe no more, and the storm once.
func wantOneDispatch(t *testing.T, res bench.TargetResults) {
	t.Helper()
	if st := res.Storms[1]; st.Dispatches != 1 || st.Unsettled != 0 {
		t.Errorf("gateway storm: %d dispatches, %d unsettled; want 1 and 0", st.Dispatches, st.Unsettled)
	}
	for _, s := range res.Summary {
		if s.Name == bench.TargetReplays && s.Dispatches != 0 {
			t.Errorf("replays: %d dispatches, want 0", s.Dispatches)
		}
	}
	for _, f := range res.Findings {
		if strings.HasPrefix(f, "DOUBLE DISPATCH") {
			t.Errorf("finding against a correct gateway: %s", f)
		}
	}
}

// Flags bench cannot use are refused before anything starts, and a
// target off this machine that its profile does not name gets no call.
func TestBenchRefuses(t *testing.T) {
	prof := writeProfile(t, map[string]any{"name": "remote", "urls": []string{"http://192.0.2.10:8080/mcp"},
		"tools": map[string]any{"write": map[string]any{"name": "w"}}, "credentials": map[string]any{"api_keys": []string{"k"}}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--calls", "0"}, "--calls 0"},
		{[]string{"--storm", "1"}, "at least 2 identical calls"},
		{[]string{"--budget", "0s"}, "positive duration"},
		{[]string{"--target", "http://127.0.0.1:1/mcp"}, "needs --profile"},
		{[]string{"--profile", prof}, "needs none"},
		{[]string{"--target", "http://198.51.100.7/mcp", "--profile", prof}, "not a loopback address"},
		{[]string{"extra"}, "want 0 argument"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), append([]string{"bench"}, tc.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bench %q: exit %d, %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// help bench explains the command: what is measured, the bounds, where
// traffic may go, the findings.
func TestBenchHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"help", "bench"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Usage: mcpconform bench", "bare probe", "DOUBLE DISPATCH", "loopback", "-budget", "-calls", "-storm"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help bench lacks %q", want)
		}
	}
}
