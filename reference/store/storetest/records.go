package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// A stored result is replayed byte for byte: spacing and key order included.
var result = json.RawMessage(`{"content": [{"type":"text","text":"ok"}],  "isError":false, "_meta": {"z":1,"a":2}}`)

func testReserve(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	rec, p := fx.reserve(t, s)
	got, err := s.Record(ctx(t), rec.Key)
	must(t, err)
	diff(t, "record", rec, got)
	gotP, err := s.Permit(ctx(t), p.ID)
	must(t, err)
	diff(t, "auto permit", p, gotP)

	// A second reservation of the key finds the first and writes nothing,
	// whether or not it may replace refunded records.
	for _, replace := range []bool{false, true} {
		twin, twinP := fx.record()
		twin.Key = rec.Key
		got, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: twin, Permit: &twinP, ReplaceRefunded: replace})
		must(t, err)
		if created {
			t.Errorf("second reserve (replace=%v): created = true", replace)
		}
		diff(t, "existing record", rec, got)
		_, err = s.Permit(ctx(t), twinP.ID)
		wantErr(t, "permit of a refused reservation", err, store.ErrNotFound)
	}

	// Without a permit, and with a result already set.
	bare, _ := fx.record()
	bare.PermitID, bare.Result, bare.Receipt = "", result, "rcpt"
	got, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: bare})
	must(t, err)
	if !created {
		t.Errorf("reserve without permit: created = false")
	}
	diff(t, "reserved record", bare, got)
	got, err = s.Record(ctx(t), bare.Key)
	must(t, err)
	diff(t, "record with result", bare, got)
	_, err = s.Record(ctx(t), id())
	wantErr(t, "missing record", err, store.ErrNotFound)

	// The whole reservation fails when its permit does.
	dup, dupP := fx.record()
	dupP.ID = p.ID
	_, _, err = s.Reserve(ctx(t), store.ReserveRequest{Record: dup, Permit: &dupP})
	wantErr(t, "reserve with a taken permit id", err, store.ErrExists)
	_, err = s.Record(ctx(t), dup.Key)
	wantErr(t, "record of a failed reservation", err, store.ErrNotFound)
}

// derived is a derived record under a lock the caller holds.
func derived(t *testing.T, s store.Store, fx fixture) (store.Record, store.Permit, store.Lock) {
	rec, p := fx.record()
	rec.Kind, rec.Identity, rec.Bucket = store.KindDerived, fx.wallet.ID+"|"+fx.tool.Name+"|"+id(), 7
	lk, err := s.AcquireLock(ctx(t), rec.Identity, rec.Owner, t0, stale)
	must(t, err)
	return rec, p, lk
}

func fenceOf(l store.Lock) *store.Fence {
	return &store.Fence{Identity: l.Identity, Owner: l.Owner, Fence: l.Fence}
}

func wantNothingWritten(t *testing.T, s store.Store, rec store.Record, p store.Permit) {
	t.Helper()
	_, err := s.Record(ctx(t), rec.Key)
	wantErr(t, "record", err, store.ErrNotFound)
	_, err = s.Permit(ctx(t), p.ID)
	wantErr(t, "permit", err, store.ErrNotFound)
}

