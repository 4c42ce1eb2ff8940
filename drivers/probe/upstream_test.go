package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func startOpts(t *testing.T, opts Options) (*Probe, context.Context) {
	t.Helper()
	p, err := Start(opts)
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

func dial(ctx context.Context, t *testing.T, p *Probe) *Remote {
	t.Helper()
	r, err := Dial(ctx, "http://"+p.Addr()+APIPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// view is p seen through one kind of Upstream. The local view is not
// closed by the test: that would stop p under the other view.
func view(ctx context.Context, t *testing.T, p *Probe, kind string) Upstream {
	if kind == "remote" {
		return dial(ctx, t, p)
	}
	return Local(p)
}

var kinds = []string{"local", "remote"}

func describe(ds []judge.Dispatch) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Tool+" "+d.Token)
	}
	return out
}

// The same sequence of dispatches, looked at through Local and Remote,
// gives the same answers, and the answers are the expected ones.
func TestRemoteAnswersAsLocal(t *testing.T) {
	p, ctx := start(t)
	views := map[string]Upstream{"local": Local(p), "remote": dial(ctx, t, p)}
	const odd = "run2/ö &?=#%+/"
	type step struct {
		op    string // call, forget, count, dispatches, waitfor, quiet
		tool  string // call
		arg   string // token or prefix
		via   string // forget: which view sends it
		want  any    // count: int; dispatches: []string; call: Result
		wantN int    // waitfor
	}
	steps := []step{
		{op: "call", tool: ToolWrite, arg: "run1/a", want: Result{"run1/a", 1, 1}},
		{op: "call", tool: ToolWrite, arg: "run1/a", want: Result{"run1/a", 2, 2}},
		{op: "call", tool: ToolRead, arg: "run1/b", want: Result{"run1/b", 1, 3}},
		{op: "call", tool: ToolWrite, arg: "run2/a", want: Result{"run2/a", 1, 4}},
		{op: "call", tool: ToolWrite, arg: odd, want: Result{odd, 1, 5}},
		{op: "count", arg: "run1/a", want: 2},
		{op: "count", arg: "run1/b", want: 1},
		{op: "count", arg: "run1/", want: 0}, // a token, not a prefix
		{op: "count", arg: odd, want: 1},
		{op: "count", arg: "", want: 5},
		{op: "dispatches", arg: "", want: []string{"probe.write run1/a", "probe.write run1/a", "probe.read run1/b", "probe.write run2/a", "probe.write " + odd}},
		{op: "dispatches", arg: "run1/", want: []string{"probe.write run1/a", "probe.write run1/a", "probe.read run1/b"}},
		{op: "dispatches", arg: "run2/ö &", want: []string{"probe.write " + odd}},
		{op: "dispatches", arg: "nope", want: []string{}},
		{op: "waitfor", arg: "run1/a", wantN: 2},
		{op: "waitfor", arg: "", wantN: 5},
		{op: "quiet", arg: "run1/"},
		{op: "forget", arg: "run1/", via: "remote"},
		{op: "count", arg: "run1/a", want: 0},
		{op: "count", arg: "", want: 2},
		{op: "dispatches", arg: "", want: []string{"probe.write run2/a", "probe.write " + odd}},
		// A forgotten token counts afresh; Seq keeps counting.
		{op: "call", tool: ToolWrite, arg: "run1/a", want: Result{"run1/a", 1, 6}},
		{op: "dispatches", arg: "run1/", want: []string{"probe.write run1/a"}},
		{op: "forget", arg: "", via: "local"},
		{op: "count", arg: "", want: 0},
		{op: "dispatches", arg: "", want: []string{}},
	}
	for i, s := range steps {
		name := fmt.Sprintf("step %d %s %q", i, s.op, s.arg)
		switch s.op {
		case "call":
			if got := result(t, call(ctx, t, p, s.tool, s.arg)); got != s.want {
				t.Fatalf("%s: %+v, want %+v", name, got, s.want)
			}
			continue
		case "forget":
			if err := views[s.via].(Forgetter).Forget(ctx, s.arg); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		var first []judge.Dispatch
		for _, k := range kinds {
			u := views[k]
			switch s.op {
			case "count":
				n, err := u.Count(ctx, s.arg)
				if err != nil || n != s.want {
					t.Fatalf("%s via %s: %d, %v; want %d", name, k, n, err, s.want)
				}
			case "dispatches":
				ds, err := u.Dispatches(ctx, s.arg)
				if err != nil {
					t.Fatalf("%s via %s: %v", name, k, err)
				}
				if got, want := strings.Join(describe(ds), "|"), strings.Join(s.want.([]string), "|"); got != want {
					t.Fatalf("%s via %s:\n got %s\nwant %s", name, k, got, want)
				}
				if first == nil {
					first = ds
				}
				for j := range ds {
					if !ds[j].At.Equal(first[j].At) {
						t.Fatalf("%s via %s: dispatch %d at %v, local says %v", name, k, j, ds[j].At, first[j].At)
					}
				}
			case "waitfor":
				if err := u.WaitFor(ctx, s.arg, s.wantN); err != nil {
					t.Fatalf("%s via %s: %v", name, k, err)
				}
			case "quiet":
				if err := u.Quiet(ctx, s.arg, time.Millisecond); err != nil {
					t.Fatalf("%s via %s: %v", name, k, err)
				}
			default:
				t.Fatalf("unknown op %q", s.op)
			}
		}
	}
}

// fakeTimers hands out Quiet's timers, which fire only when the test says.
type fakeTimers struct{ armed chan chan time.Time }

func (f *fakeTimers) after(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	f.armed <- c
	return c
}

func recv[T any](ctx context.Context, t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("never got %s", what)
		panic("unreachable")
	}
}

