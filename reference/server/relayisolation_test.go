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

// TestRelayStaysWithItsCaller: three calls of the same upstream tool are
// in flight at once, two on one 2025-11-25 session and one on another; each
// session gets the progress and log messages of its own calls, each
// progress under its own call's token, and nothing of the other session's.
// A relay that sent an upstream's messages to the wrong session (the last
// caller's, say), or under the wrong call's token (the session's latest),
// fails here.
func TestRelayStaysWithItsCaller(t *testing.T) {
	url, arrived, release := heldUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.report", "upstream_url": "`+url+`", "upstream_tool": "report", "price": 1}`)})

	type session struct {
		name     string
		tokens   []string // of its calls
		cs       *mcp.ClientSession
		progress chan string // progress tokens received
		logs     chan string // log messages' data received
	}
	sessions := []*session{{name: "a", tokens: []string{"a-1", "a-2"}}, {name: "b", tokens: []string{"b-1"}}}
	for _, s := range sessions {
		s.progress, s.logs = make(chan string, 8), make(chan string, 8)
		s.cs = connectClient(t, g, "2025-11-25", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				s.progress <- fmt.Sprint(r.Params.ProgressToken)
			},
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { s.logs <- fmt.Sprint(r.Params.Data) },
		})
		if err := s.cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 3)
	calls := 0
	for _, s := range sessions {
		for _, tok := range s.tokens {
			params := &mcp.CallToolParams{Name: "acme.report", Arguments: map[string]any{}, Meta: mcp.Meta{"idempotencyKey": "report-" + tok}}
			params.SetProgressToken(tok)
			calls++
			go func() {
				_, err := s.cs.CallTool(t.Context(), params)
				done <- err
			}()
		}
	}
	// Every call is at the upstream before any is answered.
	for i := range calls {
		recv(t, arrived, fmt.Sprintf("call %d of %d at the upstream", i+1, calls))
	}
	close(release)
	for range calls {
		if err := recv(t, done, "a call's answer"); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sessions {
		for what, ch := range map[string]chan string{"progress token": s.progress, "log message": s.logs} {
			// Read until each of the session's own calls was heard from once:
			// anything else is another call's, or a duplicate.
			want := map[string]bool{}
			for _, tok := range s.tokens {
				want[tok] = true
			}
			for len(want) > 0 {
				got := recv(t, ch, fmt.Sprintf("the %s of each of %v on session %s", what, s.tokens, s.name))
				if !want[got] {
					t.Fatalf("session %s got the %s %q, not one of its calls' outstanding %v", s.name, what, got, want)
				}
				delete(want, got)
			}
		}
	}
}
