package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlowBody: a client that sends its headers and then dribbles the body
// holds no connection for long. Without a valid API key it is refused before
// a byte of the body is read; with one, it is cut off at the body deadline.
func TestSlowBody(t *testing.T) {
	const deadline = 500 * time.Millisecond
	core := &fakeCore{slow: make(chan struct{}), started: make(chan struct{}, 1), client: make(chan string, 1)}
	srv := httptest.NewServer(Handler(core, fakeVerifier{}, fakeTools{}, Options{BodyTimeout: deadline}))
	t.Cleanup(srv.Close)
	body := callBody(1, "ok", `{"text":"`+strings.Repeat("x", 200)+`"}`, "")

	for _, c := range []struct {
		name    string
		auth    string
		status  int
		reason  string
		atLeast time.Duration // the answer may not come sooner
	}{
		// Refused after the grace for the id, not the body deadline.
		{"bogus key", "Bearer mcpk_bogus_0123456789abcdef0123456789abcdef", 401, "unauthenticated", refusedGrace},
		{"no key", "", 401, "unauthenticated", refusedGrace},
		{"valid key, stalled body", "Bearer key-a", 408, ReasonRequestTimeout, deadline},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			hdr := "POST /mcp HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\n" +
				"Content-Type: application/json\r\nMcp-Protocol-Version: 2025-11-25\r\n" +
				fmt.Sprintf("Content-Length: %d\r\n", len(body))
			if c.auth != "" {
				hdr += "Authorization: " + c.auth + "\r\n"
			}
			start := time.Now()
			if _, err := io.WriteString(conn, hdr+"\r\n"+body[:10]); err != nil {
				t.Fatal(err)
			}
			// The rest trickles in, a byte every 50 ms: the whole body
			// would take over 10 s.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for i := 10; i < len(body); i++ {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := conn.Write([]byte{body[i]}); err != nil {
						return
					}
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer within 5 s: %v", err)
			}
			took := time.Since(start)
			raw, _ := io.ReadAll(resp.Body)
			var r rpcResponse
			if err := json.Unmarshal(raw, &r); err != nil || r.Error == nil {
				t.Fatalf("answer %d %s", resp.StatusCode, raw)
			}
			if resp.StatusCode != c.status || r.Error.Data["reason"] != c.reason || !resp.Close {
				t.Fatalf("answer %d (close %v) %s, want %d %s and the connection closed", resp.StatusCode, resp.Close, raw, c.status, c.reason)
			}
			if took < c.atLeast || took > c.atLeast+time.Second {
				t.Fatalf("answered after %v, want within 1 s of %v", took, c.atLeast)
			}
		})
	}
	if n := core.count(); n != 0 {
		t.Fatalf("core saw %d calls", n)
	}
}
