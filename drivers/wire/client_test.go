package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reports"
)

// seen is what the go-sdk test server's echo tool observed of one call.
type seen struct {
	Key       string         `json:"key"`
	Auth      string         `json:"auth"`
	Principal string         `json:"principal"`
	Permit    string         `json:"permit"`
	Meta      map[string]any `json:"meta"`
	Args      map[string]any `json:"args"`
	Protocol  string         `json:"protocol"`
}

// sdkServer runs a real go-sdk MCP server on 127.0.0.1 with an "echo" tool
// that reports what it received and attaches a receipt like a gateway.
func sdkServer(t *testing.T, opts *mcp.StreamableHTTPOptions) string {
	t.Helper()
	ts := httptest.NewServer(sdkHandler(nil, opts, nil))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// sdkHandler is the go-sdk Streamable HTTP handler of a server named
// "wire-test" 1 with the echo tool, and "block" when b is set.
func sdkHandler(sopts *mcp.ServerOptions, hopts *mcp.StreamableHTTPOptions, b *blocker) http.Handler {
	if sopts == nil {
		sopts = &mcp.ServerOptions{}
	}
	sopts.Logger = quiet
	srv := mcp.NewServer(&mcp.Implementation{Name: "wire-test", Version: "1"}, sopts)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s := seen{
				Key:       req.Extra.Header.Get("Idempotency-Key"),
				Auth:      req.Extra.Header.Get("Authorization"),
				Principal: req.Extra.Header.Get("X-Principal-Token"),
				Permit:    req.Extra.Header.Get("X-Permit-Id"),
				Meta:      req.Params.Meta,
				Protocol:  req.ProtocolVersion(),
			}
			_ = json.Unmarshal(req.Params.Arguments, &s.Args)
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "echoed"}},
				StructuredContent: s,
				Meta:              mcp.Meta{"io.mcpconform/receipt": map[string]any{"id": "rcpt-1"}},
			}, nil
		})
	if b != nil {
		srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, b.handle)
	}
	if hopts == nil {
		hopts = &mcp.StreamableHTTPOptions{}
	}
	hopts.Logger = quiet
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, hopts)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func decodeSeen(t *testing.T, a *Answer) seen {
	t.Helper()
	var s seen
	if err := json.Unmarshal(a.StructuredContent(), &s); err != nil {
		t.Fatalf("structuredContent %s: %v (body %s)", a.StructuredContent(), err, a.Body)
	}
	return s
}

