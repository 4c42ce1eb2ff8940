package wire

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// answerWriter is the ResponseWriter the SDK answers through. The SDK
// refuses some requests itself (Content-Type, Accept, sessions, unknown
// methods, the 2026-07-28 headers and _meta), in plain text or as a JSON-RPC
// error without data; the contract (docs/wire.md) is a JSON-RPC error with a
// data.reason for every refusal. So an error status and every JSON answer are
// held until the SDK returns and then, if they are a refusal without a
// reason, rewritten, keeping the SDK's HTTP status and JSON-RPC code. Other
// answers (a GET's event stream, 202 and 204) pass through as written, so
// streams are flushed as the SDK flushes them.
type answerWriter struct {
	w      http.ResponseWriter
	id     json.RawMessage // the request's id as the outer handler read it
	method string          // the request's method as the outer handler read it
	log    *slog.Logger
	codes  map[string]int64 // Options.Codes

	status int // 0 until WriteHeader
	hold   bool
	buf    bytes.Buffer
}

func (a *answerWriter) Header() http.Header { return a.w.Header() }

func (a *answerWriter) WriteHeader(code int) {
	if a.status != 0 || code < 200 {
		return
	}
	a.status = code
	a.hold = code >= 400 || isJSON(a.w.Header().Get("Content-Type"))
	if !a.hold {
		a.w.WriteHeader(code)
	}
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	if a.hold {
		return a.buf.Write(p)
	}
	return a.w.Write(p)
}

// FlushError lets http.ResponseController flush a stream through the
// wrapper; a held answer is written whole by finish.
func (a *answerWriter) FlushError() error {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	if a.hold {
		return nil
	}
	return http.NewResponseController(a.w).Flush()
}

// Flush implements http.Flusher for callers that type-assert it.
func (a *answerWriter) Flush() { _ = a.FlushError() }

// finish writes a held answer, with a reason if it is a refusal that lacks
// one. It must be called once the SDK handler has returned.
func (a *answerWriter) finish() {
	if !a.hold {
		return
	}
	body := a.buf.Bytes()
	if out, ok := a.rewrite(body); ok {
		h := a.w.Header()
		h.Del("X-Content-Type-Options") // http.Error's, for its plain text
		writeJSON(a.w, a.status, out)
		return
	}
	a.w.WriteHeader(a.status)
	_, _ = a.w.Write(body)
}

// rewrite returns the answer to send instead of body, or false to send body
// as it is (a result, or an error that already has its reason).
func (a *answerWriter) rewrite(body []byte) ([]byte, bool) {
	var m rpcMessage
	trimmed := bytes.TrimSpace(body)
	isObject := len(trimmed) > 0 && trimmed[0] == '{'
	if a.status < 400 && (!isObject || !bytes.Contains(trimmed, []byte(`"error"`))) {
		return nil, false // a result (or a batch answer): nothing to add
	}
	if isObject && json.Unmarshal(trimmed, &m) == nil && m.JSONRPC == "2.0" && m.Error != nil {
		if hasReason(m.Error.Data) {
			return nil, false
		}
		reason, code := rpcReason(m.Error.Code, m.Error.Message)
		if reason == ReasonInvalidParams && a.method == "tools/call" {
			// tools/call params the SDK could not decode (requestState,
			// inputResponses): the call's own reason for bad params.
			reason = gateway.ReasonInvalidArguments
		}
		if m.Error.Code != 0 {
			code = m.Error.Code
		}
		msg := m.Error.Message
		if msg == "" {
			msg = reason
		}
		data, err := withReason(m.Error.Data, reason)
		if err != nil {
			a.log.Error("mcp: rewriting an SDK error", "err", err)
			return nil, false
		}
		id := m.ID
		if isNull(id) {
			id = a.id
		}
		return rpcErrorBody(id, &jsonrpc.Error{Code: code, Message: msg, Data: data}), true
	}
	if a.status < 400 {
		return nil, false // a 2xx JSON answer that is not an error
	}
	text := strings.TrimSpace(string(body))
	reason := httpReason(a.status, text)
	if a.status >= 500 {
		// The SDK's text may name internals; the client learns nothing from it.
		a.log.Error("mcp: the SDK answered with a server error", "status", a.status, "text", text)
		text = "internal error"
	}
	if text == "" {
		text = http.StatusText(a.status)
	}
	return rpcErrorBody(a.id, toRPCError(recode(a.codes, refuse(reason, "%s", text)))), true
}