func testReserveFenceLost(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	for _, tc := range []struct {
		name string
		// lose changes the lock row (or the fence) before the claim.
		lose func(t *testing.T, l store.Lock) *store.Fence
	}{
		{"taken over", func(t *testing.T, l store.Lock) *store.Fence {
			_, err := reopen(t, s, 0).AcquireLock(ctx(t), l.Identity, id(), l.AcquiredAt.Add(stale), stale)
			must(t, err)
			return fenceOf(l)
		}},
		{"released", func(t *testing.T, l store.Lock) *store.Fence {
			if ok, err := s.ReleaseLock(ctx(t), l.Identity, l.Owner); err != nil || !ok {
				t.Fatalf("release by the holder = %v, %v; want true", ok, err)
			}
			return fenceOf(l)
		}},
		{"older fence", func(t *testing.T, l store.Lock) *store.Fence {
			f := fenceOf(l)
			f.Fence--
			return f
		}},
		{"other owner", func(t *testing.T, l store.Lock) *store.Fence {
			f := fenceOf(l)
			f.Owner = id()
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, p, lk := derived(t, s, fx)
			f := tc.lose(t, lk)
			after, afterErr := s.LockOf(ctx(t), lk.Identity)
			claimed := false
			_, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p, Fence: f,
				AfterClaim: func(context.Context) error { claimed = true; return nil }})
			wantErr(t, "reserve", err, store.ErrFenceLost)
			if created || claimed {
				t.Errorf("lost fence: created = %v, AfterClaim ran = %v; want neither", created, claimed)
			}
			wantNothingWritten(t, s, rec, p)
			row, err := s.LockOf(ctx(t), lk.Identity)
			if !errors.Is(afterErr, store.ErrNotFound) {
				must(t, err)
				diff(t, "lock row untouched by the lost claim", after, row)
			} else {
				wantErr(t, "released lock", err, store.ErrNotFound)
			}
		})
	}

	t.Run("held", func(t *testing.T) {
		rec, p, lk := derived(t, s, fx)
		_, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p, Fence: fenceOf(lk)})
		must(t, err)
		if !created {
			t.Errorf("fenced reserve: created = false")
		}
		row, err := s.LockOf(ctx(t), lk.Identity)
		must(t, err)
		diff(t, "lock row after the claim", lk, row)
	})
}

func testReserveAfterClaimFails(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	rec, p, lk := derived(t, s, fx)
	boom := errors.New("pause point cancelled")
	_, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p, Fence: fenceOf(lk),
		AfterClaim: func(context.Context) error { return boom }})
	wantErr(t, "reserve", err, boom)
	if created {
		t.Errorf("created = true after AfterClaim failed")
	}
	wantNothingWritten(t, s, rec, p)
}

