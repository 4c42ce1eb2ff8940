package soak

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Environment knobs: a failing run is replayed with its seed, and the size
// can be raised to the make target's.
const (
	seedEnv  = "MCPCONFORM_SOAK_SEED"
	callsEnv = "MCPCONFORM_SOAK_CALLS"
)

// testCalls is the test's soak size: the full 10,000 calls.
const testCalls = 10_000

// TestSoakPostgres runs the soak on PostgreSQL (DATABASE_URL, else
// dockertest; skipped with the reason when neither is there, a failure
// with MCPCONFORM_REQUIRE_POSTGRES=1) and requires every invariant to hold.
// Nothing here is timed: wall time and rates are only logged.
func TestSoakPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak starts gateway processes")
	}
	cfg := Config{DSN: pgtest.FreshDSN(t), Binary: build(t), Calls: envInt(t, callsEnv, testCalls), Seed: int64(envInt(t, seedEnv, 0))}
	requireClean(t, soak(t, cfg))
}

// TestSoakSQLite runs the same workload with the processes sharing one
// SQLite file: each queues and batches its own writes in Go, and all of
// them contend for the file's write lock through busy_timeout.
func TestSoakSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak starts gateway processes")
	}
	cfg := Config{Store: "sqlite", Binary: build(t), Calls: envInt(t, callsEnv, testCalls), Seed: int64(envInt(t, seedEnv, 0))}
	requireClean(t, soak(t, cfg))
}

// requireClean fails the test on every broken invariant, and on a soak
// that did nothing.
func requireClean(t *testing.T, res *Result) {
	t.Helper()
	f := res.Figures
	t.Logf("figures: %s", f.Summary())
	for i, v := range res.Violations {
		if i == 50 {
			t.Errorf("… and %d more violations", len(res.Violations)-i)
			break
		}
		t.Errorf("%s", v)
	}
	if f.Operations == 0 || f.Dispatches == 0 {
		t.Errorf("the soak did nothing: %+v", f)
	}
	if f.Violations > 0 {
		t.Logf("replay with %s=%d", seedEnv, f.Seed)
	}
}

// TestSoakCatchesBugs runs a smaller soak against gateways with a bug
// switch on and requires the checks to catch it: they are shown to fail
// when the bug is there, not only to pass when it is not.
func TestSoakCatchesBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak starts gateway processes")
	}
	dsn := pgtest.FreshDSN(t)
	bin := build(t)
	// At the default 2% a 600-call soak may plan no pre-dispatch failure
	// for some seeds; at 25% of the 200-odd operations it plans dozens, and
	// the odds of none (0.75^200) are nil.
	failing := DefaultMix()
	failing.FailBefore = 0.25
	cases := []struct {
		bug  string
		mix  *Mix     // nil: the default
		want []string // checks that must fail
	}{
		// A replay writes another debit: operations retried after their
		// result are charged twice.
		{"replay-debits", nil, []string{"ledger"}},
		// Unkeyed calls get a fresh key each: a retry dispatches and
		// charges again under another receipt.
		{"random-unkeyed-key", nil, []string{"dispatches", "answer"}},
		// A failure before dispatch keeps its debit: the retry that runs
		// the operation is charged again.
		{"refund-missing", &failing, []string{"ledger"}},
	}
	for _, c := range cases {
		t.Run(c.bug, func(t *testing.T) {
			res := soak(t, Config{DSN: dsn, Binary: bin, Calls: 600, Bugs: []string{c.bug}, Mix: c.mix,
				Seed: int64(envInt(t, seedEnv, 0))})
			t.Logf("figures: %s", res.Figures.Summary())
			if c.mix != nil && c.mix.FailBefore > 0 && res.Figures.PreDispatchFailHits == 0 {
				t.Fatalf("bug %s: the workload failed no call before dispatch, so nothing could show the bug (figures: %s)",
					c.bug, res.Figures.Summary())
			}
			for _, check := range c.want {
				if res.Figures.ByCheck[check] == 0 {
					t.Errorf("bug %s: check %s found nothing (violations by check: %v)", c.bug, check, res.Figures.ByCheck)
				}
			}
			for i, v := range res.Violations[:min(3, len(res.Violations))] {
				t.Logf("caught %d: %s", i, v)
			}
		})
	}
}

// soak runs cfg with the test's log and a bound well past the workload's
// own deadline, so a hung gateway fails the test instead of hanging it.
func soak(t *testing.T, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cfg.Log = testLog{t}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// build compiles mcpconform for the gateways: the test binary is not one.
func build(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bin, err := target.Build(ctx, os.Getenv("GO"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// testLog sends the soak's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
