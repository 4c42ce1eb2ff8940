// Package tools runs the reference gateway's tools: the local partner.*
// tools in process, and upstream tools over MCP (a go-sdk client per upstream
// URL). It implements gateway.Dispatcher and, for tools/list, wire.ToolLister.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// Local tool names.
const (
	Echo       = "partner.echo"
	NotesWrite = "partner.notes.write"
	NotesCount = "partner.notes.count"
)

// MetaKey is where tools/list shows a tool's price and flags in its _meta.
const MetaKey = "io.mcpconform/tool"

var local = []store.Tool{
	{Name: Echo, Description: "Echoes its arguments back (structuredContent is the arguments object).", Price: 1},
	{Name: NotesWrite, Description: "Appends a note (arguments.text, or the arguments as JSON) to the wallet's notes; returns the note count and the note's id. Mutating.", Price: 2},
	{Name: NotesCount, Description: "Counts the wallet's notes. Read-only, still metered.", Price: 1, ReadOnly: true},
}

var schemas = map[string]map[string]any{
	Echo: {"type": "object", "additionalProperties": true},
	NotesWrite: {"type": "object", "properties": map[string]any{
		"text": map[string]any{"type": "string", "description": "the note"},
	}, "additionalProperties": true},
	NotesCount: {"type": "object", "additionalProperties": true},
}

// Local returns the built-in tool definitions (their default price and flags).
func Local() []store.Tool { return append([]store.Tool(nil), local...) }

// LocalTool returns one built-in definition.
func LocalTool(name string) (store.Tool, bool) {
	for _, t := range local {
		if t.Name == name {
			return t, true
		}
	}
	return store.Tool{}, false
}

// IsLocal reports whether name is a built-in tool.
func IsLocal(name string) bool { _, ok := LocalTool(name); return ok }

// Seed registers each built-in tool that the store does not know yet. A tool
// already there (re-priced, or removed by the operator) is left alone.
func Seed(ctx context.Context, st store.Store) error {
	for _, t := range local {
		_, err := st.Tool(ctx, t.Name)
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("seed %s: %w", t.Name, err)
		}
		if err := st.PutTool(ctx, t); err != nil {
			return fmt.Errorf("seed %s: %w", t.Name, err)
		}
	}
	return nil
}

// Options tune a Dispatcher. The zero value is usable.
type Options struct {
	Clock  *clock.Clock // note times; nil: real time
	Logger *slog.Logger
	// HTTPClient talks to upstream servers. Default: dial timeout 3 s.
	HTTPClient *http.Client
	// ConnectTimeout bounds opening an upstream session. Default 10 s.
	ConnectTimeout time.Duration
	// CallTimeout bounds one upstream tools/call. Default 30 s.
	CallTimeout time.Duration
}

// Dispatcher runs tools. Safe for concurrent use.
type Dispatcher struct {
	store  store.Store
	opts   Options
	log    *slog.Logger
	client *mcp.Client

	mu       sync.Mutex
	sessions map[string]*upstream
	closed   bool

	listings listings
	routes   routes
}

type upstream struct {
	mu   sync.Mutex // serialises connecting
	sess *mcp.ClientSession
}

var _ gateway.Dispatcher = (*Dispatcher)(nil)

