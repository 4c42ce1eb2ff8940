package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reports"
)

// hit is what the recorder saw of one request on the wire.
type hit struct {
	Method   string // the body's method; "malformed" or "batch" for those
	Session  string // Mcp-Session-Id
	Protocol string // Mcp-Protocol-Version
}

// recorder sits in front of a target and notes every request. gate, if
// set, runs first and may answer the request itself (returning true).
type recorder struct {
	next http.Handler
	gate func(h hit, w http.ResponseWriter) bool

	mu   sync.Mutex
	hits []hit
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h := hit{Method: methodOf(body), Session: r.Header.Get("Mcp-Session-Id"), Protocol: r.Header.Get("Mcp-Protocol-Version")}
	rc.mu.Lock()
	rc.hits = append(rc.hits, h)
	rc.mu.Unlock()
	if rc.gate != nil && rc.gate(h, w) {
		return
	}
	rc.next.ServeHTTP(w, r)
}

func (rc *recorder) seen() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.hits)
}

func (rc *recorder) count(method string) int {
	n := 0
	for _, h := range rc.seen() {
		if h.Method == method {
			n++
		}
	}
	return n
}

func methodOf(body []byte) string {
	t := bytes.TrimSpace(body)
	switch {
	case !json.Valid(t):
		return "malformed"
	case len(t) > 0 && t[0] == '[':
		return "batch"
	}
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(t, &m)
	return m.Method
}

// exchanges collects what a Client records.
type exchanges struct {
	mu   sync.Mutex
	list []reports.Exchange
}

func (x *exchanges) record(e reports.Exchange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.list = append(x.list, e)
}

func (x *exchanges) labels() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]string, 0, len(x.list))
	for _, e := range x.list {
		out = append(out, e.Label)
	}
	return out
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// blocker is a tool that runs until its context ends, reporting when it
// started and why it stopped. release ends it from the test's side, so a
// failed test never leaves a handler (and so the server's Close) hanging.
type blocker struct {
	started   chan struct{}
	cancelled chan error
	release   chan struct{}
	once      sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 1), cancelled: make(chan error, 1), release: make(chan struct{})}
}

func (b *blocker) handle(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.cancelled <- ctx.Err()
		return nil, ctx.Err()
	case <-b.release:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
	}
}

func (b *blocker) stop() { b.once.Do(func() { close(b.release) }) }

// wait receives from ch or fails the test when ctx ends first.
func wait[T any](ctx context.Context, t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
		var zero T
		return zero
	}
}