// testTakeoverDuringClaim is the race the fence exists for: the holder has
// claimed its fence and hangs at the pause point; a second process finds the
// lock stale and tries to take it over. The claim's lock (SQLite's write lock,
// PostgreSQL's row lock) must make the takeover time out with ErrBusy, and
// the holder's reservation then commits under the lock it still holds.
func testTakeoverDuringClaim(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	rec, p, lk := derived(t, s, fx)
	taker := reopen(t, s, ShortLockTimeout)

	claimed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	done := reserveAsync(func() (store.Record, bool, error) {
		return s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p, Fence: fenceOf(lk),
			AfterClaim: func(ctx context.Context) error {
				close(claimed)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
	})
	select {
	case <-claimed:
	case o := <-done:
		t.Fatalf("reserve returned before its claim paused: %v", o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("AfterClaim never ran")
	}

	start := time.Now()
	_, err := taker.AcquireLock(ctx(t), lk.Identity, id(), t0.Add(time.Hour), stale)
	wantErr(t, "takeover while the claim is held", err, store.ErrBusy)
	if waited := time.Since(start); waited < ShortLockTimeout/2 {
		t.Errorf("takeover gave up after %v, want about the lock timeout %v", waited, ShortLockTimeout)
	}
	unblock()
	o := <-done
	must(t, o.err)
	if !o.created {
		t.Errorf("holder's reservation: created = false")
	}
	diff(t, "holder's record", rec, o.rec)
	row, err := s.LockOf(ctx(t), lk.Identity)
	must(t, err)
	diff(t, "lock row after the refused takeover", lk, row)
	gotP, err := s.Permit(ctx(t), p.ID)
	must(t, err)
	diff(t, "holder's permit", p, gotP)
}

func testRecordsByIdentity(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	identity := fx.wallet.ID + "|" + fx.tool.Name + "|" + id()
	mk := func(at time.Duration, attempt int, state string) store.Record {
		rec, _ := fx.record()
		rec.PermitID = ""
		rec.Kind, rec.Identity, rec.Attempt, rec.State = store.KindDerived, identity, attempt, state
		rec.CreatedAt, rec.UpdatedAt = t0.Add(at), t0.Add(at)
		// Bucket numbers of two windows, deliberately out of time order:
		// the selection and the order must not look at them.
		rec.Bucket = 100 - int64(at/time.Second)
		return rec
	}
	running := mk(-2*time.Hour, 0, store.StateInProgress) // charged or not, joined whatever its age
	old := mk(-time.Hour, 0, store.StateInProgress)
	since, a1, a0, later := mk(0, 0, store.StateInProgress), mk(time.Second, 1, store.StateInProgress),
		mk(time.Second, 0, store.StateInProgress), mk(2*time.Second, 0, store.StateInProgress)
	otherIdentity := mk(time.Second, 0, store.StateInProgress)
	otherIdentity.Identity = identity + "x"
	client := mk(time.Second, 0, store.StateInProgress)
	client.Kind = store.KindClient
	for _, r := range []store.Record{later, a1, running, old, since, a0, otherIdentity, client} {
		_, _, err := s.Reserve(ctx(t), store.ReserveRequest{Record: r})
		must(t, err)
	}
	// Every record but running finishes: one older than since is no longer listed.
	for _, r := range []*store.Record{&old, &since, &a0, &a1, &later} {
		must(t, s.Finish(ctx(t), r.Key, r.Owner, store.Outcome{State: store.StateFailedRefunded, Now: r.CreatedAt}))
		r.State = store.StateFailedRefunded
	}
	got, err := s.RecordsByIdentity(ctx(t), identity, t0)
	must(t, err)
	diff(t, "records since t0 and the running one", []store.Record{running, since, a0, a1, later}, got)
	got, err = s.RecordsByIdentity(ctx(t), identity, t0.Add(time.Hour))
	must(t, err)
	diff(t, "records since t0+1h", []store.Record{running}, got)
}

// state is what a refused money movement must leave untouched.
type state struct {
	Balance int64
	Permit  store.Permit
	Record  store.Record
	Ledger  []store.LedgerEntry
}

func snapshot(t *testing.T, s store.Store, fx fixture, rec store.Record) state {
	t.Helper()
	var st state
	st.Balance = balance(t, s, fx.wallet.ID)
	var err error
	st.Permit, err = s.Permit(ctx(t), rec.PermitID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	st.Record, err = s.Record(ctx(t), rec.Key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	st.Ledger, err = s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	return st
}

func testCharge(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name    string
		balance int64
		// prepare may change the store and the request.
		prepare func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest)
		want    error
	}{
		{"charged", 10, nil, nil},
		{"exact balance and budget", 5, nil, nil},
		{"other owner", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			c.Owner = id()
		}, store.ErrNotOwner},
		{"missing record", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			c.RecordKey = id()
		}, store.ErrNotOwner},
		{"already charged", 20, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			first := fx.charge(rec, 1)
			must(t, s.Charge(ctx(t), first))
			c.Entry.Amount = 1
		}, store.ErrNotOwner},
		{"finished", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			must(t, s.Finish(ctx(t), rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Now: t0}))
		}, store.ErrNotOwner},
		{"permit expires at now", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			c.Now = t0.Add(2 * time.Minute)
		}, store.ErrPermitExpired},
		{"permit budget exceeded", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			c.Entry.Amount = fx.tool.Price + 1
		}, store.ErrPermitExhausted},
		{"insufficient funds", 4, nil, store.ErrInsufficientFunds},
		{"missing permit", 10, func(t *testing.T, fx fixture, rec store.Record, c *store.ChargeRequest) {
			c.PermitID = id()
		}, store.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, s, tc.balance)
			rec, _ := fx.reserve(t, s)
			c := fx.charge(rec, fx.tool.Price)
			if tc.prepare != nil {
				tc.prepare(t, fx, rec, &c)
			}
			before := snapshot(t, s, fx, rec)
			err := s.Charge(ctx(t), c)
			wantErr(t, "charge", err, tc.want)
			after := snapshot(t, s, fx, rec)
			if tc.want != nil {
				diff(t, "state after a refused charge", before, after)
				return
			}
			want := before
			want.Balance -= c.Entry.Amount
			want.Permit.Spent += c.Entry.Amount
			want.Record.Charged, want.Record.UpdatedAt = true, c.Now
			want.Ledger = append(want.Ledger, c.Entry)
			diff(t, "state after the charge", want, after)
		})
	}
}

