package storetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// slotCall is one unkeyed call's ReserveSlot with the suite's slot rule:
// join the newest slot that is not refunded, else reserve a new one
// (numbered after the slots seen) with its auto permit and charge. A new
// slot's key is the call's own, so only the lock can keep twins from both
// reserving one. chose counts the rule's runs, seen the slots its last run
// was given.
type slotCall struct {
	req   store.SlotRequest
	rec   store.Record // the reservation a new slot gets
	perm  store.Permit
	chose atomic.Int32
	seen  atomic.Int32
}

func (fx fixture) slotCall(identity string, now time.Time) *slotCall {
	sc := &slotCall{}
	rec, p := fx.record()
	rec.Kind, rec.Identity, rec.ClientKey = store.KindDerived, identity, ""
	rec.CreatedAt, rec.UpdatedAt, p.CreatedAt, p.ExpiresAt = now, now, now, now.Add(2*time.Minute)
	e := fx.debit(rec, fx.tool.Price)
	e.RecordKey, e.WalletID, e.At = "", "", now
	charge := &store.ChargeRequest{Entry: e, Now: now}
	sc.req = store.SlotRequest{Identity: identity, Owner: rec.Owner, Now: now, StaleAfter: stale, Since: now.Add(-time.Minute),
		Choose: func(slots []store.Record) (*store.Record, store.ReserveRequest) {
			sc.chose.Add(1)
			sc.seen.Store(int32(len(slots)))
			for i := len(slots) - 1; i >= 0; i-- {
				if slots[i].State != store.StateFailedRefunded {
					return &slots[i], store.ReserveRequest{}
				}
			}
			r, perm := sc.rec, sc.perm
			r.Attempt = len(slots)
			r.Key = identity + "#" + strconv.Itoa(r.Attempt) + "#" + r.Owner
			perm.RecordKey = r.Key
			return nil, store.ReserveRequest{Record: r, Permit: &perm, Charge: charge}
		}}
	sc.rec, sc.perm = rec, p
	return sc
}

// created is the record a new slot is reserved as, attempt 0: charged.
func (sc *slotCall) created() store.Record {
	r := sc.rec
	r.Key, r.Charged = r.Identity+"#0#"+r.Owner, true
	return r
}

func (sc *slotCall) run(t *testing.T, s store.Store) (store.Record, bool, error) {
	return s.ReserveSlot(ctx(t), sc.req)
}

// wantNoLock: the identity has no lock row.
func wantNoLock(t *testing.T, s store.Store, identity string) {
	t.Helper()
	_, err := s.LockOf(ctx(t), identity)
	wantErr(t, "lock row", err, store.ErrNotFound)
}

