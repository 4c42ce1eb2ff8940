package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// fakeCore answers by tool name.
type fakeCore struct {
	mu    sync.Mutex
	calls []gateway.CallRequest
	// slow holds the "slow" tool until it is closed.
	slow chan struct{}
	// The "await-cancel" tool says on started that it runs, then on client
	// the state of the request's ClientDone once it closed ("open" if it
	// did not within 20 s); "peek-cancel" says it at once.
	started chan struct{}
	client  chan string
	// resultType, when set, is the raw resultType member of every result,
	// as an outcome stored by another wire might carry it.
	resultType string
}

func (f *fakeCore) ToolMemo(gateway.Caller) *toolmemo.Memo { return new(toolmemo.Memo) }

func (f *fakeCore) Authenticate(_ context.Context, key string) (gateway.Caller, error) {
	switch key {
	case "key-a":
		return gateway.Caller{WalletID: "w-1", APIKeyID: "k-a"}, nil
	case "key-b":
		return gateway.Caller{WalletID: "w-1", APIKeyID: "k-b"}, nil
	case "key-broken":
		return gateway.Caller{}, errors.New("store down")
	}
	return gateway.Caller{}, gateway.Refuse(gateway.ReasonUnauthenticated, "unknown API key")
}

func (f *fakeCore) Call(ctx context.Context, r gateway.CallRequest) (gateway.CallResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, r)
	n := len(f.calls)
	resultType := f.resultType
	f.mu.Unlock()
	result := func() json.RawMessage {
		res := map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": "ok"}},
			"structuredContent": map[string]any{"args": r.Arguments, "n": n},
			"_meta": map[string]any{gateway.ReceiptMetaKey: gateway.Receipt{
				ID: fmt.Sprintf("rcpt-%d", n), IdempotencyKey: r.ClientKey, Charged: 2,
			}},
		}
		if resultType != "" {
			res["resultType"] = json.RawMessage(resultType)
		}
		b, _ := json.Marshal(res)
		return b
	}
	switch r.Tool {
	case "ok":
		return gateway.CallResponse{Result: result()}, nil
	case "busy":
		ref := gateway.Refuse(gateway.ReasonInProgress, "the same operation is running")
		ref.Data = map[string]any{"retry_after_ms": 100}
		return gateway.CallResponse{}, fmt.Errorf("wrapped: %w", ref)
	case "drop":
		return gateway.CallResponse{Result: result(), Drop: true}, nil
	case "panic":
		panic("core bug")
	case "slow":
		<-f.slow
		return gateway.CallResponse{Result: result()}, nil
	case "await-cancel":
		f.started <- struct{}{}
		select {
		case <-r.ClientDone:
		case <-time.After(20 * time.Second):
		}
		f.client <- doneState(r.ClientDone)
		return gateway.CallResponse{Result: result()}, nil
	case "peek-cancel":
		f.client <- doneState(r.ClientDone)
		return gateway.CallResponse{Result: result()}, nil
	case "internal":
		return gateway.CallResponse{}, errors.New("secret internal detail")
	case "needs-sampling":
		// An upstream tool judging the capabilities the call declared.
		if c, _ := relay.From(ctx).Capabilities.(map[string]any); c["sampling"] != nil {
			return gateway.CallResponse{Result: result()}, nil
		}
		ref := gateway.Refuse(gateway.ReasonCapabilitiesMissing, "sampling required")
		ref.Data = map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}
		return gateway.CallResponse{}, fmt.Errorf("upstream refused: %w", ref)
	}
	return gateway.CallResponse{}, gateway.Refuse(gateway.ReasonUnknownTool, "no tool %q", r.Tool)
}

// ignoreClientDone leaves a request's ClientDone out of a comparison: it is
// a channel of its own per call (TestClientDone checks it).
var ignoreClientDone = cmpopts.IgnoreFields(gateway.CallRequest{}, "ClientDone")

// doneState says whether a ClientDone is "nil", "open" or "closed".
func doneState(done <-chan struct{}) string {
	if done == nil {
		return "nil"
	}
	select {
	case <-done:
		return "closed"
	default:
		return "open"
	}
}

func (f *fakeCore) last(t *testing.T) gateway.CallRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("core saw no call")
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeCore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, tok string) (*gateway.PrincipalRef, error) {
	if tok == "good-jwt" {
		return &gateway.PrincipalRef{Provider: "harness", Issuer: "http://iss", Subject: "alice"}, nil
	}
	return nil, gateway.Refuse(gateway.ReasonPrincipalInvalid, "bad token")
}

