// Package vendorgw is a small MCP gateway the harness did not write, used only
// by the harness's own tests: it proves the harness against a gateway with
// other wire spellings than the reference (its own error codes and reasons,
// its receipt under result._meta["acme/receipt"], SSE answers, strict
// sessions). It meters nothing. In Naive mode it forwards every call, which
// the harness must fail; in Idempotent mode it keeps an in-memory record per
// (tenant, tool, idempotency key), which the harness must pass. It reads the
// key from the Idempotency-Key header, another header, a tools/call params
// member or the tool's arguments (Options.Key), leaving a key in the
// arguments out of their fingerprint and of what it forwards.
package vendorgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures Start.
type Options struct {
	Addr        string            // listen address; default "127.0.0.1:0"
	UpstreamURL string            // the MCP server whose tools it exposes (the harness probe)
	APIKeys     map[string]string // bearer key -> tenant name; any other key is refused
	Tools       []Tool            // exposed names -> upstream tool names
	Mode        Mode              // Naive or Idempotent
	// BeforeDispatch, if set, is called when an idempotent call has reserved
	// its key and is about to dispatch, so tests can hold it there.
	BeforeDispatch func(key string)
	// LateDuplicate, if positive, puts a bug in: every dispatched call is
	// sent upstream once more this long after it was first answered (a
	// retry queue that re-sends finished work), so the harness's end-of-run
	// recount can be shown to see a dispatch that came late.
	LateDuplicate time.Duration
	// KeepUpstreamResult answers with the upstream's result as its client
	// decoded it, as a thin go-sdk proxy does: against a 2026-07-28
	// upstream it carries resultType "complete" on every wire, which
	// 2025-11-25's schema admits (its Result allows any member).
	KeepUpstreamResult bool
	// Key is where the gateway reads the idempotency key; the zero value
	// is the Idempotency-Key header.
	Key KeyAt
	// HTTPStyle answers refusals with the IETF idempotency-key draft's
	// HTTP statuses and marks replays with its header.
	HTTPStyle HTTPStyle
	// Bugs put in the faults an adversarial review built against the
	// harness, each shown caught by a test of cmd/mcpconform.
	Bugs Bugs
}

// Bugs are deliberate faults of the test gateway.
type Bugs struct {
	// ForwardUnkeyedReads: an unkeyed call of a read-only tool is
	// forwarded instead of refused.
	ForwardUnkeyedReads bool
	// LateUnkeyedDispatch: an unkeyed call is refused at once and
	// dispatched upstream this long after all the same.
	LateUnkeyedDispatch time.Duration
	// LeakAcrossScope: a call whose key has no record in its own scope but
	// a finished one with the same arguments in another is dispatched as
	// its own operation, yet answered with the other scope's stored content
	// under a receipt of its own.
	LeakAcrossScope bool
	// BusyNotRetryable: a duplicate of a running operation is refused busy
	// with retryable false.
	BusyNotRetryable bool
	// KeyIgnored: a keyed call is forwarded with no record of it, as by a
	// server that never reads the key where the client puts it, so every
	// retry runs again.
	KeyIgnored bool
	// KeyInFingerprint (key in the arguments): an operation is looked up by
	// the hash of its arguments with the key among them, as by a server
	// that dedupes requests by their hash: the same key with other
	// arguments is another hash, run as a new operation.
	KeyInFingerprint bool
	// ReplayAnyArgs: the same key with other arguments gets the stored
	// result instead of a refusal.
	ReplayAnyArgs bool
}

// Tool exposes the upstream tool Upstream as Name.
type Tool struct {
	Name, Upstream string
	ReadOnly       bool
}

// Mode says whether the gateway honours idempotency keys.
type Mode int

const (
	Naive      Mode = iota // forwards every call, keys ignored
	Idempotent             // one dispatch per (tenant, tool, key)
)

// dispatchTimeout bounds an upstream call. The call does not end with its
// client's request: an outcome that arrives after the client left is still
// stored, so a retry replays it.
const dispatchTimeout = 30 * time.Second

// Gateway is a running gateway.
type Gateway struct {
	o         Options
	ln        net.Listener
	srv       *http.Server
	server    *mcp.Server
	upstream  *mcp.ClientSession
	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	seq     int               // receipts issued
	records map[scope]*record // Idempotent mode only
	replays replays           // HTTPStyle only: requests answered from a record
}

