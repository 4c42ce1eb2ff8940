package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
)

// TestElicitationRelayedAsIs: an upstream's elicitation request reaches the
// caller with its schema as sent, even one go-sdk's client would refuse to
// handle itself (SEP-1330's titled multi-select: array items with anyOf and
// no enum); the caller's answer goes back to the upstream.
func TestElicitationRelayedAsIs(t *testing.T) {
	titledMulti := map[string]any{"type": "object", "properties": map[string]any{
		"colors": map[string]any{"type": "array", "items": map[string]any{"type": "string", "anyOf": []any{
			map[string]any{"const": "r", "title": "Red"}, map[string]any{"const": "g", "title": "Green"},
		}}},
	}}
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, map[string]any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "colors?", RequestedSchema: titledMulti})
		if err != nil {
			return nil, nil, err
		}
		return nil, map[string]any{"action": res.Action}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)

	var asked *mcp.ElicitParams
	rc := &relay.Client{Elicit: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked = p
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	d := New(newMemStore(), Options{})
	defer d.Close()
	tool := store.Tool{Name: "ask.t", Price: 1, UpstreamURL: srv.URL, UpstreamTool: "ask"}
	raw, err := d.Dispatch(relay.With(context.Background(), rc), gateway.DispatchRequest{Tool: tool, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, raw); *r.IsError || string(r.StructuredContent) != `{"action":"decline"}` {
		t.Fatalf("result %s", raw)
	}
	if asked == nil || asked.Message != "colors?" {
		t.Fatalf("the caller was asked %+v", asked)
	}
	got, _ := json.Marshal(asked.RequestedSchema)
	want, _ := json.Marshal(titledMulti)
	if string(got) != string(want) {
		t.Fatalf("schema relayed as %s, want %s", got, want)
	}
}
