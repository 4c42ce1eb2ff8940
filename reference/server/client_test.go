package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// slowUpstream is an upstream MCP server whose probe.slow tool, once called,
// says so on started and runs until release is closed.
type slowUpstream struct {
	url     string
	runs    atomic.Int64
	started chan int64
	release chan struct{}
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	u := &slowUpstream{started: make(chan int64, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "slow-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "probe.slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := u.runs.Add(1)
			u.started <- n
			<-u.release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("run %d", n)}},
				StructuredContent: map[string]any{"run": n}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-u.release:
		default:
			close(u.release)
		}
	})
	u.url = srv.URL
	return u
}

// clientTransport puts the API key (and header, if any) on every request of
// an MCP client and reports each notifications/cancelled it sends, with the
// HTTP status the gateway answered it with, on cancelled if not nil.
type clientTransport struct {
	key       string
	header    map[string]string
	cancelled chan int
}

func (c *clientTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.key)
	for k, v := range c.header {
		r.Header.Set(k, v)
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if c.cancelled != nil && bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		c.cancelled <- status
	}
	return resp, err
}

// receiptOfResult reads the receipt and the structured content of a result.
func receiptOfResult(t *testing.T, res *mcp.CallToolResult) (gateway.Receipt, string) {
	t.Helper()
	raw, err := json.Marshal(res.Meta[gateway.ReceiptMetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var rc gateway.Receipt
	if err := json.Unmarshal(raw, &rc); err != nil || rc.ID == "" {
		t.Fatalf("no receipt in %+v (%v)", res.Meta, err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	return rc, string(sc)
}

// TestStrictClientCancel drives the gateway with go-sdk's own client, as a
// strict MCP client would: on 2025-11-25 initialize, notifications/initialized
// and calls on the session; on 2026-07-28 server/discover and stateless
// calls. A keyed tools/call to an upstream tool is cancelled by its client
// (context cancelled: the SDK drops the request and sends
// notifications/cancelled) while the upstream runs. The gateway does not
// stop the call: the upstream finishes, the outcome is stored and charged
// once, and a retry with the same key replays it (the upstream's real
// result, not an "outcome unknown" error) without running the tool again.
func TestStrictClientCancel(t *testing.T) {
	up := newSlowUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.slow", "upstream_url": "`+up.url+`", "upstream_tool": "probe.slow", "price": 3}`)})

	for i, c := range []struct {
		version string // asked for
		session bool   // a 2025-11-25 session (an Mcp-Session-Id)
	}{
		{"2025-11-25", true},
		{"2026-07-28", false},
	} {
		t.Run(c.version, func(t *testing.T) {
			tr := &clientTransport{key: extKey, cancelled: make(chan int, 4)}
			client := mcp.NewClient(&mcp.Implementation{Name: "strict-client", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: tr}},
				&mcp.ClientSessionOptions{ProtocolVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != c.version || (cs.ID() != "") != c.session {
				t.Fatalf("negotiated %q, session %q", v, cs.ID())
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil || !strings.Contains(fmt.Sprint(toolNames(tools)), "acme.slow") {
				t.Fatalf("tools/list: %v %v", toolNames(tools), err)
			}
			echo, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "partner.echo", Arguments: map[string]any{"v": c.version}})
			if err != nil || echo.IsError {
				t.Fatalf("unkeyed call: %+v %v", echo, err)
			}

			// dispatch.after holds the call once its outcome is stored.
			fault := g.control(t, "POST", "/control/faults", `{"point":"dispatch.after","action":"pause","match":{"tool":"acme.slow"}}`, 201)["fault_id"].(string)
			key := fmt.Sprintf("cancel-%d", i)
			params := &mcp.CallToolParams{Name: "acme.slow", Arguments: map[string]any{"n": i}, Meta: mcp.Meta{"idempotencyKey": key}}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				done <- err
			}()
			recv(t, up.started, "the upstream running the call")
			cancel()
			if err := recv(t, done, "the cancelled call's return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call returned %v", err)
			}
			status := recv(t, tr.cancelled, "notifications/cancelled") // answered by the gateway
			t.Logf("%s: notifications/cancelled answered HTTP %d", c.version, status)
			if c.session && status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled on the session: HTTP %d", status)
			}
			up.release <- struct{}{}
			g.control(t, "POST", "/control/faults/"+fault+"/await", `{"waiting":1,"timeout":"20s"}`, 200)
			debitsNow := len(debits(t, g, "w-ext-1"))
			g.control(t, "POST", "/control/faults/"+fault+"/release", "", 200)

			res, err := cs.CallTool(t.Context(), params) // the retry, same key
			if err != nil || res.IsError {
				t.Fatalf("retry: %+v %v", res, err)
			}
			rc, sc := receiptOfResult(t, res)
			if !rc.Replayed || rc.Charged != 3 || rc.IdempotencyKey != key || sc != fmt.Sprintf(`{"run":%d}`, i+1) {
				t.Fatalf("retry got receipt %+v, structured content %s: want the cancelled call's stored result, replayed", rc, sc)
			}
			if n := up.runs.Load(); n != int64(i+1) {
				t.Fatalf("upstream ran %d times, want %d", n, i+1)
			}
			if d := debits(t, g, "w-ext-1"); len(d) != debitsNow || d[len(d)-1]["tool"] != "acme.slow" || d[len(d)-1]["receipt"] != rc.ID {
				t.Fatalf("debits %v: want the cancelled call's debit (receipt %s) and no other since", d, rc.ID)
			}
		})
	}
}

// recv waits for a value on ch; a test stuck for half a minute fails
// (with what it waited for) instead of hanging.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

func toolNames(r *mcp.ListToolsResult) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out
}