// rpcMessage is a JSON-RPC response as this layer reads one.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// hasReason reports whether a JSON-RPC error's data carries a reason: the
// gateway's refusals always do, the SDK's never.
func hasReason(data json.RawMessage) bool {
	var d struct {
		Reason *string `json:"reason"`
	}
	return json.Unmarshal(data, &d) == nil && d.Reason != nil
}

// withReason adds reason and retryable to the SDK's data, keeping what it
// said (the -32022 answer lists the supported versions); data that is not an
// object moves under "detail".
func withReason(data json.RawMessage, reason string) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if !isNull(data) {
		if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
			fields = map[string]json.RawMessage{"detail": data}
		}
	}
	fields["reason"], _ = json.Marshal(reason)
	fields["retryable"], _ = json.Marshal(refuse(reason, "").Retryable)
	return json.Marshal(fields)
}

// rpcReason names the reason of a JSON-RPC error the SDK sent without one,
// and the code to use if the SDK's is 0. The code decides; the message only
// splits a code the SDK uses for several refusals (its wording is pinned by
// TestSDKRefusals, so an SDK upgrade that changes it fails a test, not a
// client).
func rpcReason(code int64, msg string) (string, int64) {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return ReasonMethodNotFound, code
	case jsonrpc.CodeInvalidParams:
		if strings.Contains(msg, "_meta field") {
			return ReasonProtocolMetaInvalid, code
		}
		return ReasonInvalidParams, code
	case mcp.CodeHeaderMismatch:
		if strings.Contains(msg, "missing") || strings.Contains(msg, "required") {
			return ReasonProtocolHeadersMissing, code
		}
		return ReasonProtocolHeadersDiffer, code
	case mcp.CodeMissingRequiredClientCapabilities:
		return ReasonCapabilitiesMissing, code
	case mcp.CodeUnsupportedProtocolVersion:
		return ReasonProtocolUnsupported, code
	case jsonrpc.CodeInvalidRequest:
		if strings.Contains(msg, "in-flight request ID") || strings.Contains(msg, "already in use") {
			return ReasonRequestIDInFlight, code
		}
		return ReasonInvalidRequest, code
	case jsonrpc.CodeParseError:
		return gateway.ReasonParse, code
	case jsonrpc.CodeInternalError:
		return gateway.ReasonInternal, code
	case 0:
		// Errors the SDK returns unwrapped: initialize params it cannot
		// decode, a call on a session whose initialize failed.
		switch {
		case strings.Contains(msg, "unmarshaling"):
			return ReasonInvalidParams, jsonrpc.CodeInvalidParams
		case strings.Contains(msg, "during session initialization"):
			return ReasonSessionNotInitialized, jsonrpc.CodeInvalidRequest
		}
		return gateway.ReasonInternal, jsonrpc.CodeInternalError
	}
	return ReasonProtocolError, code
}

// httpReason names the reason of a plain-text answer of the SDK: the status
// decides, the text splits the statuses the SDK uses for several refusals.
func httpReason(status int, text string) string {
	switch {
	case status >= 500:
		return gateway.ReasonInternal
	case status == http.StatusUnauthorized:
		return gateway.ReasonUnauthenticated
	case status == http.StatusForbidden && strings.Contains(text, "Host header"):
		return ReasonHostForbidden
	case status == http.StatusForbidden && strings.Contains(text, "session"):
		return ReasonSessionForbidden
	case status == http.StatusNotFound && strings.Contains(text, "session"):
		return ReasonSessionNotFound
	case status == http.StatusMethodNotAllowed:
		return ReasonMethodNotAllowed
	case status == http.StatusConflict:
		return ReasonStreamConflict
	case status == http.StatusRequestEntityTooLarge:
		return gateway.ReasonTooLarge
	case status == http.StatusUnsupportedMediaType:
		return ReasonUnsupportedMediaType
	case status != http.StatusBadRequest:
		return ReasonProtocolError
	}
	for _, c := range []struct{ text, reason string }{
		{"Accept must contain", ReasonNotAcceptable},
		{"nsupported protocol version", ReasonProtocolUnsupported},
		{"only supported on stateless", ReasonProtocolUnsupported},
		{"requires an Mcp-Session-Id", ReasonSessionRequired},
		{"Last-Event-ID", ReasonResumptionUnsupported},
		{"stream replay", ReasonResumptionUnsupported},
		{"JSON RPC not handled", ReasonMethodNotFound},
		{"invalid request", ReasonInvalidRequest},
		{"malformed payload", ReasonInvalidRequest},
		{"batching", gateway.ReasonBatch},
	} {
		if strings.Contains(text, c.text) {
			return c.reason
		}
	}
	return ReasonProtocolError
}

// isJSON reports whether a Content-Type is application/json.
func isJSON(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	return err == nil && mt == "application/json"
}
