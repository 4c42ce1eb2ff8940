package probe

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

func start(t *testing.T) (*Probe, context.Context) {
	t.Helper()
	p, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return p, ctx
}

func call(ctx context.Context, t *testing.T, p *Probe, tool, token string) *wire.Answer {
	t.Helper()
	c := &wire.Client{BaseURL: p.URL(), ProtocolVersion: wire.V20260728}
	a, err := c.CallTool(ctx, wire.Call{Tool: tool, Arguments: map[string]any{"token": token}})
	if err != nil {
		t.Errorf("call %s %s: %v", tool, token, err)
		return nil
	}
	if a.HasError() {
		t.Errorf("call %s %s: %s", tool, token, a.Body)
	}
	return a
}

func result(t *testing.T, a *wire.Answer) Result {
	t.Helper()
	var r Result
	if err := json.Unmarshal(a.StructuredContent(), &r); err != nil {
		t.Fatalf("structuredContent %s: %v", a.StructuredContent(), err)
	}
	return r
}

// A gateway built on the go-sdk client reaches the probe with either
// protocol version.
func TestGoSDKClientBothVersions(t *testing.T) {
	p, ctx := start(t)
	for _, v := range []string{"2025-11-25", ""} { // "" = the SDK's latest (2026-07-28)
		c := mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL(), DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatalf("connect %q: %v", v, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolWrite, Arguments: map[string]any{"token": "sdk-" + v}})
		if err != nil || res.IsError {
			t.Fatalf("call %q: %v %+v", v, err, res)
		}
		if got := cs.InitializeResult().ProtocolVersion; v != "" && got != v {
			t.Errorf("negotiated %q, want %q", got, v)
		}
		_ = cs.Close()
		if p.Count("sdk-"+v) != 1 {
			t.Errorf("version %q: count %d", v, p.Count("sdk-"+v))
		}
	}
}

func TestCountsAndResults(t *testing.T) {
	p, ctx := start(t)
	steps := []struct {
		tool, token string
		want        Result
	}{
		{ToolWrite, "a", Result{"a", 1, 1}},
		{ToolWrite, "a", Result{"a", 2, 2}},
		{ToolRead, "b", Result{"b", 1, 3}},
		{ToolWrite, "a", Result{"a", 3, 4}},
	}
	for _, s := range steps {
		a := call(ctx, t, p, s.tool, s.token)
		if got := result(t, a); got != s.want {
			t.Fatalf("%s %s: got %+v, want %+v", s.tool, s.token, got, s.want)
		}
	}
	if p.Count("a") != 3 || p.Count("b") != 1 || p.Count("zzz") != 0 || p.Count("") != 4 {
		t.Fatalf("counts a=%d b=%d total=%d", p.Count("a"), p.Count("b"), p.Count(""))
	}
	d := p.Dispatches()
	if len(d) != 4 || d[2].Tool != ToolRead || d[2].Token != "b" || d[3].At.Before(d[0].At) {
		t.Fatalf("dispatches %+v", d)
	}
	p.Reset()
	if p.Count("") != 0 || len(p.Dispatches()) != 0 {
		t.Fatal("Reset kept dispatches")
	}
}

func TestMissingTokenIsToolErrorButCounted(t *testing.T) {
	p, ctx := start(t)
	c := &wire.Client{BaseURL: p.URL(), ProtocolVersion: wire.V20260728}
	a, err := c.CallTool(ctx, wire.Call{Tool: ToolWrite, Arguments: map[string]any{"x": 1}})
	if err != nil || !a.IsError() {
		t.Fatalf("answer %v %s", err, a.Body)
	}
	if p.Count("") != 1 {
		t.Fatalf("count %d", p.Count(""))
	}
}

func TestFailNext(t *testing.T) {
	p, ctx := start(t)
	p.FailNext(2)
	want := []bool{true, true, false}
	for i, fail := range want {
		a := call(ctx, t, p, ToolWrite, "f")
		if a.IsError() != fail {
			t.Fatalf("call %d: isError %v, want %v (%s)", i, a.IsError(), fail, a.Body)
		}
	}
	if p.Count("f") != 3 {
		t.Fatalf("failed calls not counted: %d", p.Count("f"))
	}
}

