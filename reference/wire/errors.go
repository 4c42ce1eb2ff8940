package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// ReasonInvalidRequest is a body that is valid JSON but not a JSON-RPC
// message object (e.g. a bare number). It is this layer's own reason, beside
// the gateway's (docs/wire.md).
const ReasonInvalidRequest = "invalid_request"

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
	if code == 0 && r.Reason == ReasonInvalidRequest {
		code = jsonrpc.CodeInvalidRequest
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

// writeError answers a request at the HTTP layer, before the SDK saw it.
// id is the request's id when known (echoed if it is a string or number).
func writeError(w http.ResponseWriter, status int, id json.RawMessage, r *gateway.Refusal) {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{JSONRPC: "2.0", ID: validID(id), Error: toRPCError(r)}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
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