type fakeTools struct{}

func (fakeTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "ok", Description: "fine", InputSchema: map[string]any{"type": "object"}}}, nil
}

func newServer(t *testing.T) (*httptest.Server, *fakeCore) {
	t.Helper()
	core := &fakeCore{slow: make(chan struct{}), started: make(chan struct{}, 1), client: make(chan string, 1)}
	srv := httptest.NewServer(Handler(core, fakeVerifier{}, fakeTools{}, Options{}))
	t.Cleanup(srv.Close)
	return srv, core
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func post(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, rpcResponse, string) {
	t.Helper()
	return send(t, http.MethodPost, url, "", hdr, body)
}

// send sends one request with the JSON Content-Type and the JSON and SSE
// Accept a client normally sends, unless hdr says otherwise ("" deletes a
// header); host, when set, replaces the Host header.
func send(t *testing.T, method, url, host string, hdr map[string]string, body string) (*http.Response, rpcResponse, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r rpcResponse
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("decode %q: %v", raw, err)
		}
	}
	return resp, r, string(raw)
}

func callBody(id any, tool, args string, meta string) string {
	idj, _ := json.Marshal(id)
	m := ""
	if meta != "" {
		m = `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, idj, tool, args, m)
}

// meta2026 is the SEP-2575 per-request _meta the SDK requires.
func meta2026(extra string) string {
	m := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if extra != "" {
		m += "," + extra
	}
	return m + "}"
}

func headers2026(method, name string) map[string]string {
	h := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20260728, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func receipt(t *testing.T, result json.RawMessage) gateway.Receipt {
	t.Helper()
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	var rc gateway.Receipt
	if err := json.Unmarshal(r.Meta[gateway.ReceiptMetaKey], &rc); err != nil {
		t.Fatalf("no receipt in %s: %v", result, err)
	}
	return rc
}

func TestStateful20251125(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	auth := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125}

	resp, r, raw := post(t, url, map[string]string{"Authorization": "Bearer key-a"},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("initialize: %d %s", resp.StatusCode, raw)
	}
	sid := resp.Header.Get(HeaderSession)
	if sid == "" {
		t.Fatalf("initialize: no %s header", HeaderSession)
	}
	var init struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
	}
	_ = json.Unmarshal(r.Result, &init)
	if init.ProtocolVersion != Protocol20251125 || init.Capabilities["tools"] == nil {
		t.Fatalf("initialize result: %s", r.Result)
	}
	auth[HeaderSession] = sid
	resp, _, raw = post(t, url, auth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, raw)
	}

	resp, r, raw = post(t, url, auth, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), `"name":"ok"`) {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, raw)
	}

	hk := map[string]string{HeaderIdempotencyKey: `"k-1"`}
	for k, v := range auth {
		hk[k] = v
	}
	resp, r, raw = post(t, url, hk, callBody(3, "ok", `{"b":1,"a":[1,2]}`, ""))
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, raw)
	}
	if rc := receipt(t, r.Result); rc.ID != "rcpt-1" || rc.IdempotencyKey != "k-1" || rc.Charged != 2 {
		t.Fatalf("receipt %+v", rc)
	}
	got := core.last(t)
	want := gateway.CallRequest{Caller: gateway.Caller{WalletID: "w-1", APIKeyID: "k-a"}, Tool: "ok",
		Arguments: json.RawMessage(`{"b":1,"a":[1,2]}`), ClientKey: "k-1"}
	if diff := cmp.Diff(want, got, ignoreClientDone); diff != "" {
		t.Fatalf("core request (-want +got):\n%s", diff)
	}

	// A refusal reaches the wire with its code and data.
	resp, r, raw = post(t, url, auth, callBody("x", "busy", `{}`, ""))
	if resp.StatusCode != 200 || r.Error == nil {
		t.Fatalf("busy: %d %s", resp.StatusCode, raw)
	}
	if r.Error.Code != gateway.Codes[gateway.ReasonInProgress] || r.Error.Data["reason"] != "idempotency_in_progress" || r.Error.Data["retryable"] != true || r.Error.Data["retry_after_ms"] != float64(100) {
		t.Fatalf("busy error: %s", raw)
	}
	if string(r.ID) != `"x"` {
		t.Fatalf("id %s", r.ID)
	}

	// A session is bound to the API key that opened it.
	other := map[string]string{"Authorization": "Bearer key-b", HeaderProtocol: Protocol20251125, HeaderSession: sid}
	resp, _, raw = post(t, url, other, callBody(4, "ok", `{}`, ""))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("other key on the session: %d %s", resp.StatusCode, raw)
	}
}

func TestStateless20260728(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"

	resp, r, raw := post(t, url, headers2026("tools/call", "ok"), callBody(7, "ok", `{"x":"y"}`, meta2026(`"idempotencyKey":"mk-1","permitId":"pmt-9"`)))
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("2026 tools/call: %d %s", resp.StatusCode, raw)
	}
	if resp.Header.Get(HeaderSession) != "" {
		t.Fatalf("stateless answer carries a session id")
	}
	if rc := receipt(t, r.Result); rc.ID != "rcpt-1" || rc.IdempotencyKey != "mk-1" {
		t.Fatalf("receipt %+v", rc)
	}
	var res map[string]json.RawMessage
	_ = json.Unmarshal(r.Result, &res)
	if !strings.Contains(string(res["_meta"]), "io.modelcontextprotocol/serverInfo") {
		t.Fatalf("SDK serverInfo missing from _meta: %s", r.Result)
	}
	if got := core.last(t); got.ClientKey != "mk-1" || got.PermitID != "pmt-9" {
		t.Fatalf("core request %+v", got)
	}

	resp, r, raw = post(t, url, headers2026("tools/list", ""), `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":`+meta2026("")+`}}`)
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), `"name":"ok"`) {
		t.Fatalf("2026 tools/list: %d %s", resp.StatusCode, raw)
	}

	// Without the per-request _meta the SDK refuses the new protocol.
	resp, r, raw = post(t, url, headers2026("tools/call", "ok"), callBody(9, "ok", `{}`, ""))
	if resp.StatusCode != 400 || r.Error == nil {
		t.Fatalf("2026 without _meta: %d %s", resp.StatusCode, raw)
	}

	// -32602 answers get HTTP 400 on the new protocol (SEP-2575); data passes.
	resp, r, raw = post(t, url, headers2026("tools/call", "ok"), callBody(10, "ok", `[1]`, meta2026("")))
	if resp.StatusCode != 400 || r.Error == nil || r.Error.Data["reason"] != "invalid_arguments" {
		t.Fatalf("2026 bad arguments: %d %s", resp.StatusCode, raw)
	}
	resp, r, raw = post(t, url, headers2026("tools/call", "busy"), callBody(11, "busy", `{}`, meta2026("")))
	if resp.StatusCode != 200 || r.Error == nil || r.Error.Data["reason"] != "idempotency_in_progress" {
		t.Fatalf("2026 busy: %d %s", resp.StatusCode, raw)
	}
}

