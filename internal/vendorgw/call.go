package vendorgw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's wire spellings: data.reason is the contract, the codes its
// own (none of -32003..-32005, which go-sdk's client reads as transport
// failures).
const (
	ReceiptMeta = "acme/receipt" // result._meta member holding the receipt id "acme-r-<n>"

	ReasonAuthFailed     = "auth_failed"          // HTTP 401
	ReasonKeyConflict    = "acme_key_conflict"    // same key, other arguments
	ReasonBusy           = "acme_busy"            // same operation still running; retryable
	ReasonKeyMissing     = "acme_key_missing"     // Idempotent mode refuses unkeyed calls
	ReasonKeyMalformed   = "acme_key_malformed"   // the idempotency key unreadable, or sent twice
	ReasonBadArguments   = "acme_bad_arguments"   // arguments not a JSON object
	ReasonUpstreamFailed = "acme_upstream_failed" // the upstream refused the call: nothing ran; retryable

	CodeAuthFailed     = -32030
	CodeKeyConflict    = -32040
	CodeBusy           = -32041
	CodeKeyMissing     = -32042 // the MCP spec's URLElicitationRequired code too; reasons, not codes, are the contract
	CodeKeyMalformed   = jsonrpc.CodeInvalidParams
	CodeBadArguments   = jsonrpc.CodeInvalidParams
	CodeUpstreamFailed = -32050
)

type errData struct {
	Reason    string `json:"reason"`
	Retryable bool   `json:"retryable"`
}

// refuse is a JSON-RPC error go-sdk sends as it is: a handler's unwrapped
// *jsonrpc.Error keeps its code and data on the wire.
func refuse(code int64, reason string, retryable bool, format string, args ...any) *jsonrpc.Error {
	data, _ := json.Marshal(errData{Reason: reason, Retryable: retryable})
	return &jsonrpc.Error{Code: code, Message: "acme: " + fmt.Sprintf(format, args...), Data: data}
}

type scope struct{ tenant, tool, key string }

// record is one idempotent operation: result is nil while it runs.
type record struct {
	fingerprint string
	result      *mcp.CallToolResult // never modified once stored
}

func (g *Gateway) handle(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		keys, raw, keyErr := g.o.Key.Take(req)
		args, fp, err := canonical(raw)
		if err != nil {
			return nil, refuse(CodeBadArguments, ReasonBadArguments, false, "%v", err)
		}
		if g.o.Mode == Naive {
			return g.forward(ctx, t, args)
		}
		tenant := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			tenant = req.Extra.TokenInfo.UserID
		}
		if tenant == "" {
			// authenticate and the TokenInfo binding run before every request.
			return nil, refuse(CodeAuthFailed, ReasonAuthFailed, false, "no tenant on the request")
		}
		if keyErr != nil {
			return nil, refuse(CodeKeyMalformed, ReasonKeyMalformed, false, "idempotency key %v", keyErr)
		}
		if len(keys) == 0 && t.ReadOnly && g.o.Bugs.ForwardUnkeyedReads { // BUG ForwardUnkeyedReads
			return g.forward(ctx, t, args)
		}
		if len(keys) == 0 {
			if d := g.o.Bugs.LateUnkeyedDispatch; d > 0 { // BUG LateUnkeyedDispatch
				time.AfterFunc(d, func() { _, _ = g.dispatch(context.Background(), t, args) })
			}
			return nil, refuse(CodeKeyMissing, ReasonKeyMissing, false, "tools/call needs an idempotency key (%s %s)", g.o.Key.where(), g.o.Key.name())
		}
		if len(keys) > 1 {
			return nil, refuse(CodeKeyMalformed, ReasonKeyMalformed, false, "idempotency key sent %d times", len(keys))
		}
		switch {
		case g.o.Bugs.KeyIgnored: // BUG KeyIgnored
			return g.forward(ctx, t, args)
		case g.o.Bugs.KeyInFingerprint: // BUG KeyInFingerprint
			// The operation is the hash of the arguments as received, the
			// key among them.
			_, whole, err := canonical(req.Params.Arguments)
			if err != nil {
				return nil, refuse(CodeBadArguments, ReasonBadArguments, false, "%v", err)
			}
			res, _, err := g.idempotent(ctx, scope{tenant, t.Name, whole}, whole, t, args)
			return res, err
		}
		res, replayed, err := g.idempotent(ctx, scope{tenant, t.Name, keys[0]}, fp, t, args)
		if replayed && req.Extra != nil && req.Extra.Header != nil {
			g.replays.mark(req.Extra.Header.Get(tagHeader))
		}
		return res, err
	}
}

// forward dispatches a call as it comes, with no record of it.
func (g *Gateway) forward(ctx context.Context, t Tool, args json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := g.dispatch(ctx, t, args)
	if err != nil {
		return nil, err
	}
	return g.withReceipt(res), nil
}

