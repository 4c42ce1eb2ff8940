package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
	"github.com/mcpconform/mcpconform/reference/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// handle adds storetest.Reopener: another pool on the same schema.
type handle struct {
	*postgres.Store
	dsn string
}

func (h handle) Reopen(t *testing.T, lockTimeout time.Duration) store.Store {
	return open(t, h.dsn, lockTimeout)
}

func open(t *testing.T, dsn string, lockTimeout time.Duration) handle {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn, postgres.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return handle{Store: s, dsn: dsn}
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.FreshDSN(t), 0)
	})
}

// A takeover decided on a stale lock must not land on the fresh lock of a
// holder that acquired it after the stale one was released: fences restart
// at 1, so only the owner tells the two apart.
func TestTakeoverMissesAFreshHolder(t *testing.T) {
	h := open(t, pgtest.FreshDSN(t), 0)
	if err := h.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	const stale = time.Minute
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	now := t0.Add(2 * stale)
	identity := "w|tool|" + t.Name()
	if _, err := h.AcquireLock(t.Context(), identity, "old", t0, stale); err != nil {
		t.Fatal(err)
	}
	other := open(t, h.dsn, 0)
	postgres.SetAfterLockRead(h.Store, func(ctx context.Context) {
		postgres.SetAfterLockRead(h.Store, nil)
		// The stale holder releases and a fresh one acquires, between the
		// taker's read and its update.
		if ok, err := other.ReleaseLock(ctx, identity, "old"); err != nil || !ok {
			t.Errorf("release: %v %v", ok, err)
		}
		if l, err := other.AcquireLock(ctx, identity, "fresh", now, stale); err != nil || l.Fence != 1 {
			t.Errorf("fresh acquire: %+v %v", l, err)
		}
	})
	_, err := h.AcquireLock(t.Context(), identity, "taker", now, stale)
	if !errors.Is(err, store.ErrLockHeld) {
		t.Errorf("takeover after a fresh acquire: %v, want %v", err, store.ErrLockHeld)
	}
	l, err := h.LockOf(t.Context(), identity)
	if err != nil || l.Owner != "fresh" || l.Fence != 1 {
		t.Errorf("lock = %+v %v, want the fresh holder's at fence 1", l, err)
	}
}

func BenchmarkStore(b *testing.B) {
	s, err := postgres.Open(b.Context(), pgtest.FreshDSN(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Bench(b, s)
}
