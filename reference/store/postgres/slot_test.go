package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

// slotEnv is a migrated schema with one wallet, API key and tool, for
// ReserveSlot calls on PostgreSQL's two forms (its batches, then the core's
// transaction when they cannot decide).
type slotEnv struct {
	h        handle
	wallet   store.Wallet
	key      store.APIKey
	tool     store.Tool
	identity string
	now      time.Time
}

func newSlotEnv(t *testing.T) *slotEnv {
	t.Helper()
	h := open(t, pgtest.FreshDSN(t), 0)
	if err := h.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	e := &slotEnv{h: h, now: now,
		wallet: store.Wallet{ID: uuid.NewString(), Balance: 100, CreatedAt: now},
		tool:   store.Tool{Name: "partner.notes.write", Price: 5}}
	e.key = store.APIKey{ID: uuid.NewString(), WalletID: e.wallet.ID, SecretHash: []byte("0123456789abcdef0123456789abcdef"), CreatedAt: now}
	e.identity = e.wallet.ID + "|" + e.tool.Name + "|" + uuid.NewString()
	for _, err := range []error{h.CreateWallet(t.Context(), e.wallet), h.CreateAPIKey(t.Context(), e.key), h.PutTool(t.Context(), e.tool)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// slot is a derived record of the identity, in progress, owned by owner.
func (e *slotEnv) slot(key, owner string) store.Record {
	return store.Record{Key: key, Kind: store.KindDerived, Identity: e.identity, WalletID: e.wallet.ID, APIKeyID: e.key.ID,
		Tool: e.tool.Name, Fingerprint: "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
		State: store.StateInProgress, Owner: owner, CreatedAt: e.now, UpdatedAt: e.now}
}

// request is a ReserveSlot of the identity by owner whose slot rule is
// choose; runs counts the rule's runs.
func (e *slotEnv) request(owner string, runs *atomic.Int32,
	choose func(run int32, slots []store.Record) (*store.Record, store.ReserveRequest)) store.SlotRequest {
	return store.SlotRequest{Identity: e.identity, Owner: owner, Now: e.now, StaleAfter: time.Minute, Since: e.now.Add(-time.Minute),
		Choose: func(slots []store.Record) (*store.Record, store.ReserveRequest) {
			return choose(runs.Add(1), slots)
		}}
}

// joinOrNew is the usual slot rule: join the newest slot, else reserve rec.
func joinOrNew(slots []store.Record, rec store.Record) (*store.Record, store.ReserveRequest) {
	if len(slots) > 0 {
		return &slots[len(slots)-1], store.ReserveRequest{}
	}
	return nil, store.ReserveRequest{Record: rec}
}

// TestReserveSlotWritesTheLastChoice: when the batches hand over to the
// core's transaction (here: the key chosen first has a record), the slot
// rule runs again on the slots read then, and that answer is the one
// written. Between the two runs an identical call reserved a slot; the
// second run joins it, where the first answer would reserve beside it.
func TestReserveSlotWritesTheLastChoice(t *testing.T) {
	e := newSlotEnv(t)
	other := open(t, e.h.dsn, 0)
	taken := e.slot("taken-"+uuid.NewString(), uuid.NewString())
	taken.Kind, taken.Identity = store.KindClient, ""
	if _, created, err := e.h.Reserve(t.Context(), store.ReserveRequest{Record: taken}); err != nil || !created {
		t.Fatalf("reserve the key chosen first: created %v, %v", created, err)
	}
	twin := e.slot("twin-"+uuid.NewString(), uuid.NewString())

	var runs atomic.Int32
	owner := uuid.NewString()
	req := e.request(owner, &runs, func(run int32, slots []store.Record) (*store.Record, store.ReserveRequest) {
		if run == 1 {
			// The twin's slot commits while the batches decide nothing.
			if _, created, err := other.Reserve(context.WithoutCancel(t.Context()), store.ReserveRequest{Record: twin}); err != nil || !created {
				t.Errorf("the twin's slot: created %v, %v", created, err)
			}
			return nil, store.ReserveRequest{Record: taken}
		}
		fresh := e.slot("fresh-"+uuid.NewString(), owner)
		return joinOrNew(slots, fresh)
	})
	got, created, err := e.h.ReserveSlot(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 2 {
		t.Fatalf("the slot rule ran %d times, want 2 (the batches handing over to the transaction)", runs.Load())
	}
	if created || got.Key != twin.Key {
		t.Errorf("ReserveSlot: created %v, record %s; want the twin's slot %s joined", created, got.Key, twin.Key)
	}
	slots, err := e.h.RecordsByIdentity(t.Context(), e.identity, e.now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 {
		t.Errorf("%d slots, want the twin's alone", len(slots))
	}
	if _, err := e.h.LockOf(t.Context(), e.identity); err == nil {
		t.Error("a lock row was left behind")
	}
}

// TestReserveSlotTwinReadsAfterTheLock: a twin whose ReserveSlot starts
// while another's holds the identity's lock (its slot rule running) waits
// for that lock before it reads the slots, so it joins the slot the other
// made. A twin that read first and waited after would reserve a second one.
// The twin is seen waiting in pg_stat_activity, by its application_name,
// before the holder goes on. With no lock row both take the batches; with
// a stale one (taken over by the first) both take the core's transaction.
func TestReserveSlotTwinReadsAfterTheLock(t *testing.T) {
	for _, stale := range []bool{false, true} {
		name := "no lock row"
		if stale {
			name = "a stale lock row"
		}
		t.Run(name, func(t *testing.T) { testTwinReadsAfterTheLock(t, stale) })
	}
}

func testTwinReadsAfterTheLock(t *testing.T, stale bool) {
	e := newSlotEnv(t)
	if stale {
		if _, err := e.h.AcquireLock(t.Context(), e.identity, "stalled", e.now.Add(-2*time.Minute), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	app := "reserveslot-" + uuid.NewString()[:8]
	dsn, err := withAppName(e.h.dsn, app)
	if err != nil {
		t.Fatal(err)
	}
	twinStore := open(t, dsn, time.Minute) // it must wait, not give up

	choosing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	var firstRuns, twinRuns atomic.Int32
	first := e.slot("first-"+uuid.NewString(), uuid.NewString())
	firstReq := e.request(first.Owner, &firstRuns, func(run int32, slots []store.Record) (*store.Record, store.ReserveRequest) {
		if run == 1 {
			close(choosing)
			<-release
		}
		return joinOrNew(slots, first)
	})
	firstDone := make(chan outcome, 1)
	go func() {
		rec, created, err := e.h.ReserveSlot(context.WithoutCancel(t.Context()), firstReq)
		firstDone <- outcome{rec, created, err}
	}()
	select {
	case <-choosing:
	case o := <-firstDone:
		t.Fatalf("the first call returned before its slot rule ran: %v", o.err)
	}

	var seen atomic.Int32
	twin := e.slot("twin-"+uuid.NewString(), uuid.NewString())
	twinReq := e.request(twin.Owner, &twinRuns, func(_ int32, slots []store.Record) (*store.Record, store.ReserveRequest) {
		seen.Store(int32(len(slots)))
		return joinOrNew(slots, twin)
	})
	twinDone := make(chan outcome, 1)
	go func() {
		rec, created, err := twinStore.ReserveSlot(context.WithoutCancel(t.Context()), twinReq)
		twinDone <- outcome{rec, created, err}
	}()
	waitForLockWait(t, e.h.dsn, app, twinDone)
	unblock()

	f := <-firstDone
	if f.err != nil || !f.created {
		t.Fatalf("the first call: created %v, %v", f.created, f.err)
	}
	o := <-twinDone
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.created || o.rec.Key != first.Key {
		t.Errorf("the twin: created %v, record %s; want the first call's slot %s joined", o.created, o.rec.Key, first.Key)
	}
	if seen.Load() != 1 {
		t.Errorf("the twin's slot rule last saw %d slots, want 1", seen.Load())
	}
	if _, err := e.h.LockOf(t.Context(), e.identity); err == nil {
		t.Error("a lock row was left behind")
	}
}

// outcome is what a ReserveSlot run in the background came back with.
type outcome struct {
	rec     store.Record
	created bool
	err     error
}

// waitForLockWait returns once a session of application app waits for a
// lock (the twin, on the holder's uncommitted lock row). It fails the test
// if the twin returned first: it then never waited.
func waitForLockWait(t *testing.T, dsn, app string, twinDone <-chan outcome) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	tick := time.NewTicker(time.Millisecond) // a poll of the server's state, not a timing assumption
	defer tick.Stop()
	for {
		var waiting bool
		err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock')`, app).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case o := <-twinDone:
			t.Fatalf("the twin returned while the first call held the lock: created %v, %v", o.created, o.err)
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-tick.C:
		}
	}
}

// withAppName returns the URL dsn with application_name set.
func withAppName(dsn, app string) (string, error) {
	if !strings.Contains(dsn, "://") {
		return dsn + " application_name=" + app, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
