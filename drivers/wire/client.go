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
	"regexp"
	"slices"
	"strconv"
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
	// MetaServerInfo is where a 2026-07-28 server names itself in a result's
	// _meta (server/discover's included).
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
)

// Client is safe for concurrent use once configured; do not copy it after
// the first call.
type Client struct {
	// BaseURL is the MCP endpoint. A URL without a path gets "/mcp".
	BaseURL string
	// HTTP sends every request except dropped ones; nil uses a client without
	// proxy or transparent gzip, so recorded bodies are the bytes received.
	HTTP *http.Client
	// ProtocolVersion is the version to speak: V20251125 (initialize
	// handshake, session), V20260728 (stateless, no handshake), or "" to
	// negotiate the newest of the two the target serves (see Connect). A
	// version set here is used as is. Changing it between calls makes the
	// next call connect again for the new version.
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
	// KeyPlacement is where a call's idempotency key goes: KeyInHeader
	// (default; the header KeyHeader, a Structured Field string),
	// KeyInMeta (params._meta[KeyMetaField]), KeyInParams
	// (params[KeyParam]) or KeyInArgument (inside the arguments, at the
	// path KeyArgument).
	KeyPlacement string
	KeyHeader    string // default DefaultKeyHeader
	KeyMetaField string // default DefaultKeyMeta
	KeyParam     string // default DefaultKeyParam
	KeyArgument  string // Path syntax, every segment an object member; default DefaultKeyArgument
	// ReceiptPath locates the receipt id in a response (see Path);
	// default DefaultReceiptPath.
	ReceiptPath string
	// RefusalReceiptPath locates the receipt a refusal names (see Path);
	// default DefaultRefusalReceiptPath.
	RefusalReceiptPath string
	// ReplayMarker, when set, is how the target marks a replayed result;
	// Answer.ReplayMarked reads it.
	ReplayMarker ReplayMarker
	// Render, when set, is what a call's arguments are sent as for its
	// tool (a profile's effects template for the write tool). The call's
	// own arguments, which the history records, stay as they were, as
	// they do when the key is placed in them.
	Render func(tool string, args any) any
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

	mu      sync.Mutex
	conn    *connection // the last connection made; nil before the first
	dialing *dial       // the handshake under way, if any
	// onWait, a test hook, runs when a caller starts waiting for another
	// caller's handshake.
	onWait func()
}

// connection is what a handshake established.
type connection struct {
	want          string // ProtocolVersion it was made for
	version       string // the version in use
	sessionID     string // 2025-11-25 only
	serverName    string
	serverVersion string
}

// dial is one handshake; every caller that arrived while it ran waits for
// it and gets its outcome, so concurrent first calls handshake once.
type dial struct {
	done chan struct{}
	conn *connection
	err  error
}

// wireState is what a request is sent with: the version that shapes its
// headers and _meta, and the session it belongs to.
type wireState struct {
	version   string
	sessionID string
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
	// InputResponses and RequestState make the call a later round of a
	// multi-round call (MCP 2026-07-28): the answers to the input the last
	// round asked for, and the state it returned.
	InputResponses map[string]any
	RequestState   string
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
	// NoHandshake sends the call without connecting first (see Post).
	NoHandshake bool
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
	// NoHandshake sends the request without connecting first (see Post).
	NoHandshake bool
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
	// NoHandshake sends the body without connecting first: a client that
	// has not connected sends it with no session and the configured
	// version's header (V20251125 when negotiating), one that has sends it
	// on its connection as usual. For tests of what a target does with a
	// request outside any session.
	NoHandshake bool
}

// SessionID is the Mcp-Session-Id of the connection, "" for none (before
// connecting, and on 2026-07-28).
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	return c.conn.sessionID
}

// Version is the protocol version in use, "" before connecting.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	return c.conn.version
}

// ServerInfo is the server's name and version as its initialize result
// (serverInfo) or server/discover result (_meta serverInfo) gave them; ""
// when unknown, which includes an explicit V20260728, where no request is
// made to connect.
func (c *Client) ServerInfo() (name, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return "", ""
	}
	return c.conn.serverName, c.conn.serverVersion
}

// NextID reserves the next auto-increment JSON-RPC id, so a caller knows a
// call's id before it is answered (to cancel it, say): put it in Call.ID.
func (c *Client) NextID() json.RawMessage {
	return json.RawMessage(strconv.FormatInt(c.nextID.Add(1), 10))
}

// Initialize is Connect, kept as the explicit form of the handshake.
func (c *Client) Initialize(ctx context.Context) error {
	return c.Connect(ctx)
}

