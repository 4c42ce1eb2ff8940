package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
)

// Relay serves what registered upstream MCP servers offer besides tools
// (*tools.Dispatcher). Nothing of it is metered.
type Relay interface {
	// Capabilities is what the gateway serves now, tools included; a method
	// of a capability it leaves out is answered "method not found".
	Capabilities(ctx context.Context) *mcp.ServerCapabilities
	ListPrompts(ctx context.Context) (*mcp.ListPromptsResult, error)
	GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error)
	ListResources(ctx context.Context) (*mcp.ListResourcesResult, error)
	ListResourceTemplates(ctx context.Context) (*mcp.ListResourceTemplatesResult, error)
	ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, p *mcp.SubscribeParams) error
	Unsubscribe(ctx context.Context, p *mcp.UnsubscribeParams) error
	Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error)
	// OnResourceUpdated sets where an upstream's resource updates go.
	OnResourceUpdated(func(context.Context, *mcp.ResourceUpdatedNotificationParams))
	// OnListChanged sets where a registered server's list changes go
	// (relay.PromptsListChanged, relay.ResourcesListChanged).
	OnListChanged(func(ctx context.Context, method string))
}

// capabilities is what the gateway declares: tools alone without a relay.
func (h *handler) capabilities(ctx context.Context) *mcp.ServerCapabilities {
	if h.opts.Relay == nil {
		return &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	}
	return h.opts.Relay.Capabilities(ctx)
}

// served reports whether caps declare what method needs; a method that is
// not relayed at all is not this function's to judge (true).
func served(caps *mcp.ServerCapabilities, method string) bool {
	switch method {
	case "prompts/list", "prompts/get":
		return caps.Prompts != nil
	case "resources/list", "resources/templates/list", "resources/read":
		return caps.Resources != nil
	case "resources/subscribe", "resources/unsubscribe":
		return caps.Resources != nil && caps.Resources.Subscribe
	case "completion/complete":
		return caps.Completions != nil
	case "logging/setLevel":
		return caps.Logging != nil
	}
	return true
}

// relayMethod answers the relayed and capability-gated methods; handled is
// false for any other method.
func (h *handler) relayMethod(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (res mcp.Result, handled bool, err error) {
	switch method {
	case "initialize", "server/discover":
		res, err = next(ctx, method, req)
		if err == nil && method == "initialize" {
			h.claimSession(req)
		}
		if err == nil {
			switch r := res.(type) {
			case *mcp.InitializeResult:
				r.Capabilities = h.capabilities(ctx)
			case *mcp.DiscoverResult:
				r.Capabilities = h.capabilities(ctx)
			}
		}
		return res, true, err
	case "subscriptions/listen":
		// Only what is declared may be listened to: no tool list changes,
		// the prompt and resource list changes declared, and resource
		// updates where subscriptions are served.
		if p, ok := req.GetParams().(*mcp.SubscriptionsListenParams); ok && p != nil && p.Notifications != nil {
			caps := h.capabilities(ctx)
			n := p.Notifications
			n.ToolsListChanged = false
			n.PromptsListChanged = n.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged
			n.ResourcesListChanged = n.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged
			if !served(caps, "resources/subscribe") {
				n.ResourceSubscriptions = nil
			}
		}
		return nil, false, nil
	case "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "completion/complete", "logging/setLevel":
	default:
		return nil, false, nil
	}
	if !served(h.capabilities(ctx), method) {
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not served: no registered upstream server offers it", method)}
	}
	r := h.opts.Relay
	switch method {
	case "prompts/list":
		res, err = r.ListPrompts(ctx)
	case "prompts/get":
		res, err = withParams(ctx, req, method, r.GetPrompt)
	case "resources/list":
		res, err = r.ListResources(ctx)
	case "resources/templates/list":
		res, err = r.ListResourceTemplates(ctx)
	case "resources/read":
		res, err = withParams(ctx, req, method, r.ReadResource)
	case "completion/complete":
		res, err = withParams(ctx, req, method, r.Complete)
	default:
		// subscribe, unsubscribe and setLevel: the SDK keeps the session's
		// state and calls the relay (ServerOptions).
		res, err = next(ctx, method, req)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && err == nil && p != nil && ss != nil && ss.ID() != "" {
			h.setLogLevel(ss, p.Level) // for the upstream of a call (callRelay)
		}
	}
	if err != nil {
		return nil, true, h.relayErr(method, err)
	}
	return res, true, nil
}

// Placeholders of listChanged: never listed, never served.
const (
	placeholderPrompt   = "io.mcpconform.list-changed"
	placeholderResource = "mcpconform:list-changed"
)

// listChanged tells the gateway's clients that a relayed list changed. The
// SDK sends list-changed notifications (to 2025-11-25 sessions, and to
// 2026-07-28 ones listening for them) only when its own registry changes,
// and has no call to send one otherwise; the gateway answers prompts/* and
// resources/* in its middleware and keeps no registry there. So a
// placeholder is added and removed at once, which the SDK announces as one
// change; no request ever reaches the SDK's own list or read handlers, so
// the placeholder is never seen.
func (h *handler) listChanged(method string) {
	switch method {
	case relay.PromptsListChanged:
		h.server.AddPrompt(&mcp.Prompt{Name: placeholderPrompt}, nil)
		h.server.RemovePrompts(placeholderPrompt)
	case relay.ResourcesListChanged:
		h.server.AddResource(&mcp.Resource{URI: placeholderResource, Name: placeholderPrompt}, nil)
		h.server.RemoveResources(placeholderResource)
	}
}

// withParams calls f with the request's params, refusing a request without
// (the SDK refuses these methods without params before they get here).
func withParams[P mcp.Params, R mcp.Result](ctx context.Context, req mcp.Request, method string, f func(context.Context, P) (R, error)) (mcp.Result, error) {
	p, ok := req.GetParams().(P)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + " needs params"}
	}
	res, err := f(ctx, p)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// relayErr passes an upstream's JSON-RPC error on as the upstream said it;
