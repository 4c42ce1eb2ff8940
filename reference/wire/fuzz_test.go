package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// fuzzCore is a core that never fails on its own: every 5xx or panic the
// fuzzer finds is the wire layer's (or the SDK's as this layer uses it).
type fuzzCore struct{ calls *atomic.Int64 }

func (fuzzCore) ToolMemo(gateway.Caller) *toolmemo.Memo { return new(toolmemo.Memo) }

func (fuzzCore) Authenticate(_ context.Context, key string) (gateway.Caller, error) {
	if key == "key-a" {
		return gateway.Caller{WalletID: "w-1", APIKeyID: "k-a"}, nil
	}
	return gateway.Caller{}, gateway.Refuse(gateway.ReasonUnauthenticated, "unknown API key")
}

func (c fuzzCore) Call(_ context.Context, r gateway.CallRequest) (gateway.CallResponse, error) {
	c.calls.Add(1)
	switch r.Tool {
	case "ok":
		b, _ := json.Marshal(map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": "ok"}},
			"structuredContent": map[string]any{"args": r.Arguments, "key": r.ClientKey},
			"_meta":             map[string]any{gateway.ReceiptMetaKey: gateway.Receipt{ID: "rcpt-1", IdempotencyKey: r.ClientKey, Charged: 1}},
		})
		return gateway.CallResponse{Result: b}, nil
	case "busy":
		return gateway.CallResponse{}, gateway.Refuse(gateway.ReasonInProgress, "running")
	}
	return gateway.CallResponse{}, gateway.Refuse(gateway.ReasonUnknownTool, "no tool %q", r.Tool)
}

// logSink records every log line, so a recovered panic is seen.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}
func (s *logSink) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.buf.String()
	s.buf.Reset()
	return v
}

// validHeaderValue: what an HTTP/1.1 server would let through to a handler
// (no CR, LF, NUL or other controls but tab). Other values never arrive.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

const fuzzInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`

func fuzzCall2026(id, tool, args, extraMeta string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":` + meta2026(extraMeta) + `}}`
}