// Connect runs the handshake now; every request that is not itself an
// initialize (and not NoHandshake) runs it first if it has not run yet.
// Once connected it does nothing, so it runs once per Client; concurrent
// callers share one handshake and its outcome, and a failed one is tried
// again by the next caller.
//
// V20251125 (or any version other than V20260728) sends initialize and
// requires the server to answer with that version, keeps Mcp-Session-Id, then
// sends notifications/initialized. V20260728 has no handshake. With
// ProtocolVersion "" the client asks server/discover on the 2026-07-28 wire
// (as go-sdk v1.8.0's client does): a server that serves 2026-07-28
// statelessly answers with supportedVersions naming it, and that is used.
// Anything else — a stateful go-sdk server answers supportedVersions without
// it, one narrowed to older versions refuses with -32022, an older SDK
// refuses the MCP-Protocol-Version header with a plain 400 or does not know
// the method — falls back to a 2025-11-25 initialize. Only a transport
// failure of the probe is an error.
//
// A session the server later forgets (HTTP 404) is not re-established: that
// answer is returned like any other, since the harness must see what the
// gateway does with a lost session rather than have the client paper over it.
// Call Reset, or set ProtocolVersion again, to connect anew.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.connect(ctx)
	return err
}

// Reset forgets the connection; the next call connects again.
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = nil
}

func (c *Client) connect(ctx context.Context) (*connection, error) {
	want := c.ProtocolVersion
	for {
		c.mu.Lock()
		if cn := c.conn; cn != nil && cn.want == want {
			c.mu.Unlock()
			return cn, nil
		}
		if d := c.dialing; d != nil {
			c.mu.Unlock()
			if c.onWait != nil {
				c.onWait()
			}
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("connect: %w", ctx.Err())
			}
			if d.err != nil {
				return nil, d.err
			}
			continue // it may have been for another version
		}
		d := &dial{done: make(chan struct{})}
		c.dialing = d
		c.mu.Unlock()

		d.conn, d.err = c.handshake(ctx, want)
		if d.err != nil {
			d.err = fmt.Errorf("connect: %w", d.err)
		}
		c.mu.Lock()
		if d.err == nil {
			c.conn = d.conn
		}
		c.dialing = nil
		c.mu.Unlock()
		close(d.done)
		return d.conn, d.err
	}
}

func (c *Client) handshake(ctx context.Context, want string) (*connection, error) {
	var cn *connection
	var err error
	switch want {
	case V20260728:
		cn = &connection{version: want}
	case "":
		var refusal string
		cn, refusal, err = c.discover(ctx)
		if err == nil && cn == nil {
			if cn, err = c.initialize(ctx, V20251125); err != nil {
				err = fmt.Errorf("server/discover %s, then %w", refusal, err)
			}
		}
	default:
		cn, err = c.initialize(ctx, want)
	}
	if err != nil {
		return nil, err
	}
	cn.want = want
	return cn, nil
}