// TestCallerCapabilities: a 2026-07-28 call's declared client capabilities
// reach the dispatcher, and a refusal for a missing one is -32021 with HTTP
// 400 (SEP-2575), as an upstream answered it.
func TestCallerCapabilities(t *testing.T) {
	srv, _ := newServer(t)
	url := srv.URL + "/mcp"
	tests := []struct {
		name, caps string
		status     int
	}{
		{"declared", `{"sampling":{}}`, 200},
		{"not declared", `{}`, 400},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tt.caps + `}`
			resp, r, raw := post(t, url, headers2026("tools/call", "needs-sampling"), callBody(i, "needs-sampling", `{}`, meta))
			if resp.StatusCode != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tt.status, raw)
			}
			if tt.status == 200 {
				if r.Error != nil {
					t.Fatalf("refused: %s", raw)
				}
				return
			}
			if r.Error == nil || r.Error.Code != -32021 || r.Error.Data["reason"] != ReasonCapabilitiesMissing ||
				r.Error.Data["retryable"] != false || r.Error.Data["requiredCapabilities"] == nil {
				t.Fatalf("answer %s", raw)
			}
		})
	}
}

func TestSessionlessLegacyCall(t *testing.T) {
	srv, core := newServer(t)
	for _, pv := range []string{Protocol20251125, ""} {
		resp, r, raw := post(t, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: pv, HeaderIdempotencyKey: "bare-key_1"},
			callBody(1, "ok", `{"a":1}`, ""))
		if resp.StatusCode != 200 || r.Error != nil {
			t.Fatalf("version %q: %d %s", pv, resp.StatusCode, raw)
		}
		if got := core.last(t); got.ClientKey != "bare-key_1" {
			t.Fatalf("key %q", got.ClientKey)
		}
	}
}

