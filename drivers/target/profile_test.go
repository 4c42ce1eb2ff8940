package target

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/wiredoc"
)

func TestLoadProfileExample(t *testing.T) {
	p, err := LoadProfile("testdata/profile.example.json")
	if err != nil {
		t.Fatalf("example profile: %v", err)
	}
	if len(p.URLs) != 2 || p.ControlURL != "http://127.0.0.1:8080/control" || p.UpstreamTool != "probe.write" ||
		p.Credentials.WalletID != "w-1" || p.Credentials.PrincipalTokens["alice"] == "" || *p.Auth.Prefix != "Bearer " {
		t.Fatalf("profile %+v", p)
	}
	if !p.Has("clock") || p.Has("faults") || !p.Has("upstream") {
		t.Fatalf("capabilities %v", p.Capabilities)
	}
	c := p.Client(p.URLs[1])
	if c.BaseURL != p.URLs[1] || c.APIKey != "mcpk_k1_example" || c.ReceiptPath != wire.DefaultReceiptPath || c.ProtocolVersion != wire.V20251125 {
		t.Fatalf("client %+v", c)
	}
}

func TestLoadProfileDefaults(t *testing.T) {
	p, err := LoadProfile("testdata/good-minimal.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.ProtocolVersion != wire.V20251125 || p.KeyPlacement != "header" || p.KeyMetaField != "idempotencyKey" || p.ReceiptPath != wire.DefaultReceiptPath {
		t.Fatalf("defaults not filled: %+v", p)
	}
	if p.Has("upstream") || p.Has("fixtures") {
		t.Fatal("minimal profile claims capabilities")
	}

	p, err = LoadProfile("testdata/good-no-control.json")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(p.URLs[0])
	if c.KeyPlacement != "meta" || c.KeyMetaField != "io.acme/idempotency" || c.AuthHeader != "X-Api-Key" || c.ProtocolVersion != wire.V20260728 || c.APIKey != "a" {
		t.Fatalf("client %+v", c)
	}
}

func TestLoadProfileErrors(t *testing.T) {
	tests := map[string]string{
		"bad-unknown-field.json":            `unknown field "recipt_path"`,
		"bad-unknown-nested-field.json":     `unknown field "walet"`,
		"bad-reason-name.json":              `unknown reason "in_progress"`,
		"bad-reason-type.json":              "want a string or an integer code",
		"bad-reason-empty.json":             "reasons.idempotency_in_progress: empty list",
		"bad-placement.json":                `key_placement "query"`,
		"bad-receipt-path.json":             "receipt_path",
		"bad-protocol.json":                 `protocol_version "2025-03-26"`,
		"bad-capability-needs-control.json": `"clock" needs a control_url`,
		"bad-capability-unknown.json":       `unknown capability "time_travel"`,
		"bad-upstream-needs-tool.json":      "needs upstream_tool",
		"bad-no-credentials.json":           "credentials.api_keys",
		"bad-url.json":                      "urls[0]",
		"bad-token-without-control.json":    "control_token without control_url",
		"bad-trailing.json":                 "data after the profile object",
		"bad-auth-header.json":              "auth.header",
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "bad-") {
			if _, ok := tests[e.Name()]; !ok {
				t.Errorf("fixture %s has no expectation", e.Name())
			}
		}
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			_, err := LoadProfile(path)
			if err == nil {
				t.Fatal("bad profile accepted")
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q, want it to name %q and the file", err, want)
			}
		})
	}
	if _, err := LoadProfile("testdata/missing.json"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestReasonsFor(t *testing.T) {
	p, err := LoadProfile("testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]string{
		"idempotency_in_progress":  {"in_progress", "-32005"},
		"idempotency_key_required": {"-32003"},
		"unauthenticated":          {"unauthenticated"},
	}
	for name, want := range tests {
		if got := p.ReasonsFor(name); !slices.Equal(got, want) {
			t.Errorf("ReasonsFor(%q) = %q, want %q", name, got, want)
		}
	}
	d := DefaultProfile()
	if got := d.ReasonsFor("parse_error"); !slices.Equal(got, []string{"parse_error"}) || d.KeyPlacement != "header" || d.ReceiptPath != wire.DefaultReceiptPath {
		t.Errorf("default profile %+v", d)
	}
}

func TestReasonMatches(t *testing.T) {
	p, err := LoadProfile("testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		want, got string
		code      int
		match     bool
	}{
		{"idempotency_in_progress", "in_progress", -32000, true},              // mapped reason
		{"idempotency_in_progress", "", -32005, true},                         // mapped code
		{"idempotency_in_progress", "idempotency_in_progress", -32000, false}, // mapping replaces the default
		{"idempotency_key_required", "whatever", -32003, true},
		{"idempotency_key_required", "", 0, false},
		{"unauthenticated", "unauthenticated", -32001, true}, // unmapped: our own reason
		{"unauthenticated", "denied", -32001, false},
	}
	for _, tt := range tests {
		if got := p.ReasonMatches(tt.want, tt.got, tt.code); got != tt.match {
			t.Errorf("ReasonMatches(%q, %q, %d) = %v, want %v", tt.want, tt.got, tt.code, got, tt.match)
		}
	}
}

// TestKnownReasonsMatchDocs: a profile may map exactly the reasons of
// docs/wire.md's tables, so a reason documented without being added here (or
// the reverse) fails, and a profile mapping each of them loads.
func TestKnownReasonsMatchDocs(t *testing.T) {
	rows, err := wiredoc.File("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := make([]string, len(rows))
	reasons := map[string][]Reason{}
	for i, r := range rows {
		documented[i] = r.Name
		reasons[r.Name] = []Reason{{Reason: "vendor_" + r.Name}, {Code: int(r.Code), IsCode: true}}
	}
	if diff := cmp.Diff(documented, KnownReasons); diff != "" {
		t.Fatalf("KnownReasons differ from docs/wire.md's reasons, in its order (-docs +KnownReasons):\n%s", diff)
	}
	profile, err := json.Marshal(map[string]any{"urls": []string{"http://127.0.0.1:1/mcp"},
		"credentials": map[string]any{"api_keys": []string{"k"}}, "reasons": reasons})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfile(profile)
	if err != nil {
		t.Fatalf("a profile mapping every documented reason: %v", err)
	}
	if got := p.ReasonsFor("invalid_request"); !slices.Equal(got, []string{"vendor_invalid_request", "-32600"}) {
		t.Fatalf("ReasonsFor(invalid_request) = %q", got)
	}
}