// TestCancelledAnswerStillSent: a client that sends notifications/cancelled
// for an in-flight tools/call on its 2025-11-25 session but keeps that POST
// open still gets the call's answer on it once the upstream finishes: the
// gateway runs the call to its end whatever the client says, and the SDK
// writes a handler's response to the request's stream whether or not the
// request was cancelled (so whether its cancel landed before the upstream
// finished makes no difference to the answer).
func TestCancelledAnswerStillSent(t *testing.T) {
	up := newSlowUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.slow", "upstream_url": "`+up.url+`", "upstream_tool": "probe.slow", "price": 3}`)})
	resp, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + extKey},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sess := map[string]string{"Authorization": "Bearer " + extKey, "Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
	if a.Error != nil || sess["Mcp-Session-Id"] == "" {
		t.Fatalf("initialize: %+v", a)
	}
	if st := g.notify(t, sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d", st)
	}

	type posted struct {
		a   rpcAnswer
		err error
	}
	answered := make(chan posted, 1)
	go func() {
		hdr := map[string]string{"Idempotency-Key": "raw-1"}
		for k, v := range sess {
			hdr[k] = v
		}
		var p posted
		var raw []byte
		if _, raw, p.err = g.post(hdr, call(7, "acme.slow", `{}`)); p.err == nil {
			p.err = json.Unmarshal(raw, &p.a)
		}
		answered <- p
	}()
	recv(t, up.started, "the upstream running the call")
	if st := g.notify(t, sess, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user gave up"}}`); st != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d", st)
	}
	close(up.release)
	p := recv(t, answered, "answer on the cancelled call's POST")
	answer := p.a
	if p.err != nil {
		t.Fatalf("the cancelled call's POST: %v", p.err)
	}
	if answer.Error != nil {
		t.Fatalf("the cancelled call's answer: %+v", answer.Error)
	}
	_, rc := decodeResult(t, answer)
	if rc.Replayed || rc.Charged != 3 || rc.IdempotencyKey != "raw-1" {
		t.Fatalf("the cancelled call's answer: receipt %+v", rc)
	}
	if d := debits(t, g, "w-ext-1"); len(d) != 1 || d[0]["receipt"] != rc.ID {
		t.Fatalf("debits %v", d)
	}
}

// notify POSTs a notification and returns the HTTP status.
func (g *gatewayProc) notify(t *testing.T, hdr map[string]string, body string) int {
	t.Helper()
	resp, _, err := g.post(hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}