// Fail fails one token's next dispatch only: a tool error is a counted
// result that names its dispatch, a refusal is a JSON-RPC error before the
// tool runs, not counted; the dispatch after either runs as usual.
func TestFailToken(t *testing.T) {
	p, ctx := start(t)
	if err := p.Fail("te", FailToolError); err != nil {
		t.Fatal(err)
	}
	if err := p.Fail("rf", FailRefuse); err != nil {
		t.Fatal(err)
	}
	if err := p.Fail("x", "explode"); err == nil {
		t.Error("Fail accepted an unknown way to fail")
	}
	if a := call(ctx, t, p, ToolWrite, "other"); a.IsError() {
		t.Fatalf("another token failed: %s", a.Body)
	}
	a := call(ctx, t, p, ToolWrite, "te")
	if !a.IsError() || result(t, a).Token != "te" || p.Count("te") != 1 {
		t.Fatalf("tool error: %s, count %d", a.Body, p.Count("te"))
	}
	c := &wire.Client{BaseURL: p.URL(), ProtocolVersion: wire.V20260728}
	r, err := c.CallTool(ctx, wire.Call{Tool: ToolWrite, Arguments: map[string]any{"token": "rf"}})
	if err != nil || !r.HasError() || p.Count("rf") != 0 {
		t.Fatalf("refusal: %v %v, count %d", r, err, p.Count("rf"))
	}
	for _, tok := range []string{"te", "rf"} {
		if a := call(ctx, t, p, ToolWrite, tok); a.IsError() {
			t.Fatalf("%s failed twice: %s", tok, a.Body)
		}
	}
	if p.Count("te") != 2 || p.Count("rf") != 1 {
		t.Fatalf("counts te %d rf %d, want 2 and 1", p.Count("te"), p.Count("rf"))
	}
}

func TestStallToken(t *testing.T) {
	p, ctx := start(t)
	p.Stall("held")
	done := make(chan *wire.Answer, 1)
	go func() { done <- call(ctx, t, p, ToolWrite, "held") }()
	if err := p.WaitFor(ctx, "held", 1); err != nil {
		t.Fatal(err)
	}
	// Another token passes while "held" is stalled.
	if r := result(t, call(ctx, t, p, ToolWrite, "free")); r.N != 1 {
		t.Fatalf("free call %+v", r)
	}
	select {
	case a := <-done:
		t.Fatalf("stalled call returned early: %s", a.Body)
	default:
	}
	p.Unstall("held")
	if a := <-done; a == nil || result(t, a).Token != "held" {
		t.Fatal("stalled call did not complete after Unstall")
	}
}

func TestStallAllAndConcurrentCount(t *testing.T) {
	p, ctx := start(t)
	p.Stall("")
	const n = 32
	var wg sync.WaitGroup
	ns := make(chan int, n)
	for range n {
		wg.Go(func() {
			if a := call(ctx, t, p, ToolWrite, "twin"); a != nil {
				ns <- result(t, a).N
			}
		})
	}
	if err := p.WaitFor(ctx, "twin", n); err != nil {
		t.Fatal(err)
	}
	if len(ns) != 0 {
		t.Fatal("a call returned while every call is stalled")
	}
	p.Unstall("")
	wg.Wait()
	close(ns)
	seen := map[int]bool{}
	for v := range ns {
		seen[v] = true
	}
	if len(seen) != n || p.Count("twin") != n {
		t.Fatalf("distinct n %d, count %d, want %d", len(seen), p.Count("twin"), n)
	}
}

func TestWaitForTimesOut(t *testing.T) {
	p, ctx := start(t)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.WaitFor(short, "never", 1); err == nil {
		t.Fatal("WaitFor returned without dispatches")
	}
	// "" waits on any token.
	done := make(chan struct{})
	go func() { call(ctx, t, p, ToolRead, "x"); close(done) }()
	if err := p.WaitFor(ctx, "", 1); err != nil {
		t.Fatal(err)
	}
	<-done
}

func TestCloseReleasesStalledCalls(t *testing.T) {
	p, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p.Stall("")
	returned := make(chan struct{})
	go func() {
		c := &wire.Client{BaseURL: p.URL(), ProtocolVersion: wire.V20260728}
		_, _ = c.CallTool(ctx, wire.Call{Tool: ToolWrite, Arguments: map[string]any{"token": "c"}})
		close(returned)
	}()
	if err := p.WaitFor(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if time.Since(t0) > 3*time.Second {
		t.Fatalf("Close took %v", time.Since(t0))
	}
	<-returned
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestFixedAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := Start(Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.URL() != "http://"+addr+"/mcp" || p.Addr() != addr {
		t.Fatalf("URL %s", p.URL())
	}
	if _, err := Start(Options{Addr: addr}); err == nil {
		t.Fatal("second probe on a taken address started")
	}
}
