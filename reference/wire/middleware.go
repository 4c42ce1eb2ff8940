package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/idemkey"
	"github.com/mcpconform/mcpconform/reference/jsonobj"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/toolmemo"
)

// middleware answers tools/call and tools/list, declares the capabilities
// and answers the relayed methods (relay.go); every other method goes to
// the SDK.
func (h *handler) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				h.log.Error("mcp method panic", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				res, err = nil, h.rpcError(fmt.Errorf("panic"))
			}
		}()
		switch method {
		case "tools/list":
			return h.listTools(ctx)
		case "tools/call":
			return h.callTool(ctx, req)
		}
		if res, handled, err := h.relayMethod(ctx, method, req, next); handled {
			return res, err
		}
		return next(ctx, method, req)
	}
}

func (h *handler) listTools(ctx context.Context) (mcp.Result, error) {
	if h.tools == nil {
		return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, Cacheable: mcp.Cacheable{CacheScope: "private"}}, nil
	}
	tools, err := h.tools.ListTools(ctx)
	if err != nil {
		h.log.Error("tools/list", "err", err)
		return nil, h.rpcError(err)
	}
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	return &mcp.ListToolsResult{Tools: tools, Cacheable: mcp.Cacheable{CacheScope: "private"}}, nil
}

func (h *handler) callTool(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	var hdr http.Header
	if extra := req.GetExtra(); extra != nil {
		hdr = extra.Header
	}
	st := h.state(hdr)
	if st == nil {
		// Only reachable if the SDK were served without our outer handler.
		h.log.Error("tools/call without request state")
		return nil, h.rpcError(fmt.Errorf("no request state"))
	}
	params, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || params == nil {
		return nil, h.rpcError(gateway.Refuse(gateway.ReasonInvalidArguments, "tools/call needs params"))
	}
	cr, ref := h.buildCall(ctx, st, hdr, params)
	if ref != nil {
		return nil, h.rpcError(ref)
	}

	// The core is told when the client gives up: a notifications/cancelled
	// cancels the SDK's handler context, a closed POST the HTTP request's.
	client, gone := context.WithCancel(ctx)
	defer gone()
	if st.http != nil {
		defer context.AfterFunc(st.http, gone)()
	}
	cr.ClientDone = client.Done()

	// The call runs to its end even if the client leaves: its outcome is
	// stored, so a retry replays it instead of finding it half done.
	rctx := relay.With(toolmemo.With(ctx, st.tool), h.callRelay(ctx, req, params, hdr))
	if params.InputResponses != nil || params.RequestState != "" {
		rctx = relay.WithRound(rctx, &relay.Round{InputResponses: params.InputResponses, RequestState: params.RequestState})
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), h.opts.CallTimeout)
	defer cancel()
	resp, err := h.core.Call(cctx, cr)
	if err != nil {
		var refusal *gateway.Refusal
		if !asRefusal(err, &refusal) {
			h.log.Error("tools/call", "tool", cr.Tool, "wallet", cr.Caller.WalletID, "err", err)
		}
		return nil, h.rpcError(err)
	}
	if resp.Drop {
		st.drop.Store(true)
	}
	result, err := newRawResult(resp.Result, usesNewProtocol(params))
	if err != nil {
		h.log.Error("tools/call: core returned a malformed result", "tool", cr.Tool, "err", err)
		if resp.Drop {
			// Nothing will be written anyway; the SDK still needs a result.
			return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
		}
		return nil, h.rpcError(err)
	}
	if h.opts.Bugs.On(bugs.ReplayResultTypeMissing) && result.replayed() {
		delete(result.fields, "resultType") // BUG replay-resulttype-missing
	}
	if _, structured := result.fields["structuredContent"]; h.opts.Bugs.On(bugs.SessionContentDropped) && structured && !usesNewProtocol(params) {
		delete(result.fields, "content") // BUG session-content-dropped
	}
	return result, nil
}

