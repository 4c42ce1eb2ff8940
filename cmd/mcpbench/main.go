// Command mcpbench measures the reference gateway against a bare go-sdk MCP
// server in one run, with one client, on one machine, and writes the figures
// to bench/results.md: calls per second and latency per kind of call, the
// store alone and the ideal composition of the two (the same-run limits),
// the call path's allocations per call, twin storms with their dispatch and
// debit counts, and the harness's own wall time and growth. `make bench`
// runs it.
//
// Every server listens on 127.0.0.1. The reference gateway runs in process
// (reference/server.Run) on SQLite in a temporary directory and, when
// DATABASE_URL is set, on PostgreSQL, in a database of the bench's own
// (mcpconform_bench_<pid>) created on that server and dropped at the end, so
// nothing earlier runs left there weighs on the figures; the harness runs as
// `make run` does, starting the gateway from an mcpconform binary built into
// a temporary directory.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/bench"
	"github.com/mcpconform/mcpconform/internal/cli"
)

func main() {
	fs := cli.NewFlagSet("mcpbench", "Usage of "+os.Args[0]+":\n", os.Stderr, os.Stderr) // the text flag.Parse printed
	out := fs.String("out", "bench/results.md", "markdown file the results are written to")
	conc := fs.Int("concurrency", 8, "client goroutines of every load phase")
	warmup := fs.Duration("warmup", 300*time.Millisecond, "warm-up of each load phase, not counted")
	dur := fs.Duration("duration", 2*time.Second, "measured time of each load phase")
	storm := fs.Int("storm", 256, "identical calls in a twin storm")
	suite := fs.Bool("suite", true, "time the harness (full suite per store, scenario-count and twin-count growth)")
	rounds := fs.Int("rounds", 5, "interleaved rounds (bare server, then the gateway's phases) that judge the rate targets on each store")
	scale := fs.String("scale", "1,2,4,8,16", "client counts of the scale table (keyed first calls on one wallet)")
	procs := fs.String("processes", "2,4", "gateway process counts of the scale table on PostgreSQL (at the two largest client counts)")
	profiles := fs.String("profiles", "bench/profiles", "directory the profiles of missed targets' phases are written to")
	allocs := fs.Int("allocs", 500, "calls of each kind (keyed first, replay, unkeyed) the gateway's call path's allocations are counted over; 0 skips it")
	gc := fs.String("gc", "", "instead of the bench: measure the gateway process under each GC setting (';'-separated, each GOGC=... and/or GOMEMLIMIT=...), interleaved, and write -gc-out")
	gcRounds := fs.Int("gc-rounds", 4, "interleaved rounds of -gc")
	gcOut := fs.String("gc-out", "bench/gc.md", "markdown file -gc writes")
	limits := fs.Bool("limits", true, "measure the store alone in every round and write the same-run limits (the gateway against the ideal composition of the bare server and the store)")
	if code, ok := cli.Parse(fs, os.Args[1:]); !ok {
		os.Exit(code)
	}
	clients, err := ints(*scale)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpbench: -scale: %v\n", err)
		os.Exit(2)
	}
	processes, err := ints(*procs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpbench: -processes: %v\n", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if *gc != "" {
		settings, err := parseGCSettings(*gc)
		if err == nil && *gcRounds <= 0 {
			err = fmt.Errorf("-gc-rounds %d: want at least 1", *gcRounds)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "mcpbench: -gc: %v\n", err)
			os.Exit(2)
		}
		if err := runGC(ctx, settings, *gcRounds, *gcOut); err != nil {
			fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	cfg := config{out: *out, load: bench.Load{Concurrency: *conc, Warmup: *warmup, Duration: *dur}, stormN: *storm, rounds: *rounds,
		suite: *suite, clients: clients, processes: processes, profiles: *profiles, limits: *limits, allocs: *allocs}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "mcpbench: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcpbench: "+format+"\n", args...)
}

