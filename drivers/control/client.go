// Package control is a typed client for the conformance control API
// (docs/control-api.md): fixtures, effects, clock, settings and faults.
// Every call can leave a reports.Exchange, so set-up and read-back are part
// of a scenario's evidence like the calls under test.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reports"
)

// Client talks to one gateway's control API.
type Client struct {
	// BaseURL is the control API prefix, e.g. http://127.0.0.1:PORT/control;
	// a URL without a path gets "/control".
	BaseURL string
	Token   string
	HTTP    *http.Client // nil: a client without proxy
	// Record, when set, receives every exchange; it must be safe for
	// concurrent use.
	Record func(reports.Exchange)
	Lane   string // evidence lane; default "control"
}

// Error is a refusal from the control API.
type Error struct {
	Method, Path string
	Status       int
	Reason       string // the stable token, e.g. "not_found"
	Message      string // the sentence
}

func (e *Error) Error() string {
	return fmt.Sprintf("control %s %s: http %d %s: %s", e.Method, e.Path, e.Status, e.Reason, e.Message)
}

// ReasonOf returns the control API reason of err, "" if err is no *Error.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// StatusOf returns the HTTP status of err, 0 if err is no *Error.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

var defaultHTTP = &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}

// do sends one request; in and out may be nil. Query parameters with empty
// values are left out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	base, err := c.base()
	if err != nil {
		return err
	}
	for k, vs := range q {
		if len(vs) == 0 || vs[0] == "" {
			delete(q, k)
		}
	}
	full := base + path
	if len(q) > 0 {
		full += "?" + q.Encode()
	}
	var body []byte
	if in != nil {
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("control %s %s: encode: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, full, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("control %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	ex := reports.Exchange{
		Label: "control " + method + " " + path, Lane: c.lane(), Method: method, URL: full,
		RequestHeaders: headerMap(req.Header), Started: time.Now().UTC(),
	}
	if len(body) > 0 {
		ex.RequestBody = body
	}
	defer func() {
		ex.Finished = time.Now().UTC()
		ex.ResponseBody = redactKeys(ex.ResponseBody)
		if c.Record != nil {
			c.Record(ex)
		}
		if rec, ok := ctx.Value(recorderKey{}).(func(reports.Exchange)); ok {
			rec(ex)
		}
	}()
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		ex.Error = err.Error()
		return fmt.Errorf("control %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	ex.Status, ex.ResponseHeaders, ex.ResponseBody = resp.StatusCode, headerMap(resp.Header), string(raw)
	if err != nil {
		ex.Error = err.Error()
		return fmt.Errorf("control %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e controlapi.Error
		_ = json.Unmarshal(raw, &e) // a non-JSON refusal keeps the body as message
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Reason: e.Reason, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("control %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

type recorderKey struct{}

// WithRecorder returns a context whose control calls are also handed to
// rec: the client is shared by every scenario of a run, and each scenario
// keeps the calls made for it, in order, as part of what happened.
func WithRecorder(ctx context.Context, rec func(reports.Exchange)) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

var apiKeyField = regexp.MustCompile(`"api_key"\s*:\s*"([^"\\]*)"`)

// redactKeys hides the API keys a control answer hands out (POST /keys),
// keeping a fingerprint that matches the one in the MCP requests' evidence.
func redactKeys(body string) string {
	return apiKeyField.ReplaceAllStringFunc(body, func(m string) string {
		key := apiKeyField.FindStringSubmatch(m)[1]
		return `"api_key":"` + reports.Redacted(key) + `"`
	})
}

func (c *Client) base() (string, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("control base url %q: want http(s)://host[:port][/path]", c.BaseURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/control"
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func (c *Client) lane() string {
	if c.Lane == "" {
		return "control"
	}
	return c.Lane
}

func headerMap(h http.Header) map[string]string {
	m := make(map[string]string, len(h))
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		if k == "Authorization" {
			v = "Bearer ***"
		}
		m[k] = v
	}
	return m
}
