package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 tools/call carries its x-mcp-header arguments again as
// Mcp-Param-* headers (SEP-2243), which the server must check against the
// arguments. go-sdk's Streamable HTTP handler checks them (HTTP 400, -32020)
// for the tools registered on its server; the gateway answers tools/call in
// its middleware and registers none. So the called tool, when its input
// schema has x-mcp-header annotations, is registered on the SDK's server as
// the gateway lists it, only for the SDK to find it: the middleware still
// answers the call, and the tools' stub handler is never reached.

// headerTool keeps the SDK server's entry of the tool a 2026-07-28 tools/call
// names as the gateway lists it now: registered with x-mcp-header
// annotations, removed without.
func (h *handler) headerTool(ctx context.Context, r *http.Request, env envelope) {
	if h.tools == nil || env.Method == nil || *env.Method != "tools/call" || r.Header.Get(HeaderProtocol) < Protocol20260728 {
		return
	}
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(env.Params, &p) != nil || p.Name == "" {
		return // the SDK refuses it
	}
	t, ok, err := h.tools.ListTool(ctx, p.Name)
	if err != nil {
		h.log.Warn("tools/call: read the tool for Mcp-Param headers", "tool", p.Name, "err", err)
		return
	}
	if ok && hasParamHeaders(t.InputSchema) {
		h.registerHeaderTool(t)
		return
	}
	h.server.RemoveTools(p.Name)
}

// registerHeaderTool adds t to the SDK's server. The SDK panics on a schema
// it will not serve (invalid annotations, not an object): such a tool is
// called without the header check, as the SDK would not list it either.
func (h *handler) registerHeaderTool(t *mcp.Tool) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Warn("tools/call: Mcp-Param headers not checked", "tool", t.Name, "err", fmt.Sprint(v))
			h.server.RemoveTools(t.Name)
		}
	}()
	entry := &mcp.Tool{Name: t.Name, InputSchema: t.InputSchema}
	h.server.AddTool(entry, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("tools/call is answered by the gateway's middleware")
	})
}

// hasParamHeaders reports whether a JSON Schema has an x-mcp-header
// annotation on a property, at any depth of nested object properties.
func hasParamHeaders(schema any) bool {
	b, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil {
		return false
	}
	for _, raw := range s.Properties {
		var prop map[string]json.RawMessage
		if json.Unmarshal(raw, &prop) != nil {
			continue
		}
		if _, ok := prop["x-mcp-header"]; ok {
			return true
		}
		if hasParamHeaders(json.RawMessage(raw)) {
			return true
		}
	}
	return false
}