// New returns a Dispatcher over st.
func New(st store.Store, o Options) *Dispatcher {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.ResponseHeaderTimeout = 60 * time.Second
		o.HTTPClient = &http.Client{Transport: tr}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	d := &Dispatcher{store: st, opts: o, log: o.Logger, sessions: map[string]*upstream{}}
	d.client = mcp.NewClient(&mcp.Implementation{Name: "mcpconform-reference-gateway", Version: "0.1.0"},
		&mcp.ClientOptions{Logger: o.Logger, Capabilities: &mcp.ClientCapabilities{},
			ToolListChangedHandler: d.toolListChanged, ResourceUpdatedHandler: d.resourceUpdated,
			PromptListChangedHandler: func(ctx context.Context, r *mcp.PromptListChangedRequest) {
				d.listChanged(ctx, r.Session, relay.PromptsListChanged)
			},
			ResourceListChangedHandler: func(ctx context.Context, r *mcp.ResourceListChangedRequest) {
				d.listChanged(ctx, r.Session, relay.ResourcesListChanged)
			},
			// An upstream's input-required result is the caller's to answer
			// (upstreamOutcome), never this client's.
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	return d
}

// Dispatch runs one tool. An error means the tool did not run: a local
// tool's store write failed, the upstream could not be reached or refused
// the call with a JSON-RPC error. When the upstream may have run the call
// but its answer was lost (a timeout or a broken connection after the
// request was sent), Dispatch does not guess "nothing ran": it returns an
// isError result, which the gateway stores and charges like any outcome, so
// a retry replays it instead of running the tool a second time.
func (d *Dispatcher) Dispatch(ctx context.Context, r gateway.DispatchRequest) (json.RawMessage, error) {
	if r.Tool.UpstreamURL != "" {
		return d.dispatchUpstream(ctx, r)
	}
	args := map[string]json.RawMessage{}
	if len(r.Arguments) > 0 {
		if err := json.Unmarshal(r.Arguments, &args); err != nil {
			return nil, fmt.Errorf("%s: arguments: %w", r.Tool.Name, err)
		}
	}
	switch r.Tool.Name {
	case Echo:
		text := string(r.Arguments)
		if text == "" {
			text = "{}"
		}
		return result(text, json.RawMessage(text), false)
	case NotesWrite:
		var note string
		if err := json.Unmarshal(args["text"], &note); err != nil {
			note = string(r.Arguments)
		}
		id, err := d.store.AddNote(ctx, r.WalletID, note, d.opts.Clock.Now())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NotesWrite, err)
		}
		// The note is written: from here on the tool has run, so a failure
		// to count is reported in the result, not as "nothing ran".
		n, err := d.store.CountNotes(ctx, r.WalletID)
		if err != nil {
			return result(fmt.Sprintf("noted (note %d); counting the notes failed: %v", id, err), map[string]any{"note_id": id}, false)
		}
		return result(fmt.Sprintf("noted; the wallet has %d notes", n), map[string]any{"count": n, "note_id": id}, false)
	case NotesCount:
		n, err := d.store.CountNotes(ctx, r.WalletID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NotesCount, err)
		}
		return result(fmt.Sprintf("the wallet has %d notes", n), map[string]any{"count": n}, false)
	}
	return nil, fmt.Errorf("tool %q has no upstream_url and is not a local tool", r.Tool.Name)
}

// result builds a CallToolResult JSON with one text content.
func result(text string, structured any, isError bool) (json.RawMessage, error) {
	out := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": isError,
	}
	if structured != nil {
		out["structuredContent"] = structured
	}
	return json.Marshal(out)
}

func (d *Dispatcher) dispatchUpstream(ctx context.Context, r gateway.DispatchRequest) (json.RawMessage, error) {
	url := r.Tool.UpstreamURL
	name := r.Tool.UpstreamTool
	if name == "" {
		name = r.Tool.Name
	}
	args := r.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	rc, round := relay.From(ctx), relay.RoundFrom(ctx)
	ctx, cancel := own(ctx)
	defer cancel()
	if rc.Wants() {
		return d.dispatchRelayed(ctx, r, rc, round, name, args)
	}
	for attempt := 0; ; attempt++ {
		sess, err := d.session(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: connect: %w", url, err)
		}
		cctx, cancel := context.WithTimeout(ctx, d.opts.CallTimeout)
		res, err := sess.CallTool(cctx, callParams(rc, round, name, args))
		cancel()
		if err == nil {
			return upstreamOutcome(rc, res)
		}
		switch classify(err) {
		case notSent:
			d.evict(url, sess)
			if attempt == 0 {
				continue // a fresh session, once: the request never left
			}
			return nil, fmt.Errorf("upstream %s: %w", url, err)
		case refused:
			return nil, refusedErr(url, name, err)
		default:
			d.evict(url, sess)
			d.log.Warn("upstream outcome unknown", "url", url, "tool", name, "err", err)
			return result(fmt.Sprintf("upstream %s: the call was sent but its outcome is unknown: %v", url, err), nil, true)
		}
	}
}

// callParams is the upstream call: the tool's arguments, the capabilities
// the caller declared (when it declares them per request) and, in a later
// round of a multi-round call, the client's answers and the upstream's state.
func callParams(rc *relay.Client, r *relay.Round, name string, args json.RawMessage) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{}}
	if rc != nil && rc.Capabilities != nil {
		// The SDK declares its client's own only where _meta has none.
		p.Meta[mcp.MetaKeyClientCapabilities] = rc.Capabilities
	}
	if r != nil {
		p.InputResponses, p.RequestState = r.InputResponses, r.RequestState
	}
	return p
}

