package wire

import (
	"bufio"
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
)

// sdkRequest is one request for TestSDKRefusals; "$sid" in a header value is
// replaced by a live 2025-11-25 session of key-a.
type sdkRequest struct {
	method string
	hdr    map[string]string
	body   string
	host   string // overrides the Host header when set
}

// do sends r, its "$sid" replaced by sid, and requires a JSON answer.
func (r sdkRequest) do(t *testing.T, url, sid string) (*http.Response, rpcResponse, string) {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	hdr := make(map[string]string, len(r.hdr))
	for k, v := range r.hdr {
		hdr[k] = strings.ReplaceAll(v, "$sid", sid)
	}
	resp, a, raw := send(t, method, url, r.host, hdr, r.body)
	if !strings.HasPrefix(raw, "{") {
		t.Fatalf("%s %s: status %d, not JSON: %q", method, url, resp.StatusCode, raw)
	}
	return resp, a, raw
}

// openSession initializes a 2025-11-25 session for key and returns its id.
func openSession(t *testing.T, url, key string) string {
	t.Helper()
	resp, _, raw := post(t, url, map[string]string{"Authorization": "Bearer " + key},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get(HeaderSession)
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, raw)
	}
	return sid
}

// TestSDKRefusals: every refusal the SDK decides itself reaches the client
// as a JSON-RPC error with a data.reason, with the SDK's HTTP status and, where
// the SDK gave one, its JSON-RPC code.
func TestSDKRefusals(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	sid := openSession(t, url, "key-a")

	a := "Bearer key-a"
	legacy := map[string]string{"Authorization": a, HeaderProtocol: Protocol20251125}
	session := map[string]string{"Authorization": a, HeaderProtocol: Protocol20251125, HeaderSession: "$sid"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := make(map[string]string, len(base)+len(kv)/2)
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	call := callBody(1, "ok", `{}`, "")
	call2027 := strings.ReplaceAll(callBody(1, "ok", `{}`, meta2026("")), Protocol20260728, "2027-01-01")

	cases := []struct {
		name   string
		req    sdkRequest
		status int
		code   int64
		reason string
		id     string
	}{
		// Content-Type and Accept, with and without a session.
		{"content-type text", sdkRequest{hdr: with(legacy, "Content-Type", "text/plain"), body: call}, 415, -32600, ReasonUnsupportedMediaType, "1"},
		{"content-type missing", sdkRequest{hdr: with(legacy, "Content-Type", ""), body: call}, 415, -32600, ReasonUnsupportedMediaType, "1"},
		{"content-type on a session", sdkRequest{hdr: with(session, "Content-Type", "text/plain"), body: call}, 415, -32600, ReasonUnsupportedMediaType, "1"},
		{"accept html", sdkRequest{hdr: with(legacy, "Accept", "text/html"), body: call}, 400, -32600, ReasonNotAcceptable, "1"},
		{"accept json only", sdkRequest{hdr: with(session, "Accept", "application/json"), body: call}, 400, -32600, ReasonNotAcceptable, "1"},
		{"GET accept json", sdkRequest{method: "GET", hdr: with(session, "Accept", "application/json")}, 400, -32600, ReasonNotAcceptable, "null"},

		// Sessions.
		{"unknown session", sdkRequest{hdr: with(legacy, HeaderSession, "no-such-session"), body: call}, 404, -32600, ReasonSessionNotFound, "1"},
		{"GET unknown session", sdkRequest{method: "GET", hdr: with(legacy, HeaderSession, "no-such-session", "Accept", "text/event-stream")}, 404, -32600, ReasonSessionNotFound, "null"},
		{"DELETE unknown session", sdkRequest{method: "DELETE", hdr: with(legacy, HeaderSession, "no-such-session")}, 404, -32600, ReasonSessionNotFound, "null"},
		{"session of another key", sdkRequest{hdr: with(session, "Authorization", "Bearer key-b"), body: call}, 403, -32600, ReasonSessionForbidden, "1"},
		{"GET without session", sdkRequest{method: "GET", hdr: with(legacy, "Accept", "text/event-stream")}, 400, -32600, ReasonSessionRequired, "null"},
		{"DELETE without session", sdkRequest{method: "DELETE", hdr: legacy}, 400, -32600, ReasonSessionRequired, "null"},
		{"POST with Last-Event-ID", sdkRequest{hdr: with(session, "Last-Event-ID", "0_1"), body: call}, 400, -32600, ReasonResumptionUnsupported, "1"},
		{"GET with Last-Event-ID", sdkRequest{method: "GET", hdr: with(session, "Accept", "text/event-stream", "Last-Event-ID", "0_1")}, 400, -32600, ReasonResumptionUnsupported, "null"},

		// HTTP methods and hosts.
		{"PUT", sdkRequest{method: "PUT", hdr: legacy}, 405, -32600, ReasonMethodNotAllowed, "null"},
		{"GET on 2026-07-28", sdkRequest{method: "GET", hdr: with(legacy, HeaderProtocol, Protocol20260728, "Accept", "text/event-stream")}, 405, -32600, ReasonMethodNotAllowed, "null"},
		{"non-loopback Host on loopback", sdkRequest{hdr: legacy, body: call, host: "evil.example"}, 403, -32600, ReasonHostForbidden, "1"},

		// JSON-RPC messages the SDK will not take.
		{"unknown method", sdkRequest{hdr: legacy, body: `{"jsonrpc":"2.0","id":3,"method":"foo/bar"}`}, 400, -32601, ReasonMethodNotFound, "3"},
		{"unknown method on a session", sdkRequest{hdr: session, body: `{"jsonrpc":"2.0","id":"m","method":"foo/bar"}`}, 400, -32601, ReasonMethodNotFound, `"m"`},
		{"unknown method 2026", sdkRequest{hdr: headers2026("foo/bar", ""), body: `{"jsonrpc":"2.0","id":3,"method":"foo/bar","params":{"_meta":` + meta2026("") + `}}`}, 404, -32601, ReasonMethodNotFound, "3"},
		{"unhandled method on a session", sdkRequest{hdr: session, body: `{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}}`}, 200, -32601, ReasonMethodNotFound, "3"},
		{"server/discover on 2025-11-25", sdkRequest{hdr: session, body: `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`}, 200, -32601, ReasonMethodNotFound, "3"},
		{"initialize on 2026-07-28", sdkRequest{hdr: headers2026("initialize", ""), body: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"_meta":` + meta2026("") + `,"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`}, 404, -32601, ReasonMethodNotFound, "3"},
		{"call without id", sdkRequest{hdr: legacy, body: `{"jsonrpc":"2.0","method":"tools/list"}`}, 400, -32600, ReasonInvalidRequest, "null"},
		{"notification with id", sdkRequest{hdr: legacy, body: `{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`}, 400, -32600, ReasonInvalidRequest, "4"},
		{"call without params", sdkRequest{hdr: legacy, body: `{"jsonrpc":"2.0","id":4,"method":"resources/read"}`}, 400, -32600, ReasonInvalidRequest, "4"},
		{"jsonrpc 1.0", sdkRequest{hdr: legacy, body: `{"jsonrpc":"1.0","id":4,"method":"tools/list"}`}, 400, -32600, ReasonInvalidRequest, "4"},
		{"empty object", sdkRequest{hdr: legacy, body: `{}`}, 400, -32600, ReasonInvalidRequest, "null"},
		{"id an object", sdkRequest{hdr: legacy, body: `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`}, 400, -32600, ReasonInvalidRequest, "null"},
		{"tools/list params wrong", sdkRequest{hdr: session, body: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":5}}`}, 200, -32602, ReasonInvalidParams, "5"},
		{"tools/call requestState not a string", sdkRequest{hdr: session, body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ok","arguments":{},"requestState":5}}`}, 200, -32602, "invalid_arguments", "6"},
		{"initialize params wrong (SDK code 0)", sdkRequest{hdr: map[string]string{"Authorization": a}, body: `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":5}}`}, 200, -32602, ReasonInvalidParams, "5"},

		// Protocol versions, the 2026-07-28 _meta and headers.
		{"unsupported version header", sdkRequest{hdr: with(legacy, HeaderProtocol, "1999-01-01"), body: call}, 400, -32022, ReasonProtocolUnsupported, "1"},
		{"2027 on the stateless handler", sdkRequest{hdr: map[string]string{"Authorization": a, HeaderProtocol: "2027-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "ok"}, body: call2027}, 400, -32022, ReasonProtocolUnsupported, "1"},
		{"2026 _meta on a 2025 session", sdkRequest{hdr: session, body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32022, ReasonProtocolUnsupported, "1"},
		{"2026 without _meta", sdkRequest{hdr: headers2026("tools/call", "ok"), body: call}, 400, -32602, ReasonProtocolMetaInvalid, "1"},
		{"2026 without clientCapabilities", sdkRequest{hdr: headers2026("tools/call", "ok"), body: callBody(1, "ok", `{}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)}, 400, -32602, ReasonProtocolMetaInvalid, "1"},
		{"2026 _meta without the version header", sdkRequest{hdr: map[string]string{"Authorization": a}, body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersMissing, "1"},
		{"2026 without Mcp-Method", sdkRequest{hdr: map[string]string{"Authorization": a, HeaderProtocol: Protocol20260728}, body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersMissing, "1"},
		{"2026 without Mcp-Name", sdkRequest{hdr: headers2026("tools/call", ""), body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersMissing, "1"},
		{"2026 Mcp-Name differs", sdkRequest{hdr: headers2026("tools/call", "other"), body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersDiffer, "1"},
		{"2026 Mcp-Method differs", sdkRequest{hdr: headers2026("tools/list", ""), body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersDiffer, "1"},
		{"2026 _meta, 2025 header", sdkRequest{hdr: legacy, body: callBody(1, "ok", `{}`, meta2026(""))}, 400, -32020, ReasonProtocolHeadersDiffer, "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, r, raw := c.req.do(t, url, sid)
			if resp.StatusCode != c.status || r.Error == nil {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, raw)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if r.Error.Code != c.code || r.Error.Data["reason"] != c.reason || r.Error.Data["retryable"] != false || r.Error.Message == "" {
				t.Errorf("error %s, want code %d reason %s", raw, c.code, c.reason)
			}
			if string(r.ID) != c.id {
				t.Errorf("id %s, want %s", r.ID, c.id)
			}
		})
	}
	// The -32022 answer keeps the SDK's data beside the reason.
	_, r, raw := sdkRequest{hdr: session, body: callBody(1, "ok", `{}`, meta2026(""))}.do(t, url, sid)
	if _, ok := r.Error.Data["supported"].([]any); !ok {
		t.Errorf("-32022 lost the supported versions: %s", raw)
	}
	// A 405 still says which methods are allowed.
	resp, _, _ := sdkRequest{method: "PUT", hdr: legacy}.do(t, url, sid)
	if resp.Header.Get("Allow") == "" {
		t.Errorf("405 without Allow")
	}
	if n := core.count(); n != 0 {
		t.Fatalf("core saw %d calls", n)
	}
}

// TestSDKRefusalsOfSessionLife: a deleted session is session_not_found, and
// a second call with an id still in flight on the session is
// request_id_in_flight, retryable, while the first call is answered.
func TestSDKRefusalsOfSessionLife(t *testing.T) {
	srv, core := newServer(t)
	release := sync.OnceFunc(func() { close(core.slow) })
	t.Cleanup(release)
	url := srv.URL + "/mcp"
	sid := openSession(t, url, "key-a")
	session := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125, HeaderSession: sid}

	first := make(chan string, 1)
	go func() {
		resp, _, raw := post(t, url, session, callBody(7, "slow", `{}`, ""))
		first <- fmt.Sprintf("%d %s", resp.StatusCode, raw)
	}()
	for deadline := time.Now().Add(5 * time.Second); core.count() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never reached the core")
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, r, raw := post(t, url, session, callBody(7, "ok", `{}`, ""))
	if resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32600 ||
		r.Error.Data["reason"] != ReasonRequestIDInFlight || r.Error.Data["retryable"] != true || string(r.ID) != "7" {
		t.Fatalf("same id in flight: %d %s", resp.StatusCode, raw)
	}
	release()
	if got := <-first; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"result"`) {
		t.Fatalf("the first call: %s", got)
	}

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	for k, v := range session {
		req.Header.Set(k, v)
	}
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", dresp.StatusCode)
	}
	resp, r, raw = post(t, url, session, callBody(8, "ok", `{}`, ""))
	if resp.StatusCode != 404 || r.Error == nil || r.Error.Data["reason"] != ReasonSessionNotFound || string(r.ID) != "8" {
		t.Fatalf("deleted session: %d %s", resp.StatusCode, raw)
	}
}

// TestStreamsPassThrough: what is not a refusal reaches the client as the
// SDK wrote it: a GET's event stream (flushed before any event), 202 for a
// notification.
func TestStreamsPassThrough(t *testing.T) {
	srv, _ := newServer(t)
	url := srv.URL + "/mcp"
	sid := openSession(t, url, "key-a")
	session := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125, HeaderSession: sid}

	resp, _, raw := post(t, url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted || raw != "" {
		t.Fatalf("notification: %d %q", resp.StatusCode, raw)
	}

	// A writer that held the stream would answer nothing until the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range session {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer sresp.Body.Close()
	if sresp.StatusCode != 200 || !strings.HasPrefix(sresp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET: %d %q", sresp.StatusCode, sresp.Header.Get("Content-Type"))
	}
	// The SDK writes a comment and flushes it while the stream stays open.
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(sresp.Body).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, ":") {
			t.Fatalf("first stream line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream was not flushed")
	}

	// A second standalone stream on the session is refused while the first lives.
	resp2, r, raw := sdkRequest{method: "GET", hdr: map[string]string{
		"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125, HeaderSession: sid, "Accept": "text/event-stream",
	}}.do(t, url, sid)
	if resp2.StatusCode != http.StatusConflict || r.Error == nil || r.Error.Data["reason"] != ReasonStreamConflict {
		t.Fatalf("second stream: %d %s", resp2.StatusCode, raw)
	}
}

// TestAnswerWriter covers answers no request to this gateway provokes today
// (an SDK 500, the -32021 code, code 0, data that is not an object, a code the
// table does not know) with a stand-in for the SDK.
func TestAnswerWriter(t *testing.T) {
	plain := func(status int, text string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, text, status) }
	}
	rpc := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	cases := []struct {
		name   string
		sdk    http.HandlerFunc
		status int
		want   string // the whole answer
	}{
		{"sdk 500 hides its text", plain(500, "storing stream: disk on fire"), 500,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"internal error","data":{"reason":"internal_error","retryable":false}}}`},
		{"sdk 413", plain(413, "request body exceeds 1048576 bytes"), 413,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"request body exceeds 1048576 bytes","data":{"reason":"request_too_large","retryable":false}}}`},
		{"sdk 401", plain(401, "no bearer token"), 401,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-31401,"message":"no bearer token","data":{"reason":"unauthenticated","retryable":false}}}`},
		{"unknown 400", plain(400, "something new"), 400,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"something new","data":{"reason":"protocol_error","retryable":false}}}`},
		{"unknown 4xx", plain(418, "teapot"), 418,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"teapot","data":{"reason":"protocol_error","retryable":false}}}`},
		{"empty 400", plain(400, ""), 400,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"Bad Request","data":{"reason":"protocol_error","retryable":false}}}`},
		{"-32021", rpc(400, `{"jsonrpc":"2.0","id":2,"error":{"code":-32021,"message":"needs sampling"}}`), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32021,"message":"needs sampling","data":{"reason":"client_capabilities_missing","retryable":false}}}`},
		{"code 0, session not initialized", rpc(200, `{"jsonrpc":"2.0","id":2,"error":{"code":0,"message":"method \"tools/list\" is invalid during session initialization"}}`), 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"method \"tools/list\" is invalid during session initialization","data":{"reason":"session_not_initialized","retryable":false}}}`},
		{"code 0, anything else", rpc(200, `{"jsonrpc":"2.0","id":2,"error":{"code":0,"message":""}}`), 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal_error","data":{"reason":"internal_error","retryable":false}}}`},
		{"unknown code keeps it", rpc(200, `{"jsonrpc":"2.0","id":2,"error":{"code":-32099,"message":"x"}}`), 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32099,"message":"x","data":{"reason":"protocol_error","retryable":false}}}`},
		{"data not an object", rpc(400, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"x","data":[1]}}`), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"x","data":{"detail":[1],"reason":"invalid_request","retryable":false}}}`},
		{"null id takes the request's", rpc(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"missing required Mcp-Method header"}}`), 400,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"missing required Mcp-Method header","data":{"reason":"protocol_headers_missing","retryable":false}}}`},
		{"parse error", rpc(400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`), 400,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32700,"message":"x","data":{"reason":"parse_error","retryable":false}}}`},
		{"reason kept", rpc(200, `{"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"busy","data":{"reason":"idempotency_in_progress","retryable":true}}}`), 200,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"busy","data":{"reason":"idempotency_in_progress","retryable":true}}}`},
		{"result untouched", rpc(200, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\"error\""}]}}`), 200,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\"error\""}]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			aw := &answerWriter{w: rec, id: json.RawMessage("9"), log: slog.New(slog.DiscardHandler)}
			c.sdk(aw, httptest.NewRequest("POST", "/mcp", nil))
			aw.finish()
			if rec.Code != c.status || rec.Body.String() != c.want {
				t.Fatalf("got %d %s\nwant %d %s", rec.Code, rec.Body, c.status, c.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if cl := rec.Header().Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(c.want)) {
				t.Fatalf("Content-Length %q for %d bytes", cl, len(c.want))
			}
		})
	}
}
