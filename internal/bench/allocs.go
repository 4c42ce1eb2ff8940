package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
)

// CallAllocs is what one kind of call allocates on the gateway's call path
// (gateway.Call on SQLite, no MCP wire in front), averaged over Calls
// calls made one after another: the figure reference/gateway's
// BenchmarkCall reports as allocs/op and B/op. Unlike a rate it does not
// move with the machine's load.
type CallAllocs struct {
	Phase       string  `json:"phase"`
	Calls       int     `json:"calls"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
}

// allocEcho answers as the local partner.echo does, so that the dispatch
// adds next to nothing to the call path's allocations.
type allocEcho struct{}

func (allocEcho) Dispatch(_ context.Context, r gateway.DispatchRequest) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[{"type":"text","text":` + strconv.Quote(string(r.Arguments)) +
		`}],"structuredContent":` + string(r.Arguments) + `}`), nil
}

// MeasureCallAllocs makes n keyed first calls, n replays of them and n
// unkeyed calls through a gateway on a fresh SQLite file in dir, and
// counts the heap allocations each kind makes (runtime.MemStats, around the
// calls only: a replay's first calls are made before its count starts).
// Run it while nothing else in the process allocates: every goroutine's
// allocations are counted.
func MeasureCallAllocs(ctx context.Context, dir string, n int) (out []CallAllocs, err error) {
	st, err := sqlite.Open(ctx, filepath.Join(dir, "allocs.db"), sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if err := st.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("call allocations: migrate: %w", err)
	}
	g, err := gateway.New(gateway.Options{Store: st, Dispatcher: allocEcho{}, StoreKind: "sqlite"})
	if err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	if err := st.PutTool(ctx, store.Tool{Name: EchoTool, Price: 1}); err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	wallet := store.NewRowID("w-")
	if err := st.CreateWallet(ctx, store.Wallet{ID: wallet, Balance: 1 << 40}); err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	_, apiKey, err := g.IssueAPIKey(ctx, wallet)
	if err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	caller, err := g.Authenticate(ctx, apiKey)
	if err != nil {
		return nil, fmt.Errorf("call allocations: %w", err)
	}
	run := uuid.NewString()[:8]
	keyed := func(i int) gateway.CallRequest {
		return gateway.CallRequest{Caller: caller, Tool: EchoTool, Arguments: objArg("n", i), ClientKey: "a-" + run + "-" + strconv.Itoa(i)}
	}
	unkeyed := func(i int) gateway.CallRequest {
		return gateway.CallRequest{Caller: caller, Tool: EchoTool, Arguments: objArg("u"+run, i)}
	}
	count := func(phase string, req func(int) gateway.CallRequest) error {
		reqs := make([]gateway.CallRequest, n)
		for i := range reqs {
			reqs[i] = req(i)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, r := range reqs {
			if _, err := g.Call(ctx, r); err != nil {
				return fmt.Errorf("call allocations: %s: %w", phase, err)
			}
		}
		runtime.ReadMemStats(&after)
		out = append(out, CallAllocs{Phase: phase, Calls: n,
			AllocsPerOp: float64(after.Mallocs-before.Mallocs) / float64(n),
			BytesPerOp:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n)})
		return nil
	}
	for _, c := range []struct {
		phase string
		req   func(int) gateway.CallRequest
	}{{PhaseKeyedFirst, keyed}, {PhaseKeyedReplay, keyed}, {PhaseUnkeyed, unkeyed}} {
		if err := count(c.phase, c.req); err != nil {
			return out, err
		}
	}
	return out, nil
}

// renderAllocs writes the allocations per call.
func renderAllocs(p func(string, ...any), r Results) {
	if len(r.Allocs) == 0 {
		return
	}
	p("\n## Allocations per call\n\n")
	p("Heap allocations of the gateway's call path (gateway.Call on SQLite, no MCP wire in front, an echo dispatcher) per call, one call at a time, counted with runtime.MemStats; " +
		"`go test -run XXX -bench Call ./reference/gateway/` counts the same thing as allocs/op and B/op in a run of its own. A replay replays the keyed first calls above it. " +
		"The MCP stack's allocations (HTTP, JSON-RPC, go-sdk) are not in them.\n\n")
	p("| call | calls | allocs/call | bytes/call |\n|---|---:|---:|---:|\n")
	for _, a := range r.Allocs {
		p("| %s | %d | %.0f | %.0f |\n", a.Phase, a.Calls, a.AllocsPerOp, a.BytesPerOp)
	}
	if r.AllocsErr != "" {
		p("\n- stopped: %s\n", cell(r.AllocsErr))
	}
}
