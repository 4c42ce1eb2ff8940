package target

import (
	"encoding/json"
	"errors"
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
		p.Credentials.WalletID != "w-1" || *p.Auth.Prefix != "Bearer " || p.UnkeyedPolicy != UnkeyedDerived ||
		p.BodyLimit != DefaultBodyLimit || !p.Identity.HarnessIdP {
		t.Fatalf("profile %+v", p)
	}
	if !p.Has("clock") || p.Has("faults") || !p.Has("upstream") || !p.Has(CapPrincipalTokens) {
		t.Fatalf("capabilities %v", p.Capabilities)
	}
	wantTools := map[string]ToolRef{
		RoleWrite: {"probe.write", 3}, RoleWriteOther: {"probe.write.other", 3},
		RoleReadOnly: {"probe.read", 1}, RoleApproval: {"probe.approve", 5},
	}
	for role, want := range wantTools {
		if got, ok := p.Tool(role); !ok || got != want {
			t.Errorf("Tool(%q) = %+v, %v; want %+v", role, got, ok, want)
		}
	}
	if o := p.Credentials.OtherWallet; o == nil || o.WalletID != "w-2" || o.APIKey != "mcpk_k9_example" {
		t.Errorf("other wallet %+v", o)
	}
	if tok, ok := p.PrincipalToken("alice"); !ok || tok != "eyJhbGciOiJFUzI1NiJ9.e30.sig" {
		t.Errorf("PrincipalToken(alice) = %q, %v", tok, ok)
	}
	if _, ok := p.PrincipalToken("bob"); ok {
		t.Error("PrincipalToken(bob): the profile has no token for bob")
	}
	if p.Subject("bob") != "bob@acme.example" || p.Subject("carol") != "carol" {
		t.Errorf("subjects: bob %q, carol %q", p.Subject("bob"), p.Subject("carol"))
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
	if p.ProtocolVersion != "" || p.KeyPlacement != "header" || p.KeyMetaField != "idempotencyKey" || p.ReceiptPath != wire.DefaultReceiptPath ||
		p.UnkeyedPolicy != UnkeyedDerived || p.BodyLimit != DefaultBodyLimit {
		t.Fatalf("defaults not filled (or protocol pinned): %+v", p)
	}
	if p.Has("upstream") || p.Has("fixtures") || p.Has(CapPrincipalTokens) {
		t.Fatal("minimal profile claims capabilities")
	}
	if _, ok := p.Tool(RoleWrite); ok {
		t.Fatal("minimal profile has a write tool")
	}

	p, err = LoadProfile("testdata/good-no-control.json")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(p.URLs[0])
	if c.KeyPlacement != "meta" || c.KeyMetaField != "io.acme/idempotency" || c.AuthHeader != "X-Api-Key" || c.ProtocolVersion != wire.V20260728 || c.APIKey != "a" {
		t.Fatalf("client %+v", c)
	}

	p, err = LoadProfile("testdata/good-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.UnkeyedPolicy != UnkeyedRefuse || p.BodyLimit != 262144 || p.UpstreamTool != "notes.write" || !p.Has(CapPrincipalTokens) {
		t.Fatalf("profile %+v", p)
	}
	if tl, _ := p.Tool(RoleApproval); tl != (ToolRef{Name: "notes.publish"}) {
		t.Fatalf("approval tool %+v", tl)
	}
}

// Each placement fills the default of its own carrier only, and the wire
// client it makes carries all four names.
func TestKeyPlacementDefaults(t *testing.T) {
	tests := []struct {
		file                    string
		placement               string
		header, param, argument string
	}{
		{"good-minimal.json", wire.KeyInHeader, "Idempotency-Key", "", ""},
		{"good-key-header.json", wire.KeyInHeader, "X-Request-Key", "", ""},
		{"good-no-control.json", wire.KeyInMeta, "", "", ""},
		{"good-key-params.json", wire.KeyInParams, "", "idempotencyKey", ""},
		{"good-key-argument.json", wire.KeyInArgument, "", "", "['io.acme/request'].idempotency_key"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := LoadProfile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if p.KeyPlacement != tt.placement || p.KeyHeader != tt.header || p.KeyParam != tt.param || p.KeyArgument != tt.argument {
				t.Errorf("placement %q header %q param %q argument %q", p.KeyPlacement, p.KeyHeader, p.KeyParam, p.KeyArgument)
			}
			c := p.Client("http://h/mcp")
			if c.KeyPlacement != p.KeyPlacement || c.KeyHeader != p.KeyHeader || c.KeyMetaField != p.KeyMetaField ||
				c.KeyParam != p.KeyParam || c.KeyArgument != p.KeyArgument {
				t.Errorf("client %+v", c)
			}
		})
	}
}

