package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// The observation API, served beside /mcp to loopback clients only. JSON
// bodies (at most 1 MiB, unknown fields ignored); durations are Go duration
// strings ("200ms"), times RFC 3339 with nanoseconds. A token is any string;
// "" names every call where a token is asked for (as Count and Stall take it).
//
//	GET  /probe/v1                       {"probe_api": "mcpconform-probe/1", "mcp_url": …, "tools": [{"name", "read_only"}]}
//	GET  /probe/v1/dispatches?token_prefix=P   {"dispatches": [{"token", "tool", "at"}]}, arrival order
//	GET  /probe/v1/count?token=T         {"token": T, "count": N}
//	POST /probe/v1/stall   {"token": T}   204
//	POST /probe/v1/unstall {"token": T}   204
//	POST /probe/v1/fail    {"token": T, "how": "tool_error"|"refuse"}   204: T's next
//	     dispatch answers isError (counted), or a JSON-RPC error before the tool runs (not counted)
//	POST /probe/v1/forget  {"token_prefix": P}   204 ("" forgets everything)
//	POST /probe/v1/wait    {"token": T, "n": N, "timeout": "60s"}
//	     200 {"token", "n", "count", "reached"} once count >= n, or reached false when
//	     the timeout (at most PollLimit) ran out: ask again.
//	POST /probe/v1/quiet   {"token_prefix": P, "quiet": "200ms", "timeout": "60s", "since": …, "after": M}
//	     200 {"quiet": true} once no dispatch of P* arrived for quiet; or, when the
//	     timeout ran out first, {"quiet": false, "since": …, "after": M}: send those
//	     two back to carry on the same quiet period.
//
// Errors are {"error": "<sentence>", "reason": "<token>"}: 400 bad_request,
// 403 not_loopback, 404 not_found, 405 method_not_allowed, 413
// request_too_large, 415 unsupported_media_type.
const (
	APIPath    = "/probe/v1"
	APIVersion = "mcpconform-probe/1"
)

const maxBody = 1 << 20

type apiError struct {
	status int
	reason string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...)}
}

// Info is the answer at APIPath.
type Info struct {
	API    string     `json:"probe_api"`
	MCPURL string     `json:"mcp_url"`
	Tools  []ToolInfo `json:"tools"`
}

// ToolInfo names a tool the probe serves.
type ToolInfo struct {
	Name        string `json:"name"`
	ReadOnly    bool   `json:"read_only"`
	Description string `json:"-"` // its tools/list description; the API's info stays as it was
}

// Tools is what the probe serves: its tools/list, the observation API's
// info and `mcpconform probe`'s help and banner all read this one list.
var Tools = []ToolInfo{
	{ToolWrite, false, "Counts a mutating dispatch by token."},
	{ToolRead, true, "Counts a read-only dispatch by token."},
	{ToolAsk, false, "Asks the client to confirm, then counts a mutating dispatch by token."},
	{ToolSample, false, "Needs the client to declare sampling, then counts a mutating dispatch by token."},
}

type tokenRequest struct {
	Token *string `json:"token"`
}

type prefixRequest struct {
	TokenPrefix *string `json:"token_prefix"`
}

type countResponse struct {
	Token string `json:"token"`
	Count int    `json:"count"`
}

type dispatchesResponse struct {
	Dispatches []judge.Dispatch `json:"dispatches"`
}

type waitRequest struct {
	Token   *string `json:"token"`
	N       int     `json:"n"`
	Timeout string  `json:"timeout,omitempty"`
}

type waitResponse struct {
	Token   string `json:"token"`
	N       int    `json:"n"`
	Count   int    `json:"count"`
	Reached bool   `json:"reached"`
}

type quietRequest struct {
	TokenPrefix string     `json:"token_prefix"`
	Quiet       string     `json:"quiet"`
	Timeout     string     `json:"timeout,omitempty"`
	Since       *time.Time `json:"since,omitempty"`
	After       uint64     `json:"after,omitempty"`
}

type quietResponse struct {
	Quiet bool       `json:"quiet"`
	Since *time.Time `json:"since,omitempty"`
	After uint64     `json:"after,omitempty"`
}

type route struct {
	method string
	h      func(*http.Request) (status int, body any, err error)
}

func (p *Probe) apiHandler() http.Handler {
	routes := map[string]route{
		"":           {http.MethodGet, p.apiInfo},
		"dispatches": {http.MethodGet, p.apiDispatches},
		"count":      {http.MethodGet, p.apiCount},
		"stall":      {http.MethodPost, p.apiStall(true)},
		"unstall":    {http.MethodPost, p.apiStall(false)},
		"fail":       {http.MethodPost, p.apiFail},
		"forget":     {http.MethodPost, p.apiForget},
		"wait":       {http.MethodPost, p.apiWait},
		"quiet":      {http.MethodPost, p.apiQuiet},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback(r.RemoteAddr) {
			writeErr(w, &apiError{http.StatusForbidden, "not_loopback", "forbidden: the probe's observation API answers loopback clients only"})
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, APIPath)
		name = strings.Trim(name, "/")
		rt, found := routes[name]
		if !ok || !found {
			writeErr(w, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no such probe endpoint %s", r.URL.Path)})
			return
		}
		if r.Method != rt.method {
			w.Header().Set("Allow", rt.method)
			writeErr(w, &apiError{http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rt.method)})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		status, body, err := rt.h(r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{http.StatusInternalServerError, "internal_error", err.Error()}
			}
			writeErr(w, ae)
			return
		}
		if r.Context().Err() != nil {
			return // the client left a long poll; nobody reads an answer
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	})
}

