package vendorgw

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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/drivers/probe"
)

const (
	keyA = "acme_live_a"
	keyB = "acme_live_b"
)

var testTools = []Tool{
	{Name: "acme.write", Upstream: probe.ToolWrite},
	{Name: "acme.read", Upstream: probe.ToolRead, ReadOnly: true},
}

// start runs a probe and a gateway in front of it, both closed with the test.
func start(t *testing.T, mode Mode, before func(string)) (*Gateway, *probe.Probe) {
	t.Helper()
	p, err := probe.Start(probe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	g, err := Start(t.Context(), Options{UpstreamURL: p.URL(), APIKeys: map[string]string{keyA: "tenant-a", keyB: "tenant-b"},
		Tools: testTools, Mode: mode, BeforeDispatch: before})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return g, p
}

type idemKey struct{}

// withKey makes the client send Idempotency-Key: value on this call.
func withKey(ctx context.Context, value string) context.Context {
	return context.WithValue(ctx, idemKey{}, value)
}

// headers adds the API key to every request and the call's Idempotency-Key,
// which go-sdk's client has no per-call option for; it sees the call's
// context because go-sdk builds each POST with it.
type headers struct{ apiKey string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.apiKey)
	if k, ok := r.Context().Value(idemKey{}).(string); ok {
		r.Header.Set("Idempotency-Key", k)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a go-sdk client session (initialize included) with apiKey.
func connect(t *testing.T, url, apiKey string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "vendorgw-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headers{apiKey}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

func receipt(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	id, _ := res.Meta[ReceiptMeta].(string)
	if !strings.HasPrefix(id, "acme-r-") {
		t.Fatalf("result _meta %v: no %s receipt", res.Meta, ReceiptMeta)
	}
	return id
}

// refusal is the code and data of a JSON-RPC error answer.
func refusal(t *testing.T, err error) (int64, errData) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	var d errData
	if err := json.Unmarshal(werr.Data, &d); err != nil {
		t.Fatalf("error %d %q: data %s: %v", werr.Code, werr.Message, werr.Data, err)
	}
	return werr.Code, d
}

func wantRefusal(t *testing.T, err error, code int64, reason string) {
	t.Helper()
	if got, d := refusal(t, err); got != code || d.Reason != reason {
		t.Fatalf("got code %d reason %q, want %d %q", got, d.Reason, code, reason)
	}
}

func TestNaiveDispatchesEveryCall(t *testing.T) {
	g, p := start(t, Naive, nil)
	cs := connect(t, g.URL(), keyA)
	ctx := withKey(t.Context(), `"k-1"`)
	var receipts []string
	for range 2 {
		res, err := call(ctx, cs, "acme.write", map[string]any{"token": "naive"})
		if err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, receipt(t, res))
	}
	if n := p.Count("naive"); n != 2 {
		t.Fatalf("probe saw %d dispatches, want 2", n)
	}
	if receipts[0] == receipts[1] {
		t.Fatalf("both calls got receipt %s", receipts[0])
	}
	// Unkeyed calls are forwarded too.
	if _, err := call(t.Context(), cs, "acme.write", map[string]any{"token": "naive-unkeyed"}); err != nil {
		t.Fatal(err)
	}
	if n := p.Count("naive-unkeyed"); n != 1 {
		t.Fatalf("unkeyed call: %d dispatches, want 1", n)
	}
}

func TestIdempotentReplay(t *testing.T) {
	g, p := start(t, Idempotent, nil)
	cs := connect(t, g.URL(), keyA)
	first, err := call(withKey(t.Context(), `"k-1"`), cs, "acme.write", map[string]any{"token": "t1", "a": 1, "b": "x"})
	if err != nil {
		t.Fatal(err)
	}
	// The bare token spelling is the same key; member order does not matter.
	again, err := call(withKey(t.Context(), `k-1`), cs, "acme.write", map[string]any{"b": "x", "a": 1, "token": "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if r1, r2 := receipt(t, first), receipt(t, again); r1 != r2 {
		t.Fatalf("replay receipt %s, first %s", r2, r1)
	}
	j1, _ := json.Marshal(first)
	j2, _ := json.Marshal(again)
	if !bytes.Equal(j1, j2) {
		t.Fatalf("replay is not the stored result:\nfirst  %s\nreplay %s", j1, j2)
	}
	if n := p.Count("t1"); n != 1 {
		t.Fatalf("probe saw %d dispatches, want 1", n)
	}

	// Another tenant's key space is its own: a new dispatch, a new receipt.
	other, err := call(withKey(t.Context(), `"k-1"`), connect(t, g.URL(), keyB), "acme.write", map[string]any{"token": "t1", "a": 1, "b": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if receipt(t, other) == receipt(t, first) {
		t.Fatal("tenant b got tenant a's receipt")
	}
	// So is another tool's.
	if _, err := call(withKey(t.Context(), `"k-1"`), cs, "acme.read", map[string]any{"token": "t1", "a": 1, "b": "x"}); err != nil {
		t.Fatal(err)
	}
	if n := p.Count("t1"); n != 3 {
		t.Fatalf("probe saw %d dispatches, want 3 (one per tenant and tool)", n)
	}
}

func TestIdempotentRefusals(t *testing.T) {
	g, p := start(t, Idempotent, nil)
	cs := connect(t, g.URL(), keyA)
	if _, err := call(withKey(t.Context(), "used"), cs, "acme.write", map[string]any{"token": "r0"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		tool   string
		key    *string
		args   map[string]any
		code   int64
		reason string
	}{
		{"other arguments", "acme.write", ptr("used"), map[string]any{"token": "r0", "extra": true}, CodeKeyConflict, ReasonKeyConflict},
		{"unkeyed", "acme.write", nil, map[string]any{"token": "r1"}, CodeKeyMissing, ReasonKeyMissing},
		{"unkeyed read-only", "acme.read", nil, map[string]any{"token": "r2"}, CodeKeyMissing, ReasonKeyMissing},
		{"two keys joined", "acme.write", ptr(`a, b`), map[string]any{"token": "r3"}, CodeKeyMalformed, ReasonKeyMalformed},
		{"parameters", "acme.write", ptr(`"a";p=1`), map[string]any{"token": "r4"}, CodeKeyMalformed, ReasonKeyMalformed},
		{"empty string", "acme.write", ptr(`""`), map[string]any{"token": "r5"}, CodeKeyMalformed, ReasonKeyMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.key != nil {
				ctx = withKey(ctx, *tt.key)
			}
			_, err := call(ctx, cs, tt.tool, tt.args)
			wantRefusal(t, err, tt.code, tt.reason)
		})
	}
	if n := p.Count(""); n != 1 {
		t.Fatalf("probe saw %d dispatches, want only the first call's", n)
	}
}

func ptr(s string) *string { return &s }

// Sixteen twins released together: the first holds in BeforeDispatch until
// every other has been answered, so each of those must be acme_busy.
func TestIdempotentConcurrentTwins(t *testing.T) {
	const n = 16
	held, release := make(chan struct{}), make(chan struct{})
	var reserved atomic.Int32
	g, p := start(t, Idempotent, func(key string) {
		// Only the first reservation is held: were a second one possible,
		// it would dispatch at once and fail the test instead of hanging it.
		if reserved.Add(1) == 1 {
			close(held)
			<-release
		}
	})
	// A failing test must not leave the first call held: closing the
	// gateway waits for it.
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	cs := connect(t, g.URL(), keyA)

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answers := make(chan answer, n)
	barrier := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-barrier
			res, err := call(withKey(t.Context(), `"twin"`), cs, "acme.write", map[string]any{"token": "twin"})
			answers <- answer{res, err}
		})
	}
	close(barrier)
	<-held
	for range n - 1 {
		a := <-answers
		if a.err == nil {
			t.Fatalf("a twin got a result while the first was held: %v", a.res.Meta)
		}
		code, d := refusal(t, a.err)
		if code != CodeBusy || d.Reason != ReasonBusy || !d.Retryable {
			t.Fatalf("twin answer: code %d data %+v, want %d %s retryable", code, d, CodeBusy, ReasonBusy)
		}
	}
	free()
	first := <-answers
	wg.Wait()
	if first.err != nil {
		t.Fatalf("first twin: %v", first.err)
	}
	if got := reserved.Load(); got != 1 {
		t.Fatalf("%d calls reserved the key, want 1", got)
	}
	if c := p.Count("twin"); c != 1 {
		t.Fatalf("probe saw %d dispatches, want 1", c)
	}
	retry, err := call(withKey(t.Context(), `"twin"`), cs, "acme.write", map[string]any{"token": "twin"})
	if err != nil {
		t.Fatal(err)
	}
	if receipt(t, retry) != receipt(t, first.res) {
		t.Fatal("a retry after the twins did not replay the first's receipt")
	}
}

// A client that leaves after its call reached the upstream: the outcome is
// stored anyway and a retry replays it, without a second dispatch.
func TestIdempotentClientGone(t *testing.T) {
	g, p := start(t, Idempotent, nil)
	cs := connect(t, g.URL(), keyA)
	p.Stall("gone")
	ctx, cancel := context.WithCancel(withKey(t.Context(), "gone-1"))
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, cs, "acme.write", map[string]any{"token": "gone"})
		done <- err
	}()
	if err := p.WaitFor(t.Context(), "gone", 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned call: %v, want context.Canceled", err)
	}
	p.Unstall("gone")

	// Until the upstream's answer is stored the retry is told to come back
	// (acme_busy is retryable); it must end in the stored outcome.
	var res *mcp.CallToolResult
	for {
		var err error
		res, err = call(withKey(t.Context(), "gone-1"), cs, "acme.write", map[string]any{"token": "gone"})
		if err == nil {
			break
		}
		if _, d := refusal(t, err); d.Reason != ReasonBusy {
			t.Fatalf("retry: %v", err)
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("retry never got the stored outcome")
		}
	}
	var out probe.Result
	if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &out) != nil || res.IsError || out.Token != "gone" || out.N != 1 {
		t.Fatalf("retry got %+v (isError %v), want the first dispatch's outcome", res.StructuredContent, res.IsError)
	}
	if c := p.Count("gone"); c != 1 {
		t.Fatalf("probe saw %d dispatches, want 1", c)
	}
}

