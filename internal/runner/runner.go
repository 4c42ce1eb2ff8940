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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/effects"
	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/buildinfo"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/catalog/tagexpr"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/officialsuite"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/steps"
)

// Exit codes of `mcpconform run`, one per run verdict.
const (
	ExitOK          = 0   // PASS: every @must check of the claimed level held
	ExitFailed      = 1   // FAIL: a check was violated (nonconformance)
	ExitSetup       = 2   // ERROR: bad flags or profile, unreachable target, refused credentials
	ExitIncomplete  = 3   // INCOMPLETE: nothing failed, but a @must check of the level was not observed
	ExitInterrupted = 130 // INTERRUPTED: stopped by SIGINT or SIGTERM
)

// ExitCode maps a run verdict to its exit code.
func ExitCode(result string) int {
	switch result {
	case reports.RunPass:
		return ExitOK
	case reports.RunFail:
		return ExitFailed
	case reports.RunIncomplete:
		return ExitIncomplete
	case reports.RunInterrupted:
		return ExitInterrupted
	}
	return ExitSetup
}

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
	Level            string   // claimed level (wire, metered, full); "" = the highest the target allows
	Seed             int64
	Concurrency      int
	ExpectedFailures string // file of scenario IDs expected to fail
	Out              string // report directory; "" writes none
	ProbeAddr        string
	ProbeURL         string // a running probe (mcpconform probe) to use instead of starting one
	Settle           time.Duration
	// FinalQuietFor overrides FinalQuiet's default when positive.
	FinalQuietFor time.Duration
	IdPAddr       string
	IdPKey        string
	// TargetArgs are the command-line flags that chose the target, its
	// peers and its suite, recorded in the report so each scenario can be
	// run again the same way (reports.RerunCommand).
	TargetArgs []string
	// Baseline is an earlier run that summary.md lists regressions
	// against; nil for none.
	Baseline *reports.Summary
	// Features is the suite (*.feature files) to run; nil is the bundled
	// one (features.FS). explore hands its generated scenarios here.
	Features fs.FS
	// CallTimeout bounds one call of a step; 0 is 30 s.
	CallTimeout time.Duration
	Progress    io.Writer // one line per scenario as it finishes; nil for none
	Log         io.Writer // child process logs; nil discards
	// Godog adjusts the scenario runner's options before the run: a Go test
	// sets TestingT, so each scenario is a subtest. The shipped binary
	// leaves it nil and links no test code of its own.
	Godog func(*godog.Options)
}

// FinalQuiet is how long the probe must stay quiet after the last scenario
// before every count is read again: FinalQuietFor when set, else ten
// settle periods, at least a second. A duplicate dispatch that comes later
// than this (a redelivery queue's delay) is not seen.
func (c Config) FinalQuiet() time.Duration {
	if c.FinalQuietFor > 0 {
		return c.FinalQuietFor
	}
	return max(time.Second, 10*c.Settle)
}

// Outcome is what a run produced.
type Outcome struct {
	Run    reports.Run
	Result string // reports.RunPass, RunFail, RunIncomplete or RunInterrupted
	OK     bool   // Result == PASS
	Why    []string
	Code   int
}

// SetupError marks failures to bring the run up (exit 2), as opposed to
// scenarios failing (exit 1).
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return "set-up: " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

func setupErr(format string, args ...any) error {
	return &SetupError{Err: fmt.Errorf(format, args...)}
}

// Run executes the suite and writes the report. As it starts, --out is
// replaced by the record of a run under way (reports.WriteRunning), and
// that only by a complete report; when the run fails before its scenarios
// (set-up error, interrupt during set-up), by the record of that failure
// (reports.WriteError). No earlier verdict is ever left looking current,
// even when the run is killed.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	return WithReport(ctx, cfg, func(started time.Time) (Outcome, error) { return execute(ctx, cfg, started) })
}

