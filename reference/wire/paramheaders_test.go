package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// regionTools lists "ok" with an argument its callers repeat as the
// Mcp-Param-Region header (SEP-2243).
type regionTools struct{}

func (regionTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "ok", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
	}}}}, nil
}

func (r regionTools) ListTool(ctx context.Context, name string) (*mcp.Tool, bool, error) {
	return entryIn(r, ctx, name)
}

// TestParamHeaders: a 2026-07-28 call's Mcp-Param-* headers must match its
// x-mcp-header arguments (HTTP 400, -32020 otherwise); go-sdk's client,
// which sets them itself, is served.
func TestParamHeaders(t *testing.T) {
	core := &fakeCore{}
	srv := httptest.NewServer(Handler(core, fakeVerifier{}, regionTools{}, Options{}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"

	tests := []struct {
		name, header, reason string // header "" sends none
		status               int
	}{
		{"matching", "eu", "", 200},
		{"matching, Base64", "=?base64?ZXU=?=", "", 200},
		{"missing", "", ReasonProtocolHeadersMissing, 400},
		{"different", "us", ReasonProtocolHeadersDiffer, 400},
		{"invalid Base64", "=?base64?***?=", ReasonProtocolHeadersDiffer, 400},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := headers2026("tools/call", "ok")
			if tt.header != "" {
				hdr["Mcp-Param-Region"] = tt.header
			}
			resp, r, raw := post(t, url, hdr, callBody(i, "ok", `{"region":"eu"}`, meta2026("")))
			if resp.StatusCode != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tt.status, raw)
			}
			if tt.reason == "" {
				if r.Error != nil {
					t.Fatalf("refused: %s", raw)
				}
				return
			}
			if r.Error == nil || r.Error.Code != mcp.CodeHeaderMismatch || r.Error.Data["reason"] != tt.reason {
				t.Fatalf("answer %s, want -32020 %s", raw, tt.reason)
			}
		})
	}
	n := core.count()

	// On 2025-11-25 there are no such headers to check.
	resp, r, raw := post(t, url, map[string]string{"Authorization": "Bearer key-a"}, callBody(9, "ok", `{"region":"eu"}`, ""))
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("2025-11-25 call: %d %s", resp.StatusCode, raw)
	}

	ctx := context.Background()
	hc := &http.Client{Transport: headerRT{"Authorization": "Bearer key-a"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil { // the client learns which arguments go in headers
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{"region": "eu"}}); err != nil {
		var rpc *jsonrpc.Error
		errors.As(err, &rpc)
		t.Fatalf("go-sdk client call: %v (%+v)", err, rpc)
	}
	if got := core.count() - n; got != 2 {
		t.Fatalf("%d calls reached the core after the refusals, want 2", got)
	}
}

