package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
)

// A call whose client can be told or asked something while it runs
// (relay.Client) gets an upstream session of its own, opened by a client
// that declares to the upstream exactly what the calling client declared
// (sampling, elicitation). Everything the upstream sends on that session
// is about this call, so it goes to this caller and to no one else: a
// shared session could not tell one caller's messages from another's.

// relayClient is the upstream client for one call relaying to rc.
func (d *Dispatcher) relayClient(rc *relay.Client) *mcp.Client {
	o := &mcp.ClientOptions{Logger: d.log, Capabilities: &mcp.ClientCapabilities{},
		// A 2026-07-28 caller answers an upstream's input requests itself,
		// in its call's next round; for an older one this client asks it
		// (the handlers below) and retries the upstream call.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: rc.MultiRound}}
	if rc.Progress != nil {
		o.ProgressNotificationHandler = func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			if err := rc.Progress(ctx, r.Params); err != nil {
				d.log.Debug("relay progress", "err", err)
			}
		}
	}
	if rc.Log != nil {
		o.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			if err := rc.Log(ctx, r.Params); err != nil {
				d.log.Debug("relay log message", "err", err)
			}
		}
	}
	if rc.CreateMessage != nil {
		o.CreateMessageHandler = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return rc.CreateMessage(ctx, r.Params)
		}
	}
	if rc.Elicit != nil {
		o.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return rc.Elicit(ctx, r.Params)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpconform-reference-gateway", Version: "0.1.0"}, o)
	if rc.Elicit != nil {
		c.AddReceivingMiddleware(relayElicitation(rc))
	}
	return c
}

// relayElicitation hands an upstream's elicitation/create to the caller
// before the SDK's client checks its schema: the gateway only relays it,
// and the caller's own client judges the schema it is asked to fill (the
// SDK's check refuses schemas a newer client accepts, such as SEP-1330's
// titled multi-select enums). The upstream checks the answer.
func relayElicitation(rc *relay.Client) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.ElicitParams); ok && method == "elicitation/create" && p != nil {
				return rc.Elicit(ctx, p)
			}
			return next(ctx, method, req)
		}
	}
}

// dispatchRelayed runs an upstream call on a session of its own (see above).
// Its outcome is classified as dispatchUpstream's is.
func (d *Dispatcher) dispatchRelayed(ctx context.Context, r gateway.DispatchRequest, rc *relay.Client, round *relay.Round, name string, args json.RawMessage) (json.RawMessage, error) {
	url := r.Tool.UpstreamURL
	cctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	sess, err := d.relayClient(rc).Connect(cctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: d.opts.HTTPClient, MaxRetries: -1,
	}, nil)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: connect: %w", url, err)
	}
	defer func() { go func() { _ = sess.Close() }() }()
	if rc.Log != nil {
		if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
			if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: rc.LogLevel}); err != nil {
				d.log.Debug("upstream logging/setLevel", "url", url, "err", err)
			}
		}
	}
	p := callParams(rc, round, name, args)
	if ir := sess.InitializeResult(); rc.Log != nil && ir != nil && ir.ProtocolVersion >= "2026-07-28" {
		// A 2026-07-28 session has no level of its own: each request says it.
		p.Meta[mcp.MetaKeyLogLevel] = string(rc.LogLevel)
	}
	if rc.Progress != nil {
		// The session is the call's own, so the client's token is no one
		// else's there. Set as decoded (a JSON number is a float64, which
		// SetProgressToken refuses).
		p.Meta["progressToken"] = rc.ProgressToken
	}
	cctx, cancel = context.WithTimeout(ctx, d.opts.CallTimeout)
	defer cancel()
	res, err := sess.CallTool(cctx, p)
	if err == nil {
		return upstreamOutcome(rc, res)
	}
	switch classify(err) {
	case notSent:
		return nil, fmt.Errorf("upstream %s: %w", url, err)
	case refused:
		return nil, refusedErr(url, name, err)
	}
	d.log.Warn("upstream outcome unknown", "url", url, "tool", name, "err", err)
	return result(fmt.Sprintf("upstream %s: the call was sent but its outcome is unknown: %v", url, err), nil, true)
}
