package storetest

import (
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// testPurge: the retention purge deletes finished records last written at
// or before its horizon, oldest first and at most its limit, with their auto
// permits; never a record in progress (running, or charged and uncertain),
// whatever its age, nor an explicit permit.
func testPurge(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 100)
	finish := func(state string, at time.Time) (store.Record, store.Permit) {
		rec, p := fx.reserve(t, s)
		must(t, s.Finish(ctx(t), rec.Key, rec.Owner, store.Outcome{State: state, Receipt: "rcpt-" + id(), Result: result, Now: at}))
		return rec, p
	}
	oldest, oldestP := finish(store.StateCompleted, t0)
	refunded, refundedP := finish(store.StateFailedRefunded, t0.Add(time.Minute))
	newer, _ := finish(store.StateCompleted, t0.Add(2*time.Hour))
	running, runningP := fx.reserve(t, s)
	uncertain, _ := fx.reserve(t, s)
	must(t, s.Charge(ctx(t), fx.charge(uncertain, 5)))
	explicit, under := fx.underExplicitPermit(t, s)
	must(t, s.Finish(ctx(t), under.Key, under.Owner, store.Outcome{State: store.StateCompleted, Receipt: "rcpt-" + id(), Result: result, Now: t0.Add(30 * time.Second)}))

	horizon := t0.Add(time.Hour)
	for _, step := range []struct {
		limit int
		want  int
	}{{0, 0}, {1, 1}, {10, 2}, {10, 0}} {
		n, err := s.PurgeRecords(ctx(t), horizon, step.limit)
		must(t, err)
		if n != step.want {
			t.Fatalf("PurgeRecords(limit %d) = %d, want %d", step.limit, n, step.want)
		}
	}
	wantNothingWritten(t, s, oldest, oldestP)
	wantNothingWritten(t, s, refunded, refundedP)
	_, err := s.Record(ctx(t), under.Key)
	wantErr(t, "record under an explicit permit", err, store.ErrNotFound)
	got, err := s.Permit(ctx(t), explicit.ID)
	must(t, err)
	diff(t, "explicit permit after its record's purge", explicit, got)
	for _, rec := range []store.Record{newer, running, uncertain} {
		if _, err := s.Record(ctx(t), rec.Key); err != nil {
			t.Errorf("record %s (%s, charged %v) after the purge: %v", rec.Key, rec.State, rec.Charged, err)
		}
	}
	if _, err := s.Permit(ctx(t), runningP.ID); err != nil {
		t.Errorf("auto permit of a running record after the purge: %v", err)
	}

	// One key at a time, on the same rule.
	far := t0.Add(100 * time.Hour)
	for _, tc := range []struct {
		name   string
		key    string
		before time.Time
		want   bool
	}{
		{"finished after the horizon", newer.Key, horizon, false},
		{"running, however old", running.Key, far, false},
		{"uncertain, however old", uncertain.Key, far, false},
		{"no such record", id(), far, false},
		{"finished at the horizon", newer.Key, newer.UpdatedAt.Add(2 * time.Hour), true},
	} {
		gone, err := s.PurgeRecord(ctx(t), tc.key, tc.before)
		must(t, err)
		if gone != tc.want {
			t.Errorf("PurgeRecord(%s) = %v, want %v", tc.name, gone, tc.want)
		}
	}
	_, err = s.Record(ctx(t), newer.Key)
	wantErr(t, "purged record", err, store.ErrNotFound)

	// The purge-uncertain bug switch's purge takes an uncertain record too.
	gone, err := optional[store.AnyRecordPurger](t, s).PurgeRecordAny(ctx(t), uncertain.Key, far)
	must(t, err)
	if !gone {
		t.Errorf("PurgeRecordAny(uncertain, however old) = false, want true")
	}
	_, err = s.Record(ctx(t), uncertain.Key)
	wantErr(t, "uncertain record purged by PurgeRecordAny", err, store.ErrNotFound)
}