// WithReport runs body, which writes cfg.Out exactly when it returns no
// error, under --out's protocol: the earlier report is replaced at once by
// the record of a run under way, and a body that fails by the record of
// that failure. Every command that writes a report (run, explore) goes
// through it.
func WithReport(ctx context.Context, cfg Config, body func(started time.Time) (Outcome, error)) (Outcome, error) {
	started := time.Now().UTC()
	record := reports.SetupFailure{Tool: "mcpconform", Version: buildinfo.Read().String(), Target: cfg.Target, Profile: cfg.Profile, At: started}
	if cfg.Out != "" {
		if err := reports.CheckOut(cfg.Out); err != nil {
			return Outcome{Code: ExitSetup}, setupErr("--out: %w", err)
		}
		// The earlier report goes now, not when this one is done: a run
		// killed on the way leaves a record saying so, not an old verdict.
		if err := reports.WriteRunning(cfg.Out, record); err != nil {
			return Outcome{Code: ExitSetup}, setupErr("--out: %w", err)
		}
	}
	out, err := body(started)
	if err != nil && cfg.Out != "" {
		record.Err, record.Interrupted = err.Error(), ctx.Err() != nil
		werr := reports.WriteError(cfg.Out, record)
		if werr != nil {
			err = fmt.Errorf("%w (and recording it in %s: %v)", err, cfg.Out, werr)
		}
	}
	return out, err
}

// features is the suite a run takes its scenarios from.
func (c Config) features() fs.FS {
	if c.Features != nil {
		return c.Features
	}
	return features.FS
}

// execute runs the suite; --out is written exactly when the error is nil.
func execute(ctx context.Context, cfg Config, started time.Time) (Outcome, error) {
	if cfg.Level != "" && !reports.ValidLevel(cfg.Level) {
		return Outcome{Code: ExitSetup}, setupErr("--level %q: want one of %s", cfg.Level, reports.LevelNames())
	}
	entries, err := catalog.Load(cfg.features())
	if err != nil {
		return Outcome{Code: ExitSetup}, setupErr("load features: %w", err)
	}
	expected, err := readExpected(cfg.ExpectedFailures, catalog.ByID(entries))
	if err != nil {
		return Outcome{Code: ExitSetup}, &SetupError{Err: err}
	}
	// The selection is made before anything starts, so a bad expression or
	// an unknown ID costs no gateway start-up.
	tags, filter, err := selection(cfg, entries)
	if err != nil {
		return Outcome{Code: ExitSetup}, err
	}
	s, err := Open(ctx, cfg, started)
	if err != nil {
		return Outcome{Code: ExitSetup}, err
	}
	defer s.Close()
	if cfg.Progress != nil {
		s.Env.OnResult = func(sc reports.Scenario) { reports.PrintLine(cfg.Progress, sc) }
	}
	scenarios, err := s.Suite(ctx, cfg.features(), entries, filter)
	if err != nil {
		return Outcome{Code: ExitSetup}, err
	}
	applyExpected(scenarios, expected)
	if len(scenarios) == 0 && ctx.Err() == nil {
		return Outcome{Code: ExitSetup}, setupErr("no scenario matched tags %q", tags)
	}
	return s.Finish(ctx, scenarios, tags, nil)
}

// Session is one bring-up of a target and the harness-owned peers, over
// which any number of suites run: `run` runs one, explore one per round of
// generated scenarios, so a target starts once however many rounds there are.
type Session struct {
	// Env is what the steps see: the target, the peers, the capabilities.
	Env *steps.Env
	// Target says what is tested, for every report.
	Target  reports.Target
	cfg     Config
	started time.Time
	close   func()
}

// Open brings the target and its peers up and checks, before any
// scenario, that the target answers MCP with the credentials it was given
// (a *SetupError otherwise). started is when the run began, for its report.
func Open(ctx context.Context, cfg Config, started time.Time) (*Session, error) {
	env, closeAll, tgt, err := bringUp(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The wiring before any verdict: a gateway whose tool does not reach
	// the probe would fail every dispatch check for a mistake of set-up.
	if env.Caps[judge.CapUpstream] || env.Caps[judge.CapEffects] {
		if f := callThrough(ctx, env); !f.OK {
			closeAll()
			return nil, setupErr("preflight: %s: no: %s (mcpconform doctor checks the whole wiring)", f.Check, f.Detail)
		}
	}
	if cfg.Progress != nil {
		// Named before the first scenario line, so a CI log says what it
		// tests even when the run never ends.
		harness := buildinfo.Read()
		fmt.Fprintf(cfg.Progress, "testing: %s\n", reports.Subject(reports.Run{Tool: "mcpconform",
			Version: harness.Version, Commit: harness.Commit, Target: tgt, Started: started}))
	}
	return &Session{Env: env, Target: tgt, cfg: cfg, started: started, close: closeAll}, nil
}

// Close stops what Open started.
func (s *Session) Close() { s.close() }

// Suite runs the scenarios of fsys (entries are its catalog; filter, a
// godog tag list, selects among them, "" all) one at a time with godog
// through the steps, in the order the configuration's seed gives, and
// returns each scenario's record once every late dispatch or ledger entry
// had its chance to show (Env.Recount). An error is a failure of the
// harness, not of a scenario.
func (s *Session) Suite(ctx context.Context, fsys fs.FS, entries []catalog.Entry, filter string) ([]reports.Scenario, error) {
	s.Env.Catalog = catalog.ByID(entries)
	// The harness prints its own line per scenario and writes JUnit from its
	// own model; godog's formatters would count INCOMPLETE scenarios as passed.
	suite := godog.TestSuite{
		Name: "mcpconform",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			steps.Register(sc, s.Env)
		},
		Options: &godog.Options{
			Format:         "progress:" + os.DevNull,
			Output:         io.Discard,
			FS:             fsys,
			Paths:          []string{"."},
			Tags:           filter,
			Strict:         true,
			Randomize:      s.cfg.Seed,
			NoColors:       true,
			Concurrency:    1,
			DefaultContext: ctx,
		},
	}
	if s.cfg.Godog != nil {
		s.cfg.Godog(suite.Options)
	}
	suite.Run()
	if ctx.Err() == nil {
		// Late duplicates: every probe count is read once more at the end.
		if _, err := s.Env.Recount(ctx, s.cfg.FinalQuiet()); err != nil {
			return nil, setupErr("recount the probe: %w", err)
		}
	}
	return s.Env.TakeResults(), nil
}