// Quiet sees a dispatch that arrives late, inside the quiet period: the
// period starts again, and the timer armed before it no longer ends the wait.
func TestQuietSeesLateDispatch(t *testing.T) {
	for _, k := range kinds {
		t.Run(k, func(t *testing.T) {
			ft := &fakeTimers{armed: make(chan chan time.Time, 16)}
			p, ctx := startOpts(t, Options{after: ft.after})
			u := view(ctx, t, p, k)
			done := make(chan error, 1)
			go func() { done <- u.Quiet(ctx, "run1/", time.Hour) }()
			first := recv(ctx, t, ft.armed, "the first timer")
			call(ctx, t, p, ToolWrite, "run2/x") // another run's dispatch does not count
			call(ctx, t, p, ToolWrite, "run1/late")
			second := recv(ctx, t, ft.armed, "a timer re-armed by the late dispatch")
			first <- time.Now() // stale: the wait goes on
			call(ctx, t, p, ToolRead, "run1/later")
			third := recv(ctx, t, ft.armed, "a timer re-armed by the later dispatch (Quiet ended on a stale timer?)")
			second <- time.Now()
			third <- time.Now()
			if err := recv(ctx, t, done, "Quiet's return"); err != nil {
				t.Fatal(err)
			}
			if n := len(ft.armed); n != 0 {
				t.Fatalf("%d more timers armed: a dispatch of another prefix restarted the period", n)
			}
		})
	}
}