// config is one bench run's settings.
type config struct {
	out       string
	load      bench.Load
	stormN    int
	rounds    int
	suite     bool
	clients   []int // the scale table's client counts
	processes []int // its gateway process counts on PostgreSQL
	profiles  string
	limits    bool   // the store alone in every round, for the same-run limits
	allocs    int    // calls of each kind the allocations per call are counted over; 0: not counted
	tmp       string // the run's temporary directory
	binary    string // mcpconform, built for the harness and the multi-process scale
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, cfg config) error {
	out, load, stormN := cfg.out, cfg.load, cfg.stormN
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
	cfg.tmp = tmp
	if cfg.allocs > 0 {
		// Here, while no load runs: every goroutine's allocations count.
		a, err := bench.MeasureCallAllocs(ctx, tmp, cfg.allocs)
		res.Allocs = a
		for _, x := range a {
			logf("allocations: %s: %.0f allocs/call, %.0f B/call over %d calls", x.Phase, x.AllocsPerOp, x.BytesPerOp, x.Calls)
		}
		if err != nil {
			res.AllocsErr = err.Error()
			logf("%v", err)
		}
	}
	if cfg.suite || (dsn != "" && len(cfg.processes) > 0) {
		logf("building mcpconform")
		if cfg.binary, err = target.Build(ctx, os.Getenv("GO"), filepath.Join(tmp, "bin")); err != nil {
			return err
		}
	}

	stores := []struct{ name, arg, reason string }{
		{bench.SQLite, "sqlite:" + filepath.Join(tmp, "state", "gw.db"), ""},
		{bench.PostgreSQL, "", ""},
	}
	if dsn == "" {
		stores[1].reason = "DATABASE_URL is not set"
		res.Machine.PostgreSQL = "none: DATABASE_URL is not set"
	} else {
		// Every PostgreSQL figure (the harness's too) comes from a database
		// of the bench's own, not from DATABASE_URL's and what tests left
		// in it.
		db, err := ownDatabase(ctx, dsn)
		if err != nil {
			stores[1].reason = err.Error()
			res.Machine.PostgreSQL = "none: " + err.Error()
			dsn = ""
		} else {
			defer func() {
				dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := db.Drop(dctx); err != nil {
					logf("%v", err)
				} else {
					logf("dropped database %s", db.Name)
				}
			}()
			dsn = db.DSN
			stores[1].arg = withApp(dsn, benchApp)
			res.Machine.PostgreSQL = db.Describe()
		}
	}
	for _, s := range stores {
		sr := bench.StoreResults{Store: s.name, Reason: s.reason}
		if s.reason == "" {
			sr.Measured = true
			measureStore(ctx, cfg, &sr, s.arg, bl.URL, loadHTTP, stormHTTP)
			if s.name == bench.PostgreSQL {
				measureProcesses(ctx, cfg, &sr, dsn, loadHTTP)
			}
			baseline()
		} else {
			logf("%s: not measured: %s", s.name, s.reason)
		}
		res.Stores = append(res.Stores, sr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	if cfg.suite {
		if err := timeHarness(ctx, &res, cfg.binary, dsn); err != nil {
			return err
		}
	}
	res.Wall = time.Since(began).Round(100 * time.Millisecond)
	return write(out, res)
}

func measureStore(ctx context.Context, cfg config, sr *bench.StoreResults, store, baselineURL string, loadHTTP, stormHTTP *http.Client) {
	load := cfg.load
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
	fail := func(err error) {
		sr.Err = err.Error()
		logf("%s: %v", sr.Store, err)
	}
	ph, err := bench.NewPhases(ctx, g.Endpoint(), loadHTTP, load)
	if err != nil {
		fail(err)
		return
	}
	// The server's processes share this machine's cores; "" when the
	// store is SQLite, in this process.
	dbDSN := ""
	if sr.Store == bench.PostgreSQL {
		dbDSN = store
	}
	meter := bench.NewCPUMeter(dbDSN)
	ph.MeterCPU(meter)
	switch {
	case sr.Store == bench.SQLite:
		sr.RoundDatabases = "Every round runs on a gateway of its own on a fresh database file (the gateway's phases outside the rounds on another one): on one file the later rounds ran slower as it grew."
	case cfg.limits:
		sr.RoundDatabases = "The rounds share the run's database; the store alone has one database of its own for all of them."
	}
	env, closeEnv := roundEnvs(cfg, sr.Store, store, ph, meter, loadHTTP)
	rs, err := bench.MeasureRounds(ctx, baselineURL, env, cfg.rounds)
	if cerr := closeEnv(); cerr != nil {
		logf("%s: %v", sr.Store, cerr)
	}
	sr.Rounds = rs
	for i, r := range rs {
		logf("%s: round %d: bare %.0f/s, keyed first %.0f/s, replays %.0f/s, unkeyed %.0f/s (p99 %v), one wallet per client %.0f/s",
			sr.Store, i+1, r.Baseline.Rate, r.First.Rate, r.Replay.Rate, r.Unkeyed.Rate, r.Unkeyed.P99, r.Spread.Rate)
		if r.Store != nil {
			logf("%s: round %d: store alone: keyed first %.0f/s, replay reads %.0f/s, unkeyed %.0f/s",
				sr.Store, i+1, r.Store.First.Rate, r.Store.Replay.Rate, r.Store.Unkeyed.Rate)
		}
	}
	if err != nil {
		fail(err)
		return
	}
	ro := ph.ReadOnly(ctx)
	sr.Phases = append(sr.Phases, ro)
	logf("%s: %s: %.0f calls/s, p50 %v, p99 %v, %d errors", sr.Store, ro.Name, ro.Rate, ro.P50, ro.P99, ro.Errors)
	loadHTTP.CloseIdleConnections()

	sc, err := bench.MeasureScale(ctx, sr.Store, g.Endpoint(), loadHTTP, load, cfg.clients)
	sr.Scale = append(sr.Scale, sc...)
	for _, p := range sc {
		logf("%s: scale: %d clients: %.0f calls/s, p99 %v", sr.Store, p.Clients, p.Stats.Rate, p.Stats.P99)
	}
	if err != nil {
		fail(err)
		return
	}
	for _, keyed := range []bool{true, false} {
		if err := bench.WarmConnections(ctx, stormHTTP, g.Base, cfg.stormN); err != nil {
			fail(fmt.Errorf("warm storm connections: %w", err))
			return
		}
		s, err := bench.RunStorm(ctx, g, stormHTTP, cfg.stormN, keyed)
		sr.Storms = append(sr.Storms, s)
		logf("%s: storm keyed=%v: answered %v, settled %v, fresh/replayed/in-progress/other %d/%d/%d/%d, %d dispatches, %d debits",
			sr.Store, keyed, s.Answered, s.Settled, s.Fresh, s.Replayed, s.InProgress, s.Other, s.Dispatches, s.Debits)
		if err != nil {
			fail(err)
			return
		}
	}
	stormHTTP.CloseIdleConnections()

	// The phases of missed targets once more, under the profilers (and, on
	// PostgreSQL, with the gateway's sessions sampled): the results say why,
	// not a guess.
	for _, name := range bench.MissedPhases(*sr, cfg.stormN) {
		var st bench.Stats
		var perr, werr error
		var waits []bench.Share
		var cores bench.CPUUse
		pr, err := bench.ProfilePhase(cfg.profiles, slug(sr.Store+"-"+name), func() {
			sctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			if sr.Store == bench.PostgreSQL {
				go func() { defer close(done); waits, werr = bench.SampleWaits(sctx, store, benchApp) }()
			} else {
				close(done)
			}
			began := meter.Read()
			st, perr = ph.Phase(ctx, name)
			cores = meter.Since(began)
			stop()
			<-done
		})
		pr.Store, pr.Phase, pr.Rate, pr.DBWaits, pr.Cores = sr.Store, name, st.Rate, waits, cores
		if err = errors.Join(err, perr, werr); err != nil {
			pr.Err = err.Error()
		}
		sr.Profiles = append(sr.Profiles, pr)
		logf("%s: profiled %s: %.0f calls/s; cores used %+v; cpu %v; waited %v", sr.Store, name, st.Rate, cores, pr.CPU, pr.Block)
		loadHTTP.CloseIdleConnections()
	}
}

// roundEnvs is what each interleaved round runs on, and what to close
// once they are over.
//
// On SQLite every round gets a gateway of its own on a fresh database file,
// and a fresh file for the store alone: on one file the rate fell from
// round to round as the file grew (the gateway's keyed first calls 1541/s
// to 1284/s over 5 rounds in bench/results.md of 2026-12-04; the store
// alone's 6261/s to 4661/s over 6 rounds of 1.5 s on one file, against
// 5172/s to 5387/s on a fresh file each round). Truncating the WAL between
// rounds (PRAGMA wal_checkpoint(TRUNCATE)) did not stop it (4678/s to
// 4381/s): the store's own checkpointer keeps the WAL short already, and
// what grows is the database, its indexes deeper every round. Those figures
// were taken on a 2-core machine a CI run was loading too, so they are
// coarse, but they point one way.
//
// On PostgreSQL the rounds share the run's database, and the store alone
// one database of its own for every round: its rounds show no such fall
// (0.29×, 0.26×, 0.27×, 0.26×, 0.27× there), and a database created and
// migrated per round would cost seconds each.
func roundEnvs(cfg config, storeName, storeArg string, ph *bench.Phases, meter bench.CPUMeter, hc *http.Client) (func(context.Context, int) (bench.RoundEnv, error), func() error) {
	if !cfg.limits && storeName != bench.SQLite {
		return func(context.Context, int) (bench.RoundEnv, error) { return bench.RoundEnv{Phases: ph}, nil }, func() error { return nil }
	}
	if storeName == bench.PostgreSQL {
		var alone *bench.StoreAlone
		env := func(ctx context.Context, _ int) (bench.RoundEnv, error) {
			if alone == nil {
				// Not the gateway's application_name: the wait sampler
				// looks at the gateway's sessions only.
				a, err := bench.OpenStoreAlone(ctx, bench.PostgreSQL, "", withApp(storeArg, benchApp+"-store-alone"),
					bench.DatabasePrefix+strconv.Itoa(os.Getpid())+"_store_alone", cfg.load)
				if err != nil {
					return bench.RoundEnv{}, err
				}
				alone = a
			}
			return bench.RoundEnv{Phases: ph, Store: alone}, nil
		}
		return env, func() error {
			if alone == nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return alone.Close(ctx)
		}
	}
	env := func(ctx context.Context, i int) (bench.RoundEnv, error) {
		dir := filepath.Join(cfg.tmp, "rounds", strconv.Itoa(i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return bench.RoundEnv{}, fmt.Errorf("round database directory: %w", err)
		}
		g, err := bench.StartGateway(ctx, "sqlite:"+filepath.Join(dir, "gw.db"))
		if err != nil {
			return bench.RoundEnv{}, err
		}
		closeAll := func(alone *bench.StoreAlone) error {
			var errs []error
			if err := g.Close(); err != nil {
				errs = append(errs, fmt.Errorf("stop round %d's gateway: %w", i+1, err))
			}
			if alone != nil {
				if err := alone.Close(context.Background()); err != nil {
					errs = append(errs, fmt.Errorf("close round %d's store alone: %w", i+1, err))
				}
			}
			hc.CloseIdleConnections()
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("remove round %d's databases: %w", i+1, err))
			}
			return errors.Join(errs...)
		}
		rp, err := bench.NewPhases(ctx, g.Endpoint(), hc, cfg.load)
		if err != nil {
			return bench.RoundEnv{}, errors.Join(err, closeAll(nil))
		}
		rp.MeterCPU(meter)
		var alone *bench.StoreAlone
		if cfg.limits {
			if alone, err = bench.OpenStoreAlone(ctx, bench.SQLite, dir, "", "store-alone", cfg.load); err != nil {
				return bench.RoundEnv{}, errors.Join(err, closeAll(nil))
			}
		}
		return bench.RoundEnv{Phases: rp, Store: alone, Close: func() error { return closeAll(alone) }}, nil
	}
	return env, func() error { return nil }
}

// measureProcesses adds the scale table's multi-process rows: several
// mcpconform gateway processes on one PostgreSQL, at the two largest client
// counts.
func measureProcesses(ctx context.Context, cfg config, sr *bench.StoreResults, dsn string, hc *http.Client) {
	if cfg.binary == "" || sr.Err != "" {
		return
	}
	clients := cfg.clients
	if len(clients) > 2 {
		clients = clients[len(clients)-2:]
	}
	for _, n := range cfg.processes {
		tg, err := target.Reference(ctx, target.Options{Binary: cfg.binary, Store: "postgres", DSN: dsn, Workers: n,
			ProtocolVersion: wire.V20260728})
		if err != nil {
			sr.Err = fmt.Sprintf("%d gateway processes: %v", n, err)
			logf("%s: %s", sr.Store, sr.Err)
			return
		}
		sc, err := bench.MeasureScale(ctx, sr.Store, bench.Endpoint{URLs: tg.URLs, Control: tg.Control(0)}, hc, cfg.load, clients)
		hc.CloseIdleConnections()
		sr.Scale = append(sr.Scale, sc...)
		for _, p := range sc {
			logf("%s: scale: %d processes, %d clients: %.0f calls/s, p99 %v", sr.Store, p.Processes, p.Clients, p.Stats.Rate, p.Stats.P99)
		}
		if cerr := tg.Close(); cerr != nil {
			logf("%s: stop %d gateway processes: %v", sr.Store, n, cerr)
		}
		if err != nil {
			sr.Err = err.Error()
			return
		}
	}
}

// ownDatabase creates, on DATABASE_URL's server, the migrated database
// every PostgreSQL phase of this run uses, named for this process.
func ownDatabase(ctx context.Context, dsn string) (*bench.Database, error) {
	if left, err := bench.LeftDatabases(ctx, dsn); err == nil && len(left) > 0 {
		// Not dropped here: one may be another machine's run going on now.
		logf("databases of earlier bench runs still on the server (drop those of killed runs): %s", strings.Join(left, ", "))
	}
	db, err := bench.CreateDatabase(ctx, dsn, bench.DatabasePrefix+strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, err
	}
	logf("created database %s on %s", db.Name, db.Server)
	return db, nil
}

// benchApp is the application_name of the in-process gateway's PostgreSQL
// sessions, so the wait sampler looks at them and at nothing else on a
// shared server.
const benchApp = "mcpbench-gateway"

// withApp sets application_name on a PostgreSQL URL.
func withApp(dsn, app string) string {
	u, err := url.Parse(dsn)
	if err != nil || dsn == "" {
		return dsn
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// slug makes a file name of a store and phase name.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

func timeHarness(ctx context.Context, res *bench.Results, bin, dsn string) error {
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
