package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/store/storetest"
)

// handle adds storetest.Reopener: another handle on the same file.
type handle struct {
	*sqlite.Store
	path string
}

func (h handle) Reopen(t *testing.T, lockTimeout time.Duration) store.Store {
	return open(t, h.path, lockTimeout)
}

func open(t *testing.T, path string, lockTimeout time.Duration) handle {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return handle{Store: s, path: path}
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "gateway.db"), 0)
	})
}

// TestWritesQueueInProcess: this process's writes wait for each other in Go,
// not in SQLite's busy handler, and one that waits past the lock timeout is
// store.ErrBusy, as a wait for another process's write lock is. The held
// write is paused deterministically inside its transaction (AfterClaim).
func TestWritesQueueInProcess(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := open(t, filepath.Join(t.TempDir(), "gateway.db"), timeout)
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	if err := s.CreateWallet(ctx, store.Wallet{ID: "w-1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Key: "r-1", Kind: store.KindClient, ClientKey: "k-1", WalletID: "w-1", APIKeyID: "a-1",
		Tool: "partner.echo", Fingerprint: "f", Owner: "o-1", CreatedAt: now, UpdatedAt: now}
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Reserve(ctx, store.ReserveRequest{Record: rec, AfterClaim: func(context.Context) error {
			close(held)
			<-release
			return nil
		}})
		done <- err
	}()
	<-held
	credit := store.LedgerEntry{WalletID: "w-1", Amount: 5, At: now}
	if err := s.Credit(ctx, credit); !errors.Is(err, store.ErrBusy) {
		close(release)
		t.Fatalf("credit while another write of this process holds the lock: err = %v, want store.ErrBusy", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("held reservation: %v", err)
	}
	if err := s.Credit(ctx, credit); err != nil {
		t.Fatalf("credit after the lock was released: %v", err)
	}
	w, err := s.Wallet(ctx, "w-1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Balance != 5 {
		t.Errorf("balance = %d, want 5 (one refused credit, one written)", w.Balance)
	}
}

// TestGroupCommit: writes queued behind a held writer run in one batch, and
// each is all or nothing on its own: a write that fails after writing is
// rolled back alone (its savepoint), a no-op leaves nothing, the others are
// committed, and each caller gets its own outcome.
func TestGroupCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "gateway.db"), 30*time.Second)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Migrate(ctx))
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	must(s.CreateWallet(ctx, store.Wallet{ID: "w-1", CreatedAt: now}))
	taken := store.Permit{ID: "p-taken", WalletID: "w-1", APIKeyID: "a-1", Tool: "partner.echo", Budget: 1,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	must(s.CreatePermit(ctx, taken))
	record := func(key string) store.Record {
		return store.Record{Key: key, Kind: store.KindClient, ClientKey: key, WalletID: "w-1", APIKeyID: "a-1",
			Tool: "partner.echo", Fingerprint: "f", Owner: "o-" + key, CreatedAt: now, UpdatedAt: now}
	}

	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, _, err := s.Reserve(ctx, store.ReserveRequest{Record: record("r-held"), AfterClaim: func(context.Context) error {
			close(held)
			<-release
			return nil
		}})
		holder <- err
	}()
	<-held

	// Queued while the writer is held: a credit, a reservation that fails on
	// its permit after inserting its record, and a release of a lock nobody
	// holds (a no-op).
	credit := make(chan error, 1)
	go func() { credit <- s.Credit(ctx, store.LedgerEntry{WalletID: "w-1", Amount: 5, At: now}) }()
	failed := make(chan error, 1)
	go func() {
		dup := taken
		_, _, err := s.Reserve(ctx, store.ReserveRequest{Record: record("r-failed"), Permit: &dup})
		failed <- err
	}()
	noop := make(chan error, 1)
	go func() {
		released, err := s.ReleaseLock(ctx, "nobody", "o-x")
		if err == nil && released {
			err = errors.New("released a lock nobody held")
		}
		noop <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.PendingWrites() < 3; {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d writes queued, want 3", s.PendingWrites())
		}
		time.Sleep(time.Millisecond)
	}
	close(release)

	must(<-holder)
	must(<-credit)
	must(<-noop)
	if err := <-failed; !errors.Is(err, store.ErrExists) {
		t.Errorf("reservation whose permit exists: err = %v, want store.ErrExists", err)
	}
	if _, err := s.Record(ctx, "r-failed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the failed reservation's record: err = %v, want store.ErrNotFound (rolled back with its savepoint)", err)
	}
	if _, err := s.Record(ctx, "r-held"); err != nil {
		t.Errorf("the held reservation's record: %v", err)
	}
	w, err := s.Wallet(ctx, "w-1")
	must(err)
	if w.Balance != 5 {
		t.Errorf("balance = %d, want 5 (the batched credit committed)", w.Balance)
	}
}

func BenchmarkStore(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "gateway.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Bench(b, s)
}

// A store may be closed twice (a test's cleanup after the code under test
// closed it): the second Close must not panic.
func TestCloseTwice(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Logf("second Close: %v", err)
	}
}
