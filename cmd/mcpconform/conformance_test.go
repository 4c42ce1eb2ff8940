package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cucumber/godog"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reports"
)

// The test binary doubles as the mcpconform binary: the runner starts the
// reference gateway as a child process by re-executing it with this variable.
const beMain = "MCPCONFORM_TEST_BE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(beMain) == "1" {
		os.Exit(dispatch(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// Every child this binary starts is the harness or the reference:
	// set once here, since parallel tests cannot use t.Setenv.
	if err := os.Setenv(beMain, "1"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func runConformance(t *testing.T, store, dsn string, seed int64) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(beMain, "1")
	dir := t.TempDir()
	out, err := runner.Run(context.Background(), runner.Config{
		Target: "reference", Store: store, DSN: dsn, Binary: exe,
		Workers: 2, Seed: seed, Concurrency: 64, Out: dir, Godog: func(o *godog.Options) { o.TestingT = t },
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !out.OK {
		t.Errorf("suite verdict: not ok: %v", out.Why)
	}
	passed := 0
	for _, s := range out.Run.Scenarios {
		if s.Verdict == "passed" {
			passed++
		}
	}
	if passed == 0 {
		t.Fatal("no scenario passed: nothing was observed")
	}
	// The verdicts must stand when recomputed from the written files alone.
	loaded, err := reports.Load(dir)
	if err != nil {
		t.Fatalf("load report: %v", err)
	}
	if ok, why := reports.Verdict(loaded); ok != out.OK {
		t.Errorf("verdict from files = %v %v, run said %v", ok, why, out.OK)
	}
	for _, s := range loaded.Scenarios {
		if checks, mismatch := reports.Recheck(s); mismatch {
			t.Errorf("%s: history contradicts the recorded checks: %+v", s.ID, checks)
		}
	}
}

// TestConformanceSQLite runs every scenario against the reference gateway on
// its embedded default store, each scenario a subtest, in several random
// orders so no scenario leans on another's leftovers.
func TestConformanceSQLite(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			runConformance(t, "sqlite", "", seed)
		})
	}
}

// TestConformancePostgres runs the suite on PostgreSQL (DATABASE_URL, else
// dockertest; skipped with the reason when neither is there, unless
// MCPCONFORM_REQUIRE_POSTGRES=1).
func TestConformancePostgres(t *testing.T) {
	runConformance(t, "postgres", pgtest.FreshDSN(t), 1)
}