// Finish judges the scenarios as one run at the level claimed (the highest
// the target allows by default) and writes its report, with extra files
// beside it (explore's found scenarios), when the configuration names a
// directory.
func (s *Session) Finish(ctx context.Context, scenarios []reports.Scenario, tags string, extra []reports.File) (Outcome, error) {
	cfg := s.cfg
	level := cfg.Level
	if level == "" {
		level = reports.HighestLevel(s.Env.Caps)
	}
	harness := buildinfo.Read()
	run := reports.Run{
		Tool: "mcpconform", Version: harness.Version, Commit: harness.Commit, Target: s.Target, Seed: cfg.Seed, Tags: tags,
		Level: level, Concurrency: cfg.Concurrency, Interrupted: ctx.Err() != nil,
		Started: s.started, Finished: time.Now().UTC(), Baseline: cfg.Baseline,
	}
	run.Scenarios = scenarios
	sort.Slice(run.Scenarios, func(i, j int) bool { return run.Scenarios[i].ID < run.Scenarios[j].ID })
	if len(cfg.Bugs) > 0 {
		run.CatchTable = Catches(run, cfg.Bugs)
	}
	result, why := reports.Judge(run)
	out := Outcome{Run: run, Result: result, OK: result == reports.RunPass, Why: why, Code: ExitCode(result)}
	if cfg.Out != "" {
		if err := reports.WriteWith(cfg.Out, run, extra); err != nil {
			return out, fmt.Errorf("write report: %w", err)
		}
	}
	return out, nil
}

// selection reads --tags (Cucumber's or godog's syntax, see tagexpr) and
// --id, and returns the selection as the report records it and the filter
// handed to godog: the chosen scenarios' ID tags, so godog's own tag
// parser only ever sees a list it cannot misread.
func selection(cfg Config, entries []catalog.Entry) (tags, filter string, err error) {
	expr, err := tagexpr.Parse(cfg.Tags)
	if err != nil {
		return "", "", &SetupError{Err: fmt.Errorf("--tags: %w", err)}
	}
	tags = strings.TrimSpace(cfg.Tags)
	known := catalog.ByID(entries)
	only := map[string]bool{}
	var idTags []string
	for _, id := range cfg.IDs {
		if _, ok := known[id]; !ok {
			return "", "", setupErr("no scenario with ID %q (see mcpconform list)", id)
		}
		only[id] = true
		idTags = append(idTags, "@"+id)
	}
	if len(idTags) > 0 {
		ids := strings.Join(idTags, " or ")
		if tags == "" {
			tags = ids
		} else {
			tags = "(" + tags + ") and (" + ids + ")"
		}
	}
	var chosen []string
	for _, e := range entries {
		if (len(only) == 0 || only[e.ID]) && expr.Match(e.Tags) {
			chosen = append(chosen, "@"+e.ID)
		}
	}
	if len(chosen) == 0 {
		return "", "", setupErr("no scenario matched %q (see mcpconform list)", tags)
	}
	if len(only) == 0 && len(chosen) == len(entries) {
		return tags, "", nil
	}
	return tags, strings.Join(chosen, ","), nil
}

