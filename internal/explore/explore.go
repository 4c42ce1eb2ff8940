package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/repro"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

// Defaults: thirty scenarios of up to forty actions finish in about
// seventy seconds against the reference gateway on SQLite (two cores,
// busy): every kind of episode gets its turn about three times.
const (
	DefaultRuns   = 30
	DefaultSteps  = 40
	DefaultBudget = 90 * time.Second
	// callTimeout bounds a call: a generated scenario never makes one wait
	// long on a correct gateway, and a wrong one (a duplicate dispatch held
	// at the probe) must not cost the whole budget.
	callTimeout = 5 * time.Second
)

// Config is one exploration.
type Config struct {
	// Run is the target (as `mcpconform run` takes it: the reference, or a
	// URL and its profile), the report directory (Out) and the progress
	// writer; its Features and Seed are explore's own.
	Run runner.Config
	// Seed draws the scenarios; Runs is how many, Steps the most actions
	// in one, Budget the most time they may take (shrinking a finding may
	// take as long again). Scenario, when set, runs only that one of the
	// seed's scenarios (the one a finding names).
	Seed int64
	// Seeds is how many seeds to explore in turn, from Seed on (1 when 0),
	// each with Runs scenarios, against one bring-up of the target.
	Seeds    int
	Runs     int
	Steps    int
	Budget   time.Duration
	Scenario int
	// NoShrink keeps a finding as it was found.
	NoShrink bool
	// Command is the command line that explores, for the Source: line of
	// a found scenario.
	Command string
}

// Finding is a violation explore found and shrank.
type Finding struct {
	ID     string // explore-<seed>-<n>
	Target Target
	// Check is the check that showed it in the shrunk scenario's run.
	Check judge.Check
	// Run is the scenario (1-based) that found it; After, the time from
	// the first scenario's start to the end of that one.
	Run   int
	After time.Duration
	// From and To are the scenario's size found and shrunk.
	From, To Size
	Shrunk   Shrunk
	// Confirmed says the shrunk scenario, as written, failed again.
	Confirmed bool
	Feature   []byte
	Script    []byte
	Warnings  []string
}

// Result is what an exploration did.
type Result struct {
	Outcome  runner.Outcome
	Explored int
	Found    *Finding
	Elapsed  time.Duration
}

// FoundDir is where a report directory keeps what explore found.
const FoundDir = "found"

func (c Config) withDefaults() Config {
	if c.Runs <= 0 {
		c.Runs = DefaultRuns
	}
	if c.Seeds <= 0 {
		c.Seeds = 1
	}
	if c.Steps <= 0 {
		c.Steps = DefaultSteps
	}
	if c.Budget <= 0 {
		c.Budget = DefaultBudget
	}
	if c.Run.CallTimeout == 0 {
		c.Run.CallTimeout = callTimeout
	}
	c.Run.Seed = 0 // the scenarios run in the order they were drawn
	if c.Command == "" {
		c.Command = fmt.Sprintf("mcpconform explore --seed %d", c.Seed)
	}
	return c
}

// Run explores: it brings the target up once, runs the seed's scenarios
// through the runner until one shows a violation or the budget is spent,
// shrinks the finding, and writes the report (the scenarios explored, the
// finding as its shrunk run) with the finding's scenario, repro.sh and
// seed under found/. The outcome's code is run's: 0 nothing found and
// everything observed, 1 a violation, 2 set-up, 130 interrupted.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	var res Result
	start := time.Now()
	out, err := runner.WithReport(ctx, cfg.Run, func(started time.Time) (runner.Outcome, error) {
		s, err := runner.Open(ctx, cfg.Run, started)
		if err != nil {
			return runner.Outcome{Code: runner.ExitSetup}, err
		}
		defer s.Close()
		x := &explorer{cfg: cfg, s: s, progress: cfg.Run.Progress}
		if x.progress == nil {
			x.progress = io.Discard
		}
		return x.explore(ctx, &res)
	})
	res.Outcome, res.Elapsed = out, time.Since(start)
	return res, err
}

type explorer struct {
	cfg      Config
	s        *runner.Session
	progress io.Writer
}

// DimsOf is what a session's target lets explore draw from.
func DimsOf(s *runner.Session) Dims {
	d := Dims{Caps: s.Env.Caps, Policy: s.Env.Policy, Default: s.Env.Profile.ProtocolVersion}
	for v, ok := range s.Env.Speaks {
		if ok {
			d.Wires = append(d.Wires, v)
		}
	}
	sort.Strings(d.Wires)
	if d.Policy == "" {
		d.Policy = judge.PolicyDerived
	}
	return d
}