// On a stateful go-sdk server every kind of request reaches the server on
// one session without an explicit Initialize: calls, lists, and raw bodies,
// so a malformed body and a batch are judged as bodies, not as requests
// outside a session.
func TestLazyHandshakeStateful(t *testing.T) {
	tests := []struct {
		name    string
		version string
		opts    mcp.StreamableHTTPOptions
		want    []string // methods the server saw
	}{
		{"negotiated sse", "", mcp.StreamableHTTPOptions{},
			[]string{"server/discover", "initialize", "notifications/initialized", "tools/call", "tools/list", "malformed", "batch"}},
		{"explicit 2025-11-25 json", V20251125, mcp.StreamableHTTPOptions{JSONResponse: true},
			[]string{"initialize", "notifications/initialized", "tools/call", "tools/list", "malformed", "batch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			rc := &recorder{next: sdkHandler(nil, &tt.opts, nil)}
			var x exchanges
			c := &Client{BaseURL: serve(t, rc), ProtocolVersion: tt.version, Record: x.record}

			a, err := c.CallTool(ctx, Call{Tool: "echo", Arguments: map[string]any{"x": 1}})
			if err != nil || a.Status != 200 || a.HasError() || a.Receipt() != "rcpt-1" {
				t.Fatalf("CallTool: %v %d %s", err, a.Status, a.Body)
			}
			sid := c.SessionID()
			if sid == "" || c.Version() != V20251125 {
				t.Fatalf("session %q version %q", sid, c.Version())
			}
			if s := decodeSeen(t, a); s.Protocol != V20251125 {
				t.Errorf("server saw protocol %q", s.Protocol)
			}
			l, err := c.ListTools(ctx)
			if err != nil || l.HasError() || !strings.Contains(string(l.Result()), `"echo"`) {
				t.Fatalf("ListTools: %v %s", err, l.Body)
			}
			m, err := c.Send(ctx, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{`), nil)
			if err != nil || m.Status != 400 || !strings.Contains(string(m.Body), "malformed payload") {
				t.Fatalf("malformed body: %v %d %s", err, m.Status, m.Body)
			}
			b, err := c.Send(ctx, []byte(`[{"jsonrpc":"2.0","id":10,"method":"tools/list"}]`), nil)
			if err != nil || b.Status != 400 || !strings.Contains(string(b.Body), "batching is not supported") {
				t.Fatalf("batch body: %v %d %s", err, b.Status, b.Body)
			}

			hits := rc.seen()
			var got []string
			for _, h := range hits {
				got = append(got, h.Method)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("server saw %q, want %q", got, tt.want)
			}
			for _, h := range hits[slices.Index(got, "notifications/initialized"):] {
				if h.Session != sid || h.Protocol != V20251125 {
					t.Errorf("%s sent with session %q protocol %q, want %q %q", h.Method, h.Session, h.Protocol, sid, V20251125)
				}
			}
			wantLabels := []string{"initialize", "initialized", "tools/call echo", "tools/list", "raw", "raw"}
			if tt.version == "" {
				wantLabels = append([]string{"server/discover"}, wantLabels...)
			}
			if !slices.Equal(x.labels(), wantLabels) {
				t.Errorf("recorded %q, want %q", x.labels(), wantLabels)
			}
			// Connected: neither form of the handshake sends anything again.
			if err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(rc.seen()); n != len(hits) {
				t.Errorf("a second Initialize/Connect sent %d requests", n-len(hits))
			}
		})
	}
}

// A raw body as a client's first request connects first too, and is sent
// on the session.
func TestRawBodyFirstConnects(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`, "malformed payload"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "batching is not supported"},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			rc := &recorder{next: sdkHandler(nil, nil, nil)}
			c := &Client{BaseURL: serve(t, rc), ProtocolVersion: V20251125}
			a, err := c.Send(ctx, []byte(tt.body), nil)
			if err != nil || a.Status/100 != 4 || !strings.Contains(string(a.Body), tt.want) {
				t.Fatalf("Send: %v %d %s", err, a.Status, a.Body)
			}
			hits := rc.seen()
			if len(hits) != 3 || hits[0].Method != "initialize" || hits[1].Method != "notifications/initialized" {
				t.Fatalf("server saw %+v", hits)
			}
			if last := hits[2]; last.Session == "" || last.Session != c.SessionID() || last.Protocol != V20251125 {
				t.Fatalf("raw body sent as %+v, session %q", last, c.SessionID())
			}
		})
	}
}

// 16 first calls released together by a barrier handshake once: the
// server holds the one initialize until the other 15 callers wait for it.
// When that handshake fails every waiter gets its error, and a later call
// tries again.
func TestConcurrentFirstCallsHandshakeOnce(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		name := map[bool]string{false: "handshake succeeds", true: "first handshake fails"}[failFirst]
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			const n = 16
			release := make(chan struct{})
			var inits atomic.Int32
			rc := &recorder{next: sdkHandler(nil, nil, nil)}
			rc.gate = func(h hit, w http.ResponseWriter) bool {
				if h.Method != "initialize" || inits.Add(1) != 1 {
					return false
				}
				<-release
				if failFirst {
					http.Error(w, "not now", http.StatusServiceUnavailable)
					return true
				}
				return false
			}
			var x exchanges
			waiting := make(chan struct{}, n)
			c := &Client{BaseURL: serve(t, rc), Record: x.record, onWait: func() { waiting <- struct{}{} }}
			var once sync.Once
			stop := func() { once.Do(func() { close(release) }) }
			t.Cleanup(stop) // runs before the server's Close

			start := make(chan struct{})
			var ready, done sync.WaitGroup
			type result struct {
				a   *Answer
				err error
			}
			results := make(chan result, n)
			for range n {
				ready.Add(1)
				done.Go(func() {
					ready.Done()
					<-start
					a, err := c.CallTool(ctx, Call{Tool: "echo"})
					results <- result{a, err}
				})
			}
			ready.Wait()
			close(start)
			for range n - 1 {
				wait(ctx, t, waiting, "callers waiting for the handshake")
			}
			stop()
			done.Wait()
			close(results)

			var errs []string
			sessions := map[string]bool{}
			for r := range results {
				switch {
				case r.err != nil:
					if r.a != nil {
						t.Errorf("a call that was never sent has an answer: %+v", r.a)
					}
					errs = append(errs, r.err.Error())
				case r.a.HasError() || r.a.Status != 200:
					t.Errorf("answer %d %s", r.a.Status, r.a.Body)
				}
			}
			for _, h := range rc.seen() {
				if h.Method == "tools/call" {
					sessions[h.Session] = true
				}
			}
			if got := rc.count("initialize"); got != 1 {
				t.Fatalf("%d initialize requests, want 1", got)
			}
			if !failFirst {
				if len(errs) != 0 || rc.count("tools/call") != n || len(sessions) != 1 || sessions[""] {
					t.Fatalf("errors %q, %d calls on sessions %v", errs, rc.count("tools/call"), sessions)
				}
				if got := rc.count("notifications/initialized"); got != 1 {
					t.Fatalf("%d initialized notifications", got)
				}
				return
			}
			if len(errs) != n || rc.count("tools/call") != 0 {
				t.Fatalf("%d errors, %d calls sent; want %d, 0", len(errs), rc.count("tools/call"), n)
			}
			for _, e := range errs {
				if e != errs[0] || !strings.Contains(e, "http 503") {
					t.Fatalf("waiters got %q, the handshake %q", e, errs[0])
				}
			}
			if c.Version() != "" {
				t.Fatalf("failed handshake left version %q", c.Version())
			}
			a, err := c.CallTool(ctx, Call{Tool: "echo"})
			if err != nil || a.HasError() || rc.count("initialize") != 2 {
				t.Fatalf("retry: %v %v, %d initialize requests", err, a, rc.count("initialize"))
			}
			if l := x.labels(); l[len(l)-1] != "tools/call echo" || l[len(l)-2] != "initialized" {
				t.Errorf("recorded %q", l)
			}
		})
	}
}

