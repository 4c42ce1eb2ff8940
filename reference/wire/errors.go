package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/mcpconform/mcpconform/reference/bugs"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// Transport reasons: this layer's own, beside the gateway's (gateway.Codes;
// both tables are docs/wire.md's). The gateway core never sees these
// requests: most are refusals the SDK decides itself (a header, a session, a
// method) and answers without a reason, which answerWriter supplies.
const (
	// ReasonInvalidRequest is a body that is valid JSON but not a JSON-RPC
	// request object (a bare number, a wrong "jsonrpc", a call without id).
	ReasonInvalidRequest         = "invalid_request"
	ReasonUnsupportedMediaType   = "unsupported_media_type"
	ReasonNotAcceptable          = "not_acceptable"
	ReasonMethodNotAllowed       = "method_not_allowed"
	ReasonMethodNotFound         = "method_not_found"
	ReasonInvalidParams          = "invalid_params"
	ReasonSessionRequired        = "session_required"
	ReasonSessionNotFound        = "session_not_found"
	ReasonSessionForbidden       = "session_forbidden"
	ReasonSessionNotInitialized  = "session_not_initialized"
	ReasonProtocolUnsupported    = "protocol_version_unsupported"
	ReasonProtocolHeadersMissing = "protocol_headers_missing"
	ReasonProtocolHeadersDiffer  = "protocol_headers_mismatch"
	ReasonProtocolMetaInvalid    = "protocol_meta_invalid"
	ReasonCapabilitiesMissing    = gateway.ReasonCapabilitiesMissing
	ReasonResumptionUnsupported  = "resumption_unsupported"
	ReasonStreamConflict         = "stream_conflict"
	ReasonRequestIDInFlight      = "request_id_in_flight"
	ReasonHostForbidden          = "host_forbidden"
	// ReasonRequestTimeout is a body that did not arrive within
	// Options.BodyTimeout.
	ReasonRequestTimeout = "request_timeout"
	// ReasonSessionLimit is an initialize of an API key that holds
	// Options.MaxSessionsPerKey live sessions already.
	ReasonSessionLimit = "session_limit_reached"
	// ReasonProtocolError is any other refusal of the SDK: a fallback, so
	// that an SDK upgrade adding a check still answers with a reason.
	ReasonProtocolError = "protocol_error"
)

// transportReason is a transport reason's default code (used when the SDK
// answered in plain text or with code 0) and whether a client may resend the
// request as it is.
type transportReason struct {
	code      int64
	retryable bool
}

var transportReasons = map[string]transportReason{
	ReasonInvalidRequest:         {code: jsonrpc.CodeInvalidRequest},
	ReasonUnsupportedMediaType:   {code: jsonrpc.CodeInvalidRequest},
	ReasonNotAcceptable:          {code: jsonrpc.CodeInvalidRequest},
	ReasonMethodNotAllowed:       {code: jsonrpc.CodeInvalidRequest},
	ReasonMethodNotFound:         {code: jsonrpc.CodeMethodNotFound},
	ReasonInvalidParams:          {code: jsonrpc.CodeInvalidParams},
	ReasonSessionRequired:        {code: jsonrpc.CodeInvalidRequest},
	ReasonSessionNotFound:        {code: jsonrpc.CodeInvalidRequest},
	ReasonSessionForbidden:       {code: jsonrpc.CodeInvalidRequest},
	ReasonSessionNotInitialized:  {code: jsonrpc.CodeInvalidRequest},
	ReasonProtocolUnsupported:    {code: mcp.CodeUnsupportedProtocolVersion},
	ReasonProtocolHeadersMissing: {code: mcp.CodeHeaderMismatch},
	ReasonProtocolHeadersDiffer:  {code: mcp.CodeHeaderMismatch},
	ReasonProtocolMetaInvalid:    {code: jsonrpc.CodeInvalidParams},
	ReasonCapabilitiesMissing:    {code: mcp.CodeMissingRequiredClientCapabilities},
	ReasonResumptionUnsupported:  {code: jsonrpc.CodeInvalidRequest},
	ReasonStreamConflict:         {code: jsonrpc.CodeInvalidRequest},
	// The SDK refuses a call whose id is still in flight on the session; once
	// the first finishes, the same request is answered (a replay, if keyed).
	ReasonRequestIDInFlight: {code: jsonrpc.CodeInvalidRequest, retryable: true},
	ReasonHostForbidden:     {code: jsonrpc.CodeInvalidRequest},
	// Nothing of the request was used; sent again promptly, it is answered.
	ReasonRequestTimeout: {code: jsonrpc.CodeInvalidRequest, retryable: true},
	// Answered once one of the key's sessions ends (a DELETE, its idle
	// timeout).
	ReasonSessionLimit:  {code: jsonrpc.CodeInvalidRequest, retryable: true},
	ReasonProtocolError: {code: jsonrpc.CodeInvalidRequest},
}