// A quiet period carries over from one long poll to the next: a dispatch
// between two polls moves its start.
func TestQuietResumesAcrossPolls(t *testing.T) {
	never := func(time.Duration) <-chan time.Time { return nil }
	p, ctx := startOpts(t, Options{after: never, PollLimit: time.Millisecond})
	h := p.srv.Handler
	ask := func(body string) quietResponse {
		t.Helper()
		st, raw := serve(t, h, "POST", "/probe/v1/quiet", "127.0.0.1:9", body)
		var res quietResponse
		if err := json.Unmarshal(raw, &res); st != 200 || err != nil || res.Quiet || res.Since == nil {
			t.Fatalf("quiet answer %d %s", st, raw)
		}
		return res
	}
	r0 := ask(`{"token_prefix":"r/","quiet":"1h"}`)
	call(ctx, t, p, ToolWrite, "r/x")
	call(ctx, t, p, ToolWrite, "other/y")
	mark := func(r quietResponse) string {
		return fmt.Sprintf(`{"token_prefix":"r/","quiet":"1h","since":%q,"after":%d}`, r.Since.Format(time.RFC3339Nano), r.After)
	}
	r1 := ask(mark(r0))
	at := p.Dispatches()[0].At
	if !r1.Since.Equal(at) || r1.After != r0.After+2 {
		t.Fatalf("after a dispatch between polls: since %v after %d, want %v and %d", r1.Since, r1.After, at, r0.After+2)
	}
	if r2 := ask(mark(r1)); !r2.Since.Equal(at) || r2.After != r1.After {
		t.Fatalf("nothing new: since %v after %d, want %v and %d", r2.Since, r2.After, at, r1.After)
	}

	// Remote asks again and again until its ctx ends.
	polls := make(chan string, 1024)
	p2, _ := startOpts(t, Options{after: never, PollLimit: time.Millisecond, polling: func(e string) { trySend(polls, e) }})
	short, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { res <- dial(ctx, t, p2).Quiet(short, "r/", time.Hour) }()
	for range 3 {
		recv(ctx, t, polls, "a quiet poll")
	}
	cancel()
	if err := recv(ctx, t, res, "Quiet's return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Quiet after cancel: %v", err)
	}
}

func trySend(ch chan string, v string) {
	select {
	case ch <- v:
	default:
	}
}

func sdkSession(ctx context.Context, t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Stall over Remote holds a gateway's call after counting it; Unstall, or
// Forget of its prefix, lets it go.
func TestRemoteStall(t *testing.T) {
	p, ctx := start(t)
	r := dial(ctx, t, p)
	cs := sdkSession(ctx, t, r.URL())
	hold := func(token string) chan *mcp.CallToolResult {
		if err := r.Stall(ctx, token); err != nil {
			t.Fatal(err)
		}
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolWrite, Arguments: map[string]any{"token": token}})
			if err != nil {
				t.Errorf("call %s: %v", token, err)
			}
			done <- res
		}()
		if err := r.WaitFor(ctx, token, 1); err != nil {
			t.Fatal(err)
		}
		return done
	}
	done := hold("run1/held")
	if n, err := r.Count(ctx, "run1/held"); n != 1 || err != nil {
		t.Fatalf("held call counted %d, %v", n, err)
	}
	select {
	case res := <-done:
		t.Fatalf("stalled call returned: %+v", res)
	default:
	}
	if err := r.Unstall(ctx, "run1/held"); err != nil {
		t.Fatal(err)
	}
	if res := recv(ctx, t, done, "the released call"); res == nil || res.IsError {
		t.Fatalf("released call: %+v", res)
	}

	done = hold("run9/held")
	if err := r.Forget(ctx, "run9/"); err != nil {
		t.Fatal(err)
	}
	if res := recv(ctx, t, done, "the call released by Forget"); res == nil || res.IsError {
		t.Fatalf("released call: %+v", res)
	}
	if n, _ := r.Count(ctx, "run9/held"); n != 0 {
		t.Fatalf("forgotten token counts %d", n)
	}
}

