package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// memStore implements the part of store.Store the dispatcher uses.
type memStore struct {
	store.Store // nil: any other method panics
	mu          sync.Mutex
	tools       map[string]store.Tool
	notes       map[string][]string
	servers     []store.Server
	failNotes   bool
	seq         int64
}

func newMemStore() *memStore {
	return &memStore{tools: map[string]store.Tool{}, notes: map[string][]string{}}
}

func (m *memStore) Tool(_ context.Context, name string) (store.Tool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tools[name]
	if !ok {
		return store.Tool{}, store.ErrNotFound
	}
	return t, nil
}

// VersionedTool is Tool at version 0, which no request is authenticated at:
// these tests keep no tool entry across requests.
func (m *memStore) VersionedTool(ctx context.Context, name string) (store.Tool, int64, error) {
	t, err := m.Tool(ctx, name)
	return t, 0, err
}

func (m *memStore) PutTool(_ context.Context, t store.Tool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Removed = false
	m.tools[t.Name] = t
	return nil
}

func (m *memStore) Tools(context.Context) ([]store.Tool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Tool
	for _, t := range m.tools {
		if !t.Removed {
			out = append(out, t)
		}
	}
	return out, nil
}

func (m *memStore) AddNote(_ context.Context, w, text string, _ time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failNotes {
		return 0, store.ErrBusy
	}
	m.notes[w] = append(m.notes[w], text)
	m.seq++
	return 100 + m.seq, nil // a note id, not the count
}

func (m *memStore) CountNotes(_ context.Context, w string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.notes[w])), nil
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           *bool           `json:"isError"`
}

func decode(t *testing.T, raw json.RawMessage) callResult {
	t.Helper()
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if r.IsError == nil {
		t.Fatalf("no isError in %s", raw)
	}
	return r
}

func TestSeed(t *testing.T) {
	st := newMemStore()
	st.tools[NotesCount] = store.Tool{Name: NotesCount, Price: 9, ReadOnly: true}
	st.tools[Echo] = store.Tool{Name: Echo, Price: 1, Removed: true}
	if err := Seed(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if got := st.tools[NotesCount].Price; got != 9 {
		t.Fatalf("seed overwrote a re-priced tool: price %d", got)
	}
	if !st.tools[Echo].Removed {
		t.Fatalf("seed revived a removed tool")
	}
	if w := st.tools[NotesWrite]; w.Price != 2 || w.ReadOnly {
		t.Fatalf("notes.write seeded as %+v", w)
	}
}

func TestLocalTools(t *testing.T) {
	st := newMemStore()
	d := New(st, Options{})
	defer d.Close()
	ctx := context.Background()
	lt := func(name string) store.Tool { tl, _ := LocalTool(name); return tl }

	raw, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: lt(Echo), Arguments: json.RawMessage(`{"a":[1,"x"]}`), WalletID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, raw)
	if string(r.StructuredContent) != `{"a":[1,"x"]}` || r.Content[0].Text != `{"a":[1,"x"]}` || *r.IsError {
		t.Fatalf("echo: %s", raw)
	}
	for i, want := range []string{`{"count":1,"note_id":101}`, `{"count":2,"note_id":102}`} {
		raw, err = d.Dispatch(ctx, gateway.DispatchRequest{Tool: lt(NotesWrite), Arguments: json.RawMessage(`{"text":"hi"}`), WalletID: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, raw); string(r.StructuredContent) != want {
			t.Fatalf("write %d: %s", i, raw)
		}
	}
	_, _ = d.Dispatch(ctx, gateway.DispatchRequest{Tool: lt(NotesWrite), Arguments: json.RawMessage(`{"other":1}`), WalletID: "w2"})
	if st.notes["w"][0] != "hi" || st.notes["w2"][0] != `{"other":1}` {
		t.Fatalf("notes %v", st.notes)
	}
	raw, err = d.Dispatch(ctx, gateway.DispatchRequest{Tool: lt(NotesCount), Arguments: json.RawMessage(`{}`), WalletID: "w"})
	if err != nil || string(decode(t, raw).StructuredContent) != `{"count":2}` {
		t.Fatalf("count: %s %v", raw, err)
	}
	// A re-priced local tool still runs as itself.
	raw, err = d.Dispatch(ctx, gateway.DispatchRequest{Tool: store.Tool{Name: NotesCount, Price: 7}, WalletID: "w"})
	if err != nil || string(decode(t, raw).StructuredContent) != `{"count":2}` {
		t.Fatalf("re-priced count: %s %v", raw, err)
	}

	st.failNotes = true
	if _, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: lt(NotesWrite), Arguments: json.RawMessage(`{}`), WalletID: "w"}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("failed write: %v", err)
	}
	if _, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: store.Tool{Name: "nope"}, WalletID: "w"}); err == nil {
		t.Fatal("unknown local tool ran")
	}
}