// Both protocol versions against real go-sdk servers: 2025-11-25 on a
// stateful server (session handshake) and on a stateless one, 2026-07-28 on
// a stateless one (per-request _meta, no handshake), JSON and SSE answers.
func TestCallToolGoSDK(t *testing.T) {
	tests := []struct {
		name      string
		opts      mcp.StreamableHTTPOptions
		version   string
		placement string
		wantSess  bool
		wantCType string
	}{
		{"2025 stateful sse header key", mcp.StreamableHTTPOptions{}, V20251125, "header", true, "text/event-stream"},
		{"2025 stateful json meta key", mcp.StreamableHTTPOptions{JSONResponse: true}, V20251125, "meta", true, "application/json"},
		{"2025 stateless json", mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, V20251125, "header", false, "application/json"},
		{"2026 stateless json header key", mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, V20260728, "header", false, "application/json"},
		{"2026 stateless sse meta key", mcp.StreamableHTTPOptions{Stateless: true}, V20260728, "meta", false, "text/event-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			var mu sync.Mutex
			var rec []reports.Exchange
			c := &Client{
				BaseURL: sdkServer(t, &tt.opts), ProtocolVersion: tt.version,
				APIKey: "mcpk_k1_secret", PrincipalToken: "jwt.p.s", KeyPlacement: tt.placement,
				Record: func(e reports.Exchange) { mu.Lock(); rec = append(rec, e); mu.Unlock() },
			}
			if err := c.Initialize(ctx); err != nil {
				t.Fatalf("Initialize: %v", err)
			}
			if got := c.SessionID() != ""; got != tt.wantSess {
				t.Fatalf("session id %q, want one: %v", c.SessionID(), tt.wantSess)
			}
			a, err := c.CallTool(ctx, Call{ID: "call-a", Tool: "echo", Arguments: map[string]any{"x": 1}, IdempotencyKey: "k-1", PermitID: "pmt-1", Label: "call A", Lane: "A"})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if a.Status != 200 || a.HasError() {
				t.Fatalf("answer %d %s", a.Status, a.Body)
			}
			if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantCType) {
				t.Fatalf("Content-Type %q, want %q", ct, tt.wantCType)
			}
			if string(a.Response.ID) != `"call-a"` {
				t.Fatalf("response id %s", a.Response.ID)
			}
			if a.Receipt() != "rcpt-1" || a.Text() != "echoed" {
				t.Fatalf("receipt %q text %q", a.Receipt(), a.Text())
			}
			s := decodeSeen(t, a)
			if s.Protocol != tt.version {
				t.Errorf("server saw protocol %q", s.Protocol)
			}
			if s.Auth != "Bearer mcpk_k1_secret" || s.Principal != "jwt.p.s" || s.Permit != "pmt-1" || s.Args["x"] != float64(1) {
				t.Errorf("server saw %+v", s)
			}
			if tt.placement == "header" && (s.Key != `"k-1"` || s.Meta["idempotencyKey"] != nil) {
				t.Errorf("header placement: key header %q meta %v", s.Key, s.Meta)
			}
			if tt.placement == "meta" && (s.Key != "" || s.Meta["idempotencyKey"] != "k-1") {
				t.Errorf("meta placement: key header %q meta %v", s.Key, s.Meta)
			}
			if tt.version == V20260728 && s.Meta[MetaProtocolVersion] != V20260728 {
				t.Errorf("2026 _meta lacks protocol version: %v", s.Meta)
			}

			// Evidence: every exchange recorded, credential redacted, request as sent.
			mu.Lock()
			defer mu.Unlock()
			last := rec[len(rec)-1]
			if last.Label != "call A" || last.Lane != "A" || last.Status != 200 || last.Method != "POST" {
				t.Errorf("exchange %+v", last)
			}
			if got := last.RequestHeaders["Authorization"]; !strings.HasPrefix(got, "Bearer ***") {
				t.Errorf("Authorization recorded as %q", got)
			}
			if strings.Contains(string(last.RequestBody)+fmt.Sprint(last.RequestHeaders), "secret") {
				t.Errorf("secret leaked into evidence")
			}
			if !strings.Contains(string(last.RequestBody), `"id":"call-a"`) || last.ResponseBody != string(a.Body) {
				t.Errorf("bodies not recorded as on the wire")
			}
			if last.Finished.Before(last.Started) {
				t.Errorf("times %v %v", last.Started, last.Finished)
			}
			wantRecs := 1
			if tt.version == V20251125 {
				wantRecs = 3 // initialize, initialized, call
			}
			if len(rec) != wantRecs {
				t.Errorf("%d exchanges recorded, want %d", len(rec), wantRecs)
			}
		})
	}
}

// A stateful go-sdk server refuses the stateless protocol; the refusal is an
// answer with its JSON-RPC error parsed, not a transport error.
func TestStatefulRefuses2026(t *testing.T) {
	c := &Client{BaseURL: sdkServer(t, nil), ProtocolVersion: V20260728}
	a, err := c.CallTool(testCtx(t), Call{Tool: "echo"})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if a.Status != 400 || a.ErrorCode() != -32022 {
		t.Fatalf("status %d code %d body %s", a.Status, a.ErrorCode(), a.Body)
	}
}