func testFinish(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	rec, _ := fx.reserve(t, s)
	must(t, s.Charge(ctx(t), fx.charge(rec, 5)))
	d := store.Dispatch{ID: id(), Tool: rec.Tool, RecordKey: rec.Key, Fingerprint: rec.Fingerprint, WalletID: rec.WalletID, At: t0.Add(time.Second)}
	done := store.Outcome{State: store.StateCompleted, Receipt: "rcpt-" + id(), Result: result, Dispatch: &d, Now: t0.Add(time.Second)}
	logged := func() []store.Dispatch {
		t.Helper()
		got, err := s.Dispatches(ctx(t), store.DispatchFilter{WalletID: rec.WalletID})
		must(t, err)
		return got
	}
	wantErr(t, "finish by another owner", s.Finish(ctx(t), rec.Key, id(), done), store.ErrNotOwner)
	wantErr(t, "finish missing record", s.Finish(ctx(t), id(), rec.Owner, done), store.ErrNotOwner)
	diff(t, "dispatches after refused finishes", []store.Dispatch(nil), logged())
	refunded := done
	refunded.State = store.StateFailedRefunded
	if err := s.Finish(ctx(t), rec.Key, rec.Owner, refunded); err == nil {
		t.Fatal("finish failed_refunded with a dispatch row: no error")
	}
	must(t, s.Finish(ctx(t), rec.Key, rec.Owner, done))
	diff(t, "dispatches after the finish", []store.Dispatch{d}, logged())
	want := rec
	want.State, want.Receipt, want.Result, want.Charged, want.UpdatedAt = done.State, done.Receipt, done.Result, true, done.Now
	got, err := s.Record(ctx(t), rec.Key)
	must(t, err)
	diff(t, "finished record", want, got)
	wantErr(t, "finish twice", s.Finish(ctx(t), rec.Key, rec.Owner, done), store.ErrNotOwner)
	diff(t, "dispatches after finishing twice", []store.Dispatch{d}, logged())
	if b := balance(t, s, fx.wallet.ID); b != 5 {
		t.Errorf("balance = %d, want 5", b)
	}
}