// probe is an upstream MCP server counting the calls it runs.
type probe struct {
	calls    atomic.Int32
	sessions atomic.Int32
	handler  atomic.Pointer[http.Handler]
	srv      *httptest.Server
	delay    time.Duration
}

func newProbe(t *testing.T, stateless bool) *probe {
	p := &probe{}
	p.reset(stateless)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*p.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// reset replaces the server, as if the upstream restarted: old sessions are gone.
func (p *probe) reset(stateless bool) {
	s := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "probe.write"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, map[string]any, error) {
		p.calls.Add(1)
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		return nil, map[string]any{"echo": in, "n": p.calls.Load()}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" || method == "server/discover" {
				p.sessions.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	p.handler.Store(&h)
}

func upTool(p *probe, name string) store.Tool {
	return store.Tool{Name: "probe.write.t", Price: 3, UpstreamURL: p.srv.URL, UpstreamTool: name}
}

func TestUpstream(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := "stateful"
		if stateless {
			name = "stateless"
		}
		t.Run(name, func(t *testing.T) {
			p := newProbe(t, stateless)
			d := New(newMemStore(), Options{})
			defer d.Close()
			ctx := context.Background()
			var first int32
			for i := 1; i <= 3; i++ {
				raw, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: upTool(p, "probe.write"), Arguments: json.RawMessage(`{"k":"v"}`)})
				if err != nil {
					t.Fatal(err)
				}
				r := decode(t, raw)
				if *r.IsError || !strings.Contains(string(r.StructuredContent), `"echo":{"k":"v"}`) || len(r.Content) != 1 {
					t.Fatalf("call %d: %s", i, raw)
				}
				if i == 1 {
					first = p.sessions.Load()
				}
			}
			if n := p.calls.Load(); n != 3 {
				t.Fatalf("upstream ran %d calls, want 3", n)
			}
			if n := p.sessions.Load(); n != first || n == 0 {
				t.Fatalf("%d handshake requests after three calls, %d after the first: the session is not cached", n, first)
			}
		})
	}
}

func TestUpstreamRestartReconnects(t *testing.T) {
	p := newProbe(t, false)
	d := New(newMemStore(), Options{})
	defer d.Close()
	ctx := context.Background()
	if _, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: upTool(p, "probe.write"), Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	p.reset(false) // the cached session id is unknown now: 404
	raw, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: upTool(p, "probe.write"), Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if r := decode(t, raw); *r.IsError {
		t.Fatalf("after restart: %s", raw)
	}
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("upstream ran %d calls, want 2", n)
	}
}

func TestUpstreamFailures(t *testing.T) {
	ctx := context.Background()

	// Nothing listens: connect fails, nothing ran.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	d := New(newMemStore(), Options{})
	defer d.Close()
	if _, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: store.Tool{Name: "x", UpstreamURL: dead}}); err == nil {
		t.Fatal("dead upstream: no error")
	}

	// The upstream refuses the call (no such tool there): nothing ran.
	p := newProbe(t, true)
	if _, err := d.Dispatch(ctx, gateway.DispatchRequest{Tool: upTool(p, "no.such.tool"), Arguments: json.RawMessage(`{}`)}); err == nil {
		t.Fatal("refused call: no error")
	}

	// The upstream runs the call but answers too late: the outcome is
	// unknown, so it is an isError result, not a "nothing ran" error.
	slow := newProbe(t, true)
	slow.delay = 500 * time.Millisecond
	ds := New(newMemStore(), Options{CallTimeout: 100 * time.Millisecond})
	defer ds.Close()
	raw, err := ds.Dispatch(ctx, gateway.DispatchRequest{Tool: upTool(slow, "probe.write"), Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("slow upstream: %v", err)
	}
	if r := decode(t, raw); !*r.IsError || !strings.Contains(r.Content[0].Text, "outcome is unknown") {
		t.Fatalf("slow upstream: %s", raw)
	}
}

func TestListTools(t *testing.T) {
	st := newMemStore()
	if err := Seed(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	st.tools["probe.x"] = store.Tool{Name: "probe.x", Price: 3, Approval: true, UpstreamURL: "http://u", UpstreamTool: "x"}
	st.tools["gone"] = store.Tool{Name: "gone", Removed: true}
	d := New(st, Options{})
	ts, err := d.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "partner.echo,partner.notes.count,partner.notes.write,probe.x" {
		t.Fatalf("names %v", names)
	}
	b, _ := json.Marshal(ts[1])
	if !strings.Contains(string(b), `"readOnlyHint":true`) || !strings.Contains(string(b), `"price":1`) || !strings.Contains(string(b), `"inputSchema":{`) {
		t.Fatalf("notes.count listed as %s", b)
	}
	b, _ = json.Marshal(ts[3])
	if !strings.Contains(string(b), `"approval":true`) || !strings.Contains(string(b), `"upstream":true`) {
		t.Fatalf("probe.x listed as %s", b)
	}
}
