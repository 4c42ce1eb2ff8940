package wire

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loggingRelay declares tools and logging and relays nothing else: enough
// for logging/setLevel to be served.
type loggingRelay struct{ Relay }

func (loggingRelay) Capabilities(context.Context) *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}
}

func (loggingRelay) OnResourceUpdated(func(context.Context, *mcp.ResourceUpdatedNotificationParams)) {
}

func (loggingRelay) OnListChanged(func(context.Context, string)) {}

// TestLogLevelClearedWithSession: the level a session set with
// logging/setLevel is dropped when the session ends, so levels of ended
// sessions do not pile up and none is read for a later session of the
// same id.
func TestLogLevelClearedWithSession(t *testing.T) {
	h := Handler(&fakeCore{}, fakeVerifier{}, fakeTools{}, Options{Relay: loggingRelay{}}).(*handler)
	cleared := make(chan string, 1)
	h.levelCleared = func(id string) { cleared <- id }
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: headerRT{"Authorization": "Bearer key-a"}}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: Protocol20251125})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.ID()
	for _, level := range []mcp.LoggingLevel{"info", "debug"} { // a second level starts no second clean-up
		if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok := h.logLevels.Load(id); !ok || v.(sessionLevel).level != "debug" {
		t.Fatalf("level of session %s: %v %v, want debug", id, v, ok)
	}

	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-cleared:
		if got != id {
			t.Fatalf("cleared the level of session %s, want %s", got, id)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the level of closed session %s was never cleared", id)
	}
	if v, ok := h.logLevels.Load(id); ok {
		t.Fatalf("closed session %s still has level %v", id, v)
	}
}
