// Command mcpbench measures the reference gateway against a bare go-sdk MCP
// server in one run, with one client, on one machine, and writes the figures
// to bench/results.md: calls per second and latency per kind of call, twin
// storms with their dispatch and debit counts, and the harness's own wall
// time and growth. `make bench` runs it.
//
// Every server listens on 127.0.0.1. The reference gateway runs in process
// (reference/server.Run) on SQLite in a temporary directory and, when
// DATABASE_URL is set, on PostgreSQL; the harness runs as `make run` does,
// starting the gateway from an mcpconform binary built into a temporary
// directory.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mcpconform/mcpconform/bench"
	"github.com/mcpconform/mcpconform/drivers/target"
)

func main() {
	out := flag.String("out", "bench/results.md", "markdown file the results are written to")
	conc := flag.Int("concurrency", 8, "client goroutines of every load phase")
	warmup := flag.Duration("warmup", 300*time.Millisecond, "warm-up of each load phase, not counted")
	dur := flag.Duration("duration", 3*time.Second, "measured time of each load phase")
	storm := flag.Int("storm", 256, "identical calls in a twin storm")
	suite := flag.Bool("suite", true, "time the harness (full suite per store, scenario-count and twin-count growth)")
	rounds := flag.Int("rounds", 3, "interleaved rounds (bare server, keyed first calls, replays) that judge the rate targets on SQLite; 0 judges them on the phase table")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := run(ctx, *out, bench.Load{Concurrency: *conc, Warmup: *warmup, Duration: *dur}, *storm, *rounds, *suite); err != nil {
		fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcpbench: "+format+"\n", args...)
}

func run(ctx context.Context, out string, load bench.Load, stormN, rounds int, suite bool) error {
	began := time.Now()
	res := bench.Results{
		Date: began.UTC().Truncate(time.Second),
		Machine: bench.Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
			NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel()},
		Setup: bench.Setup{Concurrency: load.Concurrency, Warmup: load.Warmup, Duration: load.Duration, StormN: stormN},
	}
	// One client transport for every load phase (baseline and gateways
	// alike), another with room for a storm's warm connections.
	loadHTTP := bench.NewHTTP(load.Concurrency)
	stormHTTP := bench.NewHTTP(stormN)

	bl, err := bench.StartBaseline()
	if err != nil {
		return err
	}
	defer bl.Close()
	logf("baseline: bare go-sdk server at %s", bl.URL)
	baseline := func() {
		b := bench.MeasureBaseline(ctx, bl.URL, loadHTTP, load)
		loadHTTP.CloseIdleConnections()
		logf("baseline: %.0f calls/s, p50 %v, p99 %v, %d errors", b.Rate, b.P50, b.P99, b.Errors)
		res.BaselineRuns = append(res.BaselineRuns, b)
		if b.Rate > res.Baseline.Rate {
			res.Baseline = b
		}
	}
	baseline()

	dsn := os.Getenv("DATABASE_URL")
	tmp, err := os.MkdirTemp("", "mcpbench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	stores := []struct{ name, arg, reason string }{
		{bench.SQLite, "sqlite:" + filepath.Join(tmp, "state", "gw.db"), ""},
		{bench.PostgreSQL, dsn, ""},
	}
	if dsn == "" {
		stores[1].reason = "DATABASE_URL is not set"
	}
	for _, s := range stores {
		sr := bench.StoreResults{Store: s.name, Reason: s.reason}
		if s.reason == "" {
			sr.Measured = true
			n := 0
			if s.name == bench.SQLite {
				n = rounds // the rate targets are SQLite's
			}
			measureStore(ctx, &sr, s.arg, bl.URL, loadHTTP, stormHTTP, load, stormN, n)
			baseline()
		} else {
			logf("%s: not measured: %s", s.name, s.reason)
		}
		res.Stores = append(res.Stores, sr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	if suite {
		if err := timeHarness(ctx, &res, tmp, dsn); err != nil {
			return err
		}
	}
	res.Wall = time.Since(began).Round(100 * time.Millisecond)
	return write(out, res)
}

func measureStore(ctx context.Context, sr *bench.StoreResults, store, baselineURL string, loadHTTP, stormHTTP *http.Client, load bench.Load, stormN, rounds int) {
	g, err := bench.StartGateway(ctx, store)
	if err != nil {
		sr.Err = err.Error()
		logf("%s: %v", sr.Store, err)
		return
	}
	defer func() {
		if err := g.Close(); err != nil {
			logf("%s: stop gateway: %v", sr.Store, err)
		}
		loadHTTP.CloseIdleConnections()
		stormHTTP.CloseIdleConnections()
	}()
	logf("%s: reference gateway at %s", sr.Store, g.Base)
	phases, err := bench.MeasureGateway(ctx, g, loadHTTP, load)
	sr.Phases = phases
	for _, p := range phases {
		logf("%s: %s: %.0f calls/s, p50 %v, p99 %v, %d errors", sr.Store, p.Name, p.Rate, p.P50, p.P99, p.Errors)
	}
	if err != nil {
		sr.Err = err.Error()
		logf("%s: %v", sr.Store, err)
		return
	}
	loadHTTP.CloseIdleConnections()
	if rounds > 0 {
		rs, err := bench.MeasureRounds(ctx, baselineURL, g, loadHTTP, load, rounds)
		sr.Rounds = rs
		for i, r := range rs {
			logf("%s: round %d: bare %.0f/s, keyed first %.0f/s, replays %.0f/s", sr.Store, i+1, r.Baseline.Rate, r.First.Rate, r.Replay.Rate)
		}
		if err != nil {
			sr.Err = err.Error()
			logf("%s: %v", sr.Store, err)
			return
		}
	}
	for _, keyed := range []bool{true, false} {
		if err := bench.WarmConnections(ctx, stormHTTP, g.Base, stormN); err != nil {
			sr.Err = "warm storm connections: " + err.Error()
			logf("%s: %s", sr.Store, sr.Err)
			return
		}
		s, err := bench.RunStorm(ctx, g, stormHTTP, stormN, keyed)
		sr.Storms = append(sr.Storms, s)
		logf("%s: storm keyed=%v: answered %v, settled %v, fresh/replayed/in-progress/other %d/%d/%d/%d, %d dispatches, %d debits",
			sr.Store, keyed, s.Answered, s.Settled, s.Fresh, s.Replayed, s.InProgress, s.Other, s.Dispatches, s.Debits)
		if err != nil {
			sr.Err = err.Error()
			logf("%s: %v", sr.Store, err)
			return
		}
	}
}

func timeHarness(ctx context.Context, res *bench.Results, tmp, dsn string) error {
	logf("harness: building mcpconform")
	bin, err := target.Build(ctx, os.Getenv("GO"), filepath.Join(tmp, "bin"))
	if err != nil {
		return err
	}
	ids, err := bench.ScenarioIDs()
	if err != nil {
		return err
	}
	timed := func(spec bench.SuiteSpec) bench.SuiteRun {
		s := bench.TimeSuite(ctx, bin, spec)
		logf("harness: %s on %s: %d scenarios in %v (%d passed, %d failed, %d skipped) %s",
			s.Label, s.Store, s.Scenarios, s.Wall.Round(time.Millisecond), s.Passed, s.Failed, s.Skipped, s.Err)
		return s
	}
	for i := range res.Stores {
		st := &res.Stores[i]
		if !st.Measured {
			continue
		}
		spec := bench.SuiteSpec{Label: "full suite", Store: "sqlite"}
		if st.Store == bench.PostgreSQL {
			spec = bench.SuiteSpec{Label: "full suite", Store: "postgres", DSN: dsn}
		}
		s := timed(spec)
		st.Suite = &s
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	// Growth with scenario count: a quarter and a half of the suite, spread
	// over its areas, next to the full suite run above.
	for _, n := range []int{len(ids) / 4, len(ids) / 2} {
		if n == 0 {
			continue
		}
		res.Scaling = append(res.Scaling, timed(bench.SuiteSpec{
			Label: fmt.Sprintf("%d of %d scenarios", n, len(ids)), Store: "sqlite", IDs: bench.Stride(ids, n)}))
	}
	if sq, ok := res.Store(bench.SQLite); ok && sq.Suite != nil {
		full := *sq.Suite
		full.Label = fmt.Sprintf("%d of %d scenarios (the full suite above)", full.Scenarios, len(ids))
		res.Scaling = append(res.Scaling, full)
	}
	// Growth with twin count: twins-01 alone at growing --concurrency.
	for _, c := range []int{4, 8, 16, 32} {
		res.Twins = append(res.Twins, timed(bench.SuiteSpec{
			Label: fmt.Sprintf("twins-01, %d twins", c), Store: "sqlite", IDs: []string{"twins-01"}, Concurrency: c}))
	}
	return ctx.Err()
}

func write(out string, res bench.Results) error {
	if dir := filepath.Dir(out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".results-*.md")
	if err != nil {
		return err
	}
	if err := bench.Render(f, res); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return err
	}
	logf("wrote %s (%v)", out, res.Wall)
	return nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