// WaitFor over Remote returns when the dispatch arrives, however many
// bounded polls it took, and returns ctx's error when it never does.
func TestRemoteWaitFor(t *testing.T) {
	for _, limit := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprint("poll limit ", limit), func(t *testing.T) {
			polls := make(chan string, 1024)
			p, ctx := startOpts(t, Options{PollLimit: limit, polling: func(e string) { trySend(polls, e) }})
			r := dial(ctx, t, p)
			res := make(chan error, 1)
			go func() { res <- r.WaitFor(ctx, "run1/late", 1) }()
			n := 1
			if limit > 0 {
				n = 3 // the client asked again after polls ran out
			}
			for range n {
				if e := recv(ctx, t, polls, "a wait poll"); e != "wait" {
					t.Fatalf("poll %q", e)
				}
			}
			call(ctx, t, p, ToolWrite, "run1/late")
			if err := recv(ctx, t, res, "WaitFor's return"); err != nil {
				t.Fatal(err)
			}

			short, cancel := context.WithCancel(ctx)
			go func() { res <- r.WaitFor(short, "run1/never", 1) }()
			recv(ctx, t, polls, "a wait poll")
			cancel()
			if err := recv(ctx, t, res, "WaitFor's return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("WaitFor after cancel: %v", err)
			}
		})
	}
}

func TestDial(t *testing.T) {
	p, ctx := start(t)
	// The base URL, the API's or the MCP endpoint's: a user copies whichever
	// mcpconform probe printed.
	for _, base := range []string{"http://" + p.Addr(), "http://" + p.Addr() + "/", "http://" + p.Addr() + "/probe/v1/", "http://" + p.Addr() + "/mcp"} {
		r, err := Dial(ctx, base)
		if err != nil {
			t.Fatalf("Dial %s: %v", base, err)
		}
		if r.BaseURL() != "http://"+p.Addr()+APIPath || r.URL() != p.URL() {
			t.Fatalf("Dial %s: base %s, MCP %s", base, r.BaseURL(), r.URL())
		}
		_ = r.Close()
		if _, err := r.Count(ctx, ""); !errors.Is(err, errRemoteClosed) {
			t.Fatalf("Count after Close: %v", err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:1", "ftp://x/probe/v1", "http://" + p.Addr() + "/probe/v2"} {
		if _, err := Dial(ctx, bad); err == nil {
			t.Errorf("Dial %q: no error", bad)
		}
	}
	// A Remote that closes does not stop the probe.
	if n := p.Count(""); n != 0 {
		t.Fatalf("count %d", n)
	}
	call(ctx, t, p, ToolWrite, "still")
}

// Close ends a long poll in progress instead of waiting out its limit
// (Shutdown would give up after 5 s and Close report it); the client then
// finds the probe gone.
func TestCloseEndsLongPolls(t *testing.T) {
	polls := make(chan string, 16)
	p, err := Start(Options{polling: func(e string) { trySend(polls, e) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := dial(ctx, t, p)
	waited, quieted := make(chan error, 1), make(chan error, 1)
	go func() { waited <- r.WaitFor(ctx, "never", 1) }()
	go func() { quieted <- r.Quiet(ctx, "", time.Hour) }()
	recv(ctx, t, polls, "a long poll")
	recv(ctx, t, polls, "a long poll")
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, ch := range []chan error{waited, quieted} {
		if err := recv(ctx, t, ch, "the poll's return"); err == nil || ctx.Err() != nil {
			t.Fatalf("after Close: %v (ctx %v)", err, ctx.Err())
		}
	}
}

// Fail through the observation API fails the token's next dispatch as Fail
// in process does, and refuses a kind of failure it does not know.
func TestRemoteFail(t *testing.T) {
	p, ctx := start(t)
	r := dial(ctx, t, p)
	if err := r.Fail(ctx, "rem", FailToolError); err != nil {
		t.Fatal(err)
	}
	if a := call(ctx, t, p, ToolWrite, "rem"); !a.IsError() {
		t.Fatalf("not failed: %s", a.Body)
	}
	if err := r.Fail(ctx, "rem", "explode"); err == nil || !strings.Contains(err.Error(), "want tool_error or refuse") {
		t.Fatalf("unknown kind: %v", err)
	}
}