// idempotent dispatches the first call of an operation and answers every later one
// from its record, saying so (replayed). Reserving under the mutex is what
// makes concurrent twins dispatch once.
func (g *Gateway) idempotent(ctx context.Context, s scope, fp string, t Tool, args json.RawMessage) (_ *mcp.CallToolResult, replayed bool, _ error) {
	g.mu.Lock()
	if r := g.records[s]; r != nil {
		defer g.mu.Unlock()
		switch {
		case r.fingerprint != fp && !g.o.Bugs.ReplayAnyArgs: // BUG ReplayAnyArgs: other arguments fall through to a replay
			return nil, false, refuse(CodeKeyConflict, ReasonKeyConflict, false, "key %q was used with other arguments", s.key)
		case r.result == nil:
			busy := refuse(CodeBusy, ReasonBusy, !g.o.Bugs.BusyNotRetryable, "key %q: the first call is still running", s.key)
			if g.o.HTTPStyle.On && g.o.HTTPStyle.BusyUnflagged {
				busy.Data, _ = json.Marshal(struct {
					Reason string `json:"reason"`
				}{ReasonBusy})
			}
			return nil, false, busy
		}
		return r.result, true, nil
	}
	var leak *mcp.CallToolResult
	if g.o.Bugs.LeakAcrossScope { // BUG LeakAcrossScope
		for other, o := range g.records {
			if other != s && other.key == s.key && o.fingerprint == fp && o.result != nil {
				leak = o.result
			}
		}
	}
	r := &record{fingerprint: fp}
	g.records[s] = r
	g.mu.Unlock()

	if g.o.BeforeDispatch != nil {
		g.o.BeforeDispatch(s.key)
	}
	res, err := g.dispatch(ctx, t, args)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		// Only a refusal reaches here (see dispatch): nothing ran, so the key
		// is free for a retry.
		delete(g.records, s)
		return nil, false, err
	}
	r.result = g.withReceiptLocked(res)
	if leak != nil {
		// Another scope's stored content, stamped with this call's receipt.
		return &mcp.CallToolResult{Content: leak.Content, StructuredContent: leak.StructuredContent, IsError: leak.IsError,
			Meta: r.result.Meta}, false, nil
	}
	return r.result, false, nil
}

// dispatch calls the upstream tool. Its context is detached from the client's
// request: a client that goes away must not turn a dispatched call into an
// unknown outcome. An error return means the upstream refused the call with a
// JSON-RPC error, so the tool did not run; any other failure may have come
// after the tool ran, so it is an isError result, kept like any outcome.
func (g *Gateway) dispatch(ctx context.Context, t Tool, args json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dispatchTimeout)
	defer cancel()
	res, err := g.upstream.CallTool(ctx, &mcp.CallToolParams{Name: t.Upstream, Arguments: args})
	if g.o.LateDuplicate > 0 {
		time.AfterFunc(g.o.LateDuplicate, func() { // BUG LateDuplicate
			ctx, cancel := context.WithTimeout(context.Background(), dispatchTimeout)
			defer cancel()
			_, _ = g.upstream.CallTool(ctx, &mcp.CallToolParams{Name: t.Upstream, Arguments: args})
		})
	}
	if err == nil && g.o.KeepUpstreamResult {
		res.Meta = nil
		return res, nil
	}
	if err == nil {
		content := res.Content
		if content == nil {
			content = []mcp.Content{}
		}
		return &mcp.CallToolResult{Content: content, StructuredContent: res.StructuredContent, IsError: res.IsError}, nil
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && (werr.Code < -32005 || werr.Code > -32003) {
		return nil, refuse(CodeUpstreamFailed, ReasonUpstreamFailed, true, "upstream refused %s: %v", t.Upstream, werr.Message)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("acme: the outcome of %s is unknown: %v", t.Upstream, err)}}}, nil
}

func (g *Gateway) withReceipt(res *mcp.CallToolResult) *mcp.CallToolResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.withReceiptLocked(res)
}

func (g *Gateway) withReceiptLocked(res *mcp.CallToolResult) *mcp.CallToolResult {
	g.seq++
	res.Meta = mcp.Meta{ReceiptMeta: fmt.Sprintf("acme-r-%d", g.seq)}
	return res
}

// canonical returns the arguments to forward ({} for none) and their
// fingerprint: a hash of their JSON with object members sorted and
// whitespace dropped, numbers kept as written.
func canonical(raw json.RawMessage) (json.RawMessage, string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("arguments: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", errors.New("arguments: text after the JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, "", errors.New("arguments: want a JSON object")
	}
	// encoding/json writes map members in key order.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, "", fmt.Errorf("arguments: %w", err)
	}
	sum := sha256.Sum256(b)
	return raw, hex.EncodeToString(sum[:]), nil
}

// parseKey reads an Idempotency-Key value: an RFC 8941 sf-string ("k", with
// \" and \\ escapes) or a bare token of printable ASCII without blanks,
// quotes, backslashes, commas or semicolons. A comma (two header lines
// joined) or parameters are refused rather than guessed at.
func parseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	var key string
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		closed := false
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '\\':
				i++
				if i == len(v) || (v[i] != '"' && v[i] != '\\') {
					return "", errors.New(`a backslash escapes only " and \`)
				}
				b.WriteByte(v[i])
			case c == '"':
				if i != len(v)-1 {
					return "", errors.New("text after the closing quote")
				}
				closed = true
			case c < 0x20 || c > 0x7e:
				return "", fmt.Errorf("byte %#x is not printable ASCII", c)
			default:
				b.WriteByte(c)
			}
		}
		if !closed {
			return "", errors.New("unterminated string")
		}
		key = b.String()
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= 0x20 || c > 0x7e || strings.IndexByte(`"\,;`, c) >= 0 {
				return "", fmt.Errorf("byte %q not allowed in a bare key (quote it)", c)
			}
		}
		key = v
	}
	if key == "" || len(key) > 255 {
		return "", fmt.Errorf("want 1 to 255 characters, got %d", len(key))
	}
	return key, nil
}
