// Package probe is the harness's own upstream MCP server. The target forwards
// upstream tools to it, and it counts every dispatch by a token unique to each
// operation, so a scenario's dispatch count never depends on the gateway
// reporting honestly. It can also stall calls and fail them on demand.
//
// A run observes it through Upstream: Local for a probe in this process,
// Remote (Dial) for one another process serves, such as `mcpconform probe`,
// over the observation API at /probe/v1/ (see api.go). Several runs may share
// one probe: tokens are the harness's to choose (a run prefixes its own), and
// a run Forgets its prefix when it ends.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names the probe serves.
const (
	ToolWrite = "probe.write" // mutating
	ToolRead  = "probe.read"  // read-only
	// ToolAsk is mutating and multi-round (MCP 2026-07-28): its first round
	// asks the client to confirm (an input-required result with an
	// elicitation) and counts nothing; the round that brings the
	// confirmation and the state counts the dispatch, as ToolWrite does.
	ToolAsk = "probe.ask"
	// ToolSample needs the calling client to declare sampling, as a tool
	// that samples does: without it the call is refused -32021 (missing
	// required client capability, MCP 2026-07-28) and counts nothing;
	// with it, it counts a mutating dispatch as ToolWrite does.
	ToolSample = "probe.sample"
)

// Options configures Start.
type Options struct {
	// Addr is the listen address; default "127.0.0.1:0". A fixed address
	// (--probe-addr) lets an operator point a gateway's upstream at it once.
	Addr string
	// Log receives the MCP server's log; nil discards it.
	Log io.Writer
	// PollLimit bounds one long-poll request of the observation API (wait,
	// quiet); the client asks again until its own context ends. Default 60s.
	PollLimit time.Duration

	// Test hooks: after arms Quiet's timer (default time.After), and polling
	// is told when a long-poll request starts waiting.
	after   func(time.Duration) <-chan time.Time
	polling func(endpoint string)
}

// DefaultPollLimit is PollLimit's default.
const DefaultPollLimit = 60 * time.Second

// Result is the structuredContent of a successful probe call.
type Result struct {
	Token string `json:"token"`
	N     int    `json:"n"`   // dispatches of this token so far, this one included
	Seq   int    `json:"seq"` // dispatches of any token so far
}

// Probe is a running upstream server. Its methods are safe for concurrent use.
type Probe struct {
	ln   net.Listener
	srv  *http.Server
	once sync.Once

	pollLimit time.Duration
	after     func(time.Duration) <-chan time.Time
	polling   func(endpoint string)

	mu         sync.Mutex
	seq        int
	arrivals   uint64 // dispatches ever; unlike seq, never reset, so Quiet's marks survive Reset and Forget
	counts     map[string]int
	dispatches []entry
	stalls     map[string]chan struct{} // token ("" = every call) -> closed on Unstall
	failNext   int
	fails      map[string]string // token -> how its next dispatch fails (FailToolError, FailRefuse)
	changed    chan struct{}     // closed and replaced on every dispatch
	closed     chan struct{}
}

// entry is a dispatch and its place among every dispatch ever recorded.
type entry struct {
	d       judge.Dispatch
	arrival uint64
}