func (x *explorer) explore(ctx context.Context, res *Result) (runner.Outcome, error) {
	d := DimsOf(x.s)
	if !d.has(judge.CapUpstream) {
		return runner.Outcome{Code: runner.ExitSetup}, &runner.SetupError{Err: fmt.Errorf(
			"explore needs the harness's probe behind the target's tools, to see each dispatch (a profile's tools.write routed to --probe-url, or a control API with fixtures)")}
	}
	var scs []Scenario
	for seed := x.cfg.Seed; seed < x.cfg.Seed+int64(x.cfg.Seeds); seed++ {
		for n := 1; n <= x.cfg.Runs; n++ {
			if x.cfg.Scenario > 0 && n != x.cfg.Scenario {
				continue
			}
			scs = append(scs, Generate(seed, n, d, x.cfg.Steps))
		}
	}
	seeds := fmt.Sprintf("seed %d", x.cfg.Seed)
	if x.cfg.Seeds > 1 {
		seeds = fmt.Sprintf("seeds %d to %d", x.cfg.Seed, x.cfg.Seed+int64(x.cfg.Seeds)-1)
	}
	fmt.Fprintf(x.progress, "explore: %s, %d scenario(s) of at most %d actions, budget %v, at level %s\n",
		seeds, len(scs), x.cfg.Steps, x.cfg.Budget, reports.HighestLevel(x.s.Env.Caps))
	begin := time.Now()
	deadline := begin.Add(x.cfg.Budget)
	var stop atomic.Bool
	done := 0
	foundAfter := map[string]time.Duration{} // when each failed scenario ended
	x.s.Env.Stop = func() bool { return stop.Load() || time.Now().After(deadline) }
	x.s.Env.OnResult = func(r reports.Scenario) {
		done++
		fmt.Fprintf(x.progress, "explore: %s %s (%d of %d, %.1fs)\n", r.ID, r.Verdict, done, len(scs), time.Since(begin).Seconds())
		if _, _, ok := TargetOf(r); ok && r.Verdict == judge.Failed {
			foundAfter[r.ID] = time.Since(begin)
			stop.Store(true)
		}
	}
	recs, err := x.batch(ctx, scs)
	x.s.Env.Stop, x.s.Env.OnResult = nil, nil
	if err != nil {
		return runner.Outcome{Code: runner.ExitSetup}, err
	}
	var explored []reports.Scenario
	var first *Scenario
	var firstRec reports.Scenario
	for i, sc := range scs {
		r, ok := recs[sc.ID()]
		if !ok {
			continue
		}
		res.Explored++
		if _, _, ok := TargetOf(r); ok && r.Verdict == judge.Failed && first == nil {
			first, firstRec = &scs[i], r
			after, live := foundAfter[r.ID]
			if !live {
				after = time.Since(begin) // a late dispatch or debit, seen once the probe settled
			}
			res.Found = &Finding{ID: sc.ID(), Run: sc.N, After: after}
		}
		explored = append(explored, r)
	}
	if res.Explored < len(scs) && ctx.Err() == nil && first == nil {
		fmt.Fprintf(x.progress, "explore: the budget of %v was spent after %d of %d scenario(s)\n", x.cfg.Budget, res.Explored, len(scs))
	}
	var extra []reports.File
	if first != nil && ctx.Err() == nil {
		f, rec, files, err := x.found(ctx, *first, firstRec, res.Found)
		if err != nil {
			return runner.Outcome{Code: runner.ExitSetup}, err
		}
		res.Found = f
		extra = files
		for i := range explored {
			if explored[i].ID == rec.ID {
				explored[i] = rec
			}
		}
	}
	return x.s.Finish(ctx, explored, "", extra)
}

// batch runs scenarios through the session as one feature file, in one
// godog run, and returns their records by ID.
func (x *explorer) batch(ctx context.Context, ss []Scenario) (map[string]reports.Scenario, error) {
	fsys := fstest.MapFS{"explore.feature": {Data: RenderAll(ss)}}
	entries, err := catalog.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("explore: a generated scenario is not one the catalog reads: %w", err)
	}
	recs, err := x.s.Suite(ctx, fsys, entries, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]reports.Scenario, len(recs))
	for _, r := range recs {
		out[r.ID] = r
	}
	return out, nil
}