func TestRefusedBeforeSDK(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	good := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125}
	big := callBody(1, "ok", `{"pad":"`+strings.Repeat("x", MaxBodyBytes)+`"}`, "")
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   int64
		reason string
		id     string
	}{
		{"batch", good, `[` + callBody(1, "ok", `{}`, "") + `]`, 400, -32600, "batch_not_supported", "null"},
		{"batch with space", good, "  \n[]", 400, -32600, "batch_not_supported", "null"},
		{"malformed", good, `{"jsonrpc":"2.0","id":1,`, 400, -32700, "parse_error", "null"},
		{"empty", good, ``, 400, -32700, "parse_error", "null"},
		{"not an object", good, `42`, 400, -32600, "invalid_request", "null"},
		{"method not a string", good, `{"jsonrpc":"2.0","id":1,"method":5}`, 400, -32600, "invalid_request", "null"},
		{"too large", good, big, 413, -32600, "request_too_large", "null"},
		{"no auth", map[string]string{HeaderProtocol: Protocol20251125}, callBody(5, "ok", `{}`, ""), 401, gateway.Codes[gateway.ReasonUnauthenticated], "unauthenticated", "5"},
		{"basic auth", map[string]string{"Authorization": "Basic a2V5LWE6"}, callBody(5, "ok", `{}`, ""), 401, gateway.Codes[gateway.ReasonUnauthenticated], "unauthenticated", "5"},
		{"wrong key", map[string]string{"Authorization": "Bearer nope"}, callBody("s", "ok", `{}`, ""), 401, gateway.Codes[gateway.ReasonUnauthenticated], "unauthenticated", `"s"`},
		{"store down", map[string]string{"Authorization": "Bearer key-broken"}, callBody(5, "ok", `{}`, ""), 500, -32603, "internal_error", "5"},
		{"params not object", good, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, 400, -32602, "invalid_arguments", "1"},
		{"name not string", good, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, 400, -32602, "unknown_tool", "1"},
		{"meta not object", good, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","_meta":3}}`, 400, -32602, "invalid_arguments", "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, r, raw := post(t, url, c.hdr, c.body)
			if resp.StatusCode != c.status || r.Error == nil {
				t.Fatalf("status %d body %.300s", resp.StatusCode, raw)
			}
			if r.Error.Code != c.code || r.Error.Data["reason"] != c.reason || r.Error.Data["retryable"] != false || string(r.ID) != c.id {
				t.Fatalf("error %.300s", raw)
			}
			if strings.Contains(raw, "store down") {
				t.Fatalf("internal detail leaked: %s", raw)
			}
		})
	}
	if n := core.count(); n != 0 {
		t.Fatalf("core saw %d calls", n)
	}
}

// TestParseError500Switch: the parse-error-500 bug switch puts back the 500
// that refuse-07 rules out; without it a parse error is a 400.
func TestParseError500Switch(t *testing.T) {
	for _, tc := range []struct {
		bugs   bugs.Set
		status int
	}{{nil, 400}, {bugs.Set{bugs.ParseError500: true}, 500}} {
		core := &fakeCore{slow: make(chan struct{}), started: make(chan struct{}, 1), client: make(chan string, 1)}
		srv := httptest.NewServer(Handler(core, fakeVerifier{}, fakeTools{}, Options{Bugs: tc.bugs}))
		resp, r, raw := post(t, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125}, `{"jsonrpc":"2.0","id":1,`)
		srv.Close()
		if resp.StatusCode != tc.status || r.Error == nil || r.Error.Data["reason"] != "parse_error" {
			t.Errorf("bugs %v: status %d body %.300s, want %d parse_error", tc.bugs.List(), resp.StatusCode, raw, tc.status)
		}
	}
}