// TestUpstreamToolLegacy: upstream_tool and tools.write are one setting,
// whichever spelling the profile uses, so old callers and new agree.
func TestUpstreamToolLegacy(t *testing.T) {
	const base = `"urls":["http://h/mcp"],"credentials":{"api_keys":["k"]}`
	tests := []struct {
		name, extra string
		want        ToolRef
	}{
		{"upstream_tool only", `"upstream_tool":"w"`, ToolRef{Name: "w"}},
		{"tools.write only", `"tools":{"write":{"name":"w","price":2}}`, ToolRef{Name: "w", Price: 2}},
		{"both, equal", `"upstream_tool":"w","tools":{"write":{"name":"w","price":2}}`, ToolRef{Name: "w", Price: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProfile([]byte("{" + base + "," + tt.extra + "}"))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.Tool(RoleWrite)
			if !ok || got != tt.want || p.UpstreamTool != tt.want.Name || !p.Has("upstream") {
				t.Fatalf("Tool(write) = %+v, %v; upstream_tool %q", got, ok, p.UpstreamTool)
			}
		})
	}
	// A profile built in Go, never validated, still answers for the role.
	p := &Profile{UpstreamTool: "legacy"}
	if got, ok := p.Tool(RoleWrite); !ok || got.Name != "legacy" {
		t.Fatalf("Tool(write) of an unvalidated profile = %+v, %v", got, ok)
	}
	if _, ok := p.Tool("writ"); ok {
		t.Fatal("unknown role answered")
	}
}

func TestHasImplied(t *testing.T) {
	tok := map[string]string{"alice": "t"}
	tests := []struct {
		name string
		p    Profile
		cap  string
		want bool
	}{
		{"listed", Profile{Capabilities: []string{"ledger"}}, "ledger", true},
		{"not listed", Profile{Capabilities: []string{"ledger"}}, "clock", false},
		{"upstream by tools.write", Profile{Tools: Tools{Write: &ToolRef{Name: "w"}}}, "upstream", true},
		{"upstream not by read_only", Profile{Tools: Tools{ReadOnly: &ToolRef{Name: "r"}}}, "upstream", false},
		{"principal-tokens by harness idp", Profile{Identity: Identity{HarnessIdP: true}}, CapPrincipalTokens, true},
		{"principal-tokens by tokens", Profile{Credentials: Credentials{PrincipalTokens: tok}}, CapPrincipalTokens, true},
		{"principal-tokens not by subjects", Profile{Identity: Identity{Subjects: tok}}, CapPrincipalTokens, false},
	}
	for _, tt := range tests {
		if got := tt.p.Has(tt.cap); got != tt.want {
			t.Errorf("%s: Has(%q) = %v", tt.name, tt.cap, got)
		}
	}
}

