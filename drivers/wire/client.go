// Package wire is a raw MCP Streamable HTTP client that the harness fully
// controls: it chooses JSON-RPC ids, every header, where the idempotency key
// goes, and can drop a connection after sending. The go-sdk client is not
// used because it hides ids and headers, which are what is under test.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/reports"
)

// Protocol versions the client speaks.
const (
	V20251125 = "2025-11-25" // initialize handshake, Mcp-Session-Id
	V20260728 = "2026-07-28" // stateless, per-request _meta (SEP-2575)
)

// SEP-2575 per-request _meta keys, as the go-sdk server validates them
// (mcp/protocol.go, mcp/shared.go validateRequestMeta).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// Client is safe for concurrent use once configured; do not copy it after
// the first call.
type Client struct {
	// BaseURL is the MCP endpoint. A URL without a path gets "/mcp".
	BaseURL string
	// HTTP sends every request except dropped ones; nil uses a client without
	// proxy or transparent gzip, so recorded bodies are the bytes received.
	HTTP *http.Client
	// ProtocolVersion is V20251125 (default) or V20260728.
	ProtocolVersion string
	APIKey          string
	// AuthHeader carries APIKey as AuthPrefix+APIKey; default
	// "Authorization". AuthPrefix defaults to "Bearer " on Authorization and
	// to nothing on any other header.
	AuthHeader string
	AuthPrefix string
	// PrincipalToken goes in PrincipalHeader (default "X-Principal-Token").
	PrincipalToken  string
	PrincipalHeader string
	// KeyPlacement is "header" (default, Idempotency-Key as a Structured
	// Field string) or "meta" (params._meta[KeyMetaField]).
	KeyPlacement string
	KeyMetaField string // default "idempotencyKey"
	// ReceiptPath locates the receipt id in a response (see Path);
	// default DefaultReceiptPath.
	ReceiptPath string
	// Header is added to every request.
	Header http.Header
	// Lane names the client in the evidence timeline; default "client".
	Lane string
	// Record, when set, receives every exchange; it is called from the
	// goroutine that made the call, so it must be safe for concurrent use.
	Record func(reports.Exchange)
	// ClientName is sent as clientInfo; default "mcpconform".
	ClientName string

	nextID atomic.Int64
	mu     sync.Mutex
	sessID string
}

// Call is one tools/call.
type Call struct {
	// ID is the JSON-RPC id, any JSON value; nil, 0 or "" take the next
	// auto-increment id (use json.RawMessage("0") to really send 0).
	ID   any
	Tool string
	// Arguments is marshalled as given; a json.RawMessage is sent verbatim
	// (so a non-object can be sent); nil sends {}.
	Arguments      any
	IdempotencyKey string
	PermitID       string // header X-Permit-Id
	// Meta is merged into params._meta.
	Meta map[string]any
	// Header overrides the defaults; a key with no values removes that
	// header (e.g. to send no Accept), so a verbatim Idempotency-Key given
	// here wins over IdempotencyKey.
	Header http.Header
	Label  string // evidence label; default "tools/call TOOL"
	Lane   string // evidence lane; default the client's
	// DropAfterSend writes the whole request on a connection of its own and
	// closes it without reading the answer. DropWait, if set, runs between
	// the write and the close (e.g. to wait until the probe saw the dispatch).
	DropAfterSend bool
	DropWait      func(context.Context) error
}

// RPC is any JSON-RPC request; Call is the tools/call shortcut.
type RPC struct {
	ID            any
	Method        string
	Params        map[string]any
	Header        http.Header
	Label, Lane   string
	DropAfterSend bool
	DropWait      func(context.Context) error
	// Notification sends no id and expects no response (202).
	Notification bool
}

// Post is a raw body, for malformed, batch and oversized requests.
type Post struct {
	Body   []byte
	Header http.Header
	// ID, if set, is the id to look for in the answer.
	ID            json.RawMessage
	Label, Lane   string
	DropAfterSend bool
	DropWait      func(context.Context) error
}

// SessionID is the Mcp-Session-Id from Initialize, "" for none.
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessID
}

func (c *Client) version() string {
	if c.ProtocolVersion == "" {
		return V20251125
	}
	return c.ProtocolVersion
}