func TestCallRefusals(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	h := func(extra ...string) map[string]string {
		m := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		code   int64
		reason string
	}{
		{"array arguments", h(), callBody(1, "ok", `[1,2]`, ""), -32602, "invalid_arguments"},
		{"string arguments", h(), callBody(1, "ok", `"x"`, ""), -32602, "invalid_arguments"},
		{"number arguments", h(), callBody(1, "ok", `7`, ""), -32602, "invalid_arguments"},
		{"key too long", h(HeaderIdempotencyKey, strings.Repeat("k", 256)), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"key unterminated", h(HeaderIdempotencyKey, `"abc`), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"key with space bare", h(HeaderIdempotencyKey, `a b`), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"key list bare", h(HeaderIdempotencyKey, `a,b`), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"key with parameters bare", h(HeaderIdempotencyKey, `a;p`), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"key with parameters", h(HeaderIdempotencyKey, `"a";p=1`), callBody(1, "ok", `{}`, ""), -32602, "idempotency_key_invalid"},
		{"meta key not string", h(), callBody(1, "ok", `{}`, `{"idempotencyKey":5}`), -32602, "idempotency_key_invalid"},
		{"meta key non-ascii", h(), callBody(1, "ok", `{}`, `{"idempotencyKey":"é"}`), -32602, "idempotency_key_invalid"},
		{"keys differ", h(HeaderIdempotencyKey, "a"), callBody(1, "ok", `{}`, `{"idempotencyKey":"b"}`), -32602, "idempotency_key_invalid"},
		{"permits differ", h(HeaderPermitID, "pmt-1"), callBody(1, "ok", `{}`, `{"permitId":"pmt-2"}`), gateway.Codes[gateway.ReasonPermitInvalid], "permit_invalid"},
		{"bad principal", h(HeaderPrincipalToken, "forged"), callBody(1, "ok", `{}`, ""), gateway.Codes[gateway.ReasonPrincipalInvalid], "principal_invalid"},
		{"unknown tool", h(), callBody(1, "nope", `{}`, ""), -32602, "unknown_tool"},
		{"core internal", h(), callBody(1, "internal", `{}`, ""), -32603, "internal_error"},
		{"core panic", h(), callBody(1, "panic", `{}`, ""), -32603, "internal_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, r, raw := post(t, url, c.hdr, c.body)
			if resp.StatusCode != 200 || r.Error == nil {
				t.Fatalf("status %d body %s", resp.StatusCode, raw)
			}
			if r.Error.Code != c.code || r.Error.Data["reason"] != c.reason {
				t.Fatalf("error %s", raw)
			}
			if strings.Contains(raw, "secret") {
				t.Fatalf("internal detail leaked: %s", raw)
			}
		})
	}
	// Only "unknown tool", "core internal" and "core panic" reached the core.
	if n := core.count(); n != 3 {
		t.Fatalf("core saw %d calls, want 3", n)
	}
}

func TestCallerComesOnlyFromAuthentication(t *testing.T) {
	srv, core := newServer(t)
	// A forged internal header is deleted; the caller is who the key says.
	resp, r, raw := post(t, srv.URL+"/mcp", map[string]string{
		"Authorization": "Bearer key-b", headerInternal: "deadbeef", HeaderPrincipalToken: "good-jwt",
		HeaderIdempotencyKey: `"quoted \"key\" \\ x"`, HeaderPermitID: "pmt-7",
	}, callBody(1, "ok", `null`, ""))
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	want := gateway.CallRequest{
		Caller: gateway.Caller{WalletID: "w-1", APIKeyID: "k-b",
			Principal: &gateway.PrincipalRef{Provider: "harness", Issuer: "http://iss", Subject: "alice"}},
		Tool: "ok", Arguments: json.RawMessage(`{}`), ClientKey: `quoted "key" \ x`, PermitID: "pmt-7",
	}
	if diff := cmp.Diff(want, core.last(t), ignoreClientDone); diff != "" {
		t.Fatalf("core request (-want +got):\n%s", diff)
	}
}

// rawPost sends one request over a fresh TCP connection and returns every
// byte the server wrote before closing it.
func rawPost(t *testing.T, addr string, hdr map[string]string, body string) []byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", addr, len(body))
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection neither answered nor closed: %v", err)
		}
		// A reset is a close without a response, too.
	}
	return got
}

