package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/reference/gateway"
)

// stockCall is one tools/call of a stock go-sdk client: a session opened with
// an API key and other headers, then the call. A refusal of the session's
// opening counts as the call's answer.
func stockCall(t *testing.T, g *gatewayProc, version string, c *clientTransport, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "stock-client", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.base + "/mcp",
		HTTPClient: &http.Client{Transport: c}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	return cs.CallTool(t.Context(), params)
}

// reasonOf is the data.reason of a *jsonrpc.Error err wraps, or "" with what
// the client made of the refusal instead.
func reasonOf(err error) (string, string) {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return "", fmt.Sprintf("not a *jsonrpc.Error: %v (connection closed: %v)", err, errors.Is(err, mcp.ErrConnectionClosed))
	}
	var d struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(werr.Data, &d) != nil || d.Reason == "" {
		return "", fmt.Sprintf("code %d without data.reason: %s", werr.Code, werr.Data)
	}
	return d.Reason, ""
}

// TestStockClientRefusals calls the gateway with go-sdk's own client, on both
// protocol versions, and provokes every refusal a client can (all of the
// gateway's reasons but the HTTP-layer ones a client SDK never sends: batch,
// parse, too large):
// each must reach the caller as a *jsonrpc.Error carrying its data.reason.
// With the seed gateway's codes (--codes seed) the same client loses
// idempotency_key_reused to mcp.ErrConnectionClosed (go-sdk's -32004), which
// is why they are not the default.
func TestStockClientRefusals(t *testing.T) {
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.sampler", "upstream_url": "`+samplerUpstream(t)+`", "upstream_tool": "needs.sampling", "price": 2}`)})
	ip, err := idp.Start(idp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ip.Close() })
	g.control(t, "POST", "/control/trust", `{"provider": "harness", "issuer": "`+ip.Issuer()+`", "jwks_url": "`+ip.JWKSURL()+`", "audience": "`+ip.Audience()+`"}`, 204)
	g.control(t, "POST", "/control/principals", `{"provider": "harness", "issuer": "`+ip.Issuer()+`", "subject": "mallory", "tools": ["partner.notes.count"]}`, 201)
	token, err := ip.Token("mallory", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	poor := g.control(t, "POST", "/control/wallets", `{"balance": 0}`, 201)["wallet_id"].(string)
	poorKey := g.control(t, "POST", "/control/keys", `{"wallet_id": "`+poor+`"}`, 201)["api_key"].(string)
	auth := &clientTransport{key: extKey}
	with := func(k, v string) *clientTransport {
		return &clientTransport{key: extKey, header: map[string]string{k: v}}
	}
	keyed := func(tool, key string, args map[string]any, meta mcp.Meta) *mcp.CallToolParams {
		m := mcp.Meta{"idempotencyKey": key}
		for k, v := range meta {
			m[k] = v
		}
		return &mcp.CallToolParams{Name: tool, Arguments: args, Meta: m}
	}

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			k := func(s string) string { return version + "-" + s }
			expect := func(what, want string, res *mcp.CallToolResult, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s: answered %+v, want refusal %s", what, res, want)
					return
				}
				if got, why := reasonOf(err); got != want {
					t.Errorf("%s: want a *jsonrpc.Error with data.reason %s; %s%s", what, want, got, why)
				}
			}
			call := func(what, want string, c *clientTransport, p *mcp.CallToolParams) {
				t.Helper()
				res, err := stockCall(t, g, version, c, p)
				expect(what, want, res, err)
			}
			ok := func(what string, c *clientTransport, p *mcp.CallToolParams) {
				t.Helper()
				if res, err := stockCall(t, g, version, c, p); err != nil || res.IsError {
					t.Fatalf("%s: %+v %v", what, res, err)
				}
			}
			args := map[string]any{"text": version}

			call("wrong API key", gateway.ReasonUnauthenticated, &clientTransport{key: "mcpk_nope_x"},
				keyed("partner.echo", k("auth"), args, nil))
			call("forged principal token", gateway.ReasonPrincipalInvalid, with("X-Principal-Token", "forged"),
				keyed("partner.echo", k("principal"), args, nil))
			call("principal not entitled to the tool", gateway.ReasonPrincipalDenied, with("X-Principal-Token", token),
				keyed("partner.echo", k("denied"), args, nil))
			call("unkeyed read-only call", gateway.ReasonKeyRequired, auth, &mcp.CallToolParams{Name: "partner.notes.count", Arguments: map[string]any{}})
			call("overlong key", gateway.ReasonKeyInvalid, auth, keyed("partner.echo", strings.Repeat("k", 300), args, nil))
			call("no such tool", gateway.ReasonUnknownTool, auth, keyed("acme.missing", k("missing"), args, nil))
			call("empty wallet", gateway.ReasonInsufficient, &clientTransport{key: poorKey},
				keyed("partner.notes.write", k("poor"), args, nil))
			call("unknown permit", gateway.ReasonPermitInvalid, auth, keyed("partner.echo", k("permit"), args, mcp.Meta{"permitId": "pmt-nope"}))
			if version == "2026-07-28" {
				// The upstream judges the capabilities the caller's request
				// declared; a stock client without a sampling handler has none.
				call("an upstream's refusal for a client capability", gateway.ReasonCapabilitiesMissing, auth,
					keyed("acme.sampler", k("sampler"), map[string]any{}, nil))
			}

			ok("first use of the key", auth, keyed("partner.echo", k("reused"), map[string]any{"text": "a"}, nil))
			call("same key, other arguments", gateway.ReasonKeyReused, auth, keyed("partner.echo", k("reused"), map[string]any{"text": "b"}, nil))

			permit := g.control(t, "POST", "/control/permits", `{"wallet_id": "w-ext-1", "key_id": "k-ext-1", "tool": "partner.notes.write", "budget": 4}`, 201)["permit_id"].(string)
			ok("the permit's one call", auth, keyed("partner.notes.write", k("permit-1"), args, mcp.Meta{"permitId": permit}))
			call("a spent permit", gateway.ReasonPermitExhausted, auth, keyed("partner.notes.write", k("permit-2"), args, mcp.Meta{"permitId": permit}))

			g.control(t, "POST", "/control/faults", `{"point": "dispatch.before", "action": "fail", "match": {"tool": "partner.echo"}}`, 201)
			call("failure before dispatch", gateway.ReasonDispatchFailed, auth, keyed("partner.echo", k("before"), args, nil))
			g.control(t, "POST", "/control/faults", `{"point": "dispatch.after", "action": "fail", "match": {"tool": "partner.echo"}}`, 201)
			call("failure after dispatch", gateway.ReasonResponseFailed, auth, keyed("partner.echo", k("after"), args, nil))

			pause := g.control(t, "POST", "/control/faults", `{"point": "dispatch.before", "action": "pause", "match": {"tool": "partner.echo"}}`, 201)["fault_id"].(string)
			running := keyed("partner.echo", k("running"), args, nil)
			first := make(chan error, 1)
			go func() {
				_, err := stockCall(t, g, version, auth, running)
				first <- err
			}()
			g.control(t, "POST", "/control/faults/"+pause+"/await", `{"waiting": 1, "timeout": "20s"}`, 200)
			call("the same operation running", gateway.ReasonInProgress, auth, running)
			g.control(t, "POST", "/control/faults/"+pause+"/release", "", 200)
			if err := recv(t, first, "the paused call's answer"); err != nil {
				t.Fatalf("the paused call: %v", err)
			}

			permit = g.control(t, "POST", "/control/permits", `{"wallet_id": "w-ext-1", "key_id": "k-ext-1", "tool": "partner.notes.write", "ttl": "10s"}`, 201)["permit_id"].(string)
			g.control(t, "POST", "/control/clock/advance", `{"by": "20s"}`, 200)
			call("an expired permit", gateway.ReasonPermitExpired, auth, keyed("partner.notes.write", k("expired"), args, mcp.Meta{"permitId": permit}))
			g.control(t, "DELETE", "/control/clock", "", 204)
		})
	}

	t.Run("seed codes", func(t *testing.T) {
		seed := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", Fixtures: writeFixtures(t), Codes: gateway.CodesSeed})
		p := &mcp.CallToolParams{Name: "partner.echo", Arguments: map[string]any{"text": "a"}, Meta: mcp.Meta{"idempotencyKey": "seed-reused"}}
		if _, err := stockCall(t, seed, "2025-11-25", auth, p); err != nil {
			t.Fatal(err)
		}
		p.Arguments = map[string]any{"text": "b"}
		_, err := stockCall(t, seed, "2025-11-25", auth, p)
		if !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Fatalf("seed code -32004 for idempotency_key_reused: got %v, want go-sdk's mcp.ErrConnectionClosed", err)
		}
	})
}

// samplerUpstream serves "needs.sampling", a tool that refuses with -32021
// a request whose client did not declare sampling, as go-sdk's
// everything-server's sampling tool does; it returns the server's URL.
func samplerUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "sampler", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "needs.sampling", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if c := req.ClientCapabilities(); c == nil || c.Sampling == nil {
				data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
				if err != nil {
					return nil, err
				}
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required", Data: data}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}
