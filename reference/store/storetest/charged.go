package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// chargedReserve is a fresh reservation of fx carrying a charge of the
// tool's price: the entry leaves its record key and wallet to the store.
func (fx fixture) chargedReserve() store.ReserveRequest {
	rec, p := fx.record()
	e := fx.debit(rec, fx.tool.Price)
	e.RecordKey, e.WalletID = "", ""
	return store.ReserveRequest{Record: rec, Permit: &p, Charge: &store.ChargeRequest{Entry: e, Now: t0.Add(time.Second)}}
}

// testReserveCharged: a reservation carrying its charge is the reservation
// and the charge in one, all or nothing: a refused charge leaves no record,
// no permit and nothing replaced, and a key that has a record is charged
// nothing.
func testReserveCharged(t *testing.T, s store.Store) {
	refunded := func(t *testing.T, fx fixture, r *store.ReserveRequest) {
		old, _ := fx.reserve(t, s)
		c := fx.charge(old, fx.tool.Price)
		must(t, s.Charge(ctx(t), c))
		back := store.LedgerEntry{ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryRefund, Amount: fx.tool.Price,
			RecordKey: old.Key, Receipt: c.Entry.Receipt, Tool: old.Tool, At: t0}
		must(t, s.Finish(ctx(t), old.Key, old.Owner, store.Outcome{State: store.StateFailedRefunded, Receipt: c.Entry.Receipt,
			Refund: &back, Now: t0}))
		r.Record.Key, r.Permit.RecordKey = old.Key, old.Key
		r.ReplaceRefunded = true
	}
	explicit := func(budget int64, expires time.Time) func(t *testing.T, fx fixture, r *store.ReserveRequest) {
		return func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			p := store.Permit{ID: id(), WalletID: fx.wallet.ID, APIKeyID: fx.key.ID, Tool: fx.tool.Name,
				Budget: budget, ExpiresAt: expires, CreatedAt: t0}
			must(t, s.CreatePermit(ctx(t), p))
			r.Record.Kind, r.Record.PermitID, r.Permit = store.KindPermit, p.ID, nil
		}
	}
	fenced := func(lose bool) func(t *testing.T, fx fixture, r *store.ReserveRequest) {
		return func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Record.Kind, r.Record.Identity, r.Record.Bucket = store.KindDerived, fx.wallet.ID+"|"+fx.tool.Name+"|"+id(), 7
			lk, err := s.AcquireLock(ctx(t), r.Record.Identity, r.Record.Owner, t0, stale)
			must(t, err)
			r.Fence = fenceOf(lk)
			if lose {
				r.Fence.Owner = id()
			}
		}
	}
	hook := func(t *testing.T, fx fixture, r *store.ReserveRequest) {
		r.AfterClaim = func(context.Context) error { return nil }
	}
	for _, tc := range []struct {
		name    string
		balance int64
		// prepare may change the store and the request.
		prepare func(t *testing.T, fx fixture, r *store.ReserveRequest)
		want    error
		// existing: the key has a record the reservation does not replace.
		existing bool
	}{
		{"charged", 10, nil, nil, false},
		{"exact balance and budget", 5, nil, nil, false},
		{"free tool", 0, func(t *testing.T, fx fixture, r *store.ReserveRequest) { r.Charge.Entry.Amount = 0 }, nil, false},
		{"free tool without a permit", 0, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Charge.Entry.Amount, r.Record.PermitID, r.Permit = 0, "", nil
		}, nil, false},
		{"payer named", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) { r.Charge.Entry.WalletID = fx.wallet.ID }, nil, false},
		{"insufficient funds", 4, nil, store.ErrInsufficientFunds, false},
		{"permit budget exceeded", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Charge.Entry.Amount = fx.tool.Price + 1
		}, store.ErrPermitExhausted, false},
		{"permit expires at now", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Charge.Now = r.Permit.ExpiresAt
		}, store.ErrPermitExpired, false},
		{"missing wallet", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) { r.Charge.Entry.WalletID = id() }, store.ErrNotFound, false},
		{"explicit permit", 10, explicit(50, t0.Add(time.Hour)), nil, false},
		{"explicit permit exhausted", 10, explicit(4, t0.Add(time.Hour)), store.ErrPermitExhausted, false},
		{"explicit permit expired", 10, explicit(50, t0.Add(time.Second)), store.ErrPermitExpired, false},
		{"missing permit", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Record.PermitID, r.Permit = id(), nil
		}, store.ErrNotFound, false},
		{"key exists", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			old, _ := fx.reserve(t, s)
			r.Record.Key, r.Permit.RecordKey, r.ReplaceRefunded = old.Key, old.Key, true
		}, nil, true},
		{"refunded record replaced", 10, refunded, nil, false},
		{"refunded record kept on a refusal", 10, func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			refunded(t, fx, r)
			r.Charge.Now = r.Permit.ExpiresAt
		}, store.ErrPermitExpired, false},
		{"fenced", 10, fenced(false), nil, false},
		{"fence lost", 10, fenced(true), store.ErrFenceLost, false},
		{"claim hook", 10, hook, nil, false},
		{"claim hook, insufficient funds", 4, hook, store.ErrInsufficientFunds, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, s, tc.balance)
			r := fx.chargedReserve()
			if tc.prepare != nil {
				tc.prepare(t, fx, &r)
			}
			var minted *store.Permit
			if r.Permit != nil {
				p := *r.Permit
				minted = &p
			}
			before := snapshot(t, s, fx, r.Record)
			got, created, err := s.Reserve(ctx(t), r)
			wantErr(t, "reserve", err, tc.want)
			after := snapshot(t, s, fx, r.Record)
			if tc.want != nil || tc.existing {
				if created {
					t.Errorf("created = true, want false")
				}
				diff(t, "state after a reservation that created nothing", before, after)
				if tc.existing {
					diff(t, "existing record", before.Record, got)
				}
				if minted != nil && tc.want != nil {
					_, err := s.Permit(ctx(t), minted.ID)
					wantErr(t, "permit of a refused reservation", err, store.ErrNotFound)
				}
				return
			}
			if !created {
				t.Fatalf("created = false")
			}
			amount := r.Charge.Entry.Amount
			want := before
			want.Record = r.Record
			want.Record.Charged, want.Record.UpdatedAt = true, r.Charge.Now
			if minted != nil {
				want.Permit = *minted
			}
			if want.Record.PermitID != "" {
				want.Permit.Spent += amount
			}
			if amount > 0 {
				e := r.Charge.Entry
				e.RecordKey, e.WalletID = r.Record.Key, fx.wallet.ID
				want.Balance -= amount
				want.Ledger = append(want.Ledger, e)
			}
			diff(t, "reserved record", want.Record, got)
			diff(t, "state after the charged reservation", want, after)
			// Charged means claimed: no second charge, no abandon.
			wantErr(t, "charge after a charged reservation", s.Charge(ctx(t), fx.charge(got, amount)), store.ErrNotOwner)
			wantErr(t, "abandon a charged reservation", s.Abandon(ctx(t), got.Key, got.Owner), store.ErrNotOwner)
			if r.Fence != nil {
				row, err := s.LockOf(ctx(t), r.Fence.Identity)
				must(t, err)
				diff(t, "lock row after the fenced reservation", r.Fence.Fence, row.Fence)
			}
		})
	}
}