func TestToolsList(t *testing.T) {
	g, _ := start(t, Idempotent, nil)
	cs := connect(t, g.URL(), keyA)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	if len(got) != 2 || got["acme.write"] == nil || got["acme.read"] == nil {
		t.Fatalf("tools/list: %v", res.Tools)
	}
	for name, readOnly := range map[string]bool{"acme.write": false, "acme.read": true} {
		tool := got[name]
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != readOnly {
			t.Errorf("%s: annotations %+v, want readOnlyHint %v", name, tool.Annotations, readOnly)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"token"`) {
			t.Errorf("%s: input schema %s is not the probe's", name, schema)
		}
	}
}

// post sends one raw JSON-RPC request and returns the HTTP status, headers
// and the JSON-RPC answer (from a JSON body or the first SSE data line).
func post(t *testing.T, url, apiKey, session string, extra http.Header, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				raw = []byte(data)
				break
			}
		}
	}
	var msg map[string]any
	if resp.StatusCode != http.StatusAccepted {
		if err := json.Unmarshal(raw, &msg); err != nil {
			msg = map[string]any{"text": string(raw)}
		}
	}
	return resp.StatusCode, resp.Header, msg
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestAuthFailed(t *testing.T) {
	g, _ := start(t, Idempotent, nil)
	for _, key := range []string{"", "wrong", keyA + "x"} {
		status, hdr, msg := post(t, g.URL(), key, "", nil, strings.Replace(initBody, `"id":1`, `"id":"i-7"`, 1))
		e, _ := msg["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if status != http.StatusUnauthorized || msg["id"] != "i-7" || e["code"] != float64(CodeAuthFailed) || data["reason"] != ReasonAuthFailed {
			t.Errorf("key %q: HTTP %d %v, want 401 with %s and id i-7", key, status, msg, ReasonAuthFailed)
		}
		if hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("key %q: no WWW-Authenticate", key)
		}
	}
	// The go-sdk client cannot open a session with a wrong key either.
	c := mcp.NewClient(&mcp.Implementation{Name: "vendorgw-test", Version: "1"}, nil)
	if cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.URL(),
		HTTPClient: &http.Client{Transport: headers{"wrong"}}}, nil); err == nil {
		_ = cs.Close()
		t.Fatal("connected with a wrong key")
	}
}

// The server is stateful and strict: a tools/call outside an initialized
// session is refused, in the 2025 style (no session) and in the 2026-07-28
// style (per-request _meta, which needs no initialize and which go-sdk's
// stateful transport refuses), and reaches no tool.
func TestCallWithoutInitializeRefused(t *testing.T) {
	g, p := start(t, Naive, nil)
	const call2025 = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"acme.write","arguments":{"token":"strict"}}}`
	const call2026 = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"acme.write","arguments":{"token":"strict"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	tests := []struct {
		name    string
		session bool
		hdr     http.Header
		body    string
	}{
		{"no session", false, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, call2025},
		{"no session, no version header", false, nil, call2025},
		{"2026-07-28 request", false, http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"acme.write"}}, call2026},
		{"unknown session", true, http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, call2025},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := ""
			if tt.session {
				session = "no-such-session"
			}
			status, _, msg := post(t, g.URL(), keyA, session, tt.hdr, tt.body)
			if _, isResult := msg["result"]; isResult || (status == http.StatusOK && msg["error"] == nil) {
				t.Fatalf("HTTP %d %v: want a refusal", status, msg)
			}
			t.Logf("refused: HTTP %d %v", status, msg)
		})
	}
	if n := p.Count(""); n != 0 {
		t.Fatalf("probe saw %d dispatches, want 0", n)
	}

	// The same call in an initialized session goes through.
	status, hdr, msg := post(t, g.URL(), keyA, "", nil, initBody)
	session := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" || msg["result"] == nil {
		t.Fatalf("initialize: HTTP %d session %q %v", status, session, msg)
	}
	v := http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}
	if status, _, _ := post(t, g.URL(), keyA, session, v, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d", status)
	}
	if status, _, msg := post(t, g.URL(), keyA, session, v, call2025); status != http.StatusOK || msg["result"] == nil {
		t.Fatalf("call in session: HTTP %d %v", status, msg)
	}
	// A session belongs to the tenant that opened it.
	if status, _, msg := post(t, g.URL(), keyB, session, v, call2025); status != http.StatusForbidden {
		t.Fatalf("other tenant on the session: HTTP %d %v, want 403", status, msg)
	}
	if n := p.Count("strict"); n != 1 {
		t.Fatalf("probe saw %d dispatches, want 1", n)
	}
}