func TestLoadProfileErrors(t *testing.T) {
	tests := map[string]string{
		"bad-unknown-field.json":                    `unknown field "recipt_path"`,
		"bad-unknown-nested-field.json":             `unknown field "walet"`,
		"bad-member-case.json":                      `unknown field "URLs" (member names are case-sensitive: "urls")`,
		"bad-null.json":                             "control_url: null",
		"bad-reason-name.json":                      `unknown reason "in_progress"`,
		"bad-reason-type.json":                      "want a string, an integer code or {\"http\": status}",
		"bad-reason-empty.json":                     "reasons.idempotency_in_progress: empty list",
		"bad-reason-http.json":                      "reasons.batch_not_supported[0]: http status 302: want 400..599",
		"bad-reason-http-shape.json":                `want {"http": status} with an optional "body" and nothing else`,
		"bad-reason-http-overlap.json":              `line 5, column 32: reasons.idempotency_key_reused[0] {"http": 400} overlaps reasons.idempotency_key_required[0] {"http": 400, "body": "key_missing"}`,
		"bad-reason-http-5xx.json":                  `line 4, column 44: reasons.outcome_unknown[1] {"http": 504}: a 5xx for an answer of the retry contract`,
		"bad-reason-code-range.json":                "code 4294967296: want a 32-bit integer",
		"bad-placement.json":                        `key_placement "query"`,
		"bad-receipt-path.json":                     "receipt_path",
		"bad-protocol.json":                         `protocol_version "2025-03-26"`,
		"bad-unkeyed-policy.json":                   `unkeyed_policy "random": want "derived" or "refuse"`,
		"bad-body-limit.json":                       "body_limit_bytes 0: want a positive number",
		"bad-capability-needs-control.json":         `"clock" needs a control_url`,
		"bad-capability-unknown.json":               `unknown capability "time_travel"`,
		"bad-upstream-needs-tool.json":              "needs tools.write (or upstream_tool)",
		"bad-effects-no-token.json":                 `effects.write_arguments: holds no "{token}"`,
		"bad-effects-with-upstream.json":            `effects: and capability "upstream" both given`,
		"bad-effects-no-write-tool.json":            "effects: needs tools.write",
		"bad-effects-count-path.json":               "effects.read.count: parse path",
		"bad-effects-lag.json":                      "line 3, column 13: effects.read.lag_ms 60001: want 0..60000",
		"bad-effects-lag-type.json":                 "line 3, column 15:",
		"bad-effects-capability-without-block.json": `capabilities: "effects" needs an effects block`,
		"bad-effects-read-is-write.json":            `effects.read.tool "send_message" is tools.write`,
		"bad-principal-tokens-capability.json":      `"principal-tokens" needs identity.harness_idp or credentials.principal_tokens`,
		"bad-tool-name-empty.json":                  "tools.write.name: empty",
		"bad-tool-price.json":                       "tools.write.price -1: want >= 0",
		"bad-tool-role.json":                        `unknown field "writer"`,
		"bad-tool-duplicate.json":                   `tools.read_only: "w" is tools.write already`,
		"bad-upstream-tool-differs.json":            `upstream_tool "a" and tools.write.name "b" differ`,
		"bad-no-credentials.json":                   "credentials.api_keys",
		"bad-api-keys-duplicate.json":               "credentials.api_keys[1]: the same key as api_keys[0]",
		"bad-other-wallet-no-key.json":              "credentials.other_wallet.api_key: empty",
		"bad-other-wallet-same-key.json":            "credentials.other_wallet.api_key: also in credentials.api_keys",
		"bad-other-wallet-same-wallet.json":         `credentials.other_wallet.wallet_id "w-1": the same as credentials.wallet_id`,
		"bad-principal-token-empty.json":            "credentials.principal_tokens.alice: empty token",
		"bad-subject-empty.json":                    "identity.subjects.alice: empty subject",
		"bad-subjects-without-idp.json":             "identity.subjects without identity.harness_idp",
		"bad-url.json":                              "urls[0]",
		"bad-token-without-control.json":            "control_token without control_url",
		"bad-trailing.json":                         "data after the profile object",
		"bad-auth-header.json":                      "auth.header",
		"bad-many.json":                             `tools.approval: "a" is tools.write already`,
		"bad-key-param-reserved.json":               `key_param "arguments": a tools/call param of MCP itself`,
		"bad-key-argument-path.json":                "key_argument: parse path",
		"bad-key-argument-empty-member.json":        "key_argument: path \"meta['']\": an empty member name",
		"bad-key-header-reserved.json":              `key_header "mcp-session-id": a header the harness sets itself`,
		"bad-key-header-auth.json":                  `key_header "X-Api-Key": a header of the API key`,
		"bad-key-carrier-placement.json":            `key_argument "idempotency_key": only for key_placement "argument" (key_placement is "params")`,
		"bad-key-param-without-placement.json":      `key_param "requestKey": only for key_placement "params" (key_placement is "header")`,
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

// TestParseProfileReportsEveryProblem: a profile with several mistakes
// gets each of them, in a stable order, not just the first.
func TestParseProfileReportsEveryProblem(t *testing.T) {
	b, err := os.ReadFile("testdata/bad-many.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseProfile(b)
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("error %v: not a joined list", err)
	}
	var got []string
	for _, e := range joined.Unwrap() {
		got = append(got, e.Error())
	}
	want := []string{
		`unkeyed_policy "never": want "derived" or "refuse"`,
		"body_limit_bytes -5: want a positive number of bytes",
		"reasons.parse_error[0]: http status 200: want 400..599",
		`tools.approval: "a" is tools.write already; every role needs a tool of its own`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("problems (-want +got):\n%s", diff)
	}
	again, _ := ParseProfile(b)
	if again != nil {
		t.Fatal("a bad profile returned a profile")
	}
}

func TestReasonJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Reason
	}{
		{`"busy"`, Reason{Reason: "busy"}},
		{`-32005`, Reason{Code: -32005, IsCode: true}},
		{`{"http": 400}`, Reason{HTTPStatus: 400}},
		{` {"http":413} `, Reason{HTTPStatus: 413}},
		{`{"http": 409, "body": "acme_busy"}`, Reason{HTTPStatus: 409, Body: "acme_busy"}},
	}
	for _, tt := range tests {
		var r Reason
		if err := json.Unmarshal([]byte(tt.in), &r); err != nil || r != tt.want {
			t.Errorf("unmarshal %s = %+v, %v; want %+v", tt.in, r, err, tt.want)
			continue
		}
		out, err := json.Marshal(r)
		var back Reason
		if err != nil || json.Unmarshal(out, &back) != nil || back != r {
			t.Errorf("%+v written as %s reads back as %+v (%v)", r, out, back, err)
		}
	}
	for _, in := range []string{`""`, `null`, `true`, `1.5`, `{}`, `{"http":null}`, `{"HTTP":400}`, `{"http":400,"code":1}`, `{"http":"400"}`, `[]`,
		`{"http":409,"body":""}`, `{"http":409,"body":1}`, `{"body":"x"}`, `{"http":409,"body":"x","x":1}`} {
		var r Reason
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("unmarshal %s accepted: %+v", in, r)
		}
	}
}

