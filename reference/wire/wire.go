// Package wire serves the reference gateway's MCP endpoint, POST /mcp, over
// Streamable HTTP with github.com/modelcontextprotocol/go-sdk.
//
// The SDK owns the protocol (initialize and sessions for 2025-11-25, the
// per-request _meta of the stateless 2026-07-28 revision, SSE/JSON framing,
// header checks). This package owns everything around it:
//
//   - before the SDK sees a request: API-key authentication (before the body
//     is read), then the body's deadline, the 1 MiB body limit, the batch
//     refusal and parse errors, each answered with a JSON-RPC error whose
//     data carries a stable reason (docs/wire.md);
//   - inside the SDK: a receiving middleware that answers tools/call and
//     tools/list itself, so every call (also one naming a tool removed since,
//     whose stored outcome may still replay) goes to the gateway core and never
//     to SDK tool registration;
//   - after the SDK: the refusals the SDK answers itself (headers, sessions,
//     unknown methods) get a data.reason too (answerWriter), and the
//     drop_response fault closes the connection without a byte of response.
//
// The SDK handles JSON-RPC in goroutines other than ServeHTTP's, and for
// stateful sessions with a context detached from the HTTP request. The outer
// handler therefore registers a per-request state under a random token and
// passes the token down in an internal header that only it sets (any client
// copy is deleted first); the middleware finds the authenticated caller and
// the drop flag through it.
package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// Core is what the wire layer needs from the gateway core (*gateway.Gateway).
type Core interface {
	// Call runs one tools/call. Errors are a *gateway.Refusal or internal.
	Call(ctx context.Context, r gateway.CallRequest) (gateway.CallResponse, error)
	// Authenticate resolves an API key; a *gateway.Refusal (unauthenticated)
	// when it is unknown or wrong.
	Authenticate(ctx context.Context, apiKey string) (gateway.Caller, error)
	// ToolMemo is the Memo a request of the caller reads its tool through.
	ToolMemo(c gateway.Caller) *toolmemo.Memo
}

// PrincipalVerifier verifies an X-Principal-Token. Errors are a
// *gateway.Refusal (principal_invalid) or internal.
type PrincipalVerifier interface {
	Verify(ctx context.Context, token string) (*gateway.PrincipalRef, error)
}

// ToolLister answers tools/list, and reads one tool's entry of it.
type ToolLister interface {
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	// ListTool is name's entry of ListTools, false when it has none.
	ListTool(ctx context.Context, name string) (*mcp.Tool, bool, error)
}

// Header names.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderPrincipalToken = "X-Principal-Token"
	HeaderPermitID       = "X-Permit-Id"
	HeaderProtocol       = "Mcp-Protocol-Version"
	HeaderSession        = "Mcp-Session-Id"

	// headerInternal carries the per-request token from the outer handler to
	// the middleware. Client copies are deleted before it is set.
	headerInternal = "X-Mcpconform-Internal-Request"
)

// _meta keys a client may use instead of the headers.
const (
	MetaIdempotencyKey = "idempotencyKey"
	MetaPermitID       = "permitId"
)

// MaxBodyBytes is the largest request body /mcp accepts.
const MaxBodyBytes = 1 << 20

// Protocol versions this layer routes on.
const (
	Protocol20251125 = "2025-11-25"
	Protocol20260728 = "2026-07-28"
)

// Options tune the handler. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Name and Version are the server's Implementation; defaults apply.
	Name, Version string
	// CallTimeout bounds one tools/call inside the core (which keeps running
	// when the client goes away, so its outcome is stored for a retry).
	// Zero means 2 minutes.
	CallTimeout time.Duration
	// SessionTimeout closes idle 2025-11-25 sessions. Zero means 30 minutes.
	SessionTimeout time.Duration
	// Codes are the JSON-RPC codes of the gateway's reasons (a table of
	// gateway.CodeTable); nil answers with gateway.Codes.
	Codes map[string]int64
	// Relay serves the registered upstream servers' prompts, resources and
	// completion; nil serves tools alone.
	Relay Relay
	// Bugs are the bug switches of the wire layer (reference/bugs).
	Bugs bugs.Set
	// BodyTimeout bounds reading one request body, counted from when the
	// API key was accepted. Zero means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxSessionsPerKey bounds the live 2025-11-25 sessions of one API key
	// in this process; an initialize over it is refused
	// session_limit_reached. Zero means DefaultMaxSessionsPerKey; negative,
	// no bound.
	MaxSessionsPerKey int
}