func TestDropResponse(t *testing.T) {
	srv, core := newServer(t)
	addr := strings.TrimPrefix(srv.URL, "http://")

	// Control: a normal call over the same raw client gets an HTTP answer.
	got := rawPost(t, addr, map[string]string{"Authorization": "Bearer key-a", "Connection": "close"}, callBody(1, "ok", `{}`, ""))
	if !strings.HasPrefix(string(got), "HTTP/1.1 200") {
		t.Fatalf("control call: %q", got)
	}

	// Sessionless legacy, 2026-07-28 and a 2025-11-25 session: no byte back.
	got = rawPost(t, addr, map[string]string{"Authorization": "Bearer key-a"}, callBody(2, "drop", `{}`, ""))
	if len(got) != 0 {
		t.Fatalf("dropped call answered: %q", got)
	}
	h := headers2026("tools/call", "drop")
	got = rawPost(t, addr, h, callBody(3, "drop", `{}`, meta2026("")))
	if len(got) != 0 {
		t.Fatalf("dropped 2026 call answered: %q", got)
	}

	url := srv.URL + "/mcp"
	resp, _, raw := post(t, url, map[string]string{"Authorization": "Bearer key-a"},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get(HeaderSession)
	if sid == "" {
		t.Fatalf("initialize: %s", raw)
	}
	sess := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125, HeaderSession: sid}
	post(t, url, sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got = rawPost(t, addr, sess, callBody(4, "drop", `{}`, ""))
	if len(got) != 0 {
		t.Fatalf("dropped session call answered: %q", got)
	}
	// The session survives the drop: a retry with a new id is answered.
	resp, r, raw := post(t, url, sess, callBody(5, "ok", `{}`, ""))
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("session after drop: %d %s", resp.StatusCode, raw)
	}
	if n := core.count(); n != 5 {
		t.Fatalf("core saw %d calls, want 5", n)
	}
}

// TestSDKClients drives the handler with the go-sdk's own client on both
// protocol versions.
func TestSDKClients(t *testing.T) {
	srv, _ := newServer(t)
	for _, c := range []struct {
		pv    string
		noSSE bool
	}{{"", true}, {Protocol20251125, true}, {Protocol20251125, false}} {
		pv := c.pv
		t.Run(fmt.Sprintf("version=%s,standaloneSSE=%v", pv, !c.noSSE), func(t *testing.T) {
			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			hc := &http.Client{Transport: headerRT{"Authorization": "Bearer key-a"}}
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc, DisableStandaloneSSE: c.noSSE},
				&mcp.ClientSessionOptions{ProtocolVersion: pv})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			want := pv
			if want == "" {
				want = Protocol20260728
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %q, want %q", got, want)
			}
			lt, err := cs.ListTools(ctx, nil)
			if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "ok" {
				t.Fatalf("list tools: %v %+v", err, lt)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ok", Arguments: map[string]any{"q": 1}})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.Meta[gateway.ReceiptMetaKey]; !ok || len(res.Content) != 1 {
				t.Fatalf("result %+v", res)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "busy", Arguments: map[string]any{}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != gateway.Codes[gateway.ReasonInProgress] || !strings.Contains(string(werr.Data), `"reason":"idempotency_in_progress"`) {
				t.Fatalf("busy: %v", err)
			}
		})
	}
}

type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestIdempotencyKeyForms: the header forms docs/wire.md accepts reach the
// core as the key they spell; a comma or semicolon is a key only quoted.
func TestIdempotencyKeyForms(t *testing.T) {
	srv, core := newServer(t)
	for _, c := range []struct{ header, key string }{
		{`k-1`, "k-1"},
		{`"k-1"`, "k-1"},
		{` "a b" `, "a b"},
		{`"a,b"`, "a,b"},
		{`"a;p"`, "a;p"},
		{`"q\"uote\\"`, `q"uote\`},
		{`550e8400-e29b-41d4-a716-446655440000`, "550e8400-e29b-41d4-a716-446655440000"},
	} {
		resp, r, raw := post(t, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer key-a", HeaderIdempotencyKey: c.header}, callBody(1, "ok", `{}`, ""))
		if resp.StatusCode != 200 || r.Error != nil {
			t.Errorf("%s: %d %s", c.header, resp.StatusCode, raw)
			continue
		}
		if got := core.last(t).ClientKey; got != c.key {
			t.Errorf("%s: key %q, want %q", c.header, got, c.key)
		}
	}
}

func (f fakeTools) ListTool(ctx context.Context, name string) (*mcp.Tool, bool, error) {
	return entryIn(f, ctx, name)
}

// entryIn is a fake lister's ListTool: name's entry of its ListTools.
func entryIn(l interface {
	ListTools(context.Context) ([]*mcp.Tool, error)
}, ctx context.Context, name string) (*mcp.Tool, bool, error) {
	ts, err := l.ListTools(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, t := range ts {
		if t.Name == name {
			return t, true, nil
		}
	}
	return nil, false, nil
}