// Start connects to the upstream, lists its tools and serves the configured
// ones at /mcp.
func Start(ctx context.Context, o Options) (*Gateway, error) {
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("vendorgw: %w", err)
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	// The caller's map and slice stay the caller's.
	o.APIKeys, o.Tools = maps.Clone(o.APIKeys), slices.Clone(o.Tools)
	client := mcp.NewClient(&mcp.Implementation{Name: "acme-gateway", Version: "4.2"}, nil)
	up, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.UpstreamURL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("vendorgw: connect upstream %s: %w", o.UpstreamURL, err)
	}
	g := &Gateway{o: o, upstream: up, records: map[scope]*record{}}
	if err := g.build(ctx); err != nil {
		_ = up.Close()
		return nil, fmt.Errorf("vendorgw: %w", err)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		_ = up.Close()
		return nil, fmt.Errorf("vendorgw: listen %s: %w", o.Addr, err)
	}
	g.ln = ln
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Stateful, and answering with event streams (JSONResponse off), unlike
	// the reference: the harness must cope with sessions and SSE.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Logger: logger})
	// RequireBearerToken puts the tenant in the request's TokenInfo, which
	// go-sdk hands to the tool handler (RequestExtra) and uses to bind a
	// session to the tenant that opened it. It never refuses: g.authenticate
	// has already answered a bad key in this gateway's own spelling.
	bind := auth.RequireBearerToken(func(_ context.Context, key string, _ *http.Request) (*auth.TokenInfo, error) {
		tenant, ok := o.APIKeys[key]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tenant}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	mux := http.NewServeMux()
	var next http.Handler = bind(h)
	if o.Key.Placement == KeyInParams {
		next = o.Key.LiftParamsKey(next)
	}
	if o.HTTPStyle.On {
		next = g.httpStyle(next)
	}
	mux.Handle("/mcp", g.authenticate(next))
	g.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

func (o *Options) check() error {
	if o.UpstreamURL == "" {
		return errors.New("no upstream URL")
	}
	if len(o.APIKeys) == 0 {
		return errors.New("no API keys")
	}
	for key, tenant := range o.APIKeys {
		if key == "" || strings.ContainsAny(key, " \t") || tenant == "" {
			return fmt.Errorf("API key %q for tenant %q: want a non-empty key without blanks and a tenant", key, tenant)
		}
	}
	if len(o.Tools) == 0 {
		return errors.New("no tools")
	}
	seen := map[string]bool{}
	for _, t := range o.Tools {
		if t.Name == "" || t.Upstream == "" {
			return fmt.Errorf("tool %q -> %q: want both names", t.Name, t.Upstream)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q listed twice", t.Name)
		}
		seen[t.Name] = true
	}
	if err := o.Key.Check(); err != nil {
		return err
	}
	if o.HTTPStyle.RetryAfter < 0 {
		return fmt.Errorf("HTTP style: Retry-After %d: want seconds >= 0", o.HTTPStyle.RetryAfter)
	}
	if m := o.HTTPStyle.MissingKeyStatus; m != 0 && m != http.StatusBadRequest && m != http.StatusPreconditionRequired {
		return fmt.Errorf("HTTP style: missing-key status %d: want 400 or 428, as the draft allows", m)
	}
	if o.Mode != Naive && o.Mode != Idempotent {
		return fmt.Errorf("unknown mode %d", o.Mode)
	}
	return nil
}

// build registers each configured tool with the upstream tool's schema and
// annotations, the read-only hint being the configuration's.
func (g *Gateway) build(ctx context.Context) error {
	upstream := map[string]*mcp.Tool{}
	for t, err := range g.upstream.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list upstream tools: %w", err)
		}
		upstream[t.Name] = t
	}
	// No SupportedProtocolVersions narrowing is needed for strictness:
	// go-sdk's stateful transport already refuses a 2026-07-28 request
	// (which would need no initialize) as an unsupported version.
	g.server = mcp.NewServer(&mcp.Implementation{Name: "acme-gateway", Version: "4.2"},
		&mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, t := range g.o.Tools {
		ut := upstream[t.Upstream]
		if ut == nil {
			return fmt.Errorf("tool %q: upstream has no tool %q", t.Name, t.Upstream)
		}
		ann := mcp.ToolAnnotations{}
		if ut.Annotations != nil {
			ann = *ut.Annotations
		}
		ann.ReadOnlyHint = t.ReadOnly
		schema := ut.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		g.server.AddTool(&mcp.Tool{Name: t.Name, Description: ut.Description, InputSchema: schema, Annotations: &ann},
			g.handle(t))
	}
	return nil
}

// authenticate answers a missing or unknown key with HTTP 401 and a JSON-RPC
// error, the request's id echoed when it can be read.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if _, ok := g.o.APIKeys[key]; ok && strings.EqualFold(scheme, "Bearer") {
			next.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			_ = json.Unmarshal(body, &req) // an unreadable body is answered with id null
		}
		id := req.ID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="acme"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": CodeAuthFailed, "message": "acme: API key refused",
				"data": errData{Reason: ReasonAuthFailed}},
		})
	})
}

// URL is the MCP endpoint, http://HOST:PORT/mcp.
func (g *Gateway) URL() string { return "http://" + g.ln.Addr().String() + "/mcp" }

// Close stops serving and closes the upstream session.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		// Close, not Shutdown: a client's standalone SSE stream would keep
		// Shutdown waiting.
		err := g.srv.Close()
		for ss := range g.server.Sessions() {
			_ = ss.Close()
		}
		g.closeErr = errors.Join(err, g.upstream.Close())
		if g.closeErr != nil {
			g.closeErr = fmt.Errorf("vendorgw: close: %w", g.closeErr)
		}
	})
	return g.closeErr
}