// testConcurrentChargedReserves: reservations carrying their charges, made
// at once on one wallet, never overdraw it, and those refused leave nothing
// behind; twins of one key are charged once.
func testConcurrentChargedReserves(t *testing.T, s store.Store) {
	t.Run("one wallet", func(t *testing.T) {
		const n, affordable = 50, 20
		fx := newFixture(t, s, affordable*5)
		reqs := make([]store.ReserveRequest, n)
		for i := range reqs {
			reqs[i] = fx.chargedReserve()
		}
		created := make([]bool, n)
		errs := together(n, func(i int) (err error) {
			_, created[i], err = s.Reserve(ctx(t), reqs[i])
			return err
		})
		var ok int
		for i, err := range errs {
			switch {
			case err == nil && created[i]:
				ok++
			case errors.Is(err, store.ErrInsufficientFunds):
				wantNothingWritten(t, s, reqs[i].Record, *reqs[i].Permit)
			default:
				t.Errorf("reservation %d: created = %v, err = %v", i, created[i], err)
			}
		}
		if ok != affordable {
			t.Errorf("%d charged reservations, want %d", ok, affordable)
		}
		wantDrained(t, s, fx, affordable)
	})
	t.Run("twins", func(t *testing.T) {
		const n = 8
		fx := newFixture(t, s, 100)
		twins := make([]store.ReserveRequest, n)
		key := id()
		for i := range twins {
			twins[i] = fx.chargedReserve()
			twins[i].Record.Key, twins[i].Permit.RecordKey = key, key
		}
		created := make([]bool, n)
		errs := together(n, func(i int) (err error) {
			_, created[i], err = s.Reserve(ctx(t), twins[i])
			return err
		})
		winners := 0
		for i, err := range errs {
			must(t, err)
			if created[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Errorf("%d twins created the record, want 1", winners)
		}
		if b := balance(t, s, fx.wallet.ID); b != 100-fx.tool.Price {
			t.Errorf("balance = %d, want %d", b, 100-fx.tool.Price)
		}
	})
}

// testReserveRelease: a fenced reservation that creates its record may
// delete the lock row with it (Release); one that creates nothing leaves the
// row as it was.
func testReserveRelease(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name string
		// prepare may change the store and the request.
		prepare  func(t *testing.T, fx fixture, r *store.ReserveRequest)
		want     error
		released bool
	}{
		{"created", nil, nil, true},
		{"created and charged", func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Charge = fx.chargedReserve().Charge
		}, nil, true},
		{"created, claim hook", func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.AfterClaim = func(context.Context) error { return nil }
		}, nil, true},
		{"key exists", func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			old, _ := fx.reserve(t, s)
			r.Record.Key, r.Permit.RecordKey = old.Key, old.Key
		}, nil, false},
		{"charge refused", func(t *testing.T, fx fixture, r *store.ReserveRequest) {
			r.Charge = fx.chargedReserve().Charge
			r.Charge.Entry.Amount = fx.tool.Price + 1
		}, store.ErrPermitExhausted, false},
		{"fence lost", func(t *testing.T, fx fixture, r *store.ReserveRequest) { r.Fence.Fence++ }, store.ErrFenceLost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, s, 10)
			rec, p, lk := derived(t, s, fx)
			r := store.ReserveRequest{Record: rec, Permit: &p, Fence: fenceOf(lk), Release: true}
			if tc.prepare != nil {
				tc.prepare(t, fx, &r)
			}
			_, created, err := s.Reserve(ctx(t), r)
			wantErr(t, "reserve", err, tc.want)
			if created != (tc.want == nil && tc.released) {
				t.Errorf("created = %v", created)
			}
			row, err := s.LockOf(ctx(t), lk.Identity)
			if tc.released {
				wantErr(t, "lock row after the reservation", err, store.ErrNotFound)
				return
			}
			must(t, err)
			diff(t, "lock row after a reservation that created nothing", lk, row)
		})
	}
}

// wantDrained: the wallet's balance is spent to 0 by exactly debits entries.
func wantDrained(t *testing.T, s store.Store, fx fixture, debits int) {
	t.Helper()
	if b := balance(t, s, fx.wallet.ID); b != 0 {
		t.Errorf("balance = %d, want 0", b)
	}
	ledger, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	if len(ledger) != debits {
		t.Errorf("ledger has %d debits, want %d", len(ledger), debits)
	}
}