// bringUp starts the probe, the identity provider and the target, reads the
// target's capabilities and checks, before any scenario, that it answers
// MCP with the credentials it was given.
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
	var up steps.Upstream
	runID := "r" + uuid.NewString()[:8]
	if cfg.ProbeURL != "" {
		remote, err := probe.Dial(ctx, cfg.ProbeURL)
		if err != nil {
			return fail(setupErr("use the running probe at %s: %w", cfg.ProbeURL, err))
		}
		closers = append(closers, func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = remote.Forget(fctx, runID)
			remote.Close()
		})
		up = remote
	} else {
		pr, err := probe.Start(probe.Options{Addr: cfg.ProbeAddr})
		if err != nil {
			return fail(setupErr("start upstream probe: %w", err))
		}
		closers = append(closers, func() { pr.Close() })
		up = probe.Local(pr)
	}
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

	settle := cfg.Settle
	if settle == 0 {
		settle = 50 * time.Millisecond
	}
	callTimeout := cfg.CallTimeout
	if callTimeout == 0 {
		callTimeout = 30 * time.Second
	}
	env := &steps.Env{Probe: up, IdP: id, Seed: cfg.Seed, MaxConcurrency: cfg.Concurrency,
		CallTimeout: callTimeout, RunID: runID, Settle: settle}
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
			// The shipped binary starts no containers: that is the tests'
			// business (reference/store/pgtest), not a conformance run's.
			return fail(setupErr("--store postgres needs a database: set DATABASE_URL to a PostgreSQL URL (postgres://user:password@host:5432/db), or use --store sqlite"))
		}
		t, err = target.Reference(ctx, target.Options{
			Binary: cfg.Binary, Store: store, DSN: dsn, Workers: cfg.Workers, Bugs: cfg.Bugs,
			// A short store lock wait keeps the lock-timeout scenario quick.
			ExtraArgs: append([]string{"--lock-timeout", "300ms"}, cfg.GatewayArgs...), Log: cfg.Log,
			// A crash fault kills a worker; the run goes on with it
			// restarted, as a vendor's supervisor would restart theirs.
			RestartCrashed: true,
		})
		if err != nil {
			return fail(setupErr("start reference gateway: %w", err))
		}
	default:
		prof, err := target.LoadProfile(cfg.Profile)
		if err != nil {
			return fail(setupErr("%w", err))
		}
		t, err = target.External(cfg.Target, prof)
		if err != nil {
			return fail(setupErr("%w", err))
		}
	}
	closers = append(closers, func() { t.Close() })
	env.URLs, env.Profile = t.URLs, t.Profile
	if t.Profile.Effects != nil {
		reader, err := effects.New(t.Profile, t.URLs[0])
		if err != nil {
			return fail(setupErr("%w", err))
		}
		env.Effects = reader
	}
	for i := range t.ControlURLs {
		env.Controls = append(env.Controls, t.Control(i))
	}
	caps, err := capabilities(ctx, env, t.Kind == "reference")
	if err != nil {
		return fail(setupErr("read target capabilities: %w", err))
	}
	env.Caps = caps
	tgt := t.Report()
	tgt.Profile = t.Profile.Name
	tgt.Args = cfg.TargetArgs
	tgt.UnkeyedPolicy = env.Policy
	tgt.Capabilities = nil
	for c, on := range caps {
		if on {
			tgt.Capabilities = append(tgt.Capabilities, c)
		}
	}
	sort.Strings(tgt.Capabilities)
	pre, err := Preflight(ctx, env)
	if err != nil {
		return fail(err)
	}
	tgt.ServerName, tgt.ServerVersion, tgt.Protocol = pre.ServerName, pre.ServerVersion, pre.Protocol
	return env, closeAll, tgt, nil
}