// Without the handshake a stateful 2025-11-25 server refuses the call; a
// NoHandshake call lets the harness see that rather than have it hidden.
func TestStatefulNeedsInitialize(t *testing.T) {
	c := &Client{BaseURL: sdkServer(t, nil)}
	a, err := c.CallTool(testCtx(t), Call{Tool: "echo", NoHandshake: true})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !strings.Contains(string(a.Body), "invalid during session initialization") {
		t.Fatalf("uninitialized call answered %d %s", a.Status, a.Body)
	}
	if c.Version() != "" || c.SessionID() != "" {
		t.Fatalf("a NoHandshake call connected: version %q session %q", c.Version(), c.SessionID())
	}
}

func TestAutoIDsAreDistinctUnderConcurrency(t *testing.T) {
	ctx := testCtx(t)
	c := &Client{BaseURL: sdkServer(t, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), ProtocolVersion: V20260728}
	const n = 16
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			a, err := c.CallTool(ctx, Call{Tool: "echo"})
			if err != nil || a.HasError() {
				t.Errorf("CallTool: %v %s", err, a.Body)
				return
			}
			ids <- string(a.Response.ID)
		})
	}
	wg.Wait()
	close(ids)
	got := map[string]bool{}
	for id := range ids {
		got[id] = true
	}
	if len(got) != n {
		t.Fatalf("%d distinct ids, want %d", len(got), n)
	}
}

