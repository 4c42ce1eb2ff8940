package control

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/tools"
)

// withServers is the env's control API with upstream servers registered by
// a real dispatcher.
func withServers(t *testing.T) *env {
	e := newEnv(t)
	d := tools.New(e.st, tools.Options{})
	t.Cleanup(func() { _ = d.Close() })
	h, err := New(Config{Token: token, Store: e.st, Gateway: e.gw, Clock: e.clk, Faults: e.flt, StoreKind: "sqlite", Servers: d})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/control/", h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func upstreamServer(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestServers(t *testing.T) {
	// The upstreams first: cleanups run last in, first out, and the
	// dispatcher must close its sessions before they stop.
	url, other := upstreamServer(t), upstreamServer(t)
	e := withServers(t)
	for _, c := range []struct {
		name, body string
		status     int
		reason     string
	}{
		{"no url", `{"name": "s"}`, 400, "bad_request"},
		{"no name", `{"url": "` + url + `"}`, 400, "bad_request"},
		{"not http", `{"name": "s", "url": "ftp://127.0.0.1/mcp"}`, 400, "bad_request"},
		{"negative price", `{"name": "s", "url": "` + url + `", "price": -1}`, 400, "bad_request"},
		{"negative tool price", `{"name": "s", "url": "` + url + `", "prices": {"a": -2}}`, 400, "bad_request"},
		{"price over 2^53-1", `{"name": "s", "url": "` + url + `", "price": 9007199254740992}`, 400, "bad_request"},
		{"tool price over 2^53-1", `{"name": "s", "url": "` + url + `", "prices": {"a": 9223372036854775807}}`, 400, "bad_request"},
		{"unreachable", `{"name": "s", "url": "http://127.0.0.1:1/mcp"}`, 502, "upstream_unavailable"},
		{"registered", `{"name": "s", "url": "` + url + `", "prefix": "s.", "prices": {"a": 4}}`, 201, ""},
		{"a tool name taken", `{"name": "t", "url": "` + other + `", "prefix": "s."}`, 409, "conflict"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, m := e.do(t, "POST", "/control/servers", c.body)
			if got != c.status || (c.reason != "" && m["reason"] != c.reason) {
				t.Fatalf("status %d %v, want %d %s", got, m, c.status, c.reason)
			}
		})
	}
	tool, err := e.st.Tool(t.Context(), "s.a")
	if err != nil || tool.Price != 4 || tool.UpstreamURL != url || tool.UpstreamTool != "a" {
		t.Fatalf("registered tool %+v, %v", tool, err)
	}
	_, caps := e.do(t, "GET", "/control/capabilities", "")
	if cs, _ := caps["capabilities"].([]any); len(cs) == 0 || cs[len(cs)-1] != "servers" {
		t.Fatalf("capabilities %v: want servers", caps["capabilities"])
	}
	e.must(t, "DELETE", "/control/servers/s", "", 204)
	e.must(t, "DELETE", "/control/servers/s", "", 404)
	if tool, _ := e.st.Tool(t.Context(), "s.a"); !tool.Removed {
		t.Fatalf("the server's tool outlived it: %+v", tool)
	}
}

func TestServersNotOffered(t *testing.T) {
	e := newEnv(t)
	e.must(t, "POST", "/control/servers", `{"name": "s", "url": "http://127.0.0.1:1/mcp"}`, 404)
}
