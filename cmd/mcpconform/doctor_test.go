package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
	"github.com/mcpconform/mcpconform/reports"
)

// doctor finds a profile whose tool the gateway does not list, and one whose
// tool does not reach the probe; with the wiring right it passes and names
// what the missing capabilities cost.
func TestDoctor(t *testing.T) {
	pr, err := probe.Start(probe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	other, err := probe.Start(probe.Options{}) // a probe the harness does not watch
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	gw, err := vendorgw.Start(context.Background(), vendorgw.Options{
		UpstreamURL: pr.URL(), APIKeys: map[string]string{"vk-doctor-0123456789": "t"}, Mode: vendorgw.Idempotent,
		Tools: []vendorgw.Tool{{Name: "acme.write", Upstream: probe.ToolWrite}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	for _, tc := range []struct {
		name, tool, probeURL string
		code                 int
		want                 []string
	}{
		{"wired", "acme.write", "http://" + pr.Addr(), 0,
			[]string{"ok   one call through the gateway reaches the harness probe", "highest level it can claim: wire", "  incomplete, checks not observed without ledger (level metered): ", "  skipped, needs clock (level full): "}},
		{"tool not listed", "acme.nope", "http://" + pr.Addr(), 1,
			[]string{"FAIL tool acme.nope (write) is listed", "tools/list has [acme.write]"}},
		{"upstream elsewhere", "acme.write", "http://" + other.Addr(), 1,
			[]string{"FAIL one call through the gateway reaches the harness probe", "never saw token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := writeProfile(t, map[string]any{"tools": map[string]any{"write": map[string]any{"name": tc.tool}},
				"unkeyed_policy": "refuse", "credentials": map[string]any{"api_keys": []string{"vk-doctor-0123456789"}}})
			var out, errs bytes.Buffer
			code := dispatch(context.Background(), []string{"doctor", "--target", gw.URL(), "--profile", prof, "--probe-url", tc.probeURL}, &out, &errs)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errs.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	// An unreachable target is a set-up error, not a finding.
	prof := writeProfile(t, map[string]any{"credentials": map[string]any{"api_keys": []string{"k"}}})
	var out, errs bytes.Buffer
	for _, cmd := range []string{"doctor", "run"} {
		out.Reset()
		errs.Reset()
		args := []string{cmd, "--target", "http://127.0.0.1:1/mcp", "--profile", prof}
		if cmd == "run" {
			args = append(args, "--out", t.TempDir())
		}
		if code := dispatch(context.Background(), args, &out, &errs); code != 2 || !strings.Contains(errs.String(), "preflight: target http://127.0.0.1:1/mcp unreachable") {
			t.Errorf("%s against an unreachable target: exit %d, want 2 naming it unreachable: %s", cmd, code, errs.String())
		}
	}
	// A listener that accepts and never answers is told apart from nobody
	// listening: the message says which.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	errs.Reset()
	silentURL := "http://" + silent.Addr().String() + "/mcp"
	if code := dispatch(context.Background(), []string{"run", "--target", silentURL, "--profile", prof, "--out", t.TempDir()}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "accepts connections but did not answer initialize") {
		t.Errorf("run against a target that never answers: exit %d, want 2 saying it accepts and never answers: %s", code, errs.String())
	}
	// Refused credentials are a set-up error too.
	bad := writeProfile(t, map[string]any{"tools": map[string]any{"write": map[string]any{"name": "acme.write"}},
		"credentials": map[string]any{"api_keys": []string{"vk-wrong-0123456789"}}})
	errs.Reset()
	if code := dispatch(context.Background(), []string{"run", "--target", gw.URL(), "--profile", bad, "--probe-url", "http://" + pr.Addr(), "--out", t.TempDir()}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "preflight") || !strings.Contains(errs.String(), "refused") {
		t.Errorf("run with a refused key: exit %d, want 2 naming the refusal: %s", code, errs.String())
	}
	// A gateway whose tool does not reach the probe the harness watches is
	// wired wrong, not nonconforming: run and explore stop before any
	// verdict, exit 2, saying so.
	wired := writeProfile(t, map[string]any{"tools": map[string]any{"write": map[string]any{"name": "acme.write"}},
		"unkeyed_policy": "refuse", "credentials": map[string]any{"api_keys": []string{"vk-doctor-0123456789"}}})
	for _, cmd := range []string{"run", "explore"} {
		out.Reset()
		errs.Reset()
		dir := t.TempDir()
		code := dispatch(context.Background(), []string{cmd, "--target", gw.URL(), "--profile", wired, "--probe-url", "http://" + other.Addr(), "--out", dir}, &out, &errs)
		if code != 2 || !strings.Contains(errs.String(), "reaches the harness probe: no: the probe at") || !strings.Contains(errs.String(), "never saw token") {
			t.Errorf("%s wired to another probe: exit %d, want 2 naming the wiring:\n%s%s", cmd, code, out.String(), errs.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
			t.Errorf("%s wired to another probe wrote a verdict (summary.json)", cmd)
		}
	}
}

// What doctor says a run will make of each scenario is what the run makes
// of it, on a gateway that gets everything right: with a control API on
// one URL, and without one (no identity provider; the refuse policy).
func TestDoctorPredictsRun(t *testing.T) {
	exe := harnessBinary(t, "runs the suite three times")
	ref := startGateway(t)
	withControl := runner.Config{Target: ref.URLs[0], Binary: exe, Seed: 5, Concurrency: 64,
		Profile: writeProfile(t, map[string]any{"control_url": ref.ControlURLs[0], "control_token": ref.ControlToken})}
	for _, tc := range []struct {
		name string
		mode string // an external self-test mode, or "" for withControl
	}{
		{name: "control API, one URL"},
		{name: "no control API, no identity provider", mode: bugmap.ModeWire},
		{name: "no control API, unkeyed refused", mode: bugmap.ModeWireRefuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withControl
			if tc.mode != "" {
				c, stop, err := runner.ExternalTarget(context.Background(), runner.Config{Binary: exe, Seed: 5, Concurrency: 64}, tc.mode, "")
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				cfg = c
			}
			d, err := runner.Doctor(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := runner.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			predicted, got := d.Predicted(), verdicts(out.Run)
			if len(predicted) != len(got) {
				t.Errorf("doctor predicts %d scenarios, the run has %d", len(predicted), len(got))
			}
			for _, s := range out.Run.Scenarios {
				if predicted[s.ID] != s.Verdict {
					t.Errorf("%s: doctor predicts %q, run says %q: %s", s.ID, predicted[s.ID], s.Verdict, firstLineOf(s.Reason))
				}
			}
			if out.Result != reports.RunPass {
				t.Errorf("run: %s, want PASS: %v", out.Result, out.Why)
			}
		})
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
