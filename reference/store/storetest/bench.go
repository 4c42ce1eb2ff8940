package storetest

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/store"
)

// Bench measures a store's first-call writes as the gateway makes them, one
// wallet shared by every goroutine (the hot wallet): keyed (Reserve with its
// permit and charge, then Finish with the dispatch row), unkeyed (a lock,
// the fenced reservation that releases it, then Finish) and a replay's read.
// Eight goroutines, as make bench's eight clients. It asserts nothing about time: `go test -bench` prints the figures, which
// are only comparable on one machine, before and after a change.
func Bench(b *testing.B, s store.Store) {
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	w := store.Wallet{ID: uuid.NewString(), Balance: 1 << 60, CreatedAt: t0}
	key := store.APIKey{ID: uuid.NewString(), WalletID: w.ID, SecretHash: []byte("0123456789abcdef0123456789abcdef"), CreatedAt: t0}
	tool := store.Tool{Name: "partner.notes.write", Description: "writes a note", Price: 5}
	for _, err := range []error{s.CreateWallet(ctx, w), s.CreateAPIKey(ctx, key), s.PutTool(ctx, tool)} {
		if err != nil {
			b.Fatal(err)
		}
	}
	clients := max(1, 8/runtime.GOMAXPROCS(0)) // RunParallel's goroutines per proc
	result := json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)
	firstCall := func(b *testing.B, fence func(rec store.Record) (*store.Fence, error)) {
		rec := store.Record{Key: uuid.NewString(), Kind: store.KindClient, ClientKey: uuid.NewString(), WalletID: w.ID,
			APIKeyID: key.ID, Tool: tool.Name, Fingerprint: "5f70bf18", State: store.StateInProgress, Owner: uuid.NewString(),
			PermitID: uuid.NewString(), CreatedAt: t0, UpdatedAt: t0}
		p := store.Permit{ID: rec.PermitID, WalletID: w.ID, APIKeyID: key.ID, Tool: tool.Name, Budget: tool.Price,
			ExpiresAt: t0.Add(time.Minute), Auto: true, CreatedAt: t0}
		r := store.ReserveRequest{Record: rec, Permit: &p, Charge: &store.ChargeRequest{
			Entry: store.LedgerEntry{Amount: tool.Price, Receipt: "rcpt-" + rec.Key, Tool: tool.Name}, Now: t0}}
		if fence != nil {
			r.Record.Kind, r.Record.Identity, r.Record.ClientKey = store.KindDerived, w.ID+"|"+tool.Name+"|"+rec.Key, ""
			f, err := fence(r.Record)
			if err != nil {
				b.Error(err)
				return
			}
			r.Fence, r.Release = f, true
		}
		if _, created, err := s.Reserve(ctx, r); err != nil || !created {
			b.Errorf("reserve: created %v, %v", created, err)
			return
		}
		err := s.Finish(ctx, rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: "rcpt-" + rec.Key,
			Result: result, Now: t0, Dispatch: &store.Dispatch{Tool: tool.Name, RecordKey: rec.Key, WalletID: w.ID, At: t0}})
		if err != nil {
			b.Errorf("finish: %v", err)
		}
	}
	b.Run("keyed first call", func(b *testing.B) {
		b.SetParallelism(clients)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				firstCall(b, nil)
			}
		})
	})
	b.Run("unkeyed first call", func(b *testing.B) {
		b.SetParallelism(clients)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				firstCall(b, func(rec store.Record) (*store.Fence, error) {
					lk, err := s.AcquireLock(ctx, rec.Identity, rec.Owner, t0, time.Minute)
					return &store.Fence{Identity: lk.Identity, Owner: lk.Owner, Fence: lk.Fence}, err
				})
			}
		})
	})
	b.Run("replay read", func(b *testing.B) {
		rec := store.Record{Key: uuid.NewString(), Kind: store.KindClient, WalletID: w.ID, APIKeyID: key.ID, Tool: tool.Name,
			State: store.StateCompleted, Result: result, CreatedAt: t0, UpdatedAt: t0}
		if _, _, err := s.Reserve(ctx, store.ReserveRequest{Record: rec}); err != nil {
			b.Fatal(err)
		}
		b.SetParallelism(clients)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Record(ctx, rec.Key); err != nil {
					b.Error(err)
				}
			}
		})
	})
}