// Initialize runs the 2025-11-25 handshake (initialize, then
// notifications/initialized) and keeps the session id. Under 2026-07-28
// there is no handshake and it does nothing.
func (c *Client) Initialize(ctx context.Context) error {
	v := c.version()
	if v == V20260728 {
		return nil
	}
	a, err := c.Do(ctx, RPC{
		Method: "initialize",
		Params: map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{},
			"clientInfo":      c.clientInfo(),
		},
		Label: "initialize",
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if a.Status != http.StatusOK || a.Response == nil || a.HasError() {
		return fmt.Errorf("initialize: http %d, error %d %q: %s", a.Status, a.ErrorCode(), a.ErrorMessage(), snippet(a.Body))
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(a.Response.Result, &res); err != nil {
		return fmt.Errorf("initialize: decode result: %w", err)
	}
	if res.ProtocolVersion != v {
		return fmt.Errorf("initialize: server negotiated protocol %q, want %q", res.ProtocolVersion, v)
	}
	c.mu.Lock()
	c.sessID = a.Header.Get("Mcp-Session-Id")
	c.mu.Unlock()
	n, err := c.Do(ctx, RPC{Method: "notifications/initialized", Notification: true, Label: "initialized"})
	if err != nil {
		return fmt.Errorf("initialized notification: %w", err)
	}
	if n.Status != http.StatusAccepted && n.Status != http.StatusOK && n.Status != http.StatusNoContent {
		return fmt.Errorf("initialized notification: http %d: %s", n.Status, snippet(n.Body))
	}
	return nil
}

// CallTool sends one tools/call. HTTP and JSON-RPC errors are answers, not
// errors: the error is for transport failures, and even then the Answer is
// returned with its Exchange so the evidence is kept.
func (c *Client) CallTool(ctx context.Context, call Call) (*Answer, error) {
	// A json.RawMessage marshals verbatim, so a non-object can be sent.
	var args any = map[string]any{}
	if call.Arguments != nil {
		args = call.Arguments
	}
	meta := map[string]any{}
	for k, v := range call.Meta {
		meta[k] = v
	}
	h := http.Header{}
	if call.IdempotencyKey != "" {
		if c.KeyPlacement == "meta" {
			meta[c.keyField()] = call.IdempotencyKey
		} else {
			h.Set("Idempotency-Key", SFString(call.IdempotencyKey))
		}
	}
	if call.PermitID != "" {
		h.Set("X-Permit-Id", call.PermitID)
	}
	for k, vs := range call.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	params := map[string]any{"name": call.Tool, "arguments": args}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	label := call.Label
	if label == "" {
		label = "tools/call " + call.Tool
	}
	return c.Do(ctx, RPC{
		ID: call.ID, Method: "tools/call", Params: params, Header: h,
		Label: label, Lane: call.Lane, DropAfterSend: call.DropAfterSend, DropWait: call.DropWait,
	})
}

// ListTools sends tools/list.
func (c *Client) ListTools(ctx context.Context) (*Answer, error) {
	return c.Do(ctx, RPC{Method: "tools/list"})
}

// Do sends any JSON-RPC request, adding the SEP-2575 _meta under 2026-07-28.
func (c *Client) Do(ctx context.Context, r RPC) (*Answer, error) {
	params := map[string]any{}
	for k, v := range r.Params {
		params[k] = v
	}
	h := http.Header{}
	if c.version() == V20260728 && !r.Notification {
		meta := map[string]any{}
		if m, ok := params["_meta"].(map[string]any); ok {
			for k, v := range m {
				meta[k] = v
			}
		}
		setDefault(meta, MetaProtocolVersion, V20260728)
		setDefault(meta, MetaClientCapabilities, map[string]any{})
		setDefault(meta, MetaClientInfo, c.clientInfo())
		params["_meta"] = meta
		// The 2026-07-28 standard headers; go-sdk servers reject a request
		// without them (mcp/streamable_headers.go validateMcpHeaders).
		h.Set("Mcp-Method", r.Method)
		if name, ok := params["name"].(string); ok && (r.Method == "tools/call" || r.Method == "prompts/get") {
			h.Set("Mcp-Name", name)
		}
	}
	for k, vs := range r.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": r.Method, "params": params}
	var id json.RawMessage
	if !r.Notification {
		var err error
		if id, err = c.idFor(r.ID); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Method, err)
		}
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", r.Method, err)
	}
	label := r.Label
	if label == "" {
		label = r.Method
	}
	return c.Post(ctx, Post{
		Body: body, Header: h, ID: id, Label: label, Lane: r.Lane,
		DropAfterSend: r.DropAfterSend, DropWait: r.DropWait,
	})
}

// Send posts a raw body with the default headers overridden by header.
func (c *Client) Send(ctx context.Context, body []byte, header http.Header) (*Answer, error) {
	return c.Post(ctx, Post{Body: body, Header: header, Label: "raw"})
}