// testReserveSlot: the lock, the slot choice and the charged reservation
// in one write, which leaves no lock row; a live lock another call holds
// is respected, a stale one taken over so that its holder's fenced claim
// fails; a write that creates nothing leaves no trace but that takeover.
func testReserveSlot(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name    string
		balance int64
		// prepare may write before the call, and returns the lock another
		// call holds, if any.
		prepare func(t *testing.T, fx fixture, sc *slotCall) *store.Lock
		want    error
		created bool
		joined  bool // the call comes back with the prepared slot
		// held: the prepared lock row is still there afterwards (else no row).
		held bool
	}{
		{name: "no lock, no slot: reserved and charged", balance: 10, created: true},
		{name: "a slot to join: joined, nothing written", balance: 10, joined: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				slotOf(t, s, fx, sc)
				return nil
			}},
		{name: "live lock of another call: held", balance: 10, want: store.ErrLockHeld, held: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				return lockOf(t, s, sc, sc.req.Now.Add(time.Nanosecond-stale))
			}},
		{name: "stale lock: taken over, reserved", balance: 10, created: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				return lockOf(t, s, sc, sc.req.Now.Add(-stale))
			}},
		{name: "stale lock, a slot to join: still taken over", balance: 10, joined: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				slotOf(t, s, fx, sc)
				return lockOf(t, s, sc, sc.req.Now.Add(-stale))
			}},
		{name: "the chosen key has a record: it comes back, nothing written", balance: 10, joined: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				r := sc.created()
				r.Kind, r.Identity, r.Owner, r.Charged, r.PermitID = store.KindClient, "", id(), false, ""
				if _, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: r}); err != nil || !created {
					t.Fatalf("reserve the chosen key: created %v, %v", created, err)
				}
				return nil
			}},
		{name: "charge refused: nothing written", balance: 1, want: store.ErrInsufficientFunds},
		{name: "stale lock, charge refused: nothing written", balance: 1, want: store.ErrInsufficientFunds, held: true,
			prepare: func(t *testing.T, fx fixture, sc *slotCall) *store.Lock {
				return lockOf(t, s, sc, sc.req.Now.Add(-stale))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, s, tc.balance)
			sc := fx.slotCall(fx.wallet.ID+"|"+fx.tool.Name+"|"+id(), t0.Add(time.Hour))
			var holder *store.Lock
			var slot store.Record
			if tc.prepare != nil {
				holder = tc.prepare(t, fx, sc)
				if tc.joined {
					slot = sc.created()
					slot, _ = s.Record(ctx(t), slot.Key)
				}
			}
			before := balance(t, s, fx.wallet.ID)
			got, created, err := sc.run(t, s)
			wantErr(t, "reserve slot", err, tc.want)
			if created != tc.created {
				t.Errorf("created = %v, want %v", created, tc.created)
			}
			var spent int64
			switch {
			case tc.created:
				spent = fx.tool.Price
				diff(t, "reserved slot", sc.created(), got)
				stored, err := s.Record(ctx(t), got.Key)
				must(t, err)
				diff(t, "stored slot", got, stored)
				p, err := s.Permit(ctx(t), got.PermitID)
				must(t, err)
				if p.Spent != fx.tool.Price || p.RecordKey != got.Key {
					t.Errorf("permit spent %d for %q, want %d for %q", p.Spent, p.RecordKey, fx.tool.Price, got.Key)
				}
			case tc.joined:
				diff(t, "joined slot", slot, got)
				_, err := s.Permit(ctx(t), sc.perm.ID)
				wantErr(t, "the joining call's permit", err, store.ErrNotFound)
			default:
				wantNothingWritten(t, s, sc.created(), sc.perm)
			}
			if b := balance(t, s, fx.wallet.ID); b != before-spent {
				t.Errorf("balance = %d, want %d", b, before-spent)
			}
			if errors.Is(tc.want, store.ErrLockHeld) && sc.chose.Load() != 0 {
				t.Errorf("the slot rule ran %d times under another call's live lock", sc.chose.Load())
			}
			if !tc.held || holder == nil {
				wantNoLock(t, s, sc.req.Identity)
			} else {
				row, err := s.LockOf(ctx(t), holder.Identity)
				must(t, err)
				diff(t, "the holder's lock row", *holder, row)
			}
			if holder != nil && !tc.held {
				// The holder stalled past its lock's life, then claims.
				late := fx.slotCall(holder.Identity, holder.AcquiredAt)
				r := late.created()
				r.Key, r.Owner, r.Charged = r.Key+"-late", holder.Owner, false
				_, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: r, Fence: fenceOf(*holder), Release: true})
				wantErr(t, "the taken-over holder's fenced claim", err, store.ErrFenceLost)
				if created {
					t.Errorf("the taken-over holder's fenced claim created its record")
				}
			}
		})
	}
}

// slotOf reserves, outside ReserveSlot, the slot sc would create.
func slotOf(t *testing.T, s store.Store, fx fixture, sc *slotCall) {
	t.Helper()
	r := sc.created()
	r.Owner, r.Charged, r.PermitID, r.CreatedAt = id(), false, "", r.CreatedAt.Add(-time.Second)
	if _, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: r}); err != nil || !created {
		t.Fatalf("reserve the slot to join: created %v, %v", created, err)
	}
}

// lockOf makes another call hold sc's identity's lock since at.
func lockOf(t *testing.T, s store.Store, sc *slotCall, at time.Time) *store.Lock {
	t.Helper()
	lk, err := s.AcquireLock(ctx(t), sc.req.Identity, id(), at, stale)
	must(t, err)
	return &lk
}