// discover probes for 2026-07-28. It returns the connection if the server
// serves that version, else what the server said instead.
func (c *Client) discover(ctx context.Context) (*connection, string, error) {
	st := wireState{version: V20260728}
	a, err := c.do(ctx, RPC{Method: "server/discover", Label: "server/discover"}, st)
	if err != nil {
		return nil, "", fmt.Errorf("server/discover: %w", err)
	}
	if a.Status != http.StatusOK || a.Response == nil || a.HasError() {
		return nil, describe(a), nil
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(a.Response.Result, &res); err != nil || !slices.Contains(res.SupportedVersions, V20260728) {
		return nil, fmt.Sprintf("answered supportedVersions %q", res.SupportedVersions), nil
	}
	cn := &connection{version: V20260728}
	var info implementation
	if json.Unmarshal(res.Meta[MetaServerInfo], &info) == nil {
		cn.serverName, cn.serverVersion = info.Name, info.Version
	}
	return cn, "", nil
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// initialize runs the 2025-11-25 handshake for version v.
func (c *Client) initialize(ctx context.Context, v string) (*connection, error) {
	st := wireState{version: v}
	a, err := c.do(ctx, RPC{
		Method: "initialize",
		Params: map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{},
			"clientInfo":      c.clientInfo(),
		},
		Label: "initialize",
	}, st)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if a.Status != http.StatusOK || a.Response == nil || a.HasError() {
		return nil, fmt.Errorf("initialize: %s", describe(a))
	}
	var res struct {
		ProtocolVersion string         `json:"protocolVersion"`
		ServerInfo      implementation `json:"serverInfo"`
	}
	if err := json.Unmarshal(a.Response.Result, &res); err != nil {
		return nil, fmt.Errorf("initialize: decode result: %w", err)
	}
	if res.ProtocolVersion != v {
		return nil, fmt.Errorf("initialize: server negotiated protocol %q, want %q", res.ProtocolVersion, v)
	}
	cn := &connection{
		version: v, sessionID: a.Header.Get("Mcp-Session-Id"),
		serverName: res.ServerInfo.Name, serverVersion: res.ServerInfo.Version,
	}
	st.sessionID = cn.sessionID
	n, err := c.do(ctx, RPC{Method: "notifications/initialized", Notification: true, Label: "initialized"}, st)
	if err != nil {
		return nil, fmt.Errorf("initialized notification: %w", err)
	}
	if n.Status != http.StatusAccepted && n.Status != http.StatusOK && n.Status != http.StatusNoContent {
		return nil, fmt.Errorf("initialized notification: http %d: %s", n.Status, snippet(n.Body))
	}
	return cn, nil
}

// describe says what a refusing answer was, for errors.
func describe(a *Answer) string {
	if a.HasError() {
		return fmt.Sprintf("answered http %d, error %d %q", a.Status, a.ErrorCode(), a.ErrorMessage())
	}
	if loc := a.Header.Get("Location"); a.Status >= 300 && a.Status < 400 && loc != "" {
		// A redirect: where it points is what the user needs (a URL
		// behind a load balancer, http where https is served).
		return fmt.Sprintf("answered http %d, a redirect to %s (use that URL as the target)", a.Status, loc)
	}
	msg := fmt.Sprintf("answered http %d", a.Status)
	if body := snippet(a.Body); body != "" {
		msg += ": " + body
	}
	if hint := statusHint[a.Status]; hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

// statusHint says what to change for the HTTP statuses a wrong target URL
// or profile most often gets.
var statusHint = map[int]string{
	http.StatusUnauthorized:     "check the profile's auth header, scheme and API key",
	http.StatusForbidden:        "the API key is known but refused: check the profile's API key",
	http.StatusNotFound:         "no MCP endpoint at this path: check the target URL's path, often /mcp",
	http.StatusMethodNotAllowed: "this URL does not take POST: it is not an MCP Streamable HTTP endpoint",
	http.StatusNotImplemented:   "this URL does not take POST: it is not an MCP Streamable HTTP endpoint",
}

// state is what a request is sent with: the connection's, after connecting
// unless skip is set.
func (c *Client) state(ctx context.Context, skip bool) (wireState, error) {
	if !skip {
		cn, err := c.connect(ctx)
		if err != nil {
			return wireState{}, err
		}
		return wireState{version: cn.version, sessionID: cn.sessionID}, nil
	}
	want := c.ProtocolVersion
	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	if cn != nil && cn.want == want {
		return wireState{version: cn.version, sessionID: cn.sessionID}, nil
	}
	if want == "" {
		want = V20251125
	}
	return wireState{version: want}, nil
}

// Cancel sends notifications/cancelled for requestID (a JSON-RPC id as sent,
// e.g. from NextID), on the connection like any request: on the session on
// 2025-11-25, with the version headers and _meta on 2026-07-28. A go-sdk
// server cancels the handler of a call in flight on that session. On
// 2026-07-28 every POST is its own request lifecycle, so a go-sdk server
// cannot match the notification to a call on another POST: there the way
// to cancel is to cancel the call's context, which closes its connection.
func (c *Client) Cancel(ctx context.Context, requestID json.RawMessage, reason string) (*Answer, error) {
	if !json.Valid(requestID) {
		return nil, fmt.Errorf("cancel: request id %q is not valid JSON", requestID)
	}
	params := map[string]any{"requestId": requestID}
	if reason != "" {
		params["reason"] = reason
	}
	return c.Do(ctx, RPC{
		Method: "notifications/cancelled", Params: params, Notification: true,
		Label: "cancel " + string(requestID),
	})
}

// CallTool sends one tools/call, connecting first if needed. HTTP and
// JSON-RPC errors are answers, not errors: the error is for transport
// failures, and even then the Answer is returned with its Exchange so the
// evidence is kept. The one exception is a failed handshake: the call was
// never sent, so there is no Answer, and the handshake's own exchanges went
// to Record.
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
	params := map[string]any{"name": call.Tool}
	if c.Render != nil {
		args = c.Render(call.Tool, args)
	}
	if call.IdempotencyKey != "" {
		args = c.placeKey(call.IdempotencyKey, args, params, meta, h)
	}
	params["arguments"] = args
	if call.PermitID != "" {
		h.Set("X-Permit-Id", call.PermitID)
	}
	for k, vs := range call.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	if call.InputResponses != nil {
		params["inputResponses"] = call.InputResponses
	}
	if call.RequestState != "" {
		params["requestState"] = call.RequestState
	}
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
		NoHandshake: call.NoHandshake,
	})
}

