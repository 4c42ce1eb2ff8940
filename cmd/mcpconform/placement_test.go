package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
	"github.com/mcpconform/mcpconform/reports"
)

// keyPlacements are servers that read the key where public MCP servers
// put it, each with the profile that says so.
var keyPlacements = map[string]struct {
	key     vendorgw.KeyAt
	profile map[string]any
}{
	// Nested, into the arguments' own "meta" object of the argument
	// scenarios (args-01 writes one): the key must stay out of what both
	// sides compare.
	"argument": {vendorgw.KeyAt{Placement: vendorgw.KeyInArgument, Name: "meta.idempotency_key"},
		map[string]any{"key_placement": "argument", "key_argument": "meta.idempotency_key"}},
	"params": {vendorgw.KeyAt{Placement: vendorgw.KeyInParams},
		map[string]any{"key_placement": "params"}},
	"header named": {vendorgw.KeyAt{Placement: vendorgw.KeyInHeader, Name: "X-Request-Key"},
		map[string]any{"key_header": "X-Request-Key"}},
}

// keyAt edits vendorgw's options and the profile for a placement.
func keyAt(name string) []any {
	kp := keyPlacements[name]
	return []any{
		func(o *vendorgw.Options) { o.Key = kp.key },
		func(p map[string]any) {
			for k, v := range kp.profile {
				p[k] = v
			}
		},
	}
}

// A correct server reading the key in its arguments, in a params member or
// in a header of its own name passes at level wire, as the header one does
// (TestVendorGatewayIdempotent): nothing fails, its missing body limit
// waived on the record.
func TestVendorGatewayKeyPlacements(t *testing.T) {
	waivers := filepath.Join(t.TempDir(), "waivers.txt")
	if err := os.WriteFile(waivers, []byte(vendorWaivers), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"argument", "params", "header named"} {
		t.Run(name, func(t *testing.T) {
			wantCorrectPass(t, vendorRun(t, vendorgw.Idempotent, waivers, keyAt(name)...))
		})
	}
}

// Each bug of a server that takes the key in its request fails the
// scenario that names its harm; only those scenarios are run.
func TestVendorGatewayKeyPlacementBugsFail(t *testing.T) {
	for _, tc := range []struct {
		name      string
		placement string
		bugs      vendorgw.Bugs
		failed    string
	}{
		// The key never read: the retry runs again (double dispatch).
		{"key ignored", "argument", vendorgw.Bugs{KeyIgnored: true}, "retry-01"},
		// Operations looked up by a hash with the key in it: the same key
		// with other arguments runs as a new operation.
		{"key in fingerprint", "argument", vendorgw.Bugs{KeyInFingerprint: true}, "retry-02"},
		// The same key with other arguments replays the first result.
		{"replay any args", "params", vendorgw.Bugs{ReplayAnyArgs: true}, "retry-02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edits := append(keyAt(tc.placement),
				func(o *vendorgw.Options) { o.Bugs = tc.bugs },
				func(c *runner.Config) { c.IDs = []string{"retry-01", "retry-02"} })
			out := vendorRun(t, vendorgw.Idempotent, "", edits...)
			if v := verdicts(out.Run)[tc.failed]; v != judge.Failed {
				t.Errorf("%s: %s, want failed", tc.failed, v)
			}
			if out.Result != reports.RunFail || out.Code != runner.ExitFailed {
				t.Errorf("run %s exit %d, want FAIL exit 1", out.Result, out.Code)
			}
		})
	}
}