// buildCall turns the SDK's params and the HTTP headers into the core's request.
func (h *handler) buildCall(ctx context.Context, st *requestState, hdr http.Header, p *mcp.CallToolParamsRaw) (gateway.CallRequest, *gateway.Refusal) {
	cr := gateway.CallRequest{Caller: st.caller, Tool: p.Name, Stateless: usesNewProtocol(p)}
	if cr.Tool == "" {
		return cr, gateway.Refuse(gateway.ReasonUnknownTool, "tools/call params.name is required")
	}

	args := bytes.TrimSpace(p.Arguments)
	if isNull(args) {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return cr, gateway.Refuse(gateway.ReasonInvalidArguments, "tools/call arguments must be a JSON object")
	}
	cr.Arguments = json.RawMessage(args)

	key, err := headerKey(hdr)
	if err != nil {
		return cr, gateway.Refuse(gateway.ReasonKeyInvalid, "%v", err)
	}
	if v, present := p.Meta[MetaIdempotencyKey]; present && v != nil {
		mk, ok := v.(string)
		if !ok {
			return cr, gateway.Refuse(gateway.ReasonKeyInvalid, "_meta.%s must be a string", MetaIdempotencyKey)
		}
		if err := idemkey.Validate(mk); err != nil {
			return cr, gateway.Refuse(gateway.ReasonKeyInvalid, "_meta.%s: %v", MetaIdempotencyKey, err)
		}
		if key != "" && key != mk {
			return cr, gateway.Refuse(gateway.ReasonKeyInvalid, "the Idempotency-Key header and _meta.%s differ", MetaIdempotencyKey)
		}
		key = mk
	}
	cr.ClientKey = key

	permit := ""
	if vs := hdr.Values(HeaderPermitID); len(vs) > 0 {
		if len(vs) > 1 || vs[0] == "" {
			return cr, gateway.Refuse(gateway.ReasonPermitInvalid, "one non-empty %s header expected", HeaderPermitID)
		}
		permit = vs[0]
	}
	if v, present := p.Meta[MetaPermitID]; present && v != nil {
		mp, ok := v.(string)
		if !ok || mp == "" {
			return cr, gateway.Refuse(gateway.ReasonPermitInvalid, "_meta.%s must be a non-empty string", MetaPermitID)
		}
		if permit != "" && permit != mp {
			return cr, gateway.Refuse(gateway.ReasonPermitInvalid, "the %s header and _meta.%s differ", HeaderPermitID, MetaPermitID)
		}
		permit = mp
	}
	cr.PermitID = permit

	sid := hdr.Get("Mcp-Session-Id")
	perSession := h.opts.Bugs.On(bugs.PrincipalPerSession) && sid != "" && !cr.Stateless
	if v, ok := h.sessionPrincipals.Load(sid); perSession && ok && len(hdr.Values(HeaderPrincipalToken)) > 0 {
		cr.Caller.Principal = v.(*gateway.PrincipalRef) // BUG principal-per-session: the session's first principal, unverified
		return cr, nil
	}
	if vs := hdr.Values(HeaderPrincipalToken); len(vs) > 0 {
		if len(vs) > 1 || vs[0] == "" {
			return cr, gateway.Refuse(gateway.ReasonPrincipalInvalid, "one non-empty %s header expected", HeaderPrincipalToken)
		}
		if h.verifier == nil {
			return cr, gateway.Refuse(gateway.ReasonPrincipalInvalid, "this gateway trusts no principal token issuer")
		}
		ref, err := h.verifier.Verify(ctx, vs[0])
		if err != nil && cr.Stateless && h.opts.Bugs.On(bugs.PrincipalFailOpenStateless) {
			return cr, nil // BUG principal-fail-open-stateless: the token is dropped, not refused
		}
		if err != nil {
			var refusal *gateway.Refusal
			if asRefusal(err, &refusal) {
				return cr, refusal
			}
			h.log.Error("verify principal token", "err", err)
			return cr, gateway.Refuse(gateway.ReasonInternal, "principal token verification failed: internal error")
		}
		cr.Caller.Principal = ref
		if perSession {
			h.sessionPrincipals.Store(sid, ref)
		}
	}
	return cr, nil
}

// rawResult carries the core's CallToolResult JSON through the SDK without
// re-encoding its content: the SDK may add _meta entries (2026-07-28 puts
// its serverInfo there), everything else is written as the core produced it,
// but for resultType, which belongs to the wire and not to the outcome.
type rawResult struct {
	mcp.ResultBase
	fields map[string]json.RawMessage // every member but _meta
}

// resultComplete is the resultType of a final result on 2026-07-28.
const resultComplete = `"complete"`

// newRawResult wraps a CallToolResult for the wire the request came on. A
// stored outcome is the same bytes whichever wire produced it or replays it,
// so resultType is decided here, per answer: 2026-07-28 requires it (the
// SDK adds it only to its own result types), 2025-11-25 does not know it,
// and a replay on the other wire than the first call's must be valid there.
func newRawResult(raw json.RawMessage, newProtocol bool) (*rawResult, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("result is not a JSON object: %v", err)
	}
	r := &rawResult{fields: fields}
	if m, ok := fields["_meta"]; ok {
		delete(fields, "_meta")
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("result _meta is not an object: %v", err)
		}
		if len(meta) > 0 {
			r.Meta = make(mcp.Meta, len(meta))
			for k, v := range meta {
				r.Meta[k] = v
			}
		}
	}
	if _, ok := fields["content"]; !ok {
		fields["content"] = json.RawMessage("[]")
	}
	if newProtocol {
		var rt string
		if json.Unmarshal(fields["resultType"], &rt) != nil || rt == "" {
			fields["resultType"] = json.RawMessage(resultComplete)
		}
	} else {
		delete(fields, "resultType")
	}
	return r, nil
}

// usesNewProtocol reports whether a tools/call came on the 2026-07-28 wire,
// as the SDK decides it: by the protocol version in the request's _meta
// (the SDK has refused the request already if that _meta is incomplete).
func usesNewProtocol(p *mcp.CallToolParamsRaw) bool {
	v, _ := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	return v >= Protocol20260728
}

// replayed reports whether the result's receipt says it is a replay.
func (r *rawResult) replayed() bool {
	raw, ok := r.Meta[gateway.ReceiptMetaKey].(json.RawMessage)
	var rc gateway.Receipt
	return ok && json.Unmarshal(raw, &rc) == nil && rc.Replayed
}

// MarshalJSON writes the members as they are (jsonobj): they are what
// json.Unmarshal accepted from the core's result, or this package's
// constants. _meta, which the SDK may have added to, is marshalled.
func (r *rawResult) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return jsonobj.Marshal(r.fields), nil
	}
	meta, err := json.Marshal(map[string]any(r.Meta))
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(r.fields)+1)
	for k, v := range r.fields {
		out[k] = v
	}
	out["_meta"] = meta
	return jsonobj.Marshal(out), nil
}

func asRefusal(err error, target **gateway.Refusal) bool {
	return err != nil && errors.As(err, target)
}
