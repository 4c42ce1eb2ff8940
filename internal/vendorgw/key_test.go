package vendorgw

import (
	"encoding/json"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// startKeyed runs a probe and an idempotent gateway reading the key at k,
// with bugs, and a harness client that puts it where k says.
func startKeyed(t *testing.T, k KeyAt, bugs Bugs) (*wire.Client, *probe.Probe) {
	t.Helper()
	p, err := probe.Start(probe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	g, err := Start(t.Context(), Options{UpstreamURL: p.URL(), APIKeys: map[string]string{keyA: "tenant-a"},
		Tools: testTools, Mode: Idempotent, Key: k, Bugs: bugs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	c := &wire.Client{BaseURL: g.URL(), APIKey: keyA, ProtocolVersion: wire.V20251125, KeyPlacement: k.Placement}
	switch k.Placement {
	case KeyInParams:
		c.KeyParam = k.Name
	case KeyInArgument:
		c.KeyArgument = k.Name
	default:
		c.KeyHeader = k.Name
	}
	return c, p
}

// In every placement: a retry replays, the same key with other arguments is
// refused, an unkeyed call is refused; each bug switch breaks its rule.
func TestKeyPlacements(t *testing.T) {
	type want struct {
		dispatches int    // of the first token, after the call and its retry
		reused     string // the answer to the same key with other arguments: a reason, or "result"
		reusedRuns int    // dispatches of the other arguments' token
	}
	correct := want{1, ReasonKeyConflict, 0}
	tests := []struct {
		name string
		key  KeyAt
		bugs Bugs
		want want
	}{
		{"header", KeyAt{}, Bugs{}, correct},
		{"header named", KeyAt{Placement: KeyInHeader, Name: "X-Request-Key"}, Bugs{}, correct},
		{"params", KeyAt{Placement: KeyInParams}, Bugs{}, correct},
		{"params named", KeyAt{Placement: KeyInParams, Name: "requestKey"}, Bugs{}, correct},
		{"argument", KeyAt{Placement: KeyInArgument}, Bugs{}, correct},
		{"argument nested", KeyAt{Placement: KeyInArgument, Name: "meta.idempotency_key"}, Bugs{}, correct},
		{"key ignored", KeyAt{Placement: KeyInArgument}, Bugs{KeyIgnored: true}, want{2, "result", 1}},
		{"key in fingerprint", KeyAt{Placement: KeyInArgument}, Bugs{KeyInFingerprint: true}, want{1, "result", 1}},
		{"replay any args", KeyAt{Placement: KeyInParams}, Bugs{ReplayAnyArgs: true}, want{1, "result", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := startKeyed(t, tt.key, tt.bugs)
			ctx := t.Context()
			send := func(args string, key string) *wire.Answer {
				t.Helper()
				a, err := c.CallTool(ctx, wire.Call{Tool: "acme.write", Arguments: json.RawMessage(args), IdempotencyKey: key})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			first := send(`{"token":"p1","meta":{"v":1}}`, "k-1")
			again := send(`{"meta":{"v":1},"token":"p1"}`, "k-1")
			if first.HasError() || again.HasError() {
				t.Fatalf("answers %s / %s", first.Body, again.Body)
			}
			if n := p.Count("p1"); n != tt.want.dispatches {
				t.Errorf("a call and its retry: %d dispatches, want %d", n, tt.want.dispatches)
			}
			if tt.want.dispatches == 1 && first.Receipt() != again.Receipt() {
				t.Errorf("the retry got receipt %q, the first %q", again.Receipt(), first.Receipt())
			}
			reused := send(`{"token":"p2"}`, "k-1")
			got := reused.ErrorReason()
			if !reused.HasError() {
				got = "result"
			}
			if got != tt.want.reused || p.Count("p2") != tt.want.reusedRuns {
				t.Errorf("the same key, other arguments: %s and %d dispatches, want %s and %d", got, p.Count("p2"), tt.want.reused, tt.want.reusedRuns)
			}
			if a := send(`{"token":"p3"}`, ""); a.ErrorReason() != ReasonKeyMissing || p.Count("p3") != 0 {
				t.Errorf("unkeyed: %s", a.Body)
			}
		})
	}
}

// A key that is not a string, or empty, is malformed wherever it sits.
func TestKeyMalformed(t *testing.T) {
	for _, tt := range []struct {
		name string
		key  KeyAt
		args string
	}{
		{"argument not a string", KeyAt{Placement: KeyInArgument}, `{"token":"m1","idempotency_key":7}`},
		{"argument empty", KeyAt{Placement: KeyInArgument}, `{"token":"m1","idempotency_key":""}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, p := startKeyed(t, tt.key, Bugs{})
			a, err := c.CallTool(t.Context(), wire.Call{Tool: "acme.write", Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			if a.ErrorReason() != ReasonKeyMalformed || p.Count("m1") != 0 {
				t.Errorf("answer %s, %d dispatches", a.Body, p.Count("m1"))
			}
		})
	}
}

func TestCutMember(t *testing.T) {
	for _, tt := range []struct {
		args, path, val, rest string
		found                 bool
	}{
		{`{"idempotency_key":"k","token":"t"}`, "idempotency_key", `"k"`, `{"token":"t"}`, true},
		{`{"meta":{"k":"x","v":1.50},"token":"t"}`, "meta.k", `"x"`, `{"meta":{"v":1.50},"token":"t"}`, true},
		{`{"token":"t"}`, "idempotency_key", "", `{"token":"t"}`, false},
		{`{"meta":"k"}`, "meta.k", "", `{"meta":"k"}`, false},
		{`[1]`, "k", "", `[1]`, false},
		{``, "k", "", ``, false},
	} {
		val, rest, found, err := cutMember(json.RawMessage(tt.args), splitPath(tt.path))
		if err != nil || found != tt.found || string(val) != tt.val || string(rest) != tt.rest {
			t.Errorf("cutMember(%s, %s) = %s, %s, %v, %v", tt.args, tt.path, val, rest, found, err)
		}
	}
}