func TestMatches(t *testing.T) {
	p, err := LoadProfile("testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		want, reason string
		code, status int
		match        bool
	}{
		{"idempotency_in_progress", "in_progress", -32000, 200, true},              // mapped reason
		{"idempotency_in_progress", "", -32005, 200, true},                         // mapped code
		{"idempotency_in_progress", "idempotency_in_progress", -32000, 200, false}, // mapping replaces the default
		{"idempotency_key_required", "whatever", -32003, 200, true},
		{"idempotency_key_required", "", 0, 0, false},
		{"unauthenticated", "unauthenticated", -32001, 401, true}, // unmapped: our own reason
		{"unauthenticated", "denied", -32001, 401, false},
		{"unauthenticated", "", -32001, 401, false},
		{"batch_not_supported", "", 0, 400, true}, // a plain HTTP 400, no JSON-RPC at all
		{"batch_not_supported", "", -32600, 200, false},
		{"batch_not_supported", "batch_not_supported", -32600, 200, false},
		{"batch_not_supported", "", 0, 0, false},
		{"parse_error", "parse_error", -32700, 200, true}, // the name kept in its own list
		{"parse_error", "", 0, 400, true},
		{"parse_error", "", 0, 413, false},
	}
	for _, tt := range tests {
		if got := p.Matches(tt.want, tt.reason, tt.code, tt.status); got != tt.match {
			t.Errorf("Matches(%q, %q, %d, %d) = %v, want %v", tt.want, tt.reason, tt.code, tt.status, got, tt.match)
		}
		if tt.status == 200 || tt.status == 401 {
			if got := p.ReasonMatches(tt.want, tt.reason, tt.code); got != tt.match {
				t.Errorf("ReasonMatches(%q, %q, %d) = %v, want %v", tt.want, tt.reason, tt.code, got, tt.match)
			}
		}
	}
	if DefaultProfile().Matches("", "", 0, 0) {
		t.Error("an empty reason matched nothing at all")
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
		"parse_error":              {"parse_error"}, // the HTTP status form has no string spelling
		"batch_not_supported":      {},
	}
	for name, want := range tests {
		if got := p.ReasonsFor(name); !slices.Equal(got, want) {
			t.Errorf("ReasonsFor(%q) = %q, want %q", name, got, want)
		}
	}
	d := DefaultProfile()
	if got := d.ReasonsFor("parse_error"); !slices.Equal(got, []string{"parse_error"}) || d.KeyPlacement != "header" || d.ReceiptPath != wire.DefaultReceiptPath ||
		d.UnkeyedPolicy != UnkeyedDerived || d.BodyLimit != DefaultBodyLimit {
		t.Errorf("default profile %+v", d)
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
	if !p.Matches("invalid_request", "vendor_invalid_request", 0, 0) || !p.Matches("invalid_request", "", -32600, 0) {
		t.Fatal("a mapped documented reason does not match")
	}
}

// A profile that is not the JSON it should be is reported at its line and
// column, the offending character's.
func TestParseProfileErrorPosition(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"{\n  \"name\": \"x\",\n  \"urls\": [\"a\"\n}\n", "line 4, column 1: invalid character '}' after array element"},
		{"{\n  \"name\": \"x\",\n  \"urls\": [1]\n}\n", "line 3, column 12: json: cannot unmarshal number"},
		{"{\"name\": \"x\",}", "line 1, column 14: invalid character '}'"},
	} {
		if _, err := ParseProfile([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// HTTP mappings an answer cannot be judged by are refused where they are
// written, with a stable reason: a contract answer at a 5xx, and two
// meanings one answer would match both of. One meaning at one status, the
// same status told apart by body texts, and transport refusals sharing a
// bare status (a gateway's HTTP stack answers a batch and malformed JSON
// alike) are accepted.
func TestHTTPReasonProblems(t *testing.T) {
	for _, tc := range []struct {
		name, reasons string
		want          error
		at            string // the problem's position
	}{
		{"contract answer at 500", `{"outcome_unknown":[{"http":500}]}`, ErrHTTP5xx, "line 3, column 34"},
		{"contract answer at 503 with a body", `{"idempotency_in_progress":["busy",{"http":503,"body":"busy"}]}`, ErrHTTP5xx, "line 3, column 49"},
		{"bare status, two contract answers", `{"idempotency_key_required":[{"http":400}],"idempotency_key_reused":[{"http":400}]}`, ErrHTTPOverlap, "line 3, column 83"},
		{"bare status beside a body text", `{"idempotency_key_required":[{"http":400,"body":"key_missing"}],"parse_error":[{"http":400}]}`, ErrHTTPOverlap, "line 3, column 93"},
		{"one body text inside the other", `{"idempotency_in_progress":[{"http":409,"body":"busy"}],"idempotency_key_reused":[{"http":409,"body":"busy_key"}]}`, ErrHTTPOverlap, "line 3, column 96"},
		{"retryable and final transport", `{"request_id_in_flight":[{"http":400}],"parse_error":[{"http":400}]}`, ErrHTTPOverlap, "line 3, column 39"},
		{"body texts apart", `{"idempotency_key_required":[{"http":400,"body":"key_missing"}],"idempotency_key_reused":[{"http":400,"body":"key_conflict"}]}`, nil, ""},
		{"one meaning twice", `{"idempotency_key_required":[{"http":400},{"http":400,"body":"x"}]}`, nil, ""},
		{"final transport refusals share a status", `{"batch_not_supported":[{"http":400}],"parse_error":[{"http":400}]}`, nil, ""},
		{"internal error at 500", `{"internal_error":[{"http":500}],"request_too_large":[{"http":413}]}`, nil, ""},
		{"codes and reasons are not statuses", `{"outcome_unknown":[-31504,"unknown"],"idempotency_key_reused":[-31504]}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "{\"control_url\": \"http://h/c\",\n\n  \"reasons\": " + tc.reasons + "}"
			_, err := ParseProfile([]byte(doc))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.at+": reasons.") || !strings.HasSuffix(err.Error(), "("+tc.want.Error()+")") {
				t.Errorf("error %v, want %v at %s", err, tc.want, tc.at)
			}
		})
	}
}

// An HTTP status with a body text matches only an answer of that status
// whose body holds the text: gateways of the IETF draft share a status
// between refusals.
func TestMatchesBody(t *testing.T) {
	p, err := ParseProfile([]byte(`{"control_url":"http://h/c","reasons":{
		"idempotency_in_progress":[{"http":409,"body":"acme_busy"}],
		"idempotency_key_required":[{"http":400,"body":"key_missing"}],
		"idempotency_key_invalid":[{"http":400,"body":"key_malformed"}],
		"request_too_large":[{"http":413}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		want   string
		status int
		body   string
		match  bool
	}{
		{"idempotency_in_progress", 409, `{"error":{"data":{"reason":"acme_busy"}}}`, true},
		{"idempotency_in_progress", 409, `{"error":{"data":{"reason":"acme_other"}}}`, false},
		{"idempotency_in_progress", 200, `acme_busy`, false},
		{"idempotency_key_required", 400, `key_missing`, true},
		{"idempotency_key_required", 400, `key_malformed`, false},
		{"idempotency_key_invalid", 400, `key_malformed`, true},
		{"request_too_large", 413, ``, true}, // no body text: the status alone
	} {
		if got := p.MatchesBody(tt.want, "", 0, tt.status, []byte(tt.body)); got != tt.match {
			t.Errorf("MatchesBody(%q, %d, %q) = %v, want %v", tt.want, tt.status, tt.body, got, tt.match)
		}
	}
	// Matches knows no body, so a mapping that needs one cannot match.
	if p.Matches("idempotency_in_progress", "", 0, 409) {
		t.Error("Matches matched a mapping with a body text it never saw")
	}
}

func TestReplayMarkerProfile(t *testing.T) {
	for _, tt := range []struct {
		marker string
		ok     bool
		value  string
	}{
		{`{"header":"Idempotent-Replayed"}`, true, "true"},
		{`{"path":"result._meta['acme/replayed']","value":"yes"}`, true, "yes"},
		{`{}`, false, ""},
		{`{"header":"X","path":"result.x"}`, false, ""},
		{`{"header":"no good"}`, false, ""},
		{`{"path":"result..x"}`, false, ""},
	} {
		p, err := ParseProfile([]byte(`{"control_url":"http://h/c","retry_after":true,"replay_marker":` + tt.marker + `}`))
		if (err == nil) != tt.ok {
			t.Errorf("%s: error %v, want ok %v", tt.marker, err, tt.ok)
			continue
		}
		if err != nil {
			continue
		}
		if p.ReplayMarker.Value != tt.value || !p.RetryAfter {
			t.Errorf("%s: value %q retry_after %v, want %q true", tt.marker, p.ReplayMarker.Value, p.RetryAfter, tt.value)
		}
		if c := p.Client("http://h/mcp"); c.ReplayMarker != *p.ReplayMarker {
			t.Errorf("%s: the wire client has marker %+v", tt.marker, c.ReplayMarker)
		}
	}
}
