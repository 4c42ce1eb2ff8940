package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fullUpstream is an upstream MCP server offering a tool, a prompt with
// completion, a resource, a resource template and subscriptions.
type fullUpstream struct {
	url    string
	server *mcp.Server
	// streams tells when a client's stream for notifications unrelated to
	// a request is open (streamSignals).
	streams chan string
}

const sumSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"n":{"$anchor":"num","type":"number"}},"properties":{"a":{"$ref":"#num"},"b":{"$ref":"#num"}},
 "required":["a","b"],"additionalProperties":false}`

func newFullUpstream(t *testing.T) *fullUpstream {
	s := mcp.NewServer(&mcp.Implementation{Name: "full-upstream", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Ref.Type + ":" + r.Params.Argument.Value + "-done"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddTool(&mcp.Tool{Name: "sum", Title: "Sum", Description: "Adds a and b.", InputSchema: json.RawMessage(sumSchema)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "mem://a", Name: "a", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "A"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://items/{id}", Name: "item"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "item " + strings.TrimPrefix(r.Params.URI, "mem://items/")}}}, nil
		})
	streams := make(chan string, 64)
	srv := httptest.NewServer(streamSignals(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), streams))
	t.Cleanup(srv.Close)
	return &fullUpstream{url: srv.URL, server: s, streams: streams}
}

func connectClient(t *testing.T, g *gatewayProc, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-client", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.base + "/mcp",
		HTTPClient: &http.Client{Transport: &clientTransport{key: extKey, cancelled: make(chan int, 4)}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestUpstreamServerRelayed(t *testing.T) {
	up := newFullUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken, Fixtures: writeFixtures(t)})
	reg := g.control(t, "POST", "/control/servers", `{"name": "full", "url": "`+up.url+`", "prefix": "full.", "price": 2, "prices": {"sum": 3}}`, 201)
	if got := reg["tools"].([]any); len(got) != 1 || got[0].(map[string]any)["name"] != "full.sum" || got[0].(map[string]any)["price"] != 3.0 {
		t.Fatalf("registered tools %v", got)
	}
	g.control(t, "POST", "/control/servers", `{"name": "down", "url": "http://127.0.0.1:1/mcp"}`, 502)

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cs := connectClient(t, g, version, nil)
			caps := cs.InitializeResult().Capabilities
			want := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{ListChanged: true},
				Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}, Completions: &mcp.CompletionCapabilities{}, Logging: &mcp.LoggingCapabilities{}}
			if diff := cmp.Diff(want, caps); diff != "" {
				t.Fatalf("capabilities (-want +got):\n%s", diff)
			}

			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var sum *mcp.Tool
			for _, tl := range tools.Tools {
				if tl.Name == "full.sum" {
					sum = tl
				}
			}
			var wantSchema any
			_ = json.Unmarshal([]byte(sumSchema), &wantSchema)
			if sum == nil || sum.Title != "Sum" || sum.Description != "Adds a and b." || cmp.Diff(wantSchema, sum.InputSchema) != "" {
				t.Fatalf("full.sum listed as %+v", sum)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "full.sum", Arguments: map[string]any{"a": 1, "b": 2},
				Meta: mcp.Meta{"idempotencyKey": "sum-" + version}})
			if err != nil || res.IsError {
				t.Fatalf("call: %+v %v", res, err)
			}
			if rc, sc := receiptOfResult(t, res); rc.Charged != 3 || sc != `{"sum":3}` {
				t.Fatalf("receipt %+v, structured %s: want charged 3, sum 3", rc, sc)
			}

			prompts, err := cs.ListPrompts(t.Context(), nil)
			if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "full.greet" {
				t.Fatalf("prompts/list: %+v %v", prompts, err)
			}
			pr, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "full.greet", Arguments: map[string]string{"who": "ann"}})
			if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello ann" {
				t.Fatalf("prompts/get: %+v %v", pr, err)
			}
			if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet"}); err == nil {
				t.Fatal("prompts/get of the upstream's unprefixed name answered")
			}

			rs, err := cs.ListResources(t.Context(), nil)
			if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != "mem://a" {
				t.Fatalf("resources/list: %+v %v", rs, err)
			}
			tpls, err := cs.ListResourceTemplates(t.Context(), nil)
			if err != nil || len(tpls.ResourceTemplates) != 1 || tpls.ResourceTemplates[0].URITemplate != "mem://items/{id}" {
				t.Fatalf("resources/templates/list: %+v %v", tpls, err)
			}
			for uri, text := range map[string]string{"mem://a": "A", "mem://items/7": "item 7"} {
				rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
				if err != nil || rr.Contents[0].Text != text {
					t.Fatalf("resources/read %s: %+v %v", uri, rr, err)
				}
			}

			for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "full.greet"}, {Type: "ref/resource", URI: "mem://items/{id}"}} {
				c, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "an"}})
				if err != nil || len(c.Completion.Values) != 1 || c.Completion.Values[0] != ref.Type+":an-done" {
					t.Fatalf("completion/complete %s: %+v %v", ref.Type, c, err)
				}
			}
		})
	}

	g.control(t, "DELETE", "/control/servers/full", "", 204)
	cs := connectClient(t, g, "2025-11-25", nil)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || strings.Contains(strings.Join(toolNames(tools), ","), "full.sum") {
		t.Fatalf("tools after the server's removal: %v %v", toolNames(tools), err)
	}
}

// TestNothingUndeclaredAnswered: without a registered server the gateway
// declares tools and logging alone and answers no other feature's method.
func TestNothingUndeclaredAnswered(t *testing.T) {
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken, Fixtures: writeFixtures(t)})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cs := connectClient(t, g, version, nil)
			want := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}
			if diff := cmp.Diff(want, cs.InitializeResult().Capabilities); diff != "" {
				t.Fatalf("capabilities (-want +got):\n%s", diff)
			}
			calls := map[string]func() error{
				"prompts/list":             func() error { _, err := cs.ListPrompts(t.Context(), nil); return err },
				"prompts/get":              func() error { _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "x"}); return err },
				"resources/list":           func() error { _, err := cs.ListResources(t.Context(), nil); return err },
				"resources/templates/list": func() error { _, err := cs.ListResourceTemplates(t.Context(), nil); return err },
				"resources/read": func() error {
					_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://a"})
					return err
				},
				"completion/complete": func() error {
					_, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x"}})
					return err
				},
			}
			if version == "2025-11-25" { // not a method of 2026-07-28
				calls["resources/subscribe"] = func() error { return cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "mem://a"}) }
			}
			for method, call := range calls {
				var rpc *jsonrpc.Error
				if err := call(); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
					t.Errorf("%s: %v, want method not found", method, err)
				}
			}
		})
	}
}

// chattyUpstream's tool "chatty" reports progress, logs, asks the client to
// sample and to elicit, and answers with what it was told.
func chattyUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range 3 {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: float64(i), Total: 2})
			}
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "below the client's level"})
			sampled, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
			if err != nil {
				return nil, err
			}
			elicited, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}},
				StructuredContent: map[string]any{"sampled": sampled.Content.(*mcp.TextContent).Text, "name": elicited.Content["name"]}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRelayDuringCall: on a 2025-11-25 session an upstream tool's progress
// (under the client's own token), log messages (at the client's level) and
// sampling and elicitation requests reach the client, and its answers reach
// the upstream; the call is charged once and its retry replays it.
func TestRelayDuringCall(t *testing.T) {
	url := chattyUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.chatty", "upstream_url": "`+url+`", "upstream_tool": "chatty", "price": 3}`)})
	progress := make(chan *mcp.ProgressNotificationParams, 8)
	logs := make(chan *mcp.LoggingMessageParams, 8)
	cs := connectClient(t, g, "2025-11-25", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi from the client"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		},
	})
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "acme.chatty", Arguments: map[string]any{}, Meta: mcp.Meta{"idempotencyKey": "chatty-1"}}
	params.SetProgressToken("client-token")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, err)
	}
	if rc, sc := receiptOfResult(t, res); rc.Charged != 3 || sc != `{"name":"ann","sampled":"hi from the client"}` {
		t.Fatalf("receipt %+v, structured %s", rc, sc)
	}
	for i := range 3 {
		p := recv(t, progress, "a progress notification")
		if p.ProgressToken != "client-token" || p.Progress != float64(i) {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
	if m := recv(t, logs, "a log message"); m.Data != "working" {
		t.Fatalf("log message %+v", m)
	}

	retry, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if rc, sc := receiptOfResult(t, retry); !rc.Replayed || sc != `{"name":"ann","sampled":"hi from the client"}` {
		t.Fatalf("retry: receipt %+v, structured %s", rc, sc)
	}
	if n := len(debits(t, g, "w-ext-1")); n != 1 {
		t.Fatalf("%d debits, want 1", n)
	}
}

// roundsUpstream's tool "confirm" asks the client for a name (an
// input-required result) before it does its work, which it counts.
func roundsUpstream(t *testing.T) (string, *atomic.Int64) {
	var done atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "rounds", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			answer, ok := r.Params.InputResponses["name"].(*mcp.ElicitResult)
			if !ok || r.Params.RequestState != "asked-for-name" {
				return &mcp.CallToolResult{RequestState: "asked-for-name", InputRequests: mcp.InputRequestMap{
					"name": &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil
			}
			n := done.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "confirmed"}},
				StructuredContent: map[string]any{"name": answer.Content["name"], "run": n}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL, &done
}

// TestMultiRoundCall: a call whose upstream asks for input is one operation,
// charged once: on 2026-07-28 the client answers in the call's next round
// (the round that asked is refunded), on a 2025-11-25 session the gateway
// asks the client itself; the finished call's retry replays its result.
func TestMultiRoundCall(t *testing.T) {
	url, done := roundsUpstream(t)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.confirm", "upstream_url": "`+url+`", "upstream_tool": "confirm", "price": 5}`)})
	for i, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			asked := 0
			cs := connectClient(t, g, version, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
				},
			})
			balance := g.control(t, "GET", "/control/wallets/w-ext-1", "", 200)["balance"].(float64)
			params := &mcp.CallToolParams{Name: "acme.confirm", Arguments: map[string]any{}, Meta: mcp.Meta{"idempotencyKey": "confirm-" + version}}
			want := fmt.Sprintf(`{"name":"ann","run":%d}`, i+1)
			for attempt := range 2 {
				res, err := cs.CallTool(t.Context(), params)
				if err != nil || res.IsError {
					t.Fatalf("attempt %d: %+v %v", attempt, res, err)
				}
				rc, sc := receiptOfResult(t, res)
				if sc != want || rc.Charged != 5 || rc.Replayed != (attempt == 1) {
					t.Fatalf("attempt %d: receipt %+v, structured %s: want %s, replayed on the retry", attempt, rc, sc, want)
				}
			}
			if asked != 1 || done.Load() != int64(i+1) {
				t.Fatalf("the client was asked %d times and the tool did its work %d times in all, want 1 and %d", asked, done.Load(), i+1)
			}
			if now := g.control(t, "GET", "/control/wallets/w-ext-1", "", 200)["balance"].(float64); balance-now != 5 {
				t.Fatalf("the multi-round call cost %v, want its price 5 once", balance-now)
			}
			refunds := 0
			for _, e := range g.control(t, "GET", "/control/wallets/w-ext-1/ledger", "", 200)["entries"].([]any) {
				if e.(map[string]any)["kind"] == "refund" {
					refunds++
				}
			}
			if refunds != 1 { // the 2026-07-28 round that asked; on 2025-11-25 the gateway asked within one round
				t.Fatalf("%d refunds in the ledger, want 1", refunds)
			}
		})
	}
}