// upstreamOutcome is the call's result, or, when the upstream asks the
// client for input first, a *gateway.InputRequired for a 2026-07-28 client
// to answer in its next round. A client that cannot answer (an older
// protocol, and the upstream's requests were not relayed) is told the tool
// did not run: it has not done its work yet.
func upstreamOutcome(rc *relay.Client, res *mcp.CallToolResult) (json.RawMessage, error) {
	if !res.NeedsInput() {
		return upstreamResult(res)
	}
	if rc != nil && rc.MultiRound {
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("upstream input-required result: %w", err)
		}
		return nil, &gateway.InputRequired{Result: b}
	}
	return nil, fmt.Errorf("the upstream asked for input (%d requests) that this client cannot give: declare sampling or elicitation on a 2025-11-25 session, or call on 2026-07-28", len(res.InputRequests))
}

func upstreamResult(res *mcp.CallToolResult) (json.RawMessage, error) {
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	out := struct {
		Content           []mcp.Content `json:"content"`
		StructuredContent any           `json:"structuredContent,omitempty"`
		IsError           bool          `json:"isError"`
	}{content, res.StructuredContent, res.IsError}
	b, err := json.Marshal(out)
	if err != nil {
		return result(fmt.Sprintf("upstream result could not be encoded: %v", err), nil, true)
	}
	return b, nil
}

// refusedErr is an upstream's JSON-RPC refusal of a call: nothing ran. One
// the caller can act on is answered as the upstream said it (a refusal of
// the gateway's, with the upstream's data); any other is the gateway's
// dispatch_failed.
func refusedErr(url, name string, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code == mcp.CodeMissingRequiredClientCapabilities {
		// The caller's own declaration is what the upstream judged (the
		// call carries it): it must declare the capability, not retry.
		ref := gateway.Refuse(gateway.ReasonCapabilitiesMissing, "upstream %s: %s", name, rpc.Message)
		var data map[string]any
		if json.Unmarshal(rpc.Data, &data) == nil {
			delete(data, "reason")
			delete(data, "retryable")
			ref.Data = data
		}
		return fmt.Errorf("upstream %s refused %s: %w", url, name, ref)
	}
	return fmt.Errorf("upstream %s refused %s: %w", url, name, err)
}

type errClass int

const (
	unknownOutcome errClass = iota
	notSent                 // the request certainly did not reach the upstream
	refused                 // the upstream answered with a JSON-RPC error
)

// classify sorts an upstream call error. Only a failed dial or a session
// the upstream no longer knows (HTTP 404) prove the request did not run.
// The SDK wraps transport failures with its internal ErrRejected sentinel, a
// *jsonrpc.Error of its own (-32005 "rejected by transport"); that one is
// not an answer from the upstream.
func classify(err error) errClass {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return notSent
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		return notSent
	}
	if hasUpstreamRPCError(err) {
		return refused
	}
	return unknownOutcome
}

func hasUpstreamRPCError(err error) bool {
	if err == nil {
		return false
	}
	if w, ok := err.(*jsonrpc.Error); ok && !(w.Code == -32005 && w.Message == "rejected by transport") {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return hasUpstreamRPCError(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if hasUpstreamRPCError(e) {
				return true
			}
		}
	}
	return false
}

// session returns the cached session for url, connecting if there is none.
func (d *Dispatcher) session(ctx context.Context, url string) (*mcp.ClientSession, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errors.New("dispatcher closed")
	}
	u, ok := d.sessions[url]
	if !ok {
		u = &upstream{}
		d.sessions[url] = u
	}
	d.mu.Unlock()

	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess != nil {
		return u.sess, nil
	}
	// Not ctx itself: go-sdk's server keeps a request's protocol version in
	// its context and go-sdk's client sends a context's version with
	// initialize, so a connect made for a 2026-07-28 call would ask a
	// stateful upstream for 2026-07-28 and be refused. Only ctx's end is
	// passed on.
	cctx, cancel := context.WithTimeout(context.Background(), d.opts.ConnectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	// The standalone stream stays on: a 2025-11-25 upstream sends
	// notifications/tools/list_changed over it.
	sess, err := d.client.Connect(cctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: d.opts.HTTPClient,
		MaxRetries: -1,
	}, nil)
	if err != nil {
		return nil, err
	}
	u.sess = sess
	return sess, nil
}

