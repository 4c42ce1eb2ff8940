// Package storetest is the contract suite every store.Store implementation
// must pass. Both reference stores run it from their own tests.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/store"
)

// Reopener is what the suite needs beyond store.Store: a second handle on the
// same database with its own lock timeout, as a second gateway process would
// open it. The stores open returns must implement it (a test-side wrapper is
// enough); the handle is closed when t ends.
type Reopener interface {
	Reopen(t *testing.T, lockTimeout time.Duration) store.Store
}

// ShortLockTimeout is what the lock-timeout tests give the handle that must
// give up.
const ShortLockTimeout = 200 * time.Millisecond

// Run runs the suite. open must return a store on a fresh, empty database of
// its own (not yet migrated) that is closed when t ends; it is called from
// parallel subtests.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		// fresh skips the Migrate the suite runs before the test.
		fresh bool
		fn    func(t *testing.T, s store.Store)
	}{
		{"migrate", true, testMigrate},
		{"wallets", false, testWallets},
		{"credit and ledger", false, testCreditLedger},
		{"append debit", false, testAppendDebit},
		{"append refund", false, testAppendRefund},
		{"api keys", false, testAPIKeys},
		{"principals", false, testPrincipals},
		{"trusts", false, testTrusts},
		{"tools", false, testTools},
		{"servers", false, testServers},
		{"permits", false, testPermits},
		{"acquire lock", false, testAcquireLock},
		{"locks by prefix", false, testLocksByPrefix},
		{"reserve", false, testReserve},
		{"reserve fence lost", false, testReserveFenceLost},
		{"reserve after claim fails", false, testReserveAfterClaimFails},
		{"takeover during claim is busy", false, testTakeoverDuringClaim},
		{"records by identity", false, testRecordsByIdentity},
		{"charge", false, testCharge},
		{"reserve charged", false, testReserveCharged},
		{"reserve releases the lock", false, testReserveRelease},
		{"reserve slot", false, testReserveSlot},
		{"reserve slot cancelled", false, testReserveSlotCancelled},
		{"finish", false, testFinish},
		{"refund and replace", false, testRefundAndReplace},
		{"abandon", false, testAbandon},
		{"settle", false, testSettle},
		{"resume", false, testResume},
		{"purge", false, testPurge},
		{"notes", false, testNotes},
		{"dispatches", false, testDispatches},
		{"concurrent credits", false, testConcurrentCredits},
		{"concurrent charges", false, testConcurrentCharges},
		{"concurrent first calls", false, testConcurrentFirstCalls},
		{"concurrent charged reservations", false, testConcurrentChargedReserves},
		{"concurrent twins", false, testConcurrentTwins},
		{"concurrent acquire", false, testConcurrentAcquire},
		{"concurrent slots", false, testConcurrentSlots},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			if !tc.fresh {
				must(t, s.Migrate(ctx(t)))
			}
			tc.fn(t, s)
		})
	}
}

// t0 has nanoseconds so a store that rounds times fails.
var t0 = time.Date(2026, 7, 28, 12, 0, 0, 123456789, time.UTC)

func ctx(t *testing.T) context.Context { return t.Context() }

// optional is s as the optional interface T (store.DebitAppender, say); the
// test is skipped when s does not have it.
func optional[T any](t *testing.T, s store.Store) T {
	t.Helper()
	o, ok := s.(T)
	if !ok {
		t.Skipf("the store has no %T", &o)
	}
	return o
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v, want %v", what, err, want)
	}
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

func reopen(t *testing.T, s store.Store, lockTimeout time.Duration) store.Store {
	t.Helper()
	r, ok := s.(Reopener)
	if !ok {
		t.Fatalf("store %T does not implement storetest.Reopener", s)
	}
	return r.Reopen(t, lockTimeout)
}

func id() string { return uuid.NewString() }

// fixture is one wallet with an API key and a tool.
type fixture struct {
	wallet store.Wallet
	key    store.APIKey
	tool   store.Tool
}

func newFixture(t *testing.T, s store.Store, balance int64) fixture {
	t.Helper()
	fx := fixture{
		wallet: store.Wallet{ID: id(), Balance: balance, CreatedAt: t0},
		tool:   store.Tool{Name: "partner.notes.write", Description: "writes a note", Price: 5},
	}
	fx.key = store.APIKey{ID: id(), WalletID: fx.wallet.ID, SecretHash: []byte("0123456789abcdef0123456789abcdef"), CreatedAt: t0}
	must(t, s.CreateWallet(ctx(t), fx.wallet))
	must(t, s.CreateAPIKey(ctx(t), fx.key))
	must(t, s.PutTool(ctx(t), fx.tool))
	return fx
}

// record is an in-progress client record with its auto permit.
func (fx fixture) record() (store.Record, store.Permit) {
	rec := store.Record{
		Key:         id(),
		Kind:        store.KindClient,
		ClientKey:   id(),
		WalletID:    fx.wallet.ID,
		APIKeyID:    fx.key.ID,
		Tool:        fx.tool.Name,
		Fingerprint: "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
		State:       store.StateInProgress,
		Owner:       id(),
		PermitID:    id(),
		CreatedAt:   t0,
		UpdatedAt:   t0,
	}
	p := store.Permit{
		ID:        rec.PermitID,
		WalletID:  fx.wallet.ID,
		APIKeyID:  fx.key.ID,
		Tool:      fx.tool.Name,
		Budget:    fx.tool.Price,
		ExpiresAt: t0.Add(2 * time.Minute),
		Auto:      true,
		RecordKey: rec.Key,
		CreatedAt: t0,
	}
	return rec, p
}

// reserve reserves a fresh record with its permit and checks it was created.
func (fx fixture) reserve(t *testing.T, s store.Store) (store.Record, store.Permit) {
	t.Helper()
	rec, p := fx.record()
	got, created, err := s.Reserve(ctx(t), store.ReserveRequest{Record: rec, Permit: &p})
	must(t, err)
	if !created {
		t.Fatalf("reserve %s: created = false", rec.Key)
	}
	diff(t, "reserved record", rec, got)
	return rec, p
}

func (fx fixture) debit(rec store.Record, amount int64) store.LedgerEntry {
	return store.LedgerEntry{
		ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryDebit, Amount: amount,
		RecordKey: rec.Key, Receipt: "rcpt-" + rec.Key, Tool: rec.Tool, At: t0,
	}
}

func (fx fixture) charge(rec store.Record, amount int64) store.ChargeRequest {
	return store.ChargeRequest{Entry: fx.debit(rec, amount), RecordKey: rec.Key, Owner: rec.Owner, PermitID: rec.PermitID, Now: t0}
}

func balance(t *testing.T, s store.Store, walletID string) int64 {
	t.Helper()
	w, err := s.Wallet(ctx(t), walletID)
	must(t, err)
	return w.Balance
}