// found shrinks a finding, runs the shrunk scenario as written to confirm
// it, and returns the finding, the record that stands for it in the
// report, and the files written under found/.
func (x *explorer) found(ctx context.Context, sc Scenario, rec reports.Scenario, f *Finding) (*Finding, reports.Scenario, []reports.File, error) {
	t, c, _ := TargetOf(rec)
	f.Target, f.Check, f.From = t, c, sc.Size()
	fmt.Fprintf(x.progress, "explore: %s found %s (%s): %s\n", sc.ID(), t.Harm, t.Kind, oneLine(c.Actual))
	shrunk := Shrunk{Scenario: sc, Record: rec}
	if !x.cfg.NoShrink {
		var err error
		shrunk, err = Shrink(ctx, sc, rec, t, x.batch, ShrinkOptions{
			Deadline: time.Now().Add(x.cfg.Budget),
			Progress: func(format string, args ...any) { fmt.Fprintf(x.progress, "explore: "+format+"\n", args...) },
		})
		if err != nil {
			return nil, rec, nil, err
		}
	}
	f.Shrunk = shrunk
	final := shrunk.Scenario
	final.Name = ""
	if shown, ok := t.Shows(shrunk.Record); ok {
		c = shown // what the shrunk scenario's run saw
	}
	final.Title, final.Requirement, final.Source = x.describe(final, t, c, f.From)
	f.Feature = final.Render()
	// The scenario as written runs once more: what repro.sh replays is the
	// run of the very text in found/. Unshrunk, it is the run that found it.
	confirmed := rec
	f.Confirmed = x.cfg.NoShrink
	for try := 0; try < 3 && ctx.Err() == nil && !f.Confirmed; try++ {
		recs, err := x.batch(ctx, []Scenario{final})
		if err != nil {
			return nil, rec, nil, err
		}
		r, ok := recs[final.ID()]
		if !ok {
			continue
		}
		if shown, ok := t.Shows(r); ok {
			confirmed, f.Confirmed, f.Check = r, true, shown
			break
		}
		confirmed = r
	}
	if !f.Confirmed {
		f.Warnings = append(f.Warnings, "the shrunk scenario did not show the violation again in 3 runs: the finding depends on timing")
	}
	f.To = final.Size()
	fsys := fstest.MapFS{"found.feature": {Data: f.Feature}}
	entries, err := catalog.Load(fsys)
	if err != nil {
		return nil, rec, nil, fmt.Errorf("explore: the found scenario does not parse: %w", err)
	}
	script, err := repro.Script(repro.Input{Scenario: confirmed, Entry: entries[0], Target: x.s.Target})
	if err != nil {
		return nil, rec, nil, fmt.Errorf("explore: repro.sh of %s: %w", final.ID(), err)
	}
	f.Script = script.Script
	f.Warnings = append(f.Warnings, script.Warnings...)
	base := FoundDir + "/" + final.ID()
	seed := fmt.Sprintf("seed %d scenario %d\nfound by: %s\nrerun the scenario as drawn: %s --seed %d --scenario %d\nrun it as written: mcpconform run --features DIR/%s (with the same target flags)\n",
		final.Seed, final.N, x.cfg.Command, commandWithoutSeed(x.cfg.Command), final.Seed, final.N, FoundDir)
	// The record of the run that found it, whole, beside the shrunk one
	// the report holds: its history is what the model judged first.
	original, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, rec, nil, fmt.Errorf("explore: the record of %s: %w", sc.ID(), err)
	}
	files := []reports.File{
		{Path: base + ".feature", Data: f.Feature},
		{Path: base + ".repro.sh", Data: f.Script},
		{Path: base + ".seed", Data: []byte(seed)},
		{Path: base + ".found.json", Data: original},
	}
	fmt.Fprintf(x.progress, "explore: %s shrunk from %d to %d steps in %d round(s) (%d runs): %s.feature\n",
		final.ID(), f.From.Steps, f.To.Steps, shrunk.Rounds, shrunk.Runs, base)
	return f, confirmed, files, nil
}

// commandWithoutSeed is a command line without its --seed and --seeds.
func commandWithoutSeed(cmd string) string {
	f := strings.Fields(cmd)
	var out []string
	for i := 0; i < len(f); i++ {
		if f[i] == "--seed" || f[i] == "--seeds" {
			i++
			continue
		}
		out = append(out, f[i])
	}
	return strings.Join(out, " ")
}

// describe is a found scenario's title, requirement and source lines.
func (x *explorer) describe(s Scenario, t Target, c judge.Check, from Size) (title, req, src string) {
	title = fmt.Sprintf("Explored: %s (%s)", t.Harm, c.Step)
	req = fmt.Sprintf("No %s: %s. The model saw %s (expected %s).", t.Harm, c.Step, c.Actual, c.Expected)
	bugs := ""
	if len(x.cfg.Run.Bugs) > 0 {
		bugs = " with bug switch(es) " + fmt.Sprint(slices.Clone(x.cfg.Run.Bugs))
	}
	src = fmt.Sprintf("found by `%s` as scenario %d of seed %d (%d steps, shrunk to %d) against %s%s",
		x.cfg.Command, s.N, s.Seed, from.Steps, s.Size().Steps, x.s.Target.Kind, bugs)
	return title, req, src
}
