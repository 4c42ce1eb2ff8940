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
// permit and charge, then Finish with the dispatch row), unkeyed (ReserveSlot
// with its permit and charge, then Finish), unkeyed with its lock apart (a
// lock, the slots' read, the fenced reservation that releases it, then
// Finish: the gateway's path while a fault is armed at the lock) and a
// replay's read.
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
	// firstCall makes one first call, its reservation r made by reserve;
	// derived makes r an unkeyed call's.
	firstCall := func(b *testing.B, derived bool, reserve func(r store.ReserveRequest) (bool, error)) {
		rec := store.Record{Key: uuid.NewString(), Kind: store.KindClient, ClientKey: uuid.NewString(), WalletID: w.ID,
			APIKeyID: key.ID, Tool: tool.Name, Fingerprint: "5f70bf18", State: store.StateInProgress, Owner: uuid.NewString(),
			PermitID: uuid.NewString(), CreatedAt: t0, UpdatedAt: t0}
		p := store.Permit{ID: rec.PermitID, WalletID: w.ID, APIKeyID: key.ID, Tool: tool.Name, Budget: tool.Price,
			ExpiresAt: t0.Add(time.Minute), Auto: true, CreatedAt: t0}
		r := store.ReserveRequest{Record: rec, Permit: &p, Charge: &store.ChargeRequest{
			Entry: store.LedgerEntry{Amount: tool.Price, Receipt: "rcpt-" + rec.Key, Tool: tool.Name}, Now: t0}}
		if derived {
			r.Record.Kind, r.Record.Identity, r.Record.ClientKey = store.KindDerived, w.ID+"|"+tool.Name+"|"+rec.Key, ""
		}
		if created, err := reserve(r); err != nil || !created {
			b.Errorf("reserve: created %v, %v", created, err)
			return
		}
		err := s.Finish(ctx, rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: "rcpt-" + rec.Key,
			Result: result, Now: t0, Dispatch: &store.Dispatch{Tool: tool.Name, RecordKey: rec.Key, WalletID: w.ID, At: t0}})
		if err != nil {
			b.Errorf("finish: %v", err)
		}
	}
	since := t0.Add(-time.Minute)
	for _, bc := range []struct {
		name    string
		derived bool
		reserve func(r store.ReserveRequest) (bool, error)
	}{
		{"keyed first call", false, func(r store.ReserveRequest) (bool, error) {
			_, created, err := s.Reserve(ctx, r)
			return created, err
		}},
		{"unkeyed first call", true, func(r store.ReserveRequest) (bool, error) {
			_, created, err := s.ReserveSlot(ctx, store.SlotRequest{Identity: r.Record.Identity, Owner: r.Record.Owner,
				Now: t0, StaleAfter: time.Minute, Since: since,
				Choose: func([]store.Record) (*store.Record, store.ReserveRequest) { return nil, r }})
			return created, err
		}},
		{"unkeyed first call, lock apart", true, func(r store.ReserveRequest) (bool, error) {
			rec := r.Record
			lk, err := s.AcquireLock(ctx, rec.Identity, rec.Owner, t0, time.Minute)
			if err != nil {
				return false, err
			}
			if _, err := s.RecordsByIdentity(ctx, rec.Identity, since); err != nil {
				return false, err
			}
			r.Fence, r.Release = &store.Fence{Identity: lk.Identity, Owner: lk.Owner, Fence: lk.Fence}, true
			_, created, err := s.Reserve(ctx, r)
			return created, err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetParallelism(clients)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					firstCall(b, bc.derived, bc.reserve)
				}
			})
		})
	}
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
