package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heldUpstream's tool "report" sends a progress notification and a log
// message naming the progress token it was called with, then waits until
// release is closed: two calls are then both in flight at once.
func heldUpstream(t *testing.T) (url string, arrived <-chan struct{}, release chan struct{}) {
	in := make(chan struct{}, 8)
	release = make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "report", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := fmt.Sprint(r.Params.GetProgressToken())
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: 1, Message: tok})
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: tok})
			in <- struct{}{}
			<-release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tok}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, in, release
}

// TestRelayStaysWithItsCaller: two 2025-11-25 sessions call the same
// upstream tool at once; each gets the progress and log messages of its own
// call, under its own token, and none of the other's. A relay that sent an
// upstream's messages to the wrong session (the last caller's, say) leaves
// one client without its own and fails here.
func TestRelayStaysWithItsCaller(t *testing.T) {
	url, arrived, release := heldUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.report", "upstream_url": "`+url+`", "upstream_tool": "report", "price": 1}`)})

	type caller struct {
		name     string
		cs       *mcp.ClientSession
		progress chan string // progress tokens received
		logs     chan string // log messages' data received
		done     chan error
	}
	callers := []*caller{{name: "a"}, {name: "b"}}
	for _, c := range callers {
		c.progress, c.logs, c.done = make(chan string, 8), make(chan string, 8), make(chan error, 1)
		c.cs = connectClient(t, g, "2025-11-25", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				c.progress <- fmt.Sprint(r.Params.ProgressToken)
			},
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { c.logs <- fmt.Sprint(r.Params.Data) },
		})
		if err := c.cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range callers {
		params := &mcp.CallToolParams{Name: "acme.report", Arguments: map[string]any{}, Meta: mcp.Meta{"idempotencyKey": "report-" + c.name}}
		params.SetProgressToken("token-" + c.name)
		go func() {
			_, err := c.cs.CallTool(t.Context(), params)
			c.done <- err
		}()
	}
	// Both calls are at the upstream before either is answered.
	recv(t, arrived, "the first call at the upstream")
	recv(t, arrived, "the second call at the upstream")
	close(release)
	for _, c := range callers {
		if err := recv(t, c.done, "the answer of "+c.name); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	for _, c := range callers {
		own := "token-" + c.name
		for what, ch := range map[string]chan string{"progress token": c.progress, "log message": c.logs} {
			// Read until the caller's own message: anything before it is
			// another call's, sent to the wrong session.
			for got := recv(t, ch, fmt.Sprintf("%s %s for %s", what, own, c.name)); got != own; got = recv(t, ch, what+" "+own) {
				t.Errorf("%s got the %s %q of another caller's call", c.name, what, got)
			}
		}
	}
}