func TestSendRawAndHeaderOverrides(t *testing.T) {
	ctx := testCtx(t)
	var gotHeader http.Header
	var gotBody []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Clone()
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no batches","data":{"reason":"batch_not_supported","retryable":false}}}`)
	}))
	defer ts.Close()
	// 2026-07-28: no handshake, so this handler sees only the raw bodies.
	c := &Client{BaseURL: ts.URL, ProtocolVersion: V20260728, APIKey: "mcpk_x", AuthHeader: "X-Api-Key", Header: http.Header{"X-Trace": {"t1"}},
		PrincipalToken: "aGVhZA.Y2xhaW1z.c2lnbmF0dXJl"}
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`)
	a, err := c.Send(ctx, batch, http.Header{"Accept": nil, "X-Extra": {"e"}})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if string(gotBody) != string(batch) {
		t.Errorf("server got body %s", gotBody)
	}
	if gotHeader.Get("Accept") != "" || gotHeader.Get("X-Extra") != "e" || gotHeader.Get("X-Trace") != "t1" ||
		gotHeader.Get("X-Api-Key") != "mcpk_x" || gotHeader.Get("Authorization") != "" {
		t.Errorf("server got headers %v", gotHeader)
	}
	if a.Status != 400 || a.ErrorReason() != "batch_not_supported" || a.ErrorCode() != -32600 {
		t.Errorf("answer %d %q %d", a.Status, a.ErrorReason(), a.ErrorCode())
	}
	if !strings.HasPrefix(a.Exchange.RequestHeaders["X-Api-Key"], "***") {
		t.Errorf("custom auth header recorded as %q", a.Exchange.RequestHeaders["X-Api-Key"])
	}
	// The principal token is sent whole; the evidence keeps its claims, not
	// its signature, so it cannot be presented again.
	if gotHeader.Get("X-Principal-Token") != c.PrincipalToken {
		t.Errorf("server got principal token %q", gotHeader.Get("X-Principal-Token"))
	}
	if got := a.Exchange.RequestHeaders["X-Principal-Token"]; got != "aGVhZA.Y2xhaW1z."+reports.Redacted("c2lnbmF0dXJl") {
		t.Errorf("principal token recorded as %q", got)
	}

	// Malformed JSON still makes valid evidence.
	a, err = c.Send(ctx, []byte(`{"jsonrpc":`), nil)
	if err != nil {
		t.Fatalf("Send malformed: %v", err)
	}
	if _, err := json.Marshal(a.Exchange); err != nil || a.Exchange.RequestBody != nil || a.Exchange.RequestBodyText != `{"jsonrpc":` {
		t.Errorf("malformed body evidence %q %q (%v)", a.Exchange.RequestBody, a.Exchange.RequestBodyText, err)
	}
	// An oversized body is sent whole but kept short in the evidence.
	big := []byte(`{"pad":"` + strings.Repeat("x", 2<<20) + `"}`)
	a, err = c.Send(ctx, big, nil)
	if err != nil {
		t.Fatalf("Send big: %v", err)
	}
	if len(gotBody) != len(big) || a.Exchange.RequestBody != nil || len(a.Exchange.RequestBodyText) > 4096 || !strings.Contains(a.Exchange.RequestBodyText, "2097162 bytes") {
		t.Errorf("server got %d bytes, evidence keeps %d: %.80s", len(gotBody), len(a.Exchange.RequestBodyText), a.Exchange.RequestBodyText)
	}
}

// DropAfterSend really sends the whole request and closes the connection
// without reading: the server reads the full body, and its request context
// ends because the client went away, while DropWait runs in between.
func TestDropAfterSend(t *testing.T) {
	ctx := testCtx(t)
	gotBody := make(chan []byte, 1)
	gone := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody <- b
		select {
		case <-r.Context().Done(): // the client closed the connection
			close(gone)
		case <-time.After(10 * time.Second):
		}
	}))
	defer ts.Close()
	var rec reports.Exchange
	c := &Client{BaseURL: ts.URL, Record: func(e reports.Exchange) { rec = e }}
	var bodyAtWait []byte
	a, err := c.CallTool(ctx, Call{
		Tool: "probe.write", Arguments: map[string]any{"token": "t1"}, DropAfterSend: true, NoHandshake: true,
		DropWait: func(ctx context.Context) error {
			select {
			case bodyAtWait = <-gotBody:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !a.Dropped || a.Status != 0 || a.Response != nil {
		t.Fatalf("answer %+v", a)
	}
	if !strings.Contains(string(bodyAtWait), `"token":"t1"`) {
		t.Fatalf("server body at wait time: %s", bodyAtWait)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("server never saw the connection close")
	}
	if rec.Error == "" || rec.Status != 0 {
		t.Errorf("exchange %+v", rec)
	}
}

// A transport failure keeps its evidence: of the call when it was sent,
// of the handshake (through Record) when connecting failed and the call was
// never sent.
func TestTransportErrorKeepsEvidence(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close() // nothing listens any more
	tests := []struct {
		name      string
		call      Call
		wantAns   bool
		wantLabel string
	}{
		{"lazy handshake", Call{Tool: "x"}, false, "server/discover"},
		{"no handshake", Call{Tool: "x", NoHandshake: true}, true, "tools/call x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec []reports.Exchange
			c := &Client{BaseURL: url, Record: func(e reports.Exchange) { rec = append(rec, e) }}
			a, err := c.CallTool(testCtx(t), tt.call)
			if err == nil {
				t.Fatal("want a transport error")
			}
			if (a != nil) != tt.wantAns {
				t.Fatalf("answer %+v, want one: %v", a, tt.wantAns)
			}
			if a != nil && (a.Exchange.Error == "" || a.Exchange.URL != url+"/mcp") {
				t.Fatalf("answer exchange %+v", a.Exchange)
			}
			if len(rec) != 1 || rec[0].Label != tt.wantLabel || rec[0].Error == "" || rec[0].URL != url+"/mcp" {
				t.Fatalf("recorded %+v", rec)
			}
		})
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:80", "ftp://x/y"} {
		c := &Client{BaseURL: u}
		if _, err := c.CallTool(context.Background(), Call{Tool: "x"}); err == nil {
			t.Errorf("BaseURL %q accepted", u)
		}
	}
}

// A refusal that is a redirect says where it points.
func TestDescribeRedirect(t *testing.T) {
	a := &Answer{Status: 307, Header: http.Header{"Location": []string{"https://gw.example/mcp"}}}
	if got := describe(a); !strings.Contains(got, "a redirect to https://gw.example/mcp") {
		t.Errorf("describe = %q", got)
	}
	if got := describe(&Answer{Status: 401, Body: []byte("no")}); !strings.HasPrefix(got, "answered http 401: no (") {
		t.Errorf("describe = %q", got)
	}
}