// failing to reach the upstream is dispatch_failed.
func (h *handler) relayErr(method string, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	h.log.Warn("relay", "method", method, "err", err)
	return toRPCError(gateway.Refuse(gateway.ReasonDispatchFailed, "%s: the upstream server could not be reached", method))
}

// callRelay is what the calling client of a tools/call can be told and asked
// while the call runs (package relay): progress when it sent a
// progressToken, log messages once it set a level, and on a 2025-11-25
// session the sampling and elicitation requests it declared it handles.
func (h *handler) callRelay(ctx context.Context, req mcp.Request, p *mcp.CallToolParamsRaw, hdr http.Header) *relay.Client {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil
	}
	// Notifications are sent under the call's own context: it names the
	// request they belong to (an event-stream answer carries them) and, on
	// 2026-07-28, the log level the request asked for.
	rctx := context.WithoutCancel(ctx)
	// The version is the request's own on the stateless wire (the header
	// the SDK checked against its _meta), the session's otherwise.
	c := &relay.Client{MultiRound: hdr.Get(HeaderProtocol) >= Protocol20260728}
	if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion >= Protocol20260728 {
		c.MultiRound = true
	}
	if h.opts.Bugs.On(bugs.RoundsToLegacyClient) {
		c.MultiRound = true // BUG rounds-to-legacy-client
	}
	if c.MultiRound {
		c.Capabilities = p.Meta[mcp.MetaKeyClientCapabilities]
	}
	if tok := p.GetProgressToken(); tok != nil {
		c.ProgressToken = tok
		c.Progress = func(_ context.Context, n *mcp.ProgressNotificationParams) error {
			q := *n
			q.ProgressToken = tok
			return ss.NotifyProgress(rctx, &q)
		}
	}
	if level := h.logLevel(ss, p.Meta); level != "" {
		c.LogLevel = level
		c.Log = func(_ context.Context, m *mcp.LoggingMessageParams) error { return ss.Log(rctx, m) }
	}
	if ss.ID() != "" { // a server request needs a session to come back on
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
			if ip.Capabilities.Sampling != nil {
				c.CreateMessage = ss.CreateMessage
			}
			if ip.Capabilities.Elicitation != nil {
				c.Elicit = ss.Elicit
			}
		}
	}
	return c
}

// logLevel is the level the client asked log messages at: a 2025-11-25
// session's logging/setLevel, or a 2026-07-28 request's _meta.
func (h *handler) logLevel(ss *mcp.ServerSession, meta mcp.Meta) mcp.LoggingLevel {
	if v, ok := meta[mcp.MetaKeyLogLevel].(string); ok {
		return mcp.LoggingLevel(v)
	}
	if id := ss.ID(); id != "" {
		if v, ok := h.logLevels.Load(id); ok && v.(sessionLevel).ss == ss {
			return v.(sessionLevel).level
		}
	}
	return ""
}

// sessionLevel is the log level a 2025-11-25 session set, with the session,
// so that a level is never read for another session under the same id.
type sessionLevel struct {
	ss    *mcp.ServerSession
	level mcp.LoggingLevel
}

// setLogLevel keeps the level ss set until ss ends: its first level starts
// the clean-up, which waits for the session to close (a DELETE, its idle
// timeout, the server's end) and drops the entry, unless another session
// holds the id by then.
func (h *handler) setLogLevel(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	id := ss.ID()
	prev, loaded := h.logLevels.Swap(id, sessionLevel{ss, level})
	if loaded && prev.(sessionLevel).ss == ss {
		return // its clean-up is waiting already
	}
	go func() {
		_ = ss.Wait()
		for {
			v, ok := h.logLevels.Load(id)
			if !ok || v.(sessionLevel).ss != ss || h.logLevels.CompareAndDelete(id, v) {
				break
			}
		}
		if f := h.levelCleared; f != nil {
			f(id)
		}
	}()
}
