package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/tools"
)

// LocalUpstreamPath is where the control API serves its loopback echo
// upstream: the MCP server that tools registered with "local_tool" forward to.
const LocalUpstreamPath = "/control/local/mcp"

// localUpstream is a stateless MCP server offering partner.echo, served on
// the gateway's own listener. An alias is an ordinary upstream tool pointing
// here, so its calls take the gateway's upstream path (the one scenarios test
// with the harness probe) and show in the dispatch log and the ledger, with
// no process outside the gateway.
func localUpstream(log *slog.Logger) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpconform-control-local", Version: "1"}, &mcp.ServerOptions{Logger: log})
	s.AddTool(&mcp.Tool{
		Name:        tools.Echo,
		Description: "Echoes its arguments back (structuredContent is the arguments object).",
		InputSchema: map[string]any{"type": "object", "additionalProperties": true},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := string(req.Params.Arguments)
		if strings.TrimSpace(text) == "" || text == "null" {
			text = "{}"
		}
		var structured map[string]any
		_ = json.Unmarshal([]byte(text), &structured)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log})
}

// localUpstreamURL is the loopback echo upstream on the address the request
// came in on: the control API answers loopback clients only, so that address
// is this machine's, and the gateway can dial it.
func localUpstreamURL(r *http.Request) string {
	host := r.Host
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		host = a.String()
	}
	return "http://" + host + LocalUpstreamPath
}
