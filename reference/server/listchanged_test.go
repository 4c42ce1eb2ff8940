package server

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A notification unrelated to any request is delivered only on a stream
// open for it (a 2025-11-25 session's standalone GET, a 2026-07-28
// subscriptions/listen); one sent before is dropped. The tests below wait
// for those streams rather than hope they are open in time.

// streamSignals tells ready when h opens such a stream: a GET's headers, or
// a listen's notifications/subscriptions/acknowledged (sent once its
// subscriptions are registered).
func streamSignals(h http.Handler, ready chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&signalWriter{ResponseWriter: w, get: r.Method == http.MethodGet, ready: ready}, r)
	})
}

type signalWriter struct {
	http.ResponseWriter
	get   bool
	ready chan<- string
}

func (s *signalWriter) signal(what string) {
	select {
	case s.ready <- what:
	default: // nobody waits on a full channel
	}
}

func (s *signalWriter) WriteHeader(code int) {
	s.ResponseWriter.WriteHeader(code)
	if s.get && code == http.StatusOK {
		s.signal("GET")
	}
}

func (s *signalWriter) Write(b []byte) (int, error) {
	n, err := s.ResponseWriter.Write(b)
	if bytes.Contains(b, []byte(`"notifications/subscriptions/acknowledged"`)) {
		s.signal("listen")
	}
	return n, err
}

func (s *signalWriter) FlushError() error {
	return http.NewResponseController(s.ResponseWriter).Flush()
}
func (s *signalWriter) Flush() { _ = s.FlushError() }

// getSignal tells ready when a GET's response headers came back: the
// gateway holds the standalone stream open from then on.
type getSignal struct {
	next  http.RoundTripper
	ready chan<- string
}

func (g getSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		g.ready <- "GET"
	}
	return resp, err
}

// connectListening connects a client to the gateway and waits until its
// stream for list changes is open. ready then tells of every further
// stream the client opens (a 2026-07-28 Subscribe's listen).
func connectListening(t *testing.T, g *gatewayProc, version string, opts *mcp.ClientOptions) (cs *mcp.ClientSession, ready <-chan string) {
	t.Helper()
	opened := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "listening-client", Version: "1"}, opts)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				opened <- "listen"
			}
			return next(ctx, method, req)
		}
	})
	hc := &http.Client{Transport: getSignal{next: &clientTransport{key: extKey}, ready: opened}}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	recv(t, opened, "the client's stream for list changes")
	return cs, opened
}

// TestUpstreamListChangesRelayed: when a registered server's prompts or
// resources change, its list-changed notification reaches the gateway's
// clients (on 2026-07-28 those listening for it), and the list they ask for
// then is the server's new one; an update of a subscribed resource reaches
// its subscribers on both protocol versions.
func TestUpstreamListChangesRelayed(t *testing.T) {
	up := newFullUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken, Fixtures: writeFixtures(t)})
	g.control(t, "POST", "/control/servers", `{"name": "full", "url": "`+up.url+`", "prefix": "full."}`, 201)
	recv(t, up.streams, "the gateway's stream for the upstream's notifications")
	noPrompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	noRead := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			prompts, resources := make(chan string, 8), make(chan string, 8)
			updated := make(chan string, 8)
			cs, opened := connectListening(t, g, version, &mcp.ClientOptions{
				PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { prompts <- "prompts" },
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resources <- "resources" },
				ResourceUpdatedHandler:     func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
			})
			name := "added-" + strings.ReplaceAll(version, "-", "")

			up.server.AddPrompt(&mcp.Prompt{Name: name}, noPrompt)
			recv(t, prompts, "notifications/prompts/list_changed")
			ps, err := cs.ListPrompts(t.Context(), nil)
			if err != nil || !slices.ContainsFunc(ps.Prompts, func(p *mcp.Prompt) bool { return p.Name == "full."+name }) {
				t.Fatalf("prompts/list after the change: %+v %v, want full.%s listed", ps, err, name)
			}

			up.server.AddResource(&mcp.Resource{URI: "mem://" + name, Name: name}, noRead)
			recv(t, resources, "notifications/resources/list_changed")
			rs, err := cs.ListResources(t.Context(), nil)
			if err != nil || !slices.ContainsFunc(rs.Resources, func(r *mcp.Resource) bool { return r.URI == "mem://"+name }) {
				t.Fatalf("resources/list after the change: %+v %v, want mem://%s listed", rs, err, name)
			}

			// Updates of a subscribed resource, on 2026-07-28 over the
			// subscription's own listen stream.
			if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://a"}); err != nil {
				t.Fatal(err)
			}
			if version == "2026-07-28" {
				recv(t, opened, "the subscription's listen stream")
			}
			if err := up.server.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: "mem://a"}); err != nil {
				t.Fatal(err)
			}
			if uri := recv(t, updated, "notifications/resources/updated"); uri != "mem://a" {
				t.Fatalf("update of %q, want mem://a", uri)
			}
			if err := cs.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: "mem://a"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
