package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
)

// together runs fn(i) for i in [0,n) in n goroutines released at once by a
// barrier, and returns their errors.
func together(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

// testConcurrentCredits: read-modify-writes of one balance lose no update and
// none of them fails for being concurrent.
func testConcurrentCredits(t *testing.T, s store.Store) {
	const n = 50
	fx := newFixture(t, s, 1000)
	entries := make([]store.LedgerEntry, n)
	var sum int64
	for i := range entries {
		entries[i] = store.LedgerEntry{ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryCredit, Amount: int64(i + 1), At: t0}
		sum += int64(i + 1)
	}
	for i, err := range together(n, func(i int) error { return s.Credit(ctx(t), entries[i]) }) {
		if err != nil {
			t.Errorf("credit %d: %v", i, err)
		}
	}
	if got, want := balance(t, s, fx.wallet.ID), 1000+sum; got != want {
		t.Errorf("balance after %d concurrent credits = %d, want %d", n, got, want)
	}
	ledger, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	if len(ledger) != n {
		t.Errorf("ledger has %d entries, want %d", len(ledger), n)
	}
}

// testConcurrentCharges: concurrent charges never overdraw the wallet.
func testConcurrentCharges(t *testing.T, s store.Store) {
	const n, affordable = 50, 20
	fx := newFixture(t, s, affordable*5)
	charges := make([]store.ChargeRequest, n)
	for i := range charges {
		rec, _ := fx.reserve(t, s)
		charges[i] = fx.charge(rec, 5)
	}
	var ok, refused int
	for i, err := range together(n, func(i int) error { return s.Charge(ctx(t), charges[i]) }) {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrInsufficientFunds):
			refused++
		default:
			t.Errorf("charge %d: %v", i, err)
		}
	}
	if ok != affordable || refused != n-affordable {
		t.Errorf("charges: %d ok, %d refused; want %d, %d", ok, refused, affordable, n-affordable)
	}
	wantDrained(t, s, fx, affordable)
}

// testConcurrentTwins: one key reserved at once by several callers has one
// winner; the others see the winner's record.
func testConcurrentTwins(t *testing.T, s store.Store) {
	const n = 8
	fx := newFixture(t, s, 0)
	first, _ := fx.record()
	twins := make([]store.ReserveRequest, n)
	for i := range twins {
		rec, p := fx.record()
		rec.Key = first.Key
		p.RecordKey = first.Key
		twins[i] = store.ReserveRequest{Record: rec, Permit: &p}
	}
	got, winner := reserveTwins(t, n, func(i int) (store.Record, bool, error) { return s.Reserve(ctx(t), twins[i]) })
	for i := range twins {
		diff(t, "record seen by a twin", twins[winner].Record, got[i])
		_, err := s.Permit(ctx(t), twins[i].Permit.ID)
		if i == winner {
			must(t, err)
		} else {
			wantErr(t, "loser's permit", err, store.ErrNotFound)
		}
	}
}

// reserveTwins runs reserve(i) for n twins at once: none may fail and
// exactly one, the winner, may create. It returns what each came back with.
func reserveTwins(t *testing.T, n int, reserve func(i int) (store.Record, bool, error)) (got []store.Record, winner int) {
	t.Helper()
	got = make([]store.Record, n)
	created := make([]bool, n)
	errs := together(n, func(i int) (err error) {
		got[i], created[i], err = reserve(i)
		return err
	})
	winner = -1
	for i, err := range errs {
		must(t, err)
		if created[i] {
			if winner >= 0 {
				t.Fatalf("twins %d and %d both created a record", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no twin created a record")
	}
	return got, winner
}

// reserved is what a reservation made in the background came back with.
type reserved struct {
	rec     store.Record
	created bool
	err     error
}

// reserveAsync runs reserve in the background; its outcome comes on the channel.
func reserveAsync(reserve func() (store.Record, bool, error)) <-chan reserved {
	done := make(chan reserved, 1)
	go func() {
		rec, created, err := reserve()
		done <- reserved{rec, created, err}
	}()
	return done
}

// testConcurrentAcquire: one fresh lock and one stale lock, each wanted by
// several callers at once, each get exactly one holder.
func testConcurrentAcquire(t *testing.T, s store.Store) {
	const n = 10
	staleIdentity := id() + "|partner.notes.write|" + id()
	_, err := s.AcquireLock(ctx(t), staleIdentity, id(), t0, stale)
	must(t, err)
	for _, tc := range []struct {
		name      string
		identity  string
		wantFence int64
	}{
		{"fresh", id() + "|partner.notes.write|" + id(), 1},
		{"stale", staleIdentity, 2},
	} {
		owners := make([]string, n)
		for i := range owners {
			owners[i] = id()
		}
		locks := make([]store.Lock, n)
		now := t0.Add(stale)
		errs := together(n, func(i int) (err error) {
			locks[i], err = s.AcquireLock(ctx(t), tc.identity, owners[i], now, stale)
			return err
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("%s: owners %d and %d both acquired the lock", tc.name, winner, i)
				}
				winner = i
			case !errors.Is(err, store.ErrLockHeld):
				t.Errorf("%s: acquire %d: %v", tc.name, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: nobody acquired the lock", tc.name)
		}
		want := store.Lock{Identity: tc.identity, Owner: owners[winner], Fence: tc.wantFence, AcquiredAt: now}
		diff(t, tc.name+": winner's lock", want, locks[winner])
		row, err := s.LockOf(ctx(t), tc.identity)
		must(t, err)
		diff(t, tc.name+": lock row", want, row)
	}
}

// testConcurrentFirstCalls: first calls of one wallet, each its own record
// and permit, reserved, charged and finished by clients running side by
// side, each call after the one before: none fails for being concurrent
// (no deadlock, no lock timeout), and every charge is in the balance, the
// ledger and the dispatch log once.
func testConcurrentFirstCalls(t *testing.T, s store.Store) {
	const clients, calls, price = 8, 25, 5
	fx := newFixture(t, s, clients*calls*price)
	first := func() error {
		rec, p := fx.record()
		if _, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p}); err != nil || !created {
			return errors.Join(err, errors.New("reserve: not created"))
		}
		if err := s.Charge(ctx(t), fx.charge(rec, price)); err != nil {
			return err
		}
		d := store.Dispatch{ID: id(), Tool: rec.Tool, RecordKey: rec.Key, Fingerprint: rec.Fingerprint, WalletID: rec.WalletID, At: t0}
		return s.Finish(ctx(t), rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: "rcpt-" + rec.Key,
			Result: []byte(`{"content":[]}`), Dispatch: &d, Now: t0})
	}
	errs := together(clients, func(int) error {
		for range calls {
			if err := first(); err != nil {
				return err
			}
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
	if b := balance(t, s, fx.wallet.ID); b != 0 {
		t.Errorf("balance = %d, want 0", b)
	}
	ledger, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	ds, err := s.Dispatches(ctx(t), store.DispatchFilter{WalletID: fx.wallet.ID})
	must(t, err)
	if n := clients * calls; len(ledger) != n || len(ds) != n {
		t.Errorf("%d debits, %d dispatch rows; want %d each", len(ledger), len(ds), n)
	}
}