// ListTools sends tools/list.
func (c *Client) ListTools(ctx context.Context) (*Answer, error) {
	return c.Do(ctx, RPC{Method: "tools/list"})
}

// Do sends any JSON-RPC request, connecting first unless it is an
// initialize or NoHandshake, and adding the SEP-2575 _meta and headers under
// 2026-07-28. When connecting fails the request is not sent and the Answer
// is nil; the handshake's exchanges went to Record.
func (c *Client) Do(ctx context.Context, r RPC) (*Answer, error) {
	st, err := c.state(ctx, r.NoHandshake || r.Method == "initialize")
	if err != nil {
		return nil, err
	}
	return c.do(ctx, r, st)
}

func (c *Client) do(ctx context.Context, r RPC, st wireState) (*Answer, error) {
	params := map[string]any{}
	for k, v := range r.Params {
		params[k] = v
	}
	h := http.Header{}
	if st.version == V20260728 {
		// The SDK reads the _meta triple on calls only; on a notification it
		// is ignored but keeps every message of this wire alike.
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
		if uri, ok := params["uri"].(string); ok && r.Method == "resources/read" {
			h.Set("Mcp-Name", uri)
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
	return c.post(ctx, Post{
		Body: body, Header: h, ID: id, Label: label, Lane: r.Lane,
		DropAfterSend: r.DropAfterSend, DropWait: r.DropWait,
	}, st)
}

// Send posts a raw body with the default headers overridden by header.
func (c *Client) Send(ctx context.Context, body []byte, header http.Header) (*Answer, error) {
	return c.Post(ctx, Post{Body: body, Header: header, Label: "raw"})
}

// Post sends p with the client's default headers and reads the answer. It
// connects first, unless p is NoHandshake or its body is an initialize, and
// sends the body on the connection (Mcp-Session-Id, MCP-Protocol-Version),
// so a target judges a malformed or batch body rather than a missing
// session. When connecting fails the body is not sent and the Answer is nil.
func (c *Client) Post(ctx context.Context, p Post) (*Answer, error) {
	st, err := c.state(ctx, p.NoHandshake || isInitialize(p.Body))
	if err != nil {
		return nil, err
	}
	return c.post(ctx, p, st)
}

func (c *Client) post(ctx context.Context, p Post, st wireState) (*Answer, error) {
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
	c.defaultHeaders(req.Header, st, isInitialize(p.Body))
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
	a := &Answer{receipt: c.receiptPath(), marker: c.ReplayMarker}
	if c.RefusalReceiptPath != "" && c.RefusalReceiptPath != DefaultRefusalReceiptPath {
		if p, err := ParsePath(c.RefusalReceiptPath); err == nil {
			a.refusalReceipt = p
		}
	}
	a.Exchange = reports.Exchange{
		Label: p.Label, Lane: lane, Method: req.Method, URL: endpoint,
		RequestHeaders: flatten(req.Header, c.authHeader(), c.principalHeader()),
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
	a.Exchange.ResponseHeaders = flatten(resp.Header, "", "")
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

func (c *Client) defaultHeaders(h http.Header, st wireState, initialize bool) {
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	if !initialize {
		// The version header goes on every request after initialize
		// (2025-11-25 transports section), and on every request in 2026-07-28.
		h.Set("Mcp-Protocol-Version", st.version)
	}
	if st.sessionID != "" {
		h.Set("Mcp-Session-Id", st.sessionID)
	}
	if c.APIKey != "" {
		prefix := c.AuthPrefix
		if prefix == "" && c.authHeader() == "Authorization" {
			prefix = "Bearer "
		}
		h.Set(c.authHeader(), prefix+c.APIKey)
	}
	if c.PrincipalToken != "" {
		h.Set(c.principalHeader(), c.PrincipalToken)
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

func (c *Client) principalHeader() string {
	if c.PrincipalHeader == "" {
		return "X-Principal-Token"
	}
	return http.CanonicalHeaderKey(c.PrincipalHeader)
}

func (c *Client) keyField() string {
	if c.KeyMetaField == "" {
		return DefaultKeyMeta
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

// snippet is a body as one line for an error message: an HTML page by its
// title, anything else with its whitespace collapsed, cut at 200 runes.
func snippet(b []byte) string {
	s := string(b)
	if m := htmlTitle.FindStringSubmatch(s); m != nil {
		s = "an HTML page titled " + strconv.Quote(strings.TrimSpace(m[1]))
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

var htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