// testConcurrentSlots: identical unkeyed calls serialise on their
// identity's lock inside ReserveSlot: of twins released at once one
// reserves a slot and the others join it, charged once; and a twin that
// arrives while another's write holds the lock waits for it (past its lock
// timeout: ErrBusy, its slot rule never run), then joins its slot.
func testConcurrentSlots(t *testing.T, s store.Store) {
	t.Run("twins", func(t *testing.T) {
		const n = 8
		fx := newFixture(t, s, 100)
		identity := fx.wallet.ID + "|" + fx.tool.Name + "|" + id()
		calls := make([]*slotCall, n)
		for i := range calls {
			calls[i] = fx.slotCall(identity, t0)
		}
		got, winner := reserveTwins(t, n, func(i int) (store.Record, bool, error) { return calls[i].run(t, s) })
		for i := range calls {
			if got[i].Key != got[winner].Key || got[i].Owner != calls[winner].req.Owner {
				t.Errorf("twin %d came back with %s owned by %s, want the winner's %s", i, got[i].Key, got[i].Owner, got[winner].Key)
			}
		}
		slots, err := s.RecordsByIdentity(ctx(t), identity, t0.Add(-time.Hour))
		must(t, err)
		if len(slots) != 1 {
			t.Errorf("%d slots, want 1", len(slots))
		}
		if b := balance(t, s, fx.wallet.ID); b != 100-fx.tool.Price {
			t.Errorf("balance = %d, want %d: charged once", b, 100-fx.tool.Price)
		}
		wantNoLock(t, s, identity)
	})

	t.Run("held", func(t *testing.T) {
		fx := newFixture(t, s, 100)
		identity := fx.wallet.ID + "|" + fx.tool.Name + "|" + id()
		first, twin := fx.slotCall(identity, t0), fx.slotCall(identity, t0)
		taker := reopen(t, s, ShortLockTimeout)

		choosing, release := make(chan struct{}), make(chan struct{})
		var once, chose sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		defer unblock()
		choose := first.req.Choose
		first.req.Choose = func(slots []store.Record) (*store.Record, store.ReserveRequest) {
			chose.Do(func() { close(choosing) }) // the rule may run twice (SlotRequest.Choose)
			<-release
			return choose(slots)
		}
		done := reserveAsync(func() (store.Record, bool, error) { return first.run(t, s) })
		select {
		case <-choosing:
		case o := <-done:
			t.Fatalf("the first call returned before its slot rule ran: %v", o.err)
		case <-ctx(t).Done():
			t.Fatal(ctx(t).Err())
		}

		_, created, err := twin.run(t, taker)
		wantErr(t, "a twin while the first call holds the lock", err, store.ErrBusy)
		if created || twin.chose.Load() != 0 {
			t.Errorf("the twin went past the held lock: created = %v, its slot rule ran %d times", created, twin.chose.Load())
		}
		unblock()
		o := <-done
		must(t, o.err)
		if !o.created {
			t.Fatal("the first call: created = false")
		}
		got, created, err := twin.run(t, taker)
		must(t, err)
		if created || got.Key != o.rec.Key {
			t.Errorf("the twin after the first call: created = %v, slot %s; want the first call's %s joined", created, got.Key, o.rec.Key)
		}
		if twin.seen.Load() != 1 {
			t.Errorf("the twin's slot rule saw %d slots, want 1", twin.seen.Load())
		}
		wantNoLock(t, s, identity)
	})
}

// testReserveSlotCancelled: a ReserveSlot whose context ends while its slot
// rule runs (the lock taken, nothing reserved yet) either fails having
// written nothing (no slot, permit or debit), or, in a store that finishes
// a write it began, reserves as if it had not ended. Either way it leaves
// no lock row, so an identical call right after does not wait for one: it
// reserves, or joins the slot made.
func testReserveSlotCancelled(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 100)
	identity := fx.wallet.ID + "|" + fx.tool.Name + "|" + id()
	gone, again := fx.slotCall(identity, t0), fx.slotCall(identity, t0)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	choose := gone.req.Choose
	gone.req.Choose = func(slots []store.Record) (*store.Record, store.ReserveRequest) {
		cancel() // the caller's context ends mid-transaction
		return choose(slots)
	}
	got, created, err := s.ReserveSlot(c, gone.req)
	want, spent := again.created(), int64(0)
	switch {
	case err != nil:
		if created {
			t.Errorf("a failed reservation says it created %s", got.Key)
		}
		wantNothingWritten(t, s, gone.created(), gone.perm)
	case created:
		want, spent = got, fx.tool.Price
		stored, err := s.Record(ctx(t), got.Key)
		must(t, err)
		diff(t, "the slot reserved as the context ended", got, stored)
	default:
		t.Fatalf("a reservation whose context ended came back with %s, not created, and no error", got.Key)
	}
	wantNoLock(t, s, identity)
	if b := balance(t, s, fx.wallet.ID); b != 100-spent {
		t.Errorf("balance = %d, want %d", b, 100-spent)
	}
	got, _, err = again.run(t, s)
	must(t, err)
	if got.Key != want.Key {
		t.Errorf("the identical call after: slot %s, want %s", got.Key, want.Key)
	}
}
