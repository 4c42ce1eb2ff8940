// Package runner is `mcpconform run`: it brings up the target and the
// harness-owned peers, runs the Gherkin suite with godog through the steps,
// and writes the report. It owns no test logic of its own.
package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/steps"
)

// Version is the harness version written into reports.
const Version = "0.1.0"

// Exit codes of `mcpconform run`.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitSetup  = 2
)

// Config is one run.
type Config struct {
	Target           string // "reference" or a gateway URL
	Profile          string // profile file for a URL target
	Store            string // reference: "sqlite" or "postgres"
	DSN              string // reference on postgres; default DATABASE_URL
	Workers          int    // reference: gateway processes on one store
	Bugs             []string
	Binary           string // the mcpconform binary to start the reference from
	GatewayArgs      []string
	Tags             string
	IDs              []string // run only these scenario IDs
	Strict           bool
	Seed             int64
	Concurrency      int
	ExpectedFailures string // file of scenario IDs expected to fail
	Out              string // report directory; "" writes none
	ProbeAddr        string
	IdPAddr          string
	IdPKey           string
	Progress         io.Writer // godog progress; nil for none
	Log              io.Writer // child process logs; nil discards
	TestingT         *testing.T
}

// Outcome is what a run produced.
type Outcome struct {
	Run  reports.Run
	OK   bool
	Why  []string
	Code int
}

// SetupError marks failures to bring the run up (exit 2), as opposed to
// scenarios failing (exit 1).
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return "set-up: " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

func setupErr(format string, args ...any) error {
	return &SetupError{Err: fmt.Errorf(format, args...)}
}

// Run executes the suite and writes the report.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	started := time.Now().UTC()
	entries, err := catalog.Load(features.FS)
	if err != nil {
		return Outcome{Code: ExitSetup}, setupErr("load features: %w", err)
	}
	expected, err := readExpected(cfg.ExpectedFailures, catalog.ByID(entries))
	if err != nil {
		return Outcome{Code: ExitSetup}, &SetupError{Err: err}
	}
	env, closeAll, tgt, err := bringUp(ctx, cfg)
	if err != nil {
		return Outcome{Code: ExitSetup}, err
	}
	defer closeAll()
	env.Catalog = catalog.ByID(entries)

	tags := cfg.Tags
	if len(cfg.IDs) > 0 {
		var ids []string
		for _, id := range cfg.IDs {
			if _, ok := env.Catalog[id]; !ok {
				return Outcome{Code: ExitSetup}, setupErr("no scenario with ID %q (see mcpconform list)", id)
			}
			ids = append(ids, "@"+id)
		}
		sel := strings.Join(ids, ",")
		if tags != "" {
			tags = "(" + tags + ") && (" + sel + ")"
		} else {
			tags = sel
		}
	}
	format := "progress"
	if cfg.Progress == nil {
		format = "pretty"
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return Outcome{Code: ExitSetup}, setupErr("make report directory: %w", err)
		}
		format += ",junit:" + filepath.Join(cfg.Out, "junit.xml") + ",cucumber:" + filepath.Join(cfg.Out, "cucumber.json")
	}
	suite := godog.TestSuite{
		Name: "mcpconform",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			steps.Register(sc, env)
		},
		Options: &godog.Options{
			Format:         format,
			Output:         progress,
			FS:             features.FS,
			Paths:          []string{"."},
			Tags:           tags,
			Strict:         true,
			Randomize:      cfg.Seed,
			NoColors:       true,
			TestingT:       cfg.TestingT,
			Concurrency:    1,
			DefaultContext: ctx,
		},
	}
	suite.Run()

	run := reports.Run{
		Tool: "mcpconform", Version: Version, Target: tgt, Seed: cfg.Seed, Tags: tags,
		Strict: cfg.Strict, Started: started, Finished: time.Now().UTC(),
	}
	run.Scenarios = env.Results()
	applyExpected(run.Scenarios, expected)
	sort.Slice(run.Scenarios, func(i, j int) bool { return run.Scenarios[i].ID < run.Scenarios[j].ID })
	if len(run.Scenarios) == 0 {
		return Outcome{Run: run, Code: ExitSetup}, setupErr("no scenario matched tags %q", tags)
	}
	if len(cfg.Bugs) > 0 {
		run.CatchTable = Catches(run, cfg.Bugs)
	}
	ok, why := reports.Verdict(run)
	out := Outcome{Run: run, OK: ok, Why: why, Code: ExitOK}
	if !ok {
		out.Code = ExitFailed
	}
	if cfg.Out != "" {
		if err := reports.Write(cfg.Out, run); err != nil {
			return out, fmt.Errorf("write report: %w", err)
		}
	}
	return out, nil
}

