package wire

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClientDone: the core's CallRequest.ClientDone is open while the client
// waits for its answer, and closes when the client gives up on the call:
// notifications/cancelled on its 2025-11-25 session, or a closed POST on any
// wire. The fake core's tool waits for the close, so the test needs no
// guess at when the SDK or net/http notices the client leaving.
func TestClientDone(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"

	if _, r, raw := post(t, url, headers2026("tools/call", "peek-cancel"), callBody(1, "peek-cancel", `{}`, meta2026(""))); r.Error != nil {
		t.Fatalf("peek-cancel: %s", raw)
	}
	if got := recvWithin(t, core.client, "the core's view of the client"); got != "open" {
		t.Fatalf("ClientDone of a call whose client waits: %s, want open", got)
	}

	for _, c := range []struct {
		name    string
		session bool
		hdr     map[string]string
		meta    string
		how     string // "notify": notifications/cancelled on the session; "close": the POST's connection closed
	}{
		{"2025-11-25 session, notifications/cancelled", true, map[string]string{HeaderProtocol: Protocol20251125}, "", "notify"},
		{"2025-11-25 session, POST closed", true, map[string]string{HeaderProtocol: Protocol20251125}, "", "close"},
		{"sessionless 2025-11-25, POST closed", false, map[string]string{HeaderProtocol: Protocol20251125}, "", "close"},
		{"2026-07-28, POST closed", false, headers2026("tools/call", "await-cancel"), meta2026(""), "close"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{"Authorization": "Bearer key-a"}
			for k, v := range c.hdr {
				hdr[k] = v
			}
			if c.session {
				hdr[HeaderSession] = openSession(t, url, "key-a")
				post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(callBody(7, "await-cancel", `{}`, c.meta)))
				if err != nil {
					answered <- err
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				answered <- err
			}()
			recvWithin(t, core.started, "the call reaching the core")
			switch c.how {
			case "notify":
				resp, _, raw := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gave up"}}`)
				if resp.StatusCode != http.StatusAccepted {
					t.Fatalf("notifications/cancelled: %d %s", resp.StatusCode, raw)
				}
			case "close":
				cancel()
			}
			if got := recvWithin(t, core.client, "the core's view of the client"); got != "closed" {
				t.Fatalf("ClientDone after the client gave up: %s, want closed", got)
			}
			err := recvWithin(t, answered, "the POST's end")
			if c.how == "notify" && err != nil {
				t.Fatalf("the cancelled call's POST, kept open: %v", err)
			}
		})
	}
}

// recvWithin waits for a value on ch; a test stuck for half a minute fails
// with what it waited for instead of hanging.
func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}
