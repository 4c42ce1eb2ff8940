package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/explore"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/internal/vendorgw"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reports"
)

// correctSeeds is how many seeds a correct gateway is explored with, and
// correctRuns the scenarios of each: 20 seeds against one start of the
// target, bounded to a few minutes of make test.
const (
	correctSeeds = 20
	correctRuns  = 2
)

// exploreCorrect explores a correct gateway with 20 seeds and wants
// nothing found: a violation there is a false one (a bug of the model or
// of the generator), and the test prints its history.
func exploreCorrect(t *testing.T, cfg runner.Config) {
	t.Helper()
	if testing.Short() {
		t.Skip("explores a gateway for a few minutes")
	}
	cfg.Out = t.TempDir()
	var progress bytes.Buffer
	cfg.Progress = &progress
	res, err := explore.Run(context.Background(), explore.Config{Run: cfg, Seed: 1, Seeds: correctSeeds, Runs: correctRuns,
		Budget: 10 * time.Minute, NoShrink: true})
	if err != nil {
		t.Fatalf("explore: %v\n%s", err, progress.String())
	}
	if res.Explored != correctSeeds*correctRuns {
		t.Errorf("explored %d scenarios, want %d", res.Explored, correctSeeds*correctRuns)
	}
	if f := res.Found; f != nil {
		t.Errorf("a correct gateway violated %s (%s) in %s: %s\n%s\nthe record is %s/%s/%s.found.json",
			f.Target.Harm, f.Target.Kind, f.ID, f.Check.Actual, f.Feature, cfg.Out, explore.FoundDir, f.ID)
		keepFound(t, cfg.Out)
	}
	if res.Outcome.Code != runner.ExitOK {
		t.Errorf("explore exit %d, %s: %v", res.Outcome.Code, res.Outcome.Result, res.Outcome.Why)
	}
	// The report stands recomputed from its files, as run's does.
	loaded, err := reports.Load(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range loaded.Scenarios {
		if checks, mismatch := reports.Recheck(s); mismatch {
			t.Errorf("%s: history contradicts the recorded checks: %+v", s.ID, checks)
		}
	}
}

// keepFound copies a false finding out of the test's temporary directory,
// so it can be read after the test.
func keepFound(t *testing.T, out string) {
	dir, err := os.MkdirTemp("", "explore-false-finding-*")
	if err != nil {
		return
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(out, explore.FoundDir))); err == nil {
		t.Logf("the finding is kept in %s", dir)
	}
}

func referenceConfig(t *testing.T, store, dsn string) runner.Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	return runner.Config{Target: "reference", Store: store, DSN: dsn, Binary: exe, Workers: 2, Concurrency: 64}
}

func TestExploreCorrectReferenceSQLite(t *testing.T) {
	exploreCorrect(t, referenceConfig(t, "sqlite", ""))
}

// On PostgreSQL (DATABASE_URL, else dockertest; skipped with the reason
// when neither is there, a failure with MCPCONFORM_REQUIRE_POSTGRES=1).
func TestExploreCorrectReferencePostgres(t *testing.T) {
	exploreCorrect(t, referenceConfig(t, "postgres", pgtest.FreshDSN(t)))
}

// A correct gateway the harness did not write: vendorgw's idempotent mode,
// seen through its profile and the probe only.
func TestExploreCorrectVendorGateway(t *testing.T) {
	exploreCorrect(t, vendorTarget(t, vendorgw.Idempotent))
}

