package gateway_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
)

// echoDispatcher answers as the local partner.echo does, its arguments as
// structuredContent: the dispatch itself costs next to nothing, so the
// benchmark's allocations are the gateway's and the store's.
type echoDispatcher struct{}

func (echoDispatcher) Dispatch(_ context.Context, r gateway.DispatchRequest) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[{"type":"text","text":` + strconv.Quote(string(r.Arguments)) +
		`}],"structuredContent":` + string(r.Arguments) + `}`), nil
}

// BenchmarkCall is the gateway's call path (Gateway.Call, no MCP wire in
// front) on SQLite, one call at a time, for the figure that says what a
// call allocates: `go test -run XXX -bench Call -benchtime 200x`. Its
// ns/op is one goroutine's, with SQLite's write queue never shared, so
// it is no throughput figure; make bench's rounds are.
func BenchmarkCall(b *testing.B) {
	ctx := b.Context()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "gateway.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Store: st, Dispatcher: echoDispatcher{}, StoreKind: "sqlite"})
	if err != nil {
		b.Fatal(err)
	}
	const tool = "bench.echo"
	if err := st.PutTool(ctx, store.Tool{Name: tool, Price: 1}); err != nil {
		b.Fatal(err)
	}
	wallet := "w-" + uuid.NewString()
	if err := st.CreateWallet(ctx, store.Wallet{ID: wallet, Balance: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	_, apiKey, err := g.IssueAPIKey(ctx, wallet)
	if err != nil {
		b.Fatal(err)
	}
	caller, err := g.Authenticate(ctx, apiKey)
	if err != nil {
		b.Fatal(err)
	}
	args := func(i int) json.RawMessage { return json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`) }
	// check says whether resp answers r as its kind should: it runs
	// outside the timed loop, so that its decoding is not counted.
	check := func(b *testing.B, r gateway.CallRequest, resp gateway.CallResponse, replayed bool) {
		var got struct {
			Meta map[string]gateway.Receipt `json:"_meta"`
		}
		if err := json.Unmarshal(resp.Result, &got); err != nil {
			b.Fatalf("call %s: result %s: %v", r.ClientKey, resp.Result, err)
		}
		if rc, ok := got.Meta[gateway.ReceiptMetaKey]; !ok || rc.ID == "" || rc.Replayed != replayed {
			b.Fatalf("call %s: receipt %+v (found %v), want replayed %v", r.ClientKey, rc, ok, replayed)
		}
	}
	// The benchmark function runs more than once (b.N 1, then the real
	// count), so every run takes keys and arguments no earlier run used.
	runs := 0
	for _, tc := range []struct {
		name   string
		req    func(prefix string, i int) gateway.CallRequest
		replay bool // the timed calls replay first calls made untimed
	}{
		{"keyed-first", func(prefix string, i int) gateway.CallRequest {
			return gateway.CallRequest{Caller: caller, Tool: tool, Arguments: args(i), ClientKey: prefix + "-" + strconv.Itoa(i)}
		}, false},
		{"replay", func(prefix string, i int) gateway.CallRequest {
			return gateway.CallRequest{Caller: caller, Tool: tool, Arguments: args(i), ClientKey: prefix + "-" + strconv.Itoa(i)}
		}, true},
		{"unkeyed", func(prefix string, i int) gateway.CallRequest {
			return gateway.CallRequest{Caller: caller, Tool: tool, Arguments: json.RawMessage(`{"u":"` + prefix + `","n":` + strconv.Itoa(i) + `}`)}
		}, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			runs++
			prefix := "b" + strconv.Itoa(runs) + "-" + uuid.NewString()[:8]
			reqs := make([]gateway.CallRequest, b.N)
			for i := range reqs {
				reqs[i] = tc.req(prefix, i)
				if tc.replay {
					resp, err := g.Call(ctx, reqs[i])
					if err != nil {
						b.Fatalf("first call %s: %v", reqs[i].ClientKey, err)
					}
					check(b, reqs[i], resp, false)
				}
			}
			resps := make([]gateway.CallResponse, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				var err error
				if resps[i], err = g.Call(ctx, reqs[i]); err != nil {
					b.Fatalf("call %s: %v", reqs[i].ClientKey, err)
				}
			}
			b.StopTimer()
			for i := range b.N {
				check(b, reqs[i], resps[i], tc.replay)
			}
		})
	}
}
