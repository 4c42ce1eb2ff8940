package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

// The store-alone workload does on each store what the gateway's calls
// do: every call answered as expected, each first call and unkeyed call
// leaving a completed record, a debit and a dispatch; its replays read
// those records back. No figure of time is judged.
func TestStoreAlone(t *testing.T) {
	l := Load{Concurrency: 4, Duration: 10 * time.Second, MaxCalls: 40}
	for _, tc := range []struct {
		store string
		dsn   func(t *testing.T) string
	}{
		{SQLite, func(*testing.T) string { return "" }},
		{PostgreSQL, func(t *testing.T) string { return pgtest.DSN(t) }},
	} {
		t.Run(tc.store, func(t *testing.T) {
			ctx := t.Context()
			dsn := tc.dsn(t)
			s, err := OpenStoreAlone(ctx, tc.store, t.TempDir(), dsn, DatabasePrefix+"alone_test_"+strconv.Itoa(os.Getpid()), l)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Close(context.Background()); err != nil {
					t.Error(err)
				}
			})
			if st := s.Replay(ctx); st.Calls != 0 || st.FirstError == "" {
				t.Errorf("replays before any first call: %+v, want none and an error", st)
			}
			first := s.First(ctx)
			replay := s.Replay(ctx)
			unkeyed := s.Unkeyed(ctx)
			for _, tc := range []struct {
				name string
				st   Stats
			}{{PhaseStoreFirst, first}, {PhaseStoreReplay, replay}, {PhaseStoreUnkeyed, unkeyed}} {
				if tc.st.Name != tc.name || tc.st.Calls < l.MaxCalls || tc.st.Errors != 0 {
					t.Errorf("%s: %d calls, %d errors (%s), name %q", tc.name, tc.st.Calls, tc.st.Errors, tc.st.FirstError, tc.st.Name)
				}
			}
			rec, err := s.st.Record(ctx, s.done[0])
			if err != nil || rec.State != store.StateCompleted || !rec.Charged || rec.Receipt == "" {
				t.Errorf("first call's record %+v, %v: want completed, charged, a receipt", rec, err)
			}
			ledger, err := s.st.Ledger(ctx, s.wallet)
			if err != nil {
				t.Fatal(err)
			}
			debits := 0
			for _, e := range ledger {
				if e.Kind == store.EntryDebit {
					debits++
				}
			}
			ds, err := s.st.Dispatches(ctx, store.DispatchFilter{WalletID: s.wallet})
			if err != nil {
				t.Fatal(err)
			}
			// Calls finished after the window closed are written but not
			// counted, so there may be more rows than counted calls.
			if n := first.Calls + unkeyed.Calls; debits < n || len(ds) < n {
				t.Errorf("%d debits, %d dispatches for %d counted calls", debits, len(ds), n)
			}
		})
	}
}

// The allocation counts come back for every kind of call, in order; their
// values depend on the Go release and are not judged.
func TestMeasureCallAllocs(t *testing.T) {
	got, err := MeasureCallAllocs(t.Context(), t.TempDir(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, a := range got {
		phases = append(phases, a.Phase)
		if a.Calls != 20 || a.AllocsPerOp <= 0 || a.BytesPerOp <= 0 {
			t.Errorf("%+v: want 20 calls and some allocations", a)
		}
	}
	if want := []string{PhaseKeyedFirst, PhaseKeyedReplay, PhaseUnkeyed}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
}