// A gateway with a bug: explore finds it, shrinks it, and writes a
// scenario that `mcpconform run --features` runs as is and fails the same
// way, with its repro.sh and seed.
func TestExploreFindsShrinksAndWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("explores the reference gateway")
	}
	cfg := referenceConfig(t, "sqlite", "")
	cfg.Bugs = []string{"replay-debits"}
	out := t.TempDir()
	cfg.Out = out
	res, err := explore.Run(context.Background(), explore.Config{Run: cfg, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Found
	if f == nil || f.Target.Harm != judge.HarmDoubleCharge {
		t.Fatalf("found %+v, want a double charge", f)
	}
	if res.Outcome.Code != runner.ExitFailed {
		t.Errorf("exit %d, want 1", res.Outcome.Code)
	}
	if f.To.Steps >= f.From.Steps || !f.Confirmed {
		t.Errorf("shrunk from %d to %d steps, confirmed %v", f.From.Steps, f.To.Steps, f.Confirmed)
	}
	found := filepath.Join(out, explore.FoundDir)
	for _, ext := range []string{".feature", ".repro.sh", ".seed", ".found.json"} {
		if _, err := os.Stat(filepath.Join(found, f.ID+ext)); err != nil {
			t.Errorf("%s%s: %v", f.ID, ext, err)
		}
	}
	es, err := catalog.Load(os.DirFS(found))
	if err != nil || len(es) != 1 || es[0].ID != f.ID {
		t.Fatalf("the catalog reads %v, %v", es, err)
	}
	if !strings.Contains(es[0].Requirement, "double-charge") || !strings.Contains(es[0].Source, "--seed 1") {
		t.Errorf("requirement %q, source %q", es[0].Requirement, es[0].Source)
	}
	// run takes it as is, and fails it the same way.
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--features", found, "--bug", "replay-debits", "--out", t.TempDir()}, &stdout, &stderr)
	if code != runner.ExitFailed || !strings.Contains(stdout.String(), f.ID) {
		t.Errorf("run --features %s: exit %d, want 1\n%s\n%s", found, code, stdout.String(), stderr.String())
	}
}

// Every bug switch of the reference gateway is caught by explore within
// its default budget, by a violated check of the bug's harm, in every mode
// it applies to: full, and the external modes bugmap lists it for.
func TestExploreCatchesEveryBug(t *testing.T) {
	t.Parallel()
	exe := harnessBinary(t, "explores the reference once per bug switch")
	for _, mode := range explore.Modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// The default scenarios, with time enough for each on a busy
			// machine: which scenario catches a switch is the seed's, not
			// the clock's.
			cfg := explore.Config{Run: runner.Config{Binary: exe, Store: "sqlite", Concurrency: 64}, Seed: 1, Budget: 10 * time.Minute}
			// The switches listed as out of explore's reach are not explored
			// here: nothing is asserted of them, and each would spend its
			// whole budget (a minute and more) finding nothing. `selftest
			// --explore` still explores them for docs/catches.md.
			only := slices.DeleteFunc(slices.Clone(explore.SwitchesOf(mode)), func(b string) bool { return slices.Contains(uncaughtByExplore[mode], b) })
			table, err := explore.SelfTest(context.Background(), cfg, mode, only, func(c explore.Catch) {
				t.Logf("%-28s caught=%v %s (%s) scenario %d of %d, %.1fs %s", c.Bug, c.Caught, c.Harm, c.Kind, c.Run, c.Explored, c.Seconds, c.Why)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range table {
				if !c.Caught && !slices.Contains(uncaughtByExplore[mode], c.Bug) {
					t.Errorf("%s: not caught: %s", c.Bug, c.Why)
				}
			}
		})
	}
}

// uncaughtByExplore are the switches explore cannot catch in a mode, and
// why (said in docs/selftest.md too): what they do, the model allows, or
// explore never draws the situation they need.
var uncaughtByExplore = map[string][]string{
	"full": {
		// A replay past the effective window, where retry-05 wants a new
		// operation: past the window the model admits either
		// (docs/judge.md).
		"window-ignores-ttl",
		// A stale holder's release frees the lock of the caller that took
		// it over, whose fenced claim then fails: the operation still runs
		// once, every result of it the same; callers are answered in
		// progress where lock-02 and lock-03 want a result, which the
		// model allows while an earlier call of the operation may run.
		"release-unpinned",
		// Only a reservation whose process died is never taken over, and
		// explore kills no process (it arms no crash): every takeover it
		// draws is the holder's own process's. crash-01 catches it.
		"stale-reservation-kept",
		// A refund of the tool's price when it is written: explore sets
		// prices once, before any call, so a refund's call always paid the
		// price the registry holds. ledger-03 re-prices a held call's tool.
		"refund-at-current-price",
		// A permit spent by another API key, wallet or tool: explore names
		// a permit only on calls of its own key and tool. scope-04,
		// scope-04-wallet and scope-04-tool catch it.
		"permit-unscoped",
		// A session's first principal kept for its later requests:
		// explore's clients keep one principal each, on a session of their
		// own. iga-07 changes the principal on a session.
		"principal-per-session",
	},
	"wire-principals": {
		// As in full mode: iga-07 catches it there too.
		"principal-per-session",
	},
}

// Usage errors of explore are exit 2 with a message, before anything
// starts; -h explains the command and exits 0.
func TestExploreUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Usage: mcpconform explore"},
		{"unknown format", []string{"--format", "github"}, 2, `--format "github": want text or jsonl`},
		{"no runs", []string{"--runs", "0"}, 2, "must be positive"},
		{"scenario past the runs", []string{"--runs", "3", "--scenario", "4"}, 2, "--scenario 4: want 1 to --runs (3)"},
		{"negative seed", []string{"--seed", "-1"}, 2, "--seed must not be negative"},
		{"URL without profile", []string{"--target", "http://127.0.0.1:1/mcp"}, 2, "a URL target needs --profile"},
		{"stray argument", []string{"now"}, 2, `want 0 argument(s), got 1 ["now"]`},
		{"unknown flag", []string{"--nope"}, 2, "Run 'mcpconform explore -h' for its flags."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"explore", "--out", t.TempDir()}, tc.args...)
			if code := dispatch(context.Background(), args, &out, &errs); code != tc.code || !strings.Contains(errs.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs.String(), tc.code, tc.want)
			}
		})
	}
}

// The command line a finding names reruns the exploration: the flags as
// given, the seed drawn, never the report's directory.
func TestExploreCommandLine(t *testing.T) {
	fs := newFlagSet("explore", "", &bytes.Buffer{})
	var cfg explore.Config
	var bugs stringList
	targetFlags(fs, &cfg.Run, &bugs)
	fs.String("out", "", "")
	if err := fs.Parse([]string{"--bug", "a", "--bug", "b", "--store", "postgres", "--out", "x"}); err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 42
	if got, want := exploreCommand(fs, cfg), "mcpconform explore --bug a --bug b --store postgres --seed 42"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