// DefaultBodyTimeout is how long a request body may take to arrive: 1 MiB
// at about 35 KB/s.
const DefaultBodyTimeout = 30 * time.Second

// Handler returns the http.Handler for POST /mcp (and GET/DELETE of
// 2025-11-25 sessions). verifier may be nil: principal tokens are then refused.
func Handler(core Core, verifier PrincipalVerifier, tools ToolLister, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "mcpconform-reference-gateway"
	}
	if opts.Version == "" {
		opts.Version = "0.1.0"
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 2 * time.Minute
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.MaxSessionsPerKey == 0 {
		opts.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	h := &handler{core: core, verifier: verifier, tools: tools, opts: opts, log: opts.Logger}

	sopts := &mcp.ServerOptions{
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		// tools/list is answered by our middleware; SetCacheable is never
		// consulted for it.
	}
	if opts.Relay != nil {
		// The middleware declares what is served (relay.go); these let the
		// SDK keep each session's subscriptions and log level, and send the
		// list changes of relayed prompts and resources (listChanged).
		sopts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		sopts.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}
		sopts.Capabilities.Logging = &mcp.LoggingCapabilities{}
		sopts.SubscribeHandler = func(ctx context.Context, r *mcp.SubscribeRequest) error { return opts.Relay.Subscribe(ctx, r.Params) }
		sopts.UnsubscribeHandler = func(ctx context.Context, r *mcp.UnsubscribeRequest) error {
			return opts.Relay.Unsubscribe(ctx, r.Params)
		}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, sopts)
	server.AddReceivingMiddleware(h.middleware)
	h.server = server
	if opts.Relay != nil {
		opts.Relay.OnResourceUpdated(func(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
			if err := server.ResourceUpdated(ctx, p); err != nil {
				h.log.Warn("relay a resource update", "uri", p.URI, "err", err)
			}
		})
		opts.Relay.OnListChanged(func(_ context.Context, method string) { h.listChanged(method) })
	}
	getServer := func(*http.Request) *mcp.Server { return server }

	// Both handlers answer with application/json (one response per POST),
	// which keeps curl usable and makes drop_response one discarded write.
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		JSONResponse:        true,
		Logger:              opts.Logger,
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              opts.Logger,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	// A stateless tools/call that asks for messages during the call (a
	// progressToken, a log level) is answered with an event stream, the only
	// answer that can carry them there.
	streaming := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              opts.Logger,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	// The SDK binds a 2025-11-25 session to the TokenInfo.UserID of the
	// request that created it; we authenticated already, so the "verifier"
	// only hands the result on: a session opened with one API key cannot be
	// used with another.
	bind := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		st := h.state(r.Header)
		if st == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: st.caller.APIKeyID}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.stateful = bind(stateful)
	h.stateless = bind(stateless)
	h.streaming = bind(streaming)
	return h
}

type handler struct {
	core      Core
	verifier  PrincipalVerifier
	tools     ToolLister
	opts      Options
	log       *slog.Logger
	server    *mcp.Server // the SDK's, for the tools whose Mcp-Param headers it checks (paramheaders.go)
	params    paramTools  // what server was told of them
	stateful  http.Handler
	stateless http.Handler
	streaming http.Handler // stateless, answering with an event stream
	states    sync.Map     // token -> *requestState
	logLevels sync.Map     // 2025-11-25 session id -> sessionLevel, until the session ends
	// sessionPrincipals: 2025-11-25 session id -> the principal its first
	// verified token named, kept only for the principal-per-session bug.
	sessionPrincipals sync.Map
	// levelCleared, if set, is called once a closed session's log level
	// was dropped (tests wait on it).
	levelCleared func(sessionID string)
	sessions     sessionCount // live 2025-11-25 sessions per API key
	// sessionEnded, if set, is called once an ended session's slot was
	// given back (tests wait on it).
	sessionEnded func(apiKeyID string)
}

// requestState is what the outer handler knows about one HTTP request.
type requestState struct {
	caller gateway.Caller
	drop   atomic.Bool
	// http is the HTTP request's context: done once the client closed the
	// connection or stream that carries the request.
	http context.Context
	// tool is the request's read of the tool a tools/call names. It is
	// handed to the core here, not in the HTTP request's context: a
	// 2025-11-25 session's handlers run on the session's context.
	tool *toolmemo.Memo
	// session is the slot an initialize reserved for the session it opens.
	session *sessionSlot
}