// bringUp starts the probe, the identity provider and the target, and reads
// the target's capabilities.
func bringUp(ctx context.Context, cfg Config) (*steps.Env, func(), reports.Target, error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*steps.Env, func(), reports.Target, error) {
		closeAll()
		return nil, func() {}, reports.Target{}, err
	}
	pr, err := probe.Start(probe.Options{Addr: cfg.ProbeAddr})
	if err != nil {
		return fail(setupErr("start upstream probe: %w", err))
	}
	closers = append(closers, func() { pr.Close() })
	idOpts := idp.Options{Addr: cfg.IdPAddr}
	if cfg.IdPKey != "" {
		key, err := idp.Load(cfg.IdPKey)
		if err != nil {
			return fail(setupErr("identity provider key: %w", err))
		}
		idOpts.Key = key
	}
	id, err := idp.Start(idOpts)
	if err != nil {
		return fail(setupErr("start identity provider: %w", err))
	}
	closers = append(closers, func() { id.Close() })

	env := &steps.Env{Probe: pr, IdP: id, Seed: cfg.Seed, MaxConcurrency: cfg.Concurrency, CallTimeout: 30 * time.Second}
	var t *target.Target
	switch {
	case cfg.Target == "" || cfg.Target == "reference":
		store := cfg.Store
		if store == "" {
			store = "sqlite"
		}
		dsn := cfg.DSN
		if store == "postgres" && dsn == "" {
			dsn = os.Getenv("DATABASE_URL")
		}
		if store == "postgres" && dsn == "" {
			cdsn, stop, err := pgtest.StartContainer()
			if err != nil {
				return fail(setupErr("--store postgres: DATABASE_URL is not set and %w", err))
			}
			closers = append(closers, stop)
			dsn = cdsn
		}
		t, err = target.Reference(ctx, target.Options{
			Binary: cfg.Binary, Store: store, DSN: dsn, Workers: cfg.Workers, Bugs: cfg.Bugs,
			// A short store lock wait keeps the lock-timeout scenario quick.
			ExtraArgs: append([]string{"--lock-timeout", "300ms"}, cfg.GatewayArgs...), Log: cfg.Log,
		})
		if err != nil {
			return fail(setupErr("start reference gateway: %w", err))
		}
	default:
		prof, err := target.LoadProfile(cfg.Profile)
		if err != nil {
			return fail(setupErr("load profile: %w", err))
		}
		t, err = target.External(cfg.Target, prof)
		if err != nil {
			return fail(setupErr("%w", err))
		}
	}
	closers = append(closers, func() { t.Close() })
	env.URLs, env.Profile = t.URLs, t.Profile
	for i := range t.ControlURLs {
		env.Controls = append(env.Controls, t.Control(i))
	}
	caps, err := capabilities(ctx, env)
	if err != nil {
		return fail(setupErr("read target capabilities: %w", err))
	}
	env.Caps = caps
	tgt := t.Report()
	tgt.Capabilities = nil
	for c, on := range caps {
		if on {
			tgt.Capabilities = append(tgt.Capabilities, c)
		}
	}
	sort.Strings(tgt.Capabilities)
	return env, closeAll, tgt, nil
}

// capabilities maps what the target offers onto the scenarios' @needs- tags.
func capabilities(ctx context.Context, env *steps.Env) (map[string]bool, error) {
	caps := map[string]bool{steps.CapTwoURLs: len(env.URLs) >= 2}
	c := env.Control()
	if c == nil {
		for _, name := range env.Profile.Capabilities {
			caps[name] = true
		}
		caps[steps.CapUpstream] = env.Profile.UpstreamTool != ""
		return caps, nil
	}
	got, err := c.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, name := range got.Capabilities {
		has[name] = true
	}
	env.Settings = got.Settings
	caps[steps.CapLedger] = has["ledger"]
	caps[steps.CapClock] = has["clock"]
	caps[steps.CapFaults] = has["faults"]
	caps[steps.CapPrincipals] = has["principals"] && env.IdP != nil
	caps[steps.CapSettings] = has["settings"]
	caps[steps.CapUpstream] = has["upstream"] && has["fixtures"] && env.Probe != nil
	return caps, nil
}

// readExpected reads a file of scenario IDs (one a line, # comments).
func readExpected(path string, known map[string]catalog.Entry) (map[string]bool, error) {
	out := map[string]bool{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("expected failures: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if _, ok := known[line]; !ok {
			return nil, fmt.Errorf("expected failures %s:%d: no scenario %q", path, n, line)
		}
		out[line] = true
	}
	return out, sc.Err()
}

// applyExpected turns listed failures into expected-failure, and listed
// scenarios that passed into unexpected-pass, which fails the run.
func applyExpected(ss []reports.Scenario, expected map[string]bool) {
	for i := range ss {
		if !expected[ss[i].ID] {
			continue
		}
		switch ss[i].Verdict {
		case reports.Failed:
			ss[i].Verdict = reports.ExpectedFailure
		case reports.Passed:
			ss[i].Verdict = reports.UnexpectedPass
			ss[i].Reason = "listed as an expected failure but passed"
		}
	}
}

// IsSetup reports whether err is a set-up failure (exit 2).
func IsSetup(err error) bool {
	var se *SetupError
	return errors.As(err, &se)
}