func TestHasParamHeaders(t *testing.T) {
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	tests := []struct {
		name   string
		schema any
		want   bool
	}{
		{"none", obj(map[string]any{"a": map[string]any{"type": "string"}}), false},
		{"top level", obj(map[string]any{"a": map[string]any{"type": "string", "x-mcp-header": "A"}}), true},
		{"nested", obj(map[string]any{"o": obj(map[string]any{"a": map[string]any{"type": "integer", "x-mcp-header": "A"}})}), true},
		{"no properties", map[string]any{"type": "object"}, false},
		{"not an object", "text", false},
	}
	for _, tt := range tests {
		if got := hasParamHeaders(tt.schema); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// changingTools lists "ok" with the schema its field gives it at each call,
// or not at all when that is nil.
type changingTools struct {
	mu     sync.Mutex
	schema func() any
}

func (c *changingTools) set(schema func() any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schema = schema
}

func (c *changingTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.schema == nil {
		return nil, nil
	}
	return []*mcp.Tool{{Name: "ok", InputSchema: c.schema()}}, nil
}

func (c *changingTools) ListTool(ctx context.Context, name string) (*mcp.Tool, bool, error) {
	return entryIn(c, ctx, name)
}

// TestParamHeadersFollowTheTool: the header check of a call follows the
// tool's x-mcp-header annotations as they are listed at that call, through
// changes, removal and a return, while a tool listed as at its last call
// costs no change to the SDK's server.
func TestParamHeadersFollowTheTool(t *testing.T) {
	withHeader := func(header string) map[string]any {
		region := map[string]any{"type": "string"}
		if header != "" {
			region["x-mcp-header"] = header
		}
		return map[string]any{"type": "object", "properties": map[string]any{"region": region}}
	}
	region := withHeader("Region")
	same := func(v any) func() any { return func() any { return v } }
	fresh := func(header string) func() any { return func() any { return withHeader(header) } }
	raw := func() any { // new bytes at every read, as an operator's override is
		return json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	}
	invalid := same(map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "object", "x-mcp-header": "Region"}, // not a primitive: the SDK refuses it
	}})

	tests := []struct {
		name    string
		schema  func() any // nil: the tool is not listed
		headers map[string]string
		reason  string // "" for a call served
		changes int    // the SDK server's mutations so far
	}{
		{"annotated, header sent", same(region), map[string]string{"Mcp-Param-Region": "eu"}, "", 1},
		{"unchanged, header missing", same(region), nil, ReasonProtocolHeadersMissing, 1},
		{"an equal schema read anew", fresh("Region"), map[string]string{"Mcp-Param-Region": "eu"}, "", 1},
		{"header renamed, new one sent", fresh("Zone"), map[string]string{"Mcp-Param-Zone": "eu"}, "", 2},
		{"header renamed, old one sent", fresh("Zone"), map[string]string{"Mcp-Param-Region": "eu"}, ReasonProtocolHeadersMissing, 2},
		{"annotation dropped", fresh(""), nil, "", 3},
		{"still none", fresh(""), nil, "", 3},
		{"an annotation the SDK refuses", invalid, nil, "", 3},
		{"refused again", invalid, nil, "", 3},
		{"annotated override bytes", raw, nil, ReasonProtocolHeadersMissing, 4},
		{"the same bytes again", raw, map[string]string{"Mcp-Param-Region": "eu"}, "", 4},
		{"annotated as at first", same(region), map[string]string{"Mcp-Param-Region": "eu"}, "", 5},
		{"removed", nil, nil, "", 6},
		{"still removed", nil, nil, "", 6},
		// The schema it had when removed: its removal was forgotten with it.
		{"listed again as before", same(region), nil, ReasonProtocolHeadersMissing, 7},
	}
	lister := &changingTools{}
	hd := Handler(&fakeCore{}, fakeVerifier{}, lister, Options{})
	srv := httptest.NewServer(hd)
	t.Cleanup(srv.Close)
	params := &hd.(*handler).params
	for i, tt := range tests {
		lister.set(tt.schema)
		hdr := headers2026("tools/call", "ok")
		maps.Copy(hdr, tt.headers)
		resp, r, raw := post(t, srv.URL+"/mcp", hdr, callBody(i, "ok", `{"region":"eu"}`, meta2026("")))
		switch {
		case tt.reason == "" && (resp.StatusCode != 200 || r.Error != nil):
			t.Fatalf("%s: HTTP %d %s, want the call served", tt.name, resp.StatusCode, raw)
		case tt.reason != "" && (r.Error == nil || r.Error.Data["reason"] != tt.reason):
			t.Fatalf("%s: HTTP %d %s, want %s", tt.name, resp.StatusCode, raw, tt.reason)
		}
		params.mu.Lock()
		changes := params.changes
		params.mu.Unlock()
		if changes != tt.changes {
			t.Fatalf("%s: %d changes to the SDK's server so far, want %d", tt.name, changes, tt.changes)
		}
	}
}

// TestParamHeadersNameAsTheSDKReadsIt: the tool whose headers are checked
// is the one the SDK reads from params.name, exact and last, not one that a
// case-insensitive decoder finds in a "Name" member.
func TestParamHeadersNameAsTheSDKReadsIt(t *testing.T) {
	for i, params := range []string{
		`"name":"ok","Name":"other"`,
		`"NAME":"other","name":"ok"`,
		`"name":"other","name":"ok"`,
	} {
		srv := httptest.NewServer(Handler(&fakeCore{}, fakeVerifier{}, regionTools{}, Options{})) // nothing registered yet
		defer srv.Close()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"arguments":{"region":"eu"},"_meta":%s}}`, i, params, meta2026(""))
		resp, r, raw := post(t, srv.URL+"/mcp", headers2026("tools/call", "ok"), body)
		if r.Error == nil || r.Error.Data["reason"] != ReasonProtocolHeadersMissing {
			t.Errorf("params {%s} without Mcp-Param-Region: HTTP %d %s, want %s", params, resp.StatusCode, raw, ReasonProtocolHeadersMissing)
		}
	}
}