func (p *Probe) apiInfo(*http.Request) (int, any, error) {
	return http.StatusOK, Info{API: APIVersion, MCPURL: p.URL(), Tools: Tools}, nil
}

func (p *Probe) apiDispatches(r *http.Request) (int, any, error) {
	return http.StatusOK, dispatchesResponse{p.dispatchesWith(r.URL.Query().Get("token_prefix"))}, nil
}

func (p *Probe) apiCount(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	if !q.Has("token") {
		return 0, nil, badRequest(`query parameter "token" is required ("" counts every dispatch)`)
	}
	tok := q.Get("token")
	return http.StatusOK, countResponse{tok, p.Count(tok)}, nil
}

func (p *Probe) apiStall(stall bool) func(*http.Request) (int, any, error) {
	return func(r *http.Request) (int, any, error) {
		var req tokenRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Token == nil {
			return 0, nil, badRequest(`"token" is required (a string; "" = every call)`)
		}
		if stall {
			p.Stall(*req.Token)
		} else {
			p.Unstall(*req.Token)
		}
		return http.StatusNoContent, nil, nil
	}
}

type failRequest struct {
	Token *string `json:"token"`
	How   string  `json:"how"`
}

func (p *Probe) apiFail(r *http.Request) (int, any, error) {
	var req failRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Token == nil {
		return 0, nil, badRequest(`"token" is required (a string)`)
	}
	if err := p.Fail(*req.Token, req.How); err != nil {
		return 0, nil, badRequest("%s", err.Error())
	}
	return http.StatusNoContent, nil, nil
}

func (p *Probe) apiForget(r *http.Request) (int, any, error) {
	var req prefixRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	// Required, so an empty body cannot forget every run's dispatches.
	if req.TokenPrefix == nil {
		return 0, nil, badRequest(`"token_prefix" is required (a string; "" forgets everything)`)
	}
	p.Forget(*req.TokenPrefix)
	return http.StatusNoContent, nil, nil
}

func (p *Probe) apiWait(r *http.Request) (int, any, error) {
	var req waitRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Token == nil {
		return 0, nil, badRequest(`"token" is required (a string; "" = any token)`)
	}
	if req.N < 0 {
		return 0, nil, badRequest(`"n" must not be negative (got %d)`, req.N)
	}
	ctx, cancel, err := p.pollContext(r, req.Timeout)
	if err != nil {
		return 0, nil, err
	}
	defer cancel()
	p.polling("wait")
	reached := p.WaitFor(ctx, *req.Token, req.N) == nil
	return http.StatusOK, waitResponse{Token: *req.Token, N: req.N, Count: p.Count(*req.Token), Reached: reached}, nil
}

func (p *Probe) apiQuiet(r *http.Request) (int, any, error) {
	var req quietRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	quiet, err := duration("quiet", req.Quiet)
	if err != nil {
		return 0, nil, err
	}
	if quiet <= 0 {
		return 0, nil, badRequest(`"quiet" must be positive, e.g. "200ms" (got %q)`, req.Quiet)
	}
	var m quietMark
	if req.Since != nil {
		if req.Since.IsZero() {
			return 0, nil, badRequest(`"since" must be a time (as a previous answer gave it)`)
		}
		m = quietMark{since: req.Since.UTC(), after: req.After}
	} else if req.After != 0 {
		return 0, nil, badRequest(`"after" goes with "since" (both as a previous answer gave them)`)
	}
	ctx, cancel, err := p.pollContext(r, req.Timeout)
	if err != nil {
		return 0, nil, err
	}
	defer cancel()
	p.polling("quiet")
	m, err = p.quietFrom(ctx, req.TokenPrefix, quiet, m)
	if err != nil {
		return http.StatusOK, quietResponse{Quiet: false, Since: &m.since, After: m.after}, nil
	}
	return http.StatusOK, quietResponse{Quiet: true}, nil
}

// pollContext bounds a long poll by the request's timeout (at most
// PollLimit) and ends it when the probe closes, so Close need not wait for
// a poll to run out.
func (p *Probe) pollContext(r *http.Request, timeout string) (context.Context, context.CancelFunc, error) {
	limit := p.pollLimit
	if timeout != "" {
		d, err := duration("timeout", timeout)
		if err != nil {
			return nil, nil, err
		}
		if d <= 0 {
			return nil, nil, badRequest(`"timeout" must be positive (got %q); at most %v is used`, timeout, p.pollLimit)
		}
		limit = min(limit, d)
	}
	ctx, cancel := context.WithTimeout(r.Context(), limit)
	go func() {
		select {
		case <-p.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel, nil
}

func duration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, badRequest("%q is required: a Go duration such as \"200ms\"", field)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, badRequest("%q: %q is not a Go duration such as \"200ms\"", field, s)
	}
	return d, nil
}

// decode reads a JSON object body. A missing Content-Type is taken as JSON;
// any other than application/json is refused (curl -d needs
// -H 'Content-Type: application/json').
func decode(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf("Content-Type %q: want application/json", ct)}
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body over %d bytes", tooBig.Limit)}
		}
		return badRequest("read request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return badRequest("request body is not the JSON object expected: %v", err)
	}
	if dec.More() {
		return badRequest("request body holds more than one JSON value")
	}
	return nil
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]string{"error": e.msg, "reason": e.reason})
}
