package storetest

import (
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// testSettle: an operation charged and not written since the staleness
// bound is listed as uncertain; an operator's settlement is written only
// while it still is (its owner, in progress, charged, stale), with its
// refund given back to the wallet and the permit; a settled record is
// uncertain no more.
func testSettle(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	reserved, _ := fx.reserve(t, s) // not charged: never uncertain
	refunded, p := fx.reserve(t, s)
	rc := fx.charge(refunded, 5)
	must(t, s.Charge(ctx(t), rc))
	completed, _ := fx.reserve(t, s)
	cc := fx.charge(completed, 5)
	cc.Now = t0.Add(time.Second) // written later than the other
	must(t, s.Charge(ctx(t), cc))

	list := func(before time.Time) []string {
		t.Helper()
		recs, err := s.UncertainRecords(ctx(t), before)
		must(t, err)
		var keys []string
		for _, r := range recs {
			keys = append(keys, r.Key)
		}
		return keys
	}
	diff(t, "uncertain before any charge", []string(nil), list(t0.Add(-time.Nanosecond)))
	diff(t, "uncertain at the first charge", []string{refunded.Key}, list(t0))
	diff(t, "uncertain at the second", []string{refunded.Key, completed.Key}, list(t0.Add(time.Second)))

	now := t0.Add(time.Hour)
	refund := store.LedgerEntry{ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryRefund, Amount: 5,
		RecordKey: refunded.Key, Receipt: rc.Entry.Receipt, Tool: refunded.Tool, At: now}
	back := store.Settlement{Owner: refunded.Owner, StaleBefore: t0,
		Outcome: store.Outcome{State: store.StateFailedRefunded, Receipt: rc.Entry.Receipt, Refund: &refund, Now: now}}
	done := store.Settlement{Owner: completed.Owner, StaleBefore: t0.Add(time.Second),
		Outcome: store.Outcome{State: store.StateCompleted, Receipt: cc.Entry.Receipt, Result: result, Now: now}}

	for _, tc := range []struct {
		name string
		key  string
		st   func() store.Settlement
		want error
	}{
		{"no such record", id(), func() store.Settlement { return back }, store.ErrNotFound},
		{"not charged", reserved.Key, func() store.Settlement {
			st := back
			st.Owner = reserved.Owner
			return st
		}, store.ErrNotUncertain},
		{"another owner", refunded.Key, func() store.Settlement {
			st := back
			st.Owner = id()
			return st
		}, store.ErrNotUncertain},
		{"written since the bound", completed.Key, func() store.Settlement {
			st := done
			st.StaleBefore = t0
			return st
		}, store.ErrNotUncertain},
	} {
		wantErr(t, tc.name, s.Settle(ctx(t), tc.key, tc.st()), tc.want)
	}
	withDispatch := done
	withDispatch.Outcome.Dispatch = &store.Dispatch{ID: id(), Tool: completed.Tool, RecordKey: completed.Key, WalletID: fx.wallet.ID, At: now}
	if err := s.Settle(ctx(t), completed.Key, withDispatch); err == nil {
		t.Fatal("a settlement with a dispatch row: no error")
	}

	must(t, s.Settle(ctx(t), refunded.Key, back))
	want := state{Balance: 5, Permit: p, Ledger: []store.LedgerEntry{rc.Entry, cc.Entry, refund}}
	want.Record = refunded
	want.Record.State, want.Record.Receipt, want.Record.Charged, want.Record.UpdatedAt = store.StateFailedRefunded, rc.Entry.Receipt, true, now
	diff(t, "state after the refund", want, snapshot(t, s, fx, refunded))

	must(t, s.Settle(ctx(t), completed.Key, done))
	got, err := s.Record(ctx(t), completed.Key)
	must(t, err)
	wantRec := completed
	wantRec.State, wantRec.Receipt, wantRec.Result, wantRec.Charged, wantRec.UpdatedAt = store.StateCompleted, cc.Entry.Receipt, result, true, now
	diff(t, "settled record", wantRec, got)
	if b := balance(t, s, fx.wallet.ID); b != 5 {
		t.Errorf("balance after both settlements = %d, want 5", b)
	}

	wantErr(t, "settle twice", s.Settle(ctx(t), completed.Key, done), store.ErrNotUncertain)
	diff(t, "uncertain after settling", []string(nil), list(now))
}

// testResume: a stalled owner's fence (Resume) and a settlement exclude each
// other: after the fence the record is fresh, and a settlement with a bound
// before it is refused; after a settlement the fence finds the record no
// longer the owner's in progress.
func testResume(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	fenced, _ := fx.reserve(t, s)
	must(t, s.Charge(ctx(t), fx.charge(fenced, 5)))
	settled, _ := fx.reserve(t, s)
	sc := fx.charge(settled, 5)
	must(t, s.Charge(ctx(t), sc))
	now := t0.Add(time.Hour)

	wantErr(t, "resume by another owner", s.Resume(ctx(t), fenced.Key, id(), now), store.ErrNotOwner)
	must(t, s.Resume(ctx(t), fenced.Key, fenced.Owner, now))
	done := store.Outcome{State: store.StateCompleted, Receipt: "rcpt-settled", Result: result, Now: now.Add(time.Second)}
	wantErr(t, "settle after the fence", s.Settle(ctx(t), fenced.Key, store.Settlement{Owner: fenced.Owner, StaleBefore: t0, Outcome: done}), store.ErrNotUncertain)

	done.Receipt = sc.Entry.Receipt
	must(t, s.Settle(ctx(t), settled.Key, store.Settlement{Owner: settled.Owner, StaleBefore: t0, Outcome: done}))
	wantErr(t, "resume after the settlement", s.Resume(ctx(t), settled.Key, settled.Owner, now.Add(2*time.Second)), store.ErrNotOwner)
	rec, err := s.Record(ctx(t), settled.Key)
	must(t, err)
	if rec.State != store.StateCompleted || rec.Receipt != sc.Entry.Receipt {
		t.Errorf("settled record after a resume: state %s receipt %q, want completed %q", rec.State, rec.Receipt, sc.Entry.Receipt)
	}
}