// evict forgets sess (if it is still url's session) and closes it.
func (d *Dispatcher) evict(url string, sess *mcp.ClientSession) {
	d.mu.Lock()
	u := d.sessions[url]
	d.mu.Unlock()
	if u == nil {
		return
	}
	u.mu.Lock()
	if u.sess == sess {
		u.sess = nil
		// A new session may find another server there (a restart, a
		// deployment): its tools are listed again.
		d.listings.drop(url)
	}
	u.mu.Unlock()
	go func() { _ = sess.Close() }()
}

// forget closes url's session and drops what was learnt from it.
func (d *Dispatcher) forget(url string) {
	d.mu.Lock()
	u := d.sessions[url]
	delete(d.sessions, url)
	d.mu.Unlock()
	d.listings.drop(url)
	if u == nil {
		return
	}
	u.mu.Lock()
	s := u.sess
	u.sess = nil
	u.mu.Unlock()
	if s != nil {
		go func() { _ = s.Close() }()
	}
}

// Close ends every upstream session.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	d.closed = true
	ups := d.sessions
	d.sessions = map[string]*upstream{}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range ups {
		u.mu.Lock()
		s := u.sess
		u.sess = nil
		u.mu.Unlock()
		if s != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.Close() }()
		}
	}
	wg.Wait()
	return nil
}

// ListTools answers tools/list from the registry (removed tools are left
// out); an upstream tool shows its upstream's entry (listing.go).
func (d *Dispatcher) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	ts, err := d.store.Tools(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	urls := map[string]bool{}
	for _, t := range ts {
		if !t.Removed && t.UpstreamURL != "" {
			urls[t.UpstreamURL] = true
		}
	}
	ups := d.upstreamListings(ctx, urls)
	out := make([]*mcp.Tool, 0, len(ts))
	for _, t := range ts {
		if t.Removed {
			continue
		}
		entry, err := entryOf(t, ups)
		if err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	return out, nil
}

// ListTool is the one tools/list entry of name, as ListTools would show it;
// false when no such tool is listed (unknown or removed). It reads one tool
// and its upstream's listing, not the whole registry: it runs on every
// 2026-07-28 tools/call (the Mcp-Param header check), whose request's
// toolmemo.Memo (in ctx) keeps the tool read for the gateway's own read.
func (d *Dispatcher) ListTool(ctx context.Context, name string) (*mcp.Tool, bool, error) {
	memo := toolmemo.From(ctx)
	ctx, cancel := own(ctx) // see own
	defer cancel()
	t, err := memo.Tool(ctx, d.store, name)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.Removed) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var ups map[string]listing
	if t.UpstreamURL != "" {
		ups = d.upstreamListings(ctx, map[string]bool{t.UpstreamURL: true})
	}
	entry, err := entryOf(t, ups)
	if err != nil {
		return nil, false, err
	}
	return entry, true, nil
}

// entryOf is a registered tool's tools/list entry: an upstream tool its
// upstream's entry (ups, by URL) under the gateway's name, a local tool its
// own; both with the gateway's pricing in _meta.
func entryOf(t store.Tool, ups map[string]listing) (*mcp.Tool, error) {
	var entry *mcp.Tool
	if t.UpstreamURL != "" {
		name := t.UpstreamTool
		if name == "" {
			name = t.Name
		}
		var err error
		if entry, err = upstreamEntry(t, ups[t.UpstreamURL][name]); err != nil {
			return nil, err
		}
	} else {
		desc := t.Description
		if lt, ok := LocalTool(t.Name); ok && desc == "" {
			desc = lt.Description
		}
		schema, ok := schemas[t.Name]
		if !ok {
			schema = map[string]any{"type": "object"}
		}
		entry = &mcp.Tool{Name: t.Name, Description: desc, InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly}}
	}
	if entry.Meta == nil {
		entry.Meta = mcp.Meta{}
	}
	entry.Meta[MetaKey] = map[string]any{
		"price": t.Price, "read_only": t.ReadOnly, "approval": t.Approval, "upstream": t.UpstreamURL != "",
	}
	return entry, nil
}

// own returns a context with ctx's deadline and cancellation but none of its
// values. An upstream call is made while a gateway request is being served,
// and the SDK reads that request's protocol version, id and log level from
// the context: carried over, they would be sent to the upstream as the
// gateway's own (an initialize claiming the client's protocol version).
func own(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var c2 context.CancelFunc
		out, c2 = context.WithDeadline(out, dl)
		prev := cancel
		cancel = func() { c2(); prev() }
	}
	stop := context.AfterFunc(ctx, cancel)
	return out, func() { stop(); cancel() }
}
