package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/store"
)

// apiError is an error answer: {"error": sentence, "reason": token}.
type apiError struct {
	status int
	reason string
	msg    string
	fault  *controlapi.FaultState // the fault an await timed out on
}

func (e *apiError) Error() string { return e.msg }

func fail(status int, reason, format string, args ...any) *apiError {
	return &apiError{status: status, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return fail(http.StatusBadRequest, "bad_request", format, args...)
}

func (a *api) answerErr(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeErr(w, ae)
		return
	}
	var inv *fixtures.Invalid
	if errors.As(err, &inv) {
		writeErr(w, fail(http.StatusBadRequest, inv.Reason, "%s", inv.Msg))
		return
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, fail(http.StatusNotFound, "not_found", "%v", err))
	case errors.Is(err, store.ErrExists):
		writeErr(w, fail(http.StatusConflict, "conflict", "%v", err))
	case errors.Is(err, store.ErrBusy):
		writeErr(w, fail(http.StatusServiceUnavailable, "busy", "the store is busy; retry: %v", err))
	default:
		a.c.Logger.Error("control", "method", r.Method, "path", r.URL.Path, "err", err)
		writeErr(w, fail(http.StatusInternalServerError, "internal_error", "internal error: %v", err))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"internal error: encoding the answer","reason":"internal_error"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeErr(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, controlapi.Error{Error: e.msg, Reason: e.reason, Fault: e.fault})
}

// decode reads a JSON object body into v. An empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(http.StatusRequestEntityTooLarge, "request_too_large", "the body exceeds %d bytes", MaxBodyBytes)
		}
		return badRequest("reading the body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return fail(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json, not %q", ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("the body is not the expected JSON object: %v", err)
	}
	return nil
}