// KnownReason reports whether r is a data.reason /mcp may answer with: the
// gateway's or a transport reason.
func KnownReason(r string) bool {
	if _, ok := transportReasons[r]; ok {
		return true
	}
	_, ok := gateway.Codes[r]
	return ok
}

// refuse builds a refusal for a transport reason (gateway.Refuse knows only
// the gateway's); other reasons go to gateway.Refuse.
func refuse(reason, format string, args ...any) *gateway.Refusal {
	r := gateway.Refuse(reason, format, args...)
	if t, ok := transportReasons[reason]; ok {
		r.Code, r.Retryable = t.code, t.retryable
	}
	return r
}

// errorData is the data object of every refusal.
func errorData(r *gateway.Refusal) json.RawMessage {
	data := make(map[string]any, len(r.Data)+2)
	for k, v := range r.Data {
		data[k] = v
	}
	data["reason"] = r.Reason
	data["retryable"] = r.Retryable
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"reason": r.Reason, "retryable": r.Retryable})
	}
	return b
}

// toRPCError turns a refusal into the JSON-RPC error the SDK sends as it is
// (a *jsonrpc.Error is passed through with its code and data untouched).
func toRPCError(r *gateway.Refusal) *jsonrpc.Error {
	code := r.Code
	if code == 0 {
		code = transportReasons[r.Reason].code
	}
	if code == 0 {
		code = gateway.Codes[r.Reason]
	}
	if code == 0 {
		code = jsonrpc.CodeInternalError
	}
	msg := r.Message
	if msg == "" {
		msg = r.Reason
	}
	return &jsonrpc.Error{Code: code, Message: msg, Data: errorData(r)}
}

// asRPCError maps any core error: refusals keep their reason; anything else
// is internal_error without the internal detail.
func asRPCError(err error) *jsonrpc.Error {
	var ref *gateway.Refusal
	if errors.As(err, &ref) {
		return toRPCError(ref)
	}
	return toRPCError(gateway.Refuse(gateway.ReasonInternal, "internal error"))
}

// recode gives a refusal of one of the gateway's reasons its code in codes
// (Options.Codes); transport reasons keep theirs.
func recode(codes map[string]int64, r *gateway.Refusal) *gateway.Refusal {
	c, ok := codes[r.Reason]
	if !ok || c == r.Code {
		return r
	}
	cp := *r
	cp.Code = c
	return &cp
}

func (h *handler) recode(r *gateway.Refusal) *gateway.Refusal {
	r = recode(h.opts.Codes, r)
	if h.opts.Bugs.On(bugs.RefusalsRetryable) && !r.Retryable {
		cp := *r
		cp.Retryable = true // BUG refusals-retryable
		return &cp
	}
	return r
}

// rpcError is asRPCError with the handler's code table.
func (h *handler) rpcError(err error) *jsonrpc.Error {
	var ref *gateway.Refusal
	if errors.As(err, &ref) {
		return toRPCError(h.recode(ref))
	}
	return asRPCError(err)
}

// rpcErrorBody is one JSON-RPC error response.
func rpcErrorBody(id json.RawMessage, e *jsonrpc.Error) []byte {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{JSONRPC: "2.0", ID: validID(id), Error: e}
	b, _ := json.Marshal(resp)
	return b
}

// writeError answers a request at the HTTP layer, before the SDK saw it.
// id is the request's id when known (echoed if it is a string or number).
func (h *handler) writeError(w http.ResponseWriter, status int, id json.RawMessage, r *gateway.Refusal) {
	writeJSON(w, status, rpcErrorBody(id, toRPCError(h.recode(r))))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// validID returns id when it is a JSON string or number, else null.
func validID(id json.RawMessage) json.RawMessage {
	var v any
	if len(id) == 0 || json.Unmarshal(id, &v) != nil {
		return json.RawMessage("null")
	}
	switch v.(type) {
	case string, float64:
		return id
	}
	return json.RawMessage("null")
}
