package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFirstUpstreamCallOn20260728: a stateful (2025-11-25 sessions) upstream
// first called for a 2026-07-28 client still gets a 2025-11-25 initialize:
// the request's protocol version, which go-sdk keeps in the request's
// context, must not reach the gateway's upstream handshake.
func TestFirstUpstreamCallOn20260728(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "stateful-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "probe.hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db",
		Fixtures: writeFixtures(t, `{"name": "acme.hello", "upstream_url": "`+up.URL+`", "upstream_tool": "probe.hello", "price": 1}`)})
	res, err := stockCall(t, g, "2026-07-28", &clientTransport{key: extKey},
		&mcp.CallToolParams{Name: "acme.hello", Arguments: map[string]any{}, Meta: mcp.Meta{"idempotencyKey": "first-2026"}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("first upstream call on 2026-07-28: %+v %v", res, err)
	}
}