// TestRelayDuringCallStateless: on the 2026-07-28 wire a call that sent a
// progressToken and a log level is answered with an event stream that
// carries the upstream's progress and log messages.
func TestRelayDuringCallStateless(t *testing.T) {
	received := make(chan struct{}) // the client has the messages: the tool may answer
	s := mcp.NewServer(&mcp.Implementation{Name: "steps", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "steps", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: r.Params.GetProgressToken(), Progress: 1, Total: 2})
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "half way"})
			<-received
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", ControlToken: controlToken,
		Fixtures: writeFixtures(t, `{"name": "acme.steps", "upstream_url": "`+srv.URL+`", "upstream_tool": "steps", "price": 2}`)})

	var mu sync.Mutex
	var progress *mcp.ProgressNotificationParams
	var logged *mcp.LoggingMessageParams
	var once sync.Once
	got := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		f()
		if progress != nil && logged != nil {
			once.Do(func() { close(received) })
		}
	}
	cs := connectClient(t, g, "2026-07-28", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { got(func() { progress = r.Params }) },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { got(func() { logged = r.Params }) },
	})
	params := &mcp.CallToolParams{Name: "acme.steps", Arguments: map[string]any{},
		Meta: mcp.Meta{"idempotencyKey": "steps-1", mcp.MetaKeyLogLevel: "info"}}
	params.SetProgressToken(7)
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if progress.ProgressToken != 7.0 || progress.Progress != 1 || logged.Data != "half way" {
		t.Fatalf("progress %+v, log %+v", progress, logged)
	}
}
