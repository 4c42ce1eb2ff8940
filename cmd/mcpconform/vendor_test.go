package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
	"github.com/mcpconform/mcpconform/reports"
)

// vendorRun runs the suite against internal/vendorgw, a gateway the harness
// did not write: go-sdk's stateful server (sessions required, answers over
// SSE), its own refusal spellings, no control API, no ledger.
// edits change the gateway's options (func(*vendorgw.Options)), the
// profile (func(map[string]any)) or the run (func(*runner.Config)) before
// the run.
func vendorRun(t *testing.T, mode vendorgw.Mode, waivers string, edits ...any) runner.Outcome {
	t.Helper()
	cfg := vendorTarget(t, mode, edits...)
	cfg.Seed, cfg.Concurrency, cfg.ExpectedFailures = 3, 64, waivers
	for _, e := range edits {
		if f, ok := e.(func(*runner.Config)); ok {
			f(&cfg)
		}
	}
	out, err := runner.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Run.Scenarios {
		t.Logf("%-10s %-16s %s", s.ID, s.Verdict, firstLine(s.Reason))
	}
	return out
}

// vendorTarget starts internal/vendorgw behind a probe of its own and
// returns the configuration that points a run (or explore) at it through a
// profile, as a vendor would.
func vendorTarget(t *testing.T, mode vendorgw.Mode, edits ...any) runner.Config {
	t.Helper()
	pr, err := probe.Start(probe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	// Its records are scoped by tenant; each key is a tenant of its own.
	keys := map[string]string{"vk-alpha-0123456789": "alpha", "vk-beta-0123456789": "beta", "vk-gamma-0123456789": "gamma"}
	opts := vendorgw.Options{
		UpstreamURL: pr.URL(), APIKeys: keys, Mode: mode,
		Tools: []vendorgw.Tool{{Name: "acme.write", Upstream: probe.ToolWrite}, {Name: "acme.write2", Upstream: probe.ToolWrite},
			{Name: "acme.count", Upstream: probe.ToolRead, ReadOnly: true}},
	}
	for _, e := range edits {
		if f, ok := e.(func(*vendorgw.Options)); ok {
			f(&opts)
		}
	}
	gw, err := vendorgw.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	p := map[string]any{
		"name":           "acme vendorgw",
		"unkeyed_policy": "refuse",
		"receipt_path":   "result._meta['acme/receipt']",
		"tools": map[string]any{"write": map[string]any{"name": "acme.write"}, "write_other": map[string]any{"name": "acme.write2"},
			"read_only": map[string]any{"name": "acme.count"}},
		"credentials": map[string]any{"api_keys": []string{"vk-alpha-0123456789", "vk-beta-0123456789"},
			"other_wallet": map[string]any{"api_key": "vk-gamma-0123456789"}},
		"reasons": map[string]any{
			"idempotency_key_required": []any{"acme_key_missing"},
			"idempotency_in_progress":  []any{"acme_busy"},
			"idempotency_key_reused":   []any{"acme_key_conflict"},
			"unauthenticated":          []any{"auth_failed"},
			"invalid_arguments":        []any{"acme_bad_arguments"},
			"dispatch_failed":          []any{"acme_upstream_failed"},
			// go-sdk's HTTP layer refuses these before any JSON-RPC, in plain text.
			"batch_not_supported": []any{map[string]any{"http": 400}},
			"parse_error":         []any{map[string]any{"http": 400}},
			"unknown_tool":        []any{-32602},
		},
	}
	for _, e := range edits {
		if f, ok := e.(func(map[string]any)); ok {
			f(p)
		}
	}
	prof := writeProfile(t, p)
	return runner.Config{Target: gw.URL(), Profile: prof, ProbeURL: "http://" + pr.Addr()}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// A gateway with no idempotency at all and no control API: the probe sees
// its double dispatches, so the keyed retry, twins, lost-response,
// cancellation and refuse-policy scenarios fail, and the run is not exit 0.
// Every scenario runs on its stateful go-sdk server (none is refused for a
// missing session or initialize).
func TestVendorGatewayWithoutIdempotencyFails(t *testing.T) {
	out := vendorRun(t, vendorgw.Naive, "")
	v := verdicts(out.Run)
	for _, id := range []string{"retry-01", "retry-02", "retry-06", "twins-01", "lost-01", "cancel-01", "refuse-10", "ledger-02"} {
		if v[id] != judge.Failed {
			t.Errorf("%s: %s against a gateway with no idempotency, want failed", id, v[id])
		}
	}
	if out.Result != reports.RunFail || out.Code != runner.ExitFailed {
		t.Errorf("run %s exit %d, want FAIL exit 1", out.Result, out.Code)
	}
	for _, s := range out.Run.Scenarios {
		for _, ex := range s.Exchanges {
			if ex.Status == 400 && (strings.Contains(ex.ResponseBody, "session") || strings.Contains(ex.ResponseBody, "initializ")) {
				t.Errorf("%s: %s answered %q: the wire driver did not hold a session", s.ID, ex.Label, ex.ResponseBody)
			}
		}
	}
}

// A correct third-party gateway (refuse policy, its own refusal spellings
// mapped by the profile) fails nothing about idempotency; what it lacks
// beyond that is waived on the record, with the reason.
func TestVendorGatewayIdempotent(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCorrectPass(t, vendorRun(t, vendorgw.Idempotent, waivers))
}

// wantCorrectPass holds a run against a correct gateway to no failed
// scenario and a PASS at level wire.
func wantCorrectPass(t *testing.T, out runner.Outcome) {
	t.Helper()
	for _, s := range out.Run.Scenarios {
		if s.Verdict == judge.Failed || s.Verdict == judge.UnexpectedPass || s.Verdict == judge.Undefined {
			t.Errorf("%s: %s against a correct gateway: %s", s.ID, s.Verdict, s.Reason)
		}
	}
	if out.Result != reports.RunPass || out.Run.Level != reports.LevelWire {
		t.Errorf("run %s at level %s, want PASS at wire: %v", out.Result, out.Run.Level, out.Why)
	}
}

// A thin go-sdk proxy hands on its 2026-07-28 upstream's results whole, a
// resultType among their members, to 2025-11-25 clients too: that
// version's Result admits any member, so the run passes with no violated
// check, as it must for a correct gateway.
func TestVendorGatewayKeepsTheUpstreamsResultType(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	out := vendorRun(t, vendorgw.Idempotent, waivers, func(o *vendorgw.Options) { o.KeepUpstreamResult = true })
	sawResultType := false
	for _, s := range out.Run.Scenarios {
		for _, c := range s.Checks {
			if c.Status() == judge.Violated && s.Verdict != judge.ExpectedFailure {
				t.Errorf("%s: %s violated against a correct gateway: %s", s.ID, c.Step, c.Actual)
			}
		}
		if s.ID != "retry-06" {
			continue
		}
		for _, ex := range s.Exchanges {
			sawResultType = sawResultType || strings.Contains(ex.ResponseBody, `"resultType":"complete"`)
		}
	}
	if !sawResultType {
		t.Error("retry-06's 2025-11-25 answers carry no resultType: the test no longer shows what it is for")
	}
	if out.Result != reports.RunPass || out.Run.Level != reports.LevelWire {
		t.Errorf("run %s at level %s, want PASS at wire: %v", out.Result, out.Run.Level, out.Why)
	}
}

// vendorWaivers accepts, on the record, what vendorgw lacks by design.
const vendorWaivers = `# vendorgw is a test double: these gaps are its own, accepted with the reason
refuse-09 vendorgw has no request body limit
`

// A gateway that re-sends every finished call 300 ms later passes each
// scenario's own checks and its short settle period; the end-of-run
// recount sees the late dispatches and fails the scenarios they belong to.
func TestVendorGatewayLateDuplicateFails(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	out := vendorRun(t, vendorgw.Idempotent, waivers, func(o *vendorgw.Options) { o.LateDuplicate = 300 * time.Millisecond })
	v := verdicts(out.Run)
	for _, id := range []string{"retry-01", "retry-06", "twins-01", "lost-01", "cancel-01"} {
		if v[id] != judge.Failed {
			t.Errorf("%s: %s with a late duplicate dispatch, want failed", id, v[id])
		}
	}
	if out.Result != reports.RunFail {
		t.Errorf("run %s, want FAIL", out.Result)
	}
}

// The late dispatch is in the history too, so recheck agrees with the run.
func TestLateDuplicateIsInTheHistory(t *testing.T) {
	out := vendorRun(t, vendorgw.Idempotent, "", func(o *vendorgw.Options) { o.LateDuplicate = 300 * time.Millisecond })
	for _, s := range out.Run.Scenarios {
		if s.ID != "retry-01" {
			continue
		}
		if ok, twice := judge.AtMostOnce(s.History); ok {
			t.Errorf("retry-01's history shows no second dispatch: %v", twice)
		}
		if _, mismatch := reports.Recheck(s); mismatch {
			t.Errorf("retry-01: recheck contradicts the recorded checks")
		}
	}
}

// Faults an adversarial review of the external mode built (each passed the
// harness before its check was closed), now caught.
func TestVendorGatewayReviewedFaultsAreCaught(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		bugs   vendorgw.Bugs
		failed []string
	}{
		// Refused at once, forwarded later: the end-of-run recount sees it.
		{"late unkeyed dispatch", vendorgw.Bugs{LateUnkeyedDispatch: 300 * time.Millisecond}, []string{"refuse-10"}},
		// A dispatch of its own, another scope's content: the probe's answer
		// differs per dispatch, so the same content is a leak.
		{"leak across scope", vendorgw.Bugs{LeakAcrossScope: true}, []string{"scope-01", "scope-02", "scope-03"}},
		// Duplicates of a running operation refused for good: twins-01 holds
		// the first dispatch, so every twin meets it running, every time.
		{"busy not retryable", vendorgw.Bugs{BusyNotRetryable: true}, []string{"twins-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := vendorRun(t, vendorgw.Idempotent, waivers, func(o *vendorgw.Options) { o.Bugs = tc.bugs })
			v := verdicts(out.Run)
			for _, id := range tc.failed {
				if v[id] != judge.Failed {
					t.Errorf("%s: %s, want failed", id, v[id])
				}
			}
			if out.Result != reports.RunFail || out.Code != runner.ExitFailed {
				t.Errorf("run %s exit %d, want FAIL exit 1", out.Result, out.Code)
			}
		})
	}
}

// A gateway whose tools/list shows a read-only tool has the feature: a
// profile that leaves tools.read_only out does not make refuse-02 not
// applicable, it leaves it skipped, and the run is not a PASS.
func TestVendorGatewayUndeclaredReadOnlyTool(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	forward := func(o *vendorgw.Options) { o.Bugs.ForwardUnkeyedReads = true }
	declared := vendorRun(t, vendorgw.Idempotent, waivers, forward)
	if v := verdicts(declared.Run)["refuse-02"]; v != judge.Failed {
		t.Errorf("refuse-02 with the read-only tool declared: %s, want failed", v)
	}
	omitted := vendorRun(t, vendorgw.Idempotent, waivers, forward, func(p map[string]any) {
		delete(p["tools"].(map[string]any), "read_only")
	})
	if v := verdicts(omitted.Run)["refuse-02"]; v != judge.Skipped {
		t.Errorf("refuse-02 with the read-only tool left out of the profile: %s, want skipped", v)
	}
	if omitted.Result != reports.RunIncomplete || omitted.Code != runner.ExitIncomplete {
		t.Errorf("run %s exit %d, want INCOMPLETE exit 3: %v", omitted.Result, omitted.Code, omitted.Why)
	}
}