// Negotiation and explicit versions against go-sdk servers of each kind and
// against servers that refuse 2026-07-28 the ways older software does.
func TestNegotiation(t *testing.T) {
	stateless := func() http.Handler {
		return sdkHandler(nil, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, nil)
	}
	// An SDK older than the 2026-07-28 revision checks the version header
	// against its list and answers in plain text.
	olderSDK := func() http.Handler {
		next := sdkHandler(nil, nil, nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Protocol-Version") == V20260728 {
				http.Error(w, "Bad Request: Unsupported protocol version (supported versions: 2025-11-25,2025-06-18)", http.StatusBadRequest)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	noDiscover := func() http.Handler {
		next := sdkHandler(nil, nil, nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if methodOf(body) == "server/discover" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}
	handshake := []string{"initialize", "initialized"}
	withProbe := append([]string{"server/discover"}, handshake...)
	tests := []struct {
		name        string
		target      http.Handler
		version     string // ProtocolVersion
		wantVersion string
		wantSession bool
		wantLabels  []string
		wantInfo    string // server name, "" for unknown
		wantErr     string
	}{
		{"stateless serves 2026-07-28", stateless(), "", V20260728, false, []string{"server/discover"}, "wire-test", ""},
		{"stateful falls back", sdkHandler(nil, nil, nil), "", V20251125, true, withProbe, "wire-test", ""},
		{"narrowed to 2025-11-25 falls back", sdkHandler(&mcp.ServerOptions{SupportedProtocolVersions: []string{V20251125}},
			&mcp.StreamableHTTPOptions{Stateless: true}, nil), "", V20251125, false, withProbe, "wire-test", ""},
		{"older sdk refuses the header", olderSDK(), "", V20251125, true, withProbe, "wire-test", ""},
		{"no server/discover", noDiscover(), "", V20251125, true, withProbe, "wire-test", ""},
		{"initialize answers another version", sdkHandler(&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-06-18"}}, nil, nil),
			"", "", false, []string{"server/discover", "initialize"}, "", `server negotiated protocol "2025-06-18"`},
		// go-sdk v1.8.0 serves 2025-11-25 statelessly too: initialize is
		// answered in a one-request session, without Mcp-Session-Id, and
		// later requests are served without one.
		{"explicit 2025-11-25 on stateless", stateless(), V20251125, V20251125, false, handshake, "wire-test", ""},
		{"explicit 2026-07-28 sends nothing", stateless(), V20260728, V20260728, false, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			var x exchanges
			c := &Client{BaseURL: serve(t, tt.target), ProtocolVersion: tt.version, Record: x.record}
			err := c.Connect(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Connect: %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if !slices.Equal(x.labels(), tt.wantLabels) {
				t.Errorf("recorded %q, want %q", x.labels(), tt.wantLabels)
			}
			if c.Version() != tt.wantVersion || (c.SessionID() != "") != tt.wantSession {
				t.Fatalf("version %q session %q, want %q and one: %v", c.Version(), c.SessionID(), tt.wantVersion, tt.wantSession)
			}
			if name, version := c.ServerInfo(); name != tt.wantInfo || (name != "" && version != "1") {
				t.Errorf("ServerInfo %q %q, want %q", name, version, tt.wantInfo)
			}
			if err != nil {
				return
			}
			a, err := c.CallTool(ctx, Call{Tool: "echo"})
			if err != nil || a.HasError() || a.Status != 200 {
				t.Fatalf("CallTool: %v %d %s", err, a.Status, a.Body)
			}
			if s := decodeSeen(t, a); s.Protocol != tt.wantVersion {
				t.Errorf("server saw protocol %q", s.Protocol)
			}
		})
	}
}

// Cancel sends a notifications/cancelled that a go-sdk server acts on: on
// a 2025-11-25 session the call's handler sees its context cancelled.
func TestCancel(t *testing.T) {
	ctx := testCtx(t)
	b := newBlocker()
	rc := &recorder{next: sdkHandler(nil, nil, b)}
	c := &Client{BaseURL: serve(t, rc)}
	t.Cleanup(b.stop)
	id := c.NextID()
	callCtx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	type result struct {
		a   *Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := c.CallTool(callCtx, Call{ID: id, Tool: "block"})
		done <- result{a, err}
	}()
	wait(ctx, t, b.started, "tool start")

	a, err := c.Cancel(ctx, id, "no longer needed")
	if err != nil || a.Status != http.StatusAccepted {
		t.Fatalf("Cancel: %v %d %s", err, a.Status, a.Body)
	}
	if cause := wait(ctx, t, b.cancelled, "handler cancellation"); !errors.Is(cause, context.Canceled) {
		t.Fatalf("handler stopped with %v", cause)
	}
	var sent struct {
		Method string `json:"method"`
		ID     any    `json:"id"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		} `json:"params"`
	}
	if err := json.Unmarshal(a.Exchange.RequestBody, &sent); err != nil || sent.Method != "notifications/cancelled" ||
		sent.ID != nil || string(sent.Params.RequestID) != string(id) || sent.Params.Reason != "no longer needed" {
		t.Fatalf("sent %s (%v)", a.Exchange.RequestBody, err)
	}
	hits := rc.seen()
	if last := hits[len(hits)-1]; last.Method != "notifications/cancelled" || last.Session != c.SessionID() {
		t.Fatalf("cancel reached the server as %+v, session %q", last, c.SessionID())
	}
	// go-sdk v1.8.0 still answers the cancelled call: a JSON-RPC error with
	// code 0 and the handler's error (the spec says a receiver should not
	// answer; either way the call's POST ends).
	if r := wait(ctx, t, done, "call return"); r.err != nil || r.a.ErrorMessage() != "context canceled" {
		t.Fatalf("cancelled call: %v %s", r.err, r.a.Body)
	}

	if _, err := c.Cancel(ctx, json.RawMessage(`{"x":`), ""); err == nil {
		t.Error("an invalid request id was sent")
	}
}

// On 2026-07-28 the notification is well-formed (version headers and _meta)
// and accepted, and cancelling a call's context closes its connection, which
// is how a go-sdk server learns the call is gone.
func TestCancel2026(t *testing.T) {
	ctx := testCtx(t)
	b := newBlocker()
	h := sdkHandler(nil, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, PropagateRequestCancellation: true}, b)
	var x exchanges
	c := &Client{BaseURL: serve(t, h), ProtocolVersion: V20260728, Record: x.record}
	t.Cleanup(b.stop)

	id := c.NextID()
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan *Answer, 1)
	errc := make(chan error, 1)
	go func() {
		a, err := c.CallTool(callCtx, Call{ID: id, Tool: "block"})
		done <- a
		errc <- err
	}()
	wait(ctx, t, b.started, "tool start")

	a, err := c.Cancel(ctx, id, "")
	if err != nil || a.Status != http.StatusAccepted {
		t.Fatalf("Cancel: %v %d %s", err, a.Status, a.Body)
	}
	if a.Exchange.RequestHeaders["Mcp-Method"] != "notifications/cancelled" || a.Exchange.RequestHeaders["Mcp-Protocol-Version"] != V20260728 ||
		!strings.Contains(string(a.Exchange.RequestBody), MetaProtocolVersion) || strings.Contains(string(a.Exchange.RequestBody), "reason") {
		t.Fatalf("sent %v %s", a.Exchange.RequestHeaders, a.Exchange.RequestBody)
	}

	cancelCall()
	if cause := wait(ctx, t, b.cancelled, "handler cancellation"); !errors.Is(cause, context.Canceled) {
		t.Fatalf("handler stopped with %v", cause)
	}
	ca := wait(ctx, t, done, "call return")
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
	if ca == nil || !strings.Contains(ca.Exchange.Error, "context canceled") {
		t.Fatalf("cancelled call's answer %+v", ca)
	}
	if l := x.labels(); !slices.Contains(l, "tools/call block") {
		t.Errorf("cancelled call not recorded: %q", l)
	}
}

// A session the server dropped is an answer (404), not a silent new
// handshake.
func TestSessionLossIsAnAnswer(t *testing.T) {
	ctx := testCtx(t)
	rc := &recorder{next: sdkHandler(nil, nil, nil)}
	c := &Client{BaseURL: serve(t, rc), ProtocolVersion: V20251125}
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, c.BaseURL, nil)
	del.Header.Set("Mcp-Session-Id", c.SessionID())
	resp, err := http.DefaultClient.Do(del)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	resp.Body.Close()
	a, err := c.CallTool(ctx, Call{Tool: "echo"})
	if err != nil || a.Status != http.StatusNotFound {
		t.Fatalf("CallTool on a deleted session: %v %d %s", err, a.Status, a.Body)
	}
	if n := rc.count("initialize"); n != 1 {
		t.Fatalf("%d initialize requests, want 1", n)
	}
}

// Setting ProtocolVersion again makes the next call connect for it.
func TestProtocolVersionChangeReconnects(t *testing.T) {
	ctx := testCtx(t)
	rc := &recorder{next: sdkHandler(nil, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, nil)}
	c := &Client{BaseURL: serve(t, rc), ProtocolVersion: V20251125}
	for _, v := range []string{V20251125, V20260728, V20251125} {
		c.ProtocolVersion = v
		a, err := c.CallTool(ctx, Call{Tool: "echo"})
		if err != nil || a.HasError() {
			t.Fatalf("%s: %v %s", v, err, a.Body)
		}
		if s := decodeSeen(t, a); s.Protocol != v || c.Version() != v {
			t.Fatalf("server saw %q, client on %q, want %q", s.Protocol, c.Version(), v)
		}
	}
	if n := rc.count("initialize"); n != 2 {
		t.Fatalf("%d initialize requests, want 2", n)
	}
}