// A stateful upstream (sessions, initialize) serves as well as the probe.
func TestStatefulUpstream(t *testing.T) {
	var dispatches atomic.Int32
	up := mcp.NewServer(&mcp.Implementation{Name: "stateful-upstream", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := dispatches.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d %s", n, req.Params.Arguments)}}}, nil
		})
	var refusals atomic.Int32
	up.AddTool(&mcp.Tool{Name: "refuse", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			refusals.Add(1)
			return nil, &jsonrpc.Error{Code: -32099, Message: "not today"}
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	g, err := Start(t.Context(), Options{UpstreamURL: srv.URL, APIKeys: map[string]string{keyA: "a"},
		Tools: []Tool{{Name: "acme.echo", Upstream: "echo"}, {Name: "acme.refuse", Upstream: "refuse"}}, Mode: Idempotent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	cs := connect(t, g.URL(), keyA)
	var texts []string
	for range 2 {
		res, err := call(withKey(t.Context(), "e-1"), cs, "acme.echo", map[string]any{"x": 1})
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, res.Content[0].(*mcp.TextContent).Text)
	}
	if texts[0] != `1 {"x":1}` || texts[1] != texts[0] || dispatches.Load() != 1 {
		t.Fatalf("answers %q after %d dispatches, want one dispatch replayed", texts, dispatches.Load())
	}

	// An upstream's JSON-RPC error means its tool did not run: the answer is
	// retryable and the key is free again, so the retry reaches the upstream.
	for range 2 {
		_, err := call(withKey(t.Context(), "r-1"), cs, "acme.refuse", map[string]any{})
		if code, d := refusal(t, err); code != CodeUpstreamFailed || d.Reason != ReasonUpstreamFailed || !d.Retryable {
			t.Fatalf("refused upstream call: code %d data %+v", code, d)
		}
	}
	if n := refusals.Load(); n != 2 {
		t.Fatalf("upstream refused %d calls, want 2 (the key released after a refusal)", n)
	}
}

func TestStartRefusesBadOptions(t *testing.T) {
	p, err := probe.Start(probe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	keys := map[string]string{keyA: "a"}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no upstream", Options{APIKeys: keys, Tools: testTools}, "no upstream"},
		{"no keys", Options{UpstreamURL: p.URL(), Tools: testTools}, "no API keys"},
		{"blank tenant", Options{UpstreamURL: p.URL(), APIKeys: map[string]string{"k": ""}, Tools: testTools}, "tenant"},
		{"no tools", Options{UpstreamURL: p.URL(), APIKeys: keys}, "no tools"},
		{"tool twice", Options{UpstreamURL: p.URL(), APIKeys: keys, Tools: []Tool{testTools[0], testTools[0]}}, "listed twice"},
		{"unknown upstream tool", Options{UpstreamURL: p.URL(), APIKeys: keys, Tools: []Tool{{Name: "x", Upstream: "nope"}}}, `no tool "nope"`},
		{"unknown mode", Options{UpstreamURL: p.URL(), APIKeys: keys, Tools: testTools, Mode: 7}, "unknown mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Start(t.Context(), tt.o)
			if err == nil {
				_ = g.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want %q", err, tt.want)
			}
		})
	}
}