// Start listens and serves the probe tools at /mcp.
func Start(opts Options) (*Probe, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("probe: listen %s: %w", addr, err)
	}
	p := &Probe{
		ln: ln, counts: map[string]int{}, stalls: map[string]chan struct{}{}, fails: map[string]string{},
		changed: make(chan struct{}), closed: make(chan struct{}),
		pollLimit: opts.PollLimit, after: opts.after, polling: opts.polling,
	}
	if p.pollLimit <= 0 {
		p.pollLimit = DefaultPollLimit
	}
	if p.after == nil {
		p.after = time.After
	}
	if p.polling == nil {
		p.polling = func(string) {}
	}
	w := opts.Log
	if w == nil {
		w = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(w, nil))
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpconform-probe", Version: "1"}, &mcp.ServerOptions{Logger: logger})
	schema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"token": map[string]any{"type": "string"}},
		"required":             []string{"token"},
		"additionalProperties": true, // "same key, other arguments" tests add fields
	}
	handlers := map[string]mcp.ToolHandler{ToolWrite: p.handle(ToolWrite), ToolRead: p.handle(ToolRead), ToolAsk: p.ask, ToolSample: p.sample}
	for _, t := range Tools {
		s.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly}}, handlers[t.Name])
	}
	// Stateless: the gateway may speak either protocol version, and no
	// session state must survive between its upstream calls.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	api := p.apiHandler()
	mux.Handle(APIPath, api)
	mux.Handle(APIPath+"/", api)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *Probe) handle(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Token *string `json:"token"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args) // bad arguments still count as arrived
		token := ""
		if args.Token != nil {
			token = *args.Token
		}
		how := p.takeFail(token)
		if how == FailRefuse {
			// Refused before the tool ran: not a dispatch.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("probe: refused token %s before running it (injected)", token)}
		}
		res, fail := p.record(tool, token)
		if err := p.waitStall(ctx, token); err != nil {
			return nil, err
		}
		switch {
		case args.Token == nil:
			return toolError("probe: arguments need a string \"token\""), nil
		case fail:
			return toolError(fmt.Sprintf("probe: injected failure (token %s, n %d)", token, res.N)), nil
		case how == FailToolError:
			// The tool ran and failed: a result like any other, which names
			// the dispatch it came from as every result of the probe does.
			text, _ := json.Marshal(res)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "probe: the tool failed (injected): " + string(text)}}, StructuredContent: res}, nil
		}
		text, _ := json.Marshal(res)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: res}, nil
	}
}

// ask is ToolAsk: a round without the confirmation (or with the state of
// another token) asks for it; the round with it runs as ToolWrite does.
func (p *Probe) ask(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	state := "confirm:" + args.Token
	if r, ok := req.Params.InputResponses[AskInput].(*mcp.ElicitResult); ok && r.Action == "accept" && req.Params.RequestState == state {
		return p.handle(ToolAsk)(ctx, req)
	}
	return &mcp.CallToolResult{RequestState: state, InputRequests: mcp.InputRequestMap{
		AskInput: &mcp.ElicitParams{Message: "Run " + ToolAsk + " for token " + args.Token + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}},
	}}, nil
}

// sample is ToolSample: a request whose client capabilities lack sampling
// is refused before anything is counted, as go-sdk's everything-server
// refuses its sampling tool.
func (p *Probe) sample(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if c := req.ClientCapabilities(); c == nil || c.Sampling == nil {
		data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{
			RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
		if err != nil {
			return nil, err
		}
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "probe: the client must declare sampling", Data: data}
	}
	return p.handle(ToolSample)(ctx, req)
}

// AskInput is the id of the input ToolAsk asks for.
const AskInput = "confirm"

// record counts a dispatch on arrival, before any stall, so WaitFor sees a
// call that is being held.
func (p *Probe) record(tool, token string) (Result, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.arrivals++
	p.counts[token]++
	p.dispatches = append(p.dispatches, entry{judge.Dispatch{Token: token, Tool: tool, At: time.Now().UTC()}, p.arrivals})
	fail := p.failNext > 0
	if fail {
		p.failNext--
	}
	close(p.changed)
	p.changed = make(chan struct{})
	return Result{Token: token, N: p.counts[token], Seq: p.seq}, fail
}

// waitStall blocks while the token or every call is stalled.
func (p *Probe) waitStall(ctx context.Context, token string) error {
	for {
		p.mu.Lock()
		ch := p.stalls[token]
		if ch == nil {
			ch = p.stalls[""]
		}
		p.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("probe: stalled call abandoned: %w", ctx.Err())
		case <-p.closed:
			return errors.New("probe: closed while stalled")
		}
	}
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// URL is the MCP endpoint, http://HOST:PORT/mcp.
func (p *Probe) URL() string { return "http://" + p.ln.Addr().String() + "/mcp" }

// Addr is the address the probe listens on.
func (p *Probe) Addr() string { return p.ln.Addr().String() }

// Count is how many dispatches carried token; "" counts every dispatch.
func (p *Probe) Count(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if token == "" {
		return len(p.dispatches)
	}
	return p.counts[token]
}

// Dispatches is every dispatch so far, in arrival order.
func (p *Probe) Dispatches() []judge.Dispatch { return p.dispatchesWith("") }

// dispatchesWith is the dispatches whose token starts with prefix, in
// arrival order; never nil.
func (p *Probe) dispatchesWith(prefix string) []judge.Dispatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []judge.Dispatch{}
	for _, e := range p.dispatches {
		if strings.HasPrefix(e.d.Token, prefix) {
			out = append(out, e.d)
		}
	}
	return out
}

// Forget drops the dispatches and counts of every token starting with
// tokenPrefix ("" = all) and releases those tokens' stalls, so a probe that
// outlives many runs does not grow without bound: a run forgets its own
// prefix when it ends. Result.Seq keeps counting.
func (p *Probe) Forget(tokenPrefix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dispatches = slices.DeleteFunc(p.dispatches, func(e entry) bool { return strings.HasPrefix(e.d.Token, tokenPrefix) })
	for tok := range p.counts {
		if strings.HasPrefix(tok, tokenPrefix) {
			delete(p.counts, tok)
		}
	}
	for tok, ch := range p.stalls {
		if strings.HasPrefix(tok, tokenPrefix) {
			close(ch)
			delete(p.stalls, tok)
		}
	}
	for tok := range p.fails {
		if strings.HasPrefix(tok, tokenPrefix) {
			delete(p.fails, tok)
		}
	}
}

// Stall makes calls of token ("" = every call) block after they are
// counted, until Unstall.
func (p *Probe) Stall(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalls[token] == nil {
		p.stalls[token] = make(chan struct{})
	}
}

// Unstall releases the calls held by Stall(token).
func (p *Probe) Unstall(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ch := p.stalls[token]; ch != nil {
		close(ch)
		delete(p.stalls, token)
	}
}

// How a token's next dispatch fails (Fail).
const (
	// FailToolError: the tool runs (the dispatch counts) and answers
	// isError, a result a gateway stores, charges and replays as any other.
	FailToolError = "tool_error"
	// FailRefuse: the upstream refuses the call with a JSON-RPC error before
	// the tool runs (nothing counted): nothing ran, so nothing is charged.
	FailRefuse = "refuse"
)

// Fail makes the next dispatch of token fail as how says; the ones after
// it run as usual.
func (p *Probe) Fail(token, how string) error {
	if how != FailToolError && how != FailRefuse {
		return fmt.Errorf("probe: fail %q: want %s or %s", how, FailToolError, FailRefuse)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fails[token] = how
	return nil
}

func (p *Probe) takeFail(token string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	how := p.fails[token]
	delete(p.fails, token)
	return how
}

// FailNext makes the next n dispatches return a tool error (isError). They
// still count: the call reached the upstream.
func (p *Probe) FailNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext = n
}

// WaitFor blocks until at least n dispatches of token ("" = any) arrived.
func (p *Probe) WaitFor(ctx context.Context, token string, n int) error {
	for {
		p.mu.Lock()
		got := p.counts[token]
		if token == "" {
			got = len(p.dispatches)
		}
		ch := p.changed
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("probe: wait for %d dispatches of %q (have %d): %w", n, token, got, ctx.Err())
		}
	}
}

// Reset forgets dispatches and failures and releases every stall, between
// scenarios that share one probe.
func (p *Probe) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq, p.failNext = 0, 0
	p.counts, p.dispatches, p.fails = map[string]int{}, nil, map[string]string{}
	for k, ch := range p.stalls {
		close(ch)
		delete(p.stalls, k)
	}
}

// Close releases stalled calls and stops the server.
func (p *Probe) Close() error {
	var err error
	p.once.Do(func() {
		close(p.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = p.srv.Shutdown(ctx); err != nil {
			err = fmt.Errorf("probe: shutdown: %w", errors.Join(err, p.srv.Close()))
		}
		// Serve may not have taken the listener yet when Shutdown ran; close
		// it here so the address is free once Close returns.
		_ = p.ln.Close()
	})
	return err
}