// FuzzHandler drives the whole /mcp handler (outer checks, SDK, middleware)
// with arbitrary bodies and headers: it never panics, never answers 5xx,
// every refusal is a JSON-RPC error with a known data.reason (see
// checkAnswer), and the outer checks read the id, method and params the SDK
// reads (sdkAgrees). The seed corpus is
// testdata/fuzz/FuzzHandler plus the f.Add calls below.
func FuzzHandler(f *testing.F) {
	type seed struct{ body, method, authz, proto, mcpMethod, mcpName, idem, session, accept, ctype string }
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok","arguments":{"a":1}}}`
	for _, s := range []seed{
		{fuzzInit, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{call, "POST", "Bearer key-a", Protocol20251125, "", "", `"k-1"`, "", "", "application/json"},
		{call, "POST", "Bearer key-a", "", "", "", "k-1", "", "application/json, text/event-stream", "application/json"},
		{fuzzCall2026("3", "ok", `{"x":"y"}`, `"idempotencyKey":"k-2"`), "POST", "Bearer key-a", Protocol20260728, "tools/call", "ok", "", "", "", "application/json"},
		{fuzzCall2026(`"s"`, "busy", `{}`, ""), "POST", "Bearer key-a", Protocol20260728, "tools/call", "busy", `"k-1"`, "", "", "application/json"},
		{fuzzCall2026("4", "nope", `null`, `"permitId":"p-1"`), "POST", "Bearer key-a", Protocol20260728, "tools/call", "nope", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":` + meta2026("") + `}}`, "POST", "Bearer key-a", Protocol20260728, "tools/list", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "POST", "Bearer key-a", Protocol20251125, "", "", "", "sess-1", "", "application/json"},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"ok","_meta":3}}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"1.0","id":null,"method":7}`, "POST", "Bearer key-a", "", "", "", "", "", "", "text/plain"},
		{`{"id":1,"method":"tools/call","params":{"name":"ok","arguments":"str"}}`, "POST", "Bearer key-a", "", "", "", `"a\"b"`, "", "", "application/json"},
		{"42", "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{"{", "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{"", "POST", "", "", "", "", "", "", "", ""},
		{"", "GET", "Bearer key-a", Protocol20251125, "", "", "", "sess-1", "text/event-stream", ""},
		{"", "DELETE", "Bearer key-a", Protocol20251125, "", "", "", "sess-1", "", ""},
		{"", "PUT", "Bearer key-a", "", "", "", "", "", "", ""},
		{call, "POST", "Bearer nope", "", "", "", "", "", "", "application/json"},
		{call, "POST", "Basic key-a", "", "", "", "", "", "", "application/json"},
		{call, "POST", "Bearer key-a", "1999-01-01", "", "", "a,b", "", "text/html", "application/json"},
		{call, "POST", "Bearer key-a", "9999-99-99", "tools/call", "other", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","Method":"tools/list","params":{"name":5},"Params":{"name":"ok"}}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"name":"ok","_meta":1,"_meta":null}}`, "POST", "Bearer key-a", "", "", "", "", "", "", "application/json"},
	} {
		f.Add([]byte(s.body), s.method, s.authz, s.proto, s.mcpMethod, s.mcpName, s.idem, s.session, s.accept, s.ctype)
	}
	sink := &logSink{}
	core := fuzzCore{calls: new(atomic.Int64)}
	h := Handler(core, fakeVerifier{}, fakeTools{}, Options{
		Logger: slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	// One real session, so a seed naming it reaches the stateful handler.
	sid := func() string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(fuzzInit))
		req.Header.Set("Authorization", "Bearer key-a")
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			f.Fatalf("initialize: %d %s", rec.Code, rec.Body)
		}
		return rec.Header().Get(HeaderSession)
	}()

	f.Fuzz(func(t *testing.T, body []byte, method, authz, proto, mcpMethod, mcpName, idem, session, accept, ctype string) {
		if err := sdkAgrees(body); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		switch method {
		case "GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD":
		default:
			method = "POST"
		}
		if session == "sess-1" {
			session = sid
		}
		req := httptest.NewRequest(method, "/mcp", bytes.NewReader(body))
		for k, v := range map[string]string{
			"Authorization": authz, HeaderProtocol: proto, "Mcp-Method": mcpMethod, "Mcp-Name": mcpName,
			HeaderIdempotencyKey: idem, HeaderSession: session, "Accept": accept, "Content-Type": ctype,
		} {
			if v == "" {
				continue
			}
			if !validHeaderValue(v) {
				return // no HTTP server would hand this value to a handler
			}
			req.Header.Set(k, v)
		}
		// A GET opens a standalone SSE stream that lasts as long as the
		// request; every request ends soon.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		calls := core.calls.Load()
		func() {
			defer func() {
				// The handler aborts (http.ErrAbortHandler) only to drop a
				// response on purpose, which fuzzCore never asks for.
				if v := recover(); v != nil {
					t.Fatalf("handler panicked: %v", v)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if logs := sink.take(); strings.Contains(logs, "panic") {
			t.Fatalf("a panic was recovered and logged: %s", logs)
		}
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s %q: %s", rec.Code, method, body, rec.Body)
		}
		if err := checkAnswer(rec.Code, rec.Header(), rec.Body.Bytes(), body, core.calls.Load() != calls); err != nil {
			t.Fatalf("%s %q (headers %v): status %d: %v\nbody: %s", method, body, req.Header, rec.Code, err, rec.Body)
		}
	})
}

// checkAnswer is the fuzz property for one answer (docs/wire.md): every
// refusal, whoever decided it (this layer, the SDK or the gateway core), is a
// JSON-RPC error sent as application/json whose data carries a known reason
// and a retryable flag, with the SDK's HTTP status; a result is an object
// sent with 200. The only answers that are not a JSON-RPC message are an empty
// 2xx (202 for a notification or response, 204 for DELETE) and a GET's event
// stream, and never for a call that reached the core. An error echoes the
// request's id when it could be read.
func checkAnswer(status int, hdr http.Header, body, reqBody []byte, reachedCore bool) error {
	trimmed := bytes.TrimSpace(body)
	ctype := hdr.Get("Content-Type")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		switch {
		case reachedCore:
			return fmt.Errorf("a call the core answered got a non-JSON answer (Content-Type %q)", ctype)
		case status >= 400:
			return fmt.Errorf("status %d without a JSON-RPC error (Content-Type %q)", status, ctype)
		case len(trimmed) == 0 && status < 300:
			return nil
		case status == http.StatusOK && strings.HasPrefix(ctype, "text/event-stream"):
			return nil
		}
		return fmt.Errorf("status %d with a body that is not a JSON-RPC message (Content-Type %q)", status, ctype)
	}
	var m rpcMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return fmt.Errorf("jsonrpc %q", m.JSONRPC)
	}
	if !strings.HasPrefix(ctype, "application/json") {
		return fmt.Errorf("a JSON-RPC answer with Content-Type %q", ctype)
	}
	switch {
	case m.Error != nil && m.Result != nil:
		return fmt.Errorf("both result and error")
	case m.Error != nil:
		if m.Error.Code == 0 {
			return fmt.Errorf("error code 0")
		}
		if m.Error.Message == "" {
			return fmt.Errorf("error without a message")
		}
		var d struct {
			Reason    *string `json:"reason"`
			Retryable *bool   `json:"retryable"`
		}
		if err := json.Unmarshal(m.Error.Data, &d); err != nil || d.Reason == nil || d.Retryable == nil {
			return fmt.Errorf("error %d %q without data.reason and data.retryable", m.Error.Code, m.Error.Message)
		}
		if !KnownReason(*d.Reason) {
			return fmt.Errorf("unknown data.reason %q", *d.Reason)
		}
		if want, ok := readableID(reqBody); ok && !sameID(want, m.ID) {
			return fmt.Errorf("error answers id %s to a request with id %s", m.ID, want)
		}
	case len(m.Result) > 0 && m.Result[0] == '{':
		if status != http.StatusOK {
			return fmt.Errorf("a result with status %d", status)
		}
	default:
		return fmt.Errorf("neither a result object nor an error")
	}
	return nil
}

// readableID is the id of a request body that is a JSON-RPC message object
// with a string id or a small integer one (the SDK answers a fractional id
// truncated, and past 2^53 a float64 no longer tells ids apart).
func readableID(body []byte) (json.RawMessage, bool) {
	env, err := readEnvelope(body)
	if err != nil || env.Method == nil {
		return nil, false
	}
	var v any
	if json.Unmarshal(env.ID, &v) != nil {
		return nil, false
	}
	switch n := v.(type) {
	case string:
		return env.ID, true
	case float64:
		return env.ID, n == math.Trunc(n) && math.Abs(n) < 1<<53
	}
	return nil, false
}

// sameID compares two JSON ids by value (1e2 is 100).
func sameID(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x == y
}