func (h *handler) state(hd http.Header) *requestState {
	tok := hd.Get(headerInternal)
	if tok == "" {
		return nil
	}
	v, ok := h.states.Load(tok)
	if !ok {
		return nil
	}
	return v.(*requestState)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.Error("mcp handler panic", "panic", fmt.Sprint(v))
			h.writeError(w, http.StatusInternalServerError, nil, gateway.Refuse(gateway.ReasonInternal, "internal error"))
		}
	}()
	// Nobody but this handler sets the internal header.
	r.Header.Del(headerInternal)

	// The API key is checked before a byte of the body is read, so a client
	// without one cannot hold a connection open by dribbling a body.
	caller, err := h.authenticate(r)
	if err != nil {
		// The body is left unread: closing the connection after the answer
		// keeps net/http from draining it first, which would wait on a
		// client that sends it slowly.
		w.Header().Set("Connection", "close")
		id := h.refusedID(w, r)
		var ref *gateway.Refusal
		if errors.As(err, &ref) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpconform"`)
			h.writeError(w, http.StatusUnauthorized, id, ref)
			return
		}
		h.log.Error("authenticate", "err", err)
		h.writeError(w, http.StatusInternalServerError, id, gateway.Refuse(gateway.ReasonInternal, "authentication failed: internal error"))
		return
	}

	var env envelope
	if r.Method == http.MethodPost {
		body, err := h.readBody(w, r, h.opts.BodyTimeout)
		if err != nil {
			w.Header().Set("Connection", "close")
			if isTimeout(err) {
				h.writeError(w, http.StatusRequestTimeout, nil, refuse(ReasonRequestTimeout, "the request body did not arrive within %v", h.opts.BodyTimeout))
				return
			}
			h.writeError(w, http.StatusBadRequest, nil, gateway.Refuse(gateway.ReasonParse, "reading the request body: %v", err))
			return
		}
		if len(body) > MaxBodyBytes {
			w.Header().Set("Connection", "close")
			h.writeError(w, http.StatusRequestEntityTooLarge, nil, gateway.Refuse(gateway.ReasonTooLarge, "request body exceeds %d bytes", MaxBodyBytes))
			return
		}
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] == '[' {
			h.writeError(w, http.StatusBadRequest, nil, gateway.Refuse(gateway.ReasonBatch, "JSON-RPC batches are not supported; send one request per POST"))
			return
		}
		if !json.Valid(body) {
			status := http.StatusBadRequest
			if h.opts.Bugs.On(bugs.ParseError500) {
				status = http.StatusInternalServerError // BUG parse-error-500
			}
			h.writeError(w, status, nil, gateway.Refuse(gateway.ReasonParse, "the body is not valid JSON"))
			return
		}
		if trimmed[0] != '{' {
			h.writeError(w, http.StatusBadRequest, nil, refuse(ReasonInvalidRequest, "the body is not a JSON-RPC message object"))
			return
		}
		if env, err = readEnvelope(body); err != nil {
			h.writeError(w, http.StatusBadRequest, nil, refuse(ReasonInvalidRequest, "not a JSON-RPC message: %v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}

	var memo *toolmemo.Memo
	if env.Method != nil && *env.Method == "tools/call" {
		name, ref := checkCallParams(env.Params)
		if ref != nil {
			h.writeError(w, http.StatusBadRequest, env.ID, ref)
			return
		}
		// The header check's read of the tool is the core's too.
		memo = h.core.ToolMemo(caller)
		h.headerTool(toolmemo.With(r.Context(), memo), r, name)
	}

	// The SDK insists on an Accept header naming both JSON and SSE; a client
	// that sends none (curl without -H) gets JSON either way.
	if r.Header.Get("Accept") == "" {
		r.Header.Set("Accept", "application/json, text/event-stream")
	}

	st := &requestState{caller: caller, http: r.Context(), tool: memo}
	tok := newToken()
	h.states.Store(tok, st)
	defer h.states.Delete(tok)
	r.Header.Set(headerInternal, tok)

	next := h.route(r, env)
	if opensSession(r, env) && h.opts.MaxSessionsPerKey > 0 {
		if !h.sessions.reserve(caller.APIKeyID, h.opts.MaxSessionsPerKey) {
			h.writeError(w, http.StatusTooManyRequests, env.ID, refuse(ReasonSessionLimit,
				"API key %s holds %d open sessions, the most this gateway allows: end one (DELETE) or reuse one",
				caller.APIKeyID, h.opts.MaxSessionsPerKey))
			return
		}
		st.session = &sessionSlot{key: caller.APIKeyID}
		defer h.settleSession(st.session)
	}

	aw := &answerWriter{w: &dropWriter{w: w, st: st}, id: env.ID, log: h.log, codes: h.opts.Codes}
	if env.Method != nil {
		aw.method = *env.Method
	}
	next.ServeHTTP(aw, r)
	aw.finish()

	if st.drop.Load() {
		dropConnection(w)
	}
}

// route picks the SDK handler: a stateless one for the 2026-07-28
// protocol and for a sessionless non-initialize request of an older one (the
// SDK answers it in a one-request session, which lets curl call a tool
// without a handshake), streaming its answer when the call asks for
// messages during it; the stateful one otherwise.
func (h *handler) route(r *http.Request, env envelope) http.Handler {
	stateless := h.stateless
	if streams(r, env) {
		stateless = h.streaming
	}
	if v := r.Header.Get(HeaderProtocol); v >= Protocol20260728 {
		return stateless
	}
	if r.Method == http.MethodPost && r.Header.Get(HeaderSession) == "" && (env.Method == nil || *env.Method != "initialize") {
		return stateless
	}
	return h.stateful
}

// opensSession reports whether a request would open a 2025-11-25 session:
// an initialize without a session id, which route gives the stateful
// handler unless its protocol is 2026-07-28 or later.
func opensSession(r *http.Request, env envelope) bool {
	return r.Method == http.MethodPost && r.Header.Get(HeaderSession) == "" && env.Method != nil && *env.Method == "initialize" &&
		r.Header.Get(HeaderProtocol) < Protocol20260728
}

// streams reports whether a request is a tools/call asking for messages
// during the call (a progressToken, a log level in its _meta) from a client
// that accepts an event stream.
func streams(r *http.Request, env envelope) bool {
	if env.Method == nil || *env.Method != "tools/call" || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(env.Params, &p) != nil {
		return false
	}
	_, progress := p.Meta["progressToken"]
	_, level := p.Meta[mcp.MetaKeyLogLevel]
	return progress || level
}

func (h *handler) authenticate(r *http.Request) (gateway.Caller, error) {
	authz := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(strings.TrimSpace(authz), " ")
	key = strings.TrimSpace(key)
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return gateway.Caller{}, gateway.Refuse(gateway.ReasonUnauthenticated, "an API key is required: Authorization: Bearer <api key>")
	}
	return h.core.Authenticate(r.Context(), key)
}

// refusedGrace is how long the body of a request refused for its API key is
// waited for, only to echo its JSON-RPC id.
const refusedGrace = 100 * time.Millisecond

// refusedID is the id of a request refused before its body was read, when
// the body arrives within refusedGrace: a stock MCP client matches an error
// to its request by id (go-sdk's drops one with id null), and an ordinary
// client sends its body with its headers. One that dribbles it is answered
// with id null once the grace is over, never later.
func (h *handler) refusedID(w http.ResponseWriter, r *http.Request) json.RawMessage {
	if r.Method != http.MethodPost {
		return nil
	}
	body, err := h.readBody(w, r, refusedGrace)
	if err != nil || len(body) > MaxBodyBytes {
		return nil
	}
	env, err := readEnvelope(body)
	if err != nil {
		return nil
	}
	return env.ID
}

// readBody reads a POST body, at most MaxBodyBytes+1 bytes of it, within
// timeout. The deadline is the connection's read deadline, set for the
// body alone and cleared after it: http.Server.ReadTimeout would also cut
// the connection's background read while a long call or an event stream
// runs, which net/http takes for the client leaving (the call's context
// ends, a 2025-11-25 stream closes).
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, fmt.Errorf("set the body read deadline: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if cerr := rc.SetReadDeadline(time.Time{}); cerr != nil && !errors.Is(cerr, http.ErrNotSupported) && err == nil {
		err = fmt.Errorf("clear the body read deadline: %w", cerr)
	}
	return body, err
}

// isTimeout reports whether a read failed on its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func newToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}