func testRefundAndReplace(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	rec, p := fx.reserve(t, s)
	c := fx.charge(rec, 5)
	must(t, s.Charge(ctx(t), c))
	refund := store.LedgerEntry{ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryRefund, Amount: 5,
		RecordKey: rec.Key, Receipt: c.Entry.Receipt, Tool: rec.Tool, At: t0.Add(time.Second)}
	failed := store.Outcome{State: store.StateFailedRefunded, Receipt: c.Entry.Receipt, Result: result, Refund: &refund, Now: t0.Add(time.Second)}
	must(t, s.Finish(ctx(t), rec.Key, rec.Owner, failed))

	want := state{Balance: 10, Permit: p, Ledger: []store.LedgerEntry{c.Entry, refund}}
	want.Record = rec
	want.Record.State, want.Record.Receipt, want.Record.Result = failed.State, failed.Receipt, failed.Result
	want.Record.Charged, want.Record.UpdatedAt = true, failed.Now
	diff(t, "state after the refund", want, snapshot(t, s, fx, rec))

	// The retry of a refunded pre-dispatch failure takes the record over,
	// with a fresh auto permit in place of the old one.
	retry, retryP := fx.record()
	retry.Key = rec.Key
	retry.Attempt = 1
	retryP.RecordKey = rec.Key
	got, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: retry, Permit: &retryP})
	must(t, err)
	if created {
		t.Fatalf("reserve without ReplaceRefunded replaced a refunded record")
	}
	diff(t, "refunded record", want.Record, got)
	got, created, err = s.Reserve(ctx(t), store.ReserveRequest{Record: retry, Permit: &retryP, ReplaceRefunded: true})
	must(t, err)
	if !created {
		t.Fatalf("reserve with ReplaceRefunded: created = false")
	}
	diff(t, "replacement record", retry, got)
	got, err = s.Record(ctx(t), rec.Key)
	must(t, err)
	diff(t, "stored replacement", retry, got)
	_, err = s.Permit(ctx(t), p.ID)
	wantErr(t, "old auto permit", err, store.ErrNotFound)
	gotP, err := s.Permit(ctx(t), retryP.ID)
	must(t, err)
	diff(t, "new auto permit", retryP, gotP)
	must(t, s.Charge(ctx(t), fx.charge(retry, 5)))
	if b := balance(t, s, fx.wallet.ID); b != 5 {
		t.Errorf("balance after the retry's charge = %d, want 5", b)
	}

	// An uncharged record cannot be refunded.
	other, _ := fx.reserve(t, s)
	r2 := refund
	r2.ID, r2.RecordKey = id(), other.Key
	failed.Refund = &r2
	if err := s.Finish(ctx(t), other.Key, other.Owner, failed); err == nil {
		t.Errorf("refund of an uncharged record: no error")
	}
	if b := balance(t, s, fx.wallet.ID); b != 5 {
		t.Errorf("balance after a refused refund = %d, want 5", b)
	}
}

func testAbandon(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	rec, p := fx.reserve(t, s)
	wantErr(t, "abandon by another owner", s.Abandon(ctx(t), rec.Key, id()), store.ErrNotOwner)
	wantErr(t, "abandon missing record", s.Abandon(ctx(t), id(), rec.Owner), store.ErrNotOwner)
	must(t, s.Abandon(ctx(t), rec.Key, rec.Owner))
	wantNothingWritten(t, s, rec, p)

	charged, _ := fx.reserve(t, s)
	must(t, s.Charge(ctx(t), fx.charge(charged, 5)))
	wantErr(t, "abandon a charged record", s.Abandon(ctx(t), charged.Key, charged.Owner), store.ErrNotOwner)

	finished, _ := fx.reserve(t, s)
	must(t, s.Finish(ctx(t), finished.Key, finished.Owner, store.Outcome{State: store.StateCompleted, Now: t0}))
	wantErr(t, "abandon a finished record", s.Abandon(ctx(t), finished.Key, finished.Owner), store.ErrNotOwner)

	// An explicit permit outlives the record that used it.
	explicit, under := fx.underExplicitPermit(t, s)
	must(t, s.Abandon(ctx(t), under.Key, under.Owner))
	got, err := s.Permit(ctx(t), explicit.ID)
	must(t, err)
	diff(t, "explicit permit after abandon", explicit, got)
}

// underExplicitPermit grants an explicit permit and reserves a record
// under it.
func (fx fixture) underExplicitPermit(t *testing.T, s store.Store) (store.Permit, store.Record) {
	t.Helper()
	explicit := store.Permit{ID: id(), WalletID: fx.wallet.ID, APIKeyID: fx.key.ID, Tool: fx.tool.Name,
		Budget: 50, ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	must(t, s.CreatePermit(ctx(t), explicit))
	under, _ := fx.record()
	under.Kind, under.PermitID = store.KindPermit, explicit.ID
	_, _, err := s.Reserve(ctx(t), store.ReserveRequest{Record: under})
	must(t, err)
	return explicit, under
}