// Post sends p with the client's default headers and reads the answer.
func (c *Client) Post(ctx context.Context, p Post) (*Answer, error) {
	endpoint, err := c.endpoint()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(p.Body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	// net/http resends a POST carrying an Idempotency-Key on its own when a
	// reused connection breaks, if it can rewind the body. The harness must
	// send exactly the requests it records, so it gives the transport no way
	// to rewind: every attempt is one the scenario made and the evidence shows.
	req.GetBody = nil
	c.defaultHeaders(req.Header, isInitialize(p.Body))
	for k, vs := range p.Header {
		k = http.CanonicalHeaderKey(k)
		if len(vs) == 0 {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = vs
	}
	lane := p.Lane
	if lane == "" {
		lane = c.Lane
	}
	if lane == "" {
		lane = "client"
	}
	a := &Answer{receipt: c.receiptPath()}
	a.Exchange = reports.Exchange{
		Label: p.Label, Lane: lane, Method: req.Method, URL: endpoint,
		RequestHeaders: flatten(req.Header, c.authHeader()),
		Started:        time.Now().UTC(),
	}
	setRequestBody(&a.Exchange, p.Body)
	a.Exchange.RequestHeaders["Host"] = req.URL.Host
	if p.DropAfterSend {
		err = dropAfterSend(ctx, req, p.DropWait)
		a.Dropped = err == nil
		a.Exchange.Error = "connection closed by the client after sending, answer not read"
	} else {
		err = c.roundTrip(req, p.ID, a)
	}
	a.Exchange.Finished = time.Now().UTC()
	if err != nil {
		a.Exchange.Error = err.Error()
	}
	if c.Record != nil {
		c.Record(a.Exchange)
	}
	if err != nil {
		return a, fmt.Errorf("post %s: %w", endpoint, err)
	}
	return a, nil
}

func (c *Client) roundTrip(req *http.Request, id json.RawMessage, a *Answer) error {
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	a.Status, a.Header = resp.StatusCode, resp.Header
	a.Exchange.Status = resp.StatusCode
	a.Exchange.ResponseHeaders = flatten(resp.Header, "")
	body, msg, err := readAnswer(resp, id)
	a.Body, a.Message = body, msg
	a.Exchange.ResponseBody = evidenceText(body)
	if msg != nil {
		var r Response
		if json.Unmarshal(msg, &r) == nil {
			a.Response = &r
		}
	}
	return err
}

func (c *Client) defaultHeaders(h http.Header, initialize bool) {
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	if !initialize {
		// The version header goes on every request after initialize
		// (2025-11-25 transports section), and on every request in 2026-07-28.
		h.Set("Mcp-Protocol-Version", c.version())
	}
	if sid := c.SessionID(); sid != "" {
		h.Set("Mcp-Session-Id", sid)
	}
	if c.APIKey != "" {
		prefix := c.AuthPrefix
		if prefix == "" && c.authHeader() == "Authorization" {
			prefix = "Bearer "
		}
		h.Set(c.authHeader(), prefix+c.APIKey)
	}
	if c.PrincipalToken != "" {
		ph := c.PrincipalHeader
		if ph == "" {
			ph = "X-Principal-Token"
		}
		h.Set(ph, c.PrincipalToken)
	}
	for k, vs := range c.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
}

func (c *Client) authHeader() string {
	if c.AuthHeader == "" {
		return "Authorization"
	}
	return http.CanonicalHeaderKey(c.AuthHeader)
}

func (c *Client) keyField() string {
	if c.KeyMetaField == "" {
		return "idempotencyKey"
	}
	return c.KeyMetaField
}

func (c *Client) receiptPath() Path {
	p, err := ParsePath(c.ReceiptPath)
	if err != nil {
		return MustParsePath(DefaultReceiptPath)
	}
	return p
}

func (c *Client) clientInfo() map[string]any {
	name := c.ClientName
	if name == "" {
		name = "mcpconform"
	}
	return map[string]any{"name": name, "version": "1"}
}

func (c *Client) endpoint() (string, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("base url %q: want http(s)://host[:port][/path]", c.BaseURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}

// defaultHTTP has no proxy (all targets are addressed directly) and no
// transparent gzip (recorded bodies are the bytes received).
var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:               nil,
	DisableCompression:  true,
	MaxIdleConnsPerHost: 64,
	IdleConnTimeout:     30 * time.Second,
}}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

func (c *Client) idFor(id any) (json.RawMessage, error) {
	switch v := id.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("id is not valid JSON")
		}
		return v, nil
	case int:
		if v != 0 {
			return json.Marshal(v)
		}
	case int64:
		if v != 0 {
			return json.Marshal(v)
		}
	case string:
		if v != "" {
			return json.Marshal(v)
		}
	default:
		return json.Marshal(v)
	}
	return json.Marshal(c.nextID.Add(1))
}

// SFString serializes s as an RFC 8941 Structured Field string: quoted, with
// backslash and quote escaped. A key outside printable ASCII cannot be an sf
// string; it is returned unquoted so a malformed-key test still sends it.
func SFString(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return s
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func setDefault(m map[string]any, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func isInitialize(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

func snippet(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