// capabilities says what the target offers, as reports.Cap* names: read
// from its control API when it has one (which makes every fixture on
// demand), else from the profile (the operator's tools, keys and trust).
func capabilities(ctx context.Context, env *steps.Env, reference bool) (map[string]bool, error) {
	p := env.Profile
	caps := map[string]bool{judge.CapWire: true, judge.CapTwoURLs: len(env.URLs) >= 2}
	env.Policy = p.UnkeyedPolicy
	_, write := p.Tool(target.RoleWrite)
	_, other := p.Tool(target.RoleWriteOther)
	_, ro := p.Tool(target.RoleReadOnly)
	_, appr := p.Tool(target.RoleApproval)
	// A profile with effects has a write tool that is the side effect:
	// nothing reaches the probe, and its own read tool observes instead.
	caps[judge.CapUpstream] = write && env.Probe != nil && p.Effects == nil
	caps[judge.CapEffects] = write && p.Effects != nil && env.Effects != nil
	caps[judge.CapToolWriteOther] = other && caps[judge.CapUpstream]
	caps[judge.CapToolReadOnly] = ro && env.Probe != nil
	caps[judge.CapToolApproval] = appr && caps[judge.CapUpstream]
	caps[judge.CapSecondKey] = len(p.Credentials.APIKeys) >= 2
	caps[judge.CapOtherWallet] = p.Credentials.OtherWallet != nil && p.Credentials.OtherWallet.APIKey != ""
	caps[judge.CapPrincipalTokens] = (p.Identity.HarnessIdP && len(p.Identity.Subjects) > 0 && env.IdP != nil) || len(p.Credentials.PrincipalTokens) > 0
	c := env.Control()
	if c == nil {
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
	env.FaultPoints = got.FaultPoints
	env.FaultActions = got.FaultActions
	if reference {
		// The reference's policy is its setting: window 0 refuses.
		env.Policy = target.UnkeyedDerived
		if got.Settings.EffectiveWindowSeconds == 0 {
			env.Policy = target.UnkeyedRefuse
		}
	}
	fixtures := has["fixtures"]
	caps[judge.CapFixtures] = fixtures
	caps[judge.CapLedger] = has["ledger"]
	caps[judge.CapClock] = has["clock"]
	caps[judge.CapFaults] = has["faults"]
	caps[judge.CapSettings] = has["settings"]
	caps[judge.CapPrincipals] = has["principals"] && env.IdP != nil
	if fixtures {
		up := has["upstream"] && env.Probe != nil
		caps[judge.CapUpstream] = caps[judge.CapUpstream] || up
		for _, k := range []string{judge.CapToolWriteOther, judge.CapToolReadOnly, judge.CapToolApproval} {
			caps[k] = caps[k] || up
		}
		caps[judge.CapSecondKey], caps[judge.CapOtherWallet] = true, true
	}
	caps[judge.CapPrincipalTokens] = caps[judge.CapPrincipalTokens] || caps[judge.CapPrincipals]
	return caps, nil
}

// readExpected reads a waiver file: one scenario ID a line, then the reason
// it is accepted (after whitespace or a #); blank lines and # comments are
// skipped. A waiver without a reason is refused: a known gap is accepted
// on the record, never silently.
func readExpected(path string, known map[string]catalog.Entry) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("expected failures: %w", err)
	}
	defer f.Close()
	if ext := filepath.Ext(path); ext == ".yml" || ext == ".yaml" {
		// The official MCP conformance suite's format: a "server:" list of
		// IDs, each with its reason in a comment.
		b, err := officialsuite.ParseBaseline(f)
		if err != nil {
			return nil, fmt.Errorf("expected failures %s: %w", path, err)
		}
		for _, id := range b.Order {
			if _, ok := known[id]; !ok {
				return nil, fmt.Errorf("expected failures %s: no scenario %q", path, id)
			}
			out[id] = b.Reasons[id]
		}
		return out, nil
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, reason, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(id, '#'); i >= 0 {
			id, reason = id[:i], id[i:]+" "+reason
		}
		reason = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(reason), "#"))
		if _, ok := known[id]; !ok {
			return nil, fmt.Errorf("expected failures %s:%d: no scenario %q", path, n, id)
		}
		if reason == "" {
			return nil, fmt.Errorf("expected failures %s:%d: %s has no reason (write it after the ID)", path, n, id)
		}
		out[id] = reason
	}
	return out, sc.Err()
}

// applyExpected waives the listed scenarios that failed, were skipped or
// are incomplete (expected-failure, with the reason and what happened), and
// turns a listed scenario that passed into unexpected-pass, which fails the
// run: a waiver must be dropped once the gap is closed.
func applyExpected(ss []reports.Scenario, expected map[string]string) {
	for i := range ss {
		reason, ok := expected[ss[i].ID]
		if !ok {
			continue
		}
		switch ss[i].Verdict {
		case judge.Failed, judge.Skipped, judge.Incomplete:
			ss[i].Reason = fmt.Sprintf("waived (%s); was %s: %s", reason, ss[i].Verdict, ss[i].Reason)
			ss[i].Verdict = judge.ExpectedFailure
		case judge.Passed:
			ss[i].Verdict = judge.UnexpectedPass
			ss[i].Reason = "listed as an expected failure (" + reason + ") but passed"
		}
	}
}

// IsSetup reports whether err is a set-up failure (exit 2).
func IsSetup(err error) bool {
	var se *SetupError
	return errors.As(err, &se)
}
