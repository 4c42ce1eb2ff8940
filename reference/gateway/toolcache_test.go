package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// toolReads counts a store's reads of tool entries.
type toolReads struct {
	store.Store
	n atomic.Int64
}

func (s *toolReads) VersionedTool(ctx context.Context, name string) (store.Tool, int64, error) {
	s.n.Add(1)
	return s.Store.VersionedTool(ctx, name)
}

func (s *toolReads) Tool(ctx context.Context, name string) (store.Tool, error) {
	s.n.Add(1)
	return s.Store.Tool(ctx, name)
}

// TestToolEntriesAcrossProcesses: a gateway process keeps the tool entries
// it read, and reads a tool again only once another process changed the
// registry. A replay reads no tool; a price changed, a tool removed or put
// back by the other process's control API is acted on at this process's
// next call, charged and refused as the registry says.
func TestToolEntriesAcrossProcesses(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		reads := &toolReads{Store: e.st}
		g, err := gateway.New(gateway.Options{Store: reads, Clock: e.clk, Faults: e.faults, Dispatcher: e.disp,
			Settings: e.g.Settings(), StoreKind: e.g.StoreKind()})
		e.must(err)
		other := e.reopen(e.t) // the other process's store, as its control API writes it

		type step struct {
			name      string
			change    func() error // the other process's write before the call, if any
			key       string
			wantPrice int64  // the debit the call adds; 0 for none
			refused   string // the refusal's reason, if refused
			replayed  bool
			wantReads int64 // tool reads this process made so far
		}
		k1, k2, k3, k4 := "k-"+uuid.NewString(), "k-"+uuid.NewString(), "k-"+uuid.NewString(), "k-"+uuid.NewString()
		put := func(p int64) func() error {
			return func() error { return other.PutTool(e.ctx, store.Tool{Name: e.write, Price: p}) }
		}
		steps := []step{
			{name: "first call reads the tool", key: k1, wantPrice: price, wantReads: 1},
			{name: "its replay reads no tool", key: k1, replayed: true, wantReads: 1},
			{name: "another first call reads no tool", key: k2, wantPrice: price, wantReads: 1},
			{name: "price changed elsewhere: read again, charged the new price", change: put(7), key: k3, wantPrice: 7, wantReads: 2},
			{name: "a replay after the change", key: k1, replayed: true, wantReads: 2},
			{name: "removed elsewhere: unknown", change: func() error { return other.RemoveTool(e.ctx, e.write) }, key: k4,
				refused: gateway.ReasonUnknownTool, wantReads: 3},
			{name: "a removed tool's stored outcome is still served", key: k1, replayed: true, wantReads: 3},
			{name: "put back elsewhere at another price", change: put(5), key: k4, wantPrice: 5, wantReads: 4},
		}
		for _, s := range steps {
			if s.change != nil {
				e.must(s.change())
			}
			before := e.ledger()
			resp, err := e.call(req{gw: g, key: s.key})
			after := e.ledger()
			switch {
			case s.refused != "":
				if reason(err) != s.refused {
					t.Fatalf("%s: %v, want %s", s.name, err, s.refused)
				}
			case err != nil:
				t.Fatalf("%s: %v", s.name, err)
			default:
				rc, _, err := receiptOf(resp)
				if err != nil || rc.Replayed != s.replayed {
					t.Fatalf("%s: receipt %+v (%v), want replayed %v", s.name, rc, err, s.replayed)
				}
			}
			if got := before.balance - after.balance; got != s.wantPrice {
				t.Errorf("%s: charged %d, want %d", s.name, got, s.wantPrice)
			}
			if got := reads.n.Load(); got != s.wantReads {
				t.Errorf("%s: %d tool reads so far, want %d", s.name, got, s.wantReads)
			}
		}
	})
}
