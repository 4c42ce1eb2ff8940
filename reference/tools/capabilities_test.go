package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
)

// samplerUpstream is a stateless (2026-07-28) upstream whose tool needs the
// calling client to sample: it refuses with -32021 a call whose request does
// not declare sampling, as go-sdk's everything-server does.
func samplerUpstream(t *testing.T) store.Tool {
	s := mcp.NewServer(&mcp.Implementation{Name: "sampler", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "needs.sampling"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, map[string]any, error) {
		if c := req.ClientCapabilities(); c == nil || c.Sampling == nil {
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			return nil, nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required", Data: data}
		}
		return nil, map[string]any{"sampled": true}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return store.Tool{Name: "sample.t", Price: 3, UpstreamURL: srv.URL, UpstreamTool: "needs.sampling"}
}

// The upstream judges the caller's capabilities, those its request
// declared, not the gateway client's; a refusal for a missing one reaches
// the caller as client_capabilities_missing with the upstream's data.
func TestUpstreamClientCapabilities(t *testing.T) {
	tool := samplerUpstream(t)
	d := New(newMemStore(), Options{})
	defer d.Close()
	sampling := map[string]any{"sampling": map[string]any{}}
	tests := []struct {
		name   string
		client *relay.Client
		want   string // data.reason of the refusal, "" for a result
	}{
		{"declared", &relay.Client{MultiRound: true, Capabilities: sampling}, ""},
		{"not declared", &relay.Client{MultiRound: true, Capabilities: map[string]any{}}, gateway.ReasonCapabilitiesMissing},
		{"no per-request capabilities", nil, gateway.ReasonCapabilitiesMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.client != nil {
				ctx = relay.With(ctx, tt.client)
			}
			raw, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: tool, Arguments: json.RawMessage(`{}`)})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r := decode(t, raw); *r.IsError || string(r.StructuredContent) != `{"sampled":true}` {
					t.Fatalf("result %s", raw)
				}
				return
			}
			var ref *gateway.Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("got %s, %v; want a refusal", raw, err)
			}
			if ref.Reason != tt.want || ref.Code != mcp.CodeMissingRequiredClientCapabilities || ref.Retryable {
				t.Fatalf("refusal %+v", ref)
			}
			if _, ok := ref.Data["requiredCapabilities"]; !ok {
				t.Fatalf("refusal data %v lacks the upstream's requiredCapabilities", ref.Data)
			}
		})
	}
}

// Any other refusal of the upstream stays the gateway's dispatch_failed.
func TestUpstreamOtherRefusal(t *testing.T) {
	tool := samplerUpstream(t)
	tool.UpstreamTool = "no.such.tool"
	d := New(newMemStore(), Options{})
	defer d.Close()
	_, err := d.Dispatch(context.Background(), gateway.DispatchRequest{Tool: tool, Arguments: json.RawMessage(`{}`)})
	var ref *gateway.Refusal
	if err == nil || errors.As(err, &ref) {
		t.Fatalf("got %v, want a plain error (dispatch_failed)", err)
	}
}
