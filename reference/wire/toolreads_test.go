package wire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/tools"
)

// TestMain removes a PostgreSQL container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// countingStore counts the store reads of each tool.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	reads map[string]int
}

func (s *countingStore) Tool(ctx context.Context, name string) (store.Tool, error) {
	s.mu.Lock()
	s.reads[name]++
	s.mu.Unlock()
	return s.Store.Tool(ctx, name)
}

func (s *countingStore) VersionedTool(ctx context.Context, name string) (store.Tool, int64, error) {
	s.mu.Lock()
	s.reads[name]++
	s.mu.Unlock()
	return s.Store.VersionedTool(ctx, name)
}

// take returns name's reads since the last take.
func (s *countingStore) take(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.reads[name]
	delete(s.reads, name)
	return n
}

// stack is the reference gateway's /mcp as the server wires it (the
// gateway core, the tools dispatcher and this package's handler, on one
// store), with one wallet and its API key.
type stack struct {
	url, apiKey string
	st          *countingStore
}

// opener opens a fresh store, closed when tb ends.
type opener func(tb testing.TB) store.Store

func openSQLite(tb testing.TB) store.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "gateway.db"), sqlite.Options{LockTimeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openPostgres skips tb without a PostgreSQL server (pgtest).
func openPostgres(tb testing.TB) store.Store {
	s, err := postgres.Open(context.Background(), pgtest.FreshDSN(tb), postgres.Options{LockTimeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func newStack(tb testing.TB, open opener) *stack {
	tb.Helper()
	ctx := context.Background()
	base := open(tb)
	if err := base.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := tools.Seed(ctx, base); err != nil {
		tb.Fatal(err)
	}
	st := &countingStore{Store: base, reads: map[string]int{}}
	clk := clock.New()
	disp := tools.New(st, tools.Options{Clock: clk})
	tb.Cleanup(func() { _ = disp.Close() })
	gw, err := gateway.New(gateway.Options{Store: st, Clock: clk, Dispatcher: disp, StoreKind: "sqlite"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := fixtures.OpenWallet(ctx, base, "w-1", 1_000_000_000, clk.Now()); err != nil {
		tb.Fatal(err)
	}
	_, key, err := gw.IssueAPIKey(ctx, "w-1")
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(Handler(gw, nil, disp, Options{}))
	tb.Cleanup(srv.Close)
	st.take(tools.Echo)
	return &stack{url: srv.URL + "/mcp", apiKey: key, st: st}
}

// call sends a keyed partner.echo tools/call on protocol (2025-11-25 as a
// sessionless request) and returns its HTTP status and body.
func (s *stack) call(tb testing.TB, hc *http.Client, protocol, key string) (int, string) {
	tb.Helper()
	meta := ""
	if protocol == Protocol20260728 {
		meta = meta2026("")
	}
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(callBody(1, tools.Echo, `{"n":1}`, meta)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set(HeaderIdempotencyKey, key)
	if protocol == Protocol20260728 {
		for k, v := range headers2026("tools/call", tools.Echo) {
			if k != "Authorization" {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(raw)
}

// TestToolReadOncePerChange: the process reads a tool from the store once
// after each change to the tool registry, whatever the requests in between:
// on the 2026-07-28 wire too, where the Mcp-Param header check reads it
// before the gateway does; a replay as a first call. A change is acted on
// at the next request.
func TestToolReadOncePerChange(t *testing.T) {
	s := newStack(t, openSQLite)
	reads := 1 // the first request's
	for _, protocol := range []string{Protocol20251125, Protocol20260728} {
		for _, what := range []string{"first call", "replay"} {
			status, body := s.call(t, http.DefaultClient, protocol, "k-"+protocol)
			if status != http.StatusOK || !strings.Contains(body, `"result"`) {
				t.Fatalf("%s %s: HTTP %d %s", protocol, what, status, body)
			}
			if replayed := strings.Contains(body, `"replayed":true`); replayed != (what == "replay") {
				t.Fatalf("%s %s: replayed %v: %s", protocol, what, replayed, body)
			}
			if n := s.st.take(tools.Echo); n != reads {
				t.Errorf("%s %s: the tool was read %d times, want %d", protocol, what, n, reads)
			}
			reads = 0
		}
	}

	// A tool removed between two requests is removed for the second, which
	// reads it again; the request after that reads nothing.
	if err := s.st.RemoveTool(t.Context(), tools.Echo); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		status, body := s.call(t, http.DefaultClient, Protocol20260728, "k-after-removal")
		if !strings.Contains(body, gateway.ReasonUnknownTool) {
			t.Fatalf("call %d after the tool's removal: HTTP %d %s, want %s", i+1, status, body, gateway.ReasonUnknownTool)
		}
		if n := s.st.take(tools.Echo); n != want {
			t.Errorf("call %d after the tool's removal: the tool was read %d times, want %d", i+1, n, want)
		}
	}
}

// BenchmarkKeyedReplay is a 2026-07-28 keyed replay over HTTP against the
// whole reference stack: what a retry costs the gateway.
func BenchmarkKeyedReplay(b *testing.B) {
	for _, backend := range []struct {
		name string
		open opener
	}{{"sqlite", openSQLite}, {"postgres", openPostgres}} {
		b.Run(backend.name, func(b *testing.B) {
			s := newStack(b, backend.open)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			if status, body := s.call(b, hc, Protocol20260728, "bench"); status != http.StatusOK {
				b.Fatalf("first call: HTTP %d %s", status, body)
			}
			for b.Loop() {
				if status, body := s.call(b, hc, Protocol20260728, "bench"); status != http.StatusOK {
					b.Fatal(fmt.Sprintf("replay: HTTP %d %s", status, body))
				}
			}
		})
	}
}
