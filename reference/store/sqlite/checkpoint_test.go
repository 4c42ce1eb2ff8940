package sqlite_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
)

// TestWALStaysBounded: with SQLite's automatic checkpoint off, the store's
// own checkpoints keep the WAL from growing with the number of writes: ten
// checkpoint cycles of writes leave the WAL file (its size is its high-water
// mark) no larger than two cycles did, where without a checkpoint that
// empties it the WAL would hold all ten. Then nothing written is lost over
// Close and reopen, concurrent writers and background checkpoints included,
// and Close leaves no WAL behind.
func TestWALStaysBounded(t *testing.T) {
	const kick, full = 8, 64
	path := filepath.Join(t.TempDir(), "gateway.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path, sqlite.Options{LockTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.SetCheckpointEvery(kick, full)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := s.CreateWallet(ctx, store.Wallet{ID: "w-1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var credited int64
	credit := func(n int) {
		t.Helper()
		for range n {
			if err := s.Credit(ctx, store.LedgerEntry{WalletID: "w-1", Amount: 1, At: now}); err != nil {
				t.Fatal(err)
			}
			credited++
		}
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	credit(2 * full)
	two := walSize()
	credit(8 * full)
	if ten := walSize(); ten > two*3/2 {
		t.Errorf("WAL after ten checkpoint cycles of writes = %d bytes, after two = %d: it grows with the writes", ten, two)
	}

	// Eight writers at once: batches of several writes, background
	// checkpoints running beside the commits.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 2 * full {
				if err := s.Credit(ctx, store.LedgerEntry{WalletID: "w-1", Amount: 1, At: now}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	credited += 8 * 2 * full

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close, the WAL file: %v; want it checkpointed and removed", err)
	}
	r := open(t, path, 0)
	w, err := r.Wallet(context.Background(), "w-1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Balance != credited {
		t.Errorf("balance after reopen = %d, want %d (every committed credit)", w.Balance, credited)
	}
}
