package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"

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

// paramTools is what the SDK's server was told of each tool a 2026-07-28
// tools/call named: the input schema it was last listed with and whether
// that schema got it registered. The check of a call whose tool is listed
// as last time then costs a comparison, not a schema walk and a mutation of
// the SDK's server (which takes its lock and, for an AddTool, tells every
// 2025-11-25 session that the tool list changed).
type paramTools struct {
	mu   sync.Mutex // held across the comparison and the SDK's mutation, so seen is what the SDK has
	seen map[string]paramTool
	// changes counts the SDK server mutations (tests read it).
	changes int
}

type paramTool struct {
	schema     any // as the lister gave it, never modified
	registered bool
}

// headerTool keeps the SDK server's entry of the tool a 2026-07-28 tools/call
// names (name, as the SDK reads params.name: checkCallParams) as the gateway
// lists it now: registered with x-mcp-header annotations, removed without.
func (h *handler) headerTool(ctx context.Context, r *http.Request, name string) {
	if h.tools == nil || r.Header.Get(HeaderProtocol) < Protocol20260728 {
		return
	}
	t, ok, err := h.tools.ListTool(ctx, name)
	if err != nil {
		h.log.Warn("tools/call: read the tool for Mcp-Param headers", "tool", name, "err", err)
		return
	}
	pt := &h.params
	pt.mu.Lock()
	defer pt.mu.Unlock()
	prev, known := pt.seen[name]
	if !ok {
		if prev.registered {
			h.removeHeaderTool(name)
		}
		delete(pt.seen, name)
		return
	}
	if known && sameSchema(prev.schema, t.InputSchema) {
		return
	}
	registered := hasParamHeaders(t.InputSchema) && h.registerHeaderTool(t)
	if !registered && prev.registered {
		h.removeHeaderTool(name)
	}
	if pt.seen == nil {
		pt.seen = map[string]paramTool{}
	}
	pt.seen[name] = paramTool{schema: t.InputSchema, registered: registered}
}

// sameSchema reports whether a tool's input schema is the one it was listed
// with before. A lister hands out the same value while the tool is
// unchanged (the Dispatcher does: a local tool's schema is a package
// variable, an upstream's is its cached listing's), and DeepEqual answers
// those without a walk; an operator's override is read as new bytes on
// every call, compared as bytes.
func sameSchema(prev, cur any) bool {
	return reflect.DeepEqual(prev, cur)
}

// registerHeaderTool adds t to the SDK's server, and reports whether it did.
// The SDK panics on a schema it will not serve (invalid annotations, not an
// object): such a tool is called without the header check, as the SDK would
// not list it either.
func (h *handler) registerHeaderTool(t *mcp.Tool) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Warn("tools/call: Mcp-Param headers not checked", "tool", t.Name, "err", fmt.Sprint(v))
			ok = false
		}
	}()
	entry := &mcp.Tool{Name: t.Name, InputSchema: t.InputSchema}
	h.server.AddTool(entry, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("tools/call is answered by the gateway's middleware")
	})
	h.params.changes++
	return true
}

func (h *handler) removeHeaderTool(name string) {
	h.params.changes++
	h.server.RemoveTools(name)
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
