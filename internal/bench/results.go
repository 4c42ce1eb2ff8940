package bench

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Machine is where the figures were measured.
type Machine struct {
	GoVersion  string `json:"go_version"`
	OS         string `json:"goos"`
	Arch       string `json:"goarch"`
	NumCPU     int    `json:"nproc"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	// PostgreSQL is the database the PostgreSQL figures come from, or why
	// there is none.
	PostgreSQL string `json:"postgresql,omitempty"`
}

// Setup is how the figures were measured.
type Setup struct {
	Concurrency int           `json:"concurrency"`
	Warmup      time.Duration `json:"warmup"`
	Duration    time.Duration `json:"duration"`
	StormN      int           `json:"storm_n"`
}

// StoreResults are one store's figures.
type StoreResults struct {
	Store    string  `json:"store"` // "SQLite", "PostgreSQL"
	Measured bool    `json:"measured"`
	Reason   string  `json:"reason,omitempty"` // why not measured
	Phases   []Stats `json:"phases,omitempty"` // measured once, outside the rounds
	Storms   []Storm `json:"storms,omitempty"`
	Rounds   []Round `json:"rounds,omitempty"` // interleaved, for the rate targets
	// RoundDatabases says what database the rounds ran on, for the reader:
	// "" says nothing.
	RoundDatabases string       `json:"round_databases,omitempty"`
	Scale          []ScalePoint `json:"scale,omitempty"`
	Profiles       []Profiled   `json:"profiles,omitempty"` // phases of missed targets
	Suite          *SuiteRun    `json:"suite,omitempty"`
	Err            string       `json:"err,omitempty"` // a failure part-way
}

// Round is one interleaved measurement for the rate targets: the bare
// server, then the gateway's phases, back to back.
type Round struct {
	Baseline Stats `json:"baseline"`
	First    Stats `json:"first"`
	Replay   Stats `json:"replay"`
	Unkeyed  Stats `json:"unkeyed"`
	Spread   Stats `json:"spread"` // keyed first calls, one wallet per client
	// Store is the store alone in the same round (StoreAlone); nil when
	// not measured.
	Store *StoreRound `json:"store,omitempty"`
	// Cores are the cores each phase used, by phase name (the bare
	// server's too); the last round's only.
	Cores map[string]CPUUse `json:"cores,omitempty"`
}

// phase is the round's figures of the named gateway phase.
func (r Round) phase(name string) Stats {
	switch name {
	case PhaseKeyedReplay:
		return r.Replay
	case PhaseUnkeyed:
		return r.Unkeyed
	case PhaseSpread:
		return r.Spread
	}
	return r.First
}

// ratio is the gateway phase's rate over the round's own baseline, 0 when
// either is missing.
func (r Round) ratio(phase string) float64 { return RateRatio(r.phase(phase), r.Baseline) }

// ofIdeal is the phase's rate over its same-run ideal in this round, 0
// when the store alone was not measured in it.
func (r Round) ofIdeal(phase string) float64 {
	for _, l := range r.Limits() {
		if l.Phase == phase {
			return l.OfIdeal()
		}
	}
	return 0
}

// p99Ratio is the phase's p99 over the round's baseline p99 (lower is
// better), +Inf when the phase answered nothing.
func (r Round) p99Ratio(phase string) float64 { return P99Ratio(r.phase(phase), r.Baseline) }

// hotRatio is keyed first calls on one wallet over keyed first calls on
// one wallet per client, in the same round.
func (r Round) hotRatio() float64 {
	if r.Spread.Rate <= 0 || r.First.Calls == 0 {
		return 0
	}
	return r.First.Rate / r.Spread.Rate
}

// medianRatio is the median of the rounds' ratios for phase.
func medianRatio(rounds []Round, phase string) (float64, []float64) {
	return medianOf(rounds, func(r Round) float64 { return r.ratio(phase) })
}

// medianOf is the median of f over the rounds, and each round's value.
func medianOf(rounds []Round, f func(Round) float64) (float64, []float64) {
	rs := make([]float64, len(rounds))
	for i, r := range rounds {
		rs[i] = f(r)
	}
	return Median(rs), rs
}

// Median is the median of xs (0 for none); xs is left as it is.
func Median(xs []float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Phase returns the named phase, if measured.
func (s StoreResults) Phase(name string) (Stats, bool) {
	for _, p := range s.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Stats{}, false
}

// Results are one bench run.
type Results struct {
	Date    time.Time     `json:"date"`
	Wall    time.Duration `json:"wall"` // the whole run
	Machine Machine       `json:"machine"`
	Setup   Setup         `json:"setup"`
	// Baseline is the fastest of BaselineRuns: the bare server is measured
	// before and after each store's phases, and the ratios use its best
	// figure, the choice that flatters the gateway least.
	Baseline     Stats          `json:"baseline"`
	BaselineRuns []Stats        `json:"baseline_runs,omitempty"`
	Stores       []StoreResults `json:"stores"`
	// Scaling is the suite on SQLite at growing scenario counts; Twins is
	// twins-01 on SQLite at growing --concurrency (its twin count).
	Scaling []SuiteRun `json:"scaling,omitempty"`
	Twins   []SuiteRun `json:"twins,omitempty"`
	// Allocs are the call path's allocations per call kind; AllocsErr
	// why they stopped short.
	Allocs    []CallAllocs `json:"allocs,omitempty"`
	AllocsErr string       `json:"allocs_err,omitempty"`
}

// Store returns the named store's results.
func (r Results) Store(name string) (StoreResults, bool) {
	for _, s := range r.Stores {
		if s.Store == name {
			return s, true
		}
	}
	return StoreResults{}, false
}

// Store names.
const (
	SQLite     = "SQLite"
	PostgreSQL = "PostgreSQL"
)

// Target is one of the bench's rate targets and how this run did.
type Target struct {
	Store    string
	Name     string
	Got      string
	Measured bool
	Met      bool
	// Phase is the load phase profiled when the target is missed; "" for
	// the storms, which are one burst each.
	Phase string
}

// StormDeadline is the storm targets' bound to answer every twin;
// StormSettlePG the bound to settle them all on PostgreSQL.
const (
	StormDeadline = 2 * time.Second
	StormSettlePG = time.Second
)

// RateGoal is a rate target: keyed first calls, unkeyed calls and replays
// at no less than Min of their same-run ideal on Store (Limit.OfIdeal:
// the bare server and the store alone composed with nothing else).
type RateGoal struct {
	Store string
	Phase string
	Min   float64
}

// IdealMin is every rate goal's fraction of the same-run ideal.
const IdealMin = 0.85

// RateGoals are the bench's rate targets.
var RateGoals = []RateGoal{
	{SQLite, PhaseKeyedFirst, IdealMin}, {PostgreSQL, PhaseKeyedFirst, IdealMin},
	{SQLite, PhaseUnkeyed, IdealMin}, {PostgreSQL, PhaseUnkeyed, IdealMin},
	{SQLite, PhaseKeyedReplay, IdealMin}, {PostgreSQL, PhaseKeyedReplay, IdealMin},
}

// Unkeyed calls' p99 may be at most UnkeyedP99Max times the bare
// server's; keyed first calls on one wallet reach at least HotWalletMin of
// their rate on one wallet per client.
const (
	UnkeyedP99Max = 4.0
	HotWalletMin  = 0.8
)

// Targets evaluates the rate targets on every store: each rate the median
// of the interleaved rounds' ratios to their own bare-server figure.
func Targets(r Results) []Target {
	var out []Target
	for _, st := range r.Stores {
		out = append(out, StoreTargets(st, r.Setup.StormN)...)
	}
	return out
}

// StoreTargets are one store's targets.
func StoreTargets(st StoreResults, stormN int) []Target {
	var out []Target
	notMeasured := func(t Target) Target {
		t.Got = "not measured" + because(st)
		return t
	}
	for _, g := range RateGoals {
		if g.Store != st.Store {
			continue
		}
		t := Target{Store: st.Store, Phase: g.Phase, Name: fmt.Sprintf("%s ≥ %.2f× their same-run ideal", g.Phase, g.Min)}
		if g.Phase == PhaseUnkeyed {
			t.Name += fmt.Sprintf(", p99 ≤ %.0f× the bare server's p99", UnkeyedP99Max)
		}
		if len(st.Rounds) == 0 {
			out = append(out, notMeasured(t))
			continue
		}
		if !slices.ContainsFunc(st.Rounds, func(r Round) bool { return r.Store != nil }) {
			t.Got = "not measured: the store alone was not measured in any round (mcpbench -limits=false), so there is no ideal"
			out = append(out, t)
			continue
		}
		med, each := medianOf(st.Rounds, func(r Round) float64 { return r.ofIdeal(g.Phase) })
		bare, _ := medianRatio(st.Rounds, g.Phase)
		t.Measured = true
		t.Met = med >= g.Min
		t.Got = fmt.Sprintf("median %s of %d interleaved rounds (%s); %s the bare server's rate", fmtRatio(med), len(each), ratioList(each), fmtRatio(bare))
		if g.Phase == PhaseUnkeyed {
			p99, each := medianOf(st.Rounds, func(r Round) float64 { return r.p99Ratio(PhaseUnkeyed) })
			t.Met = t.Met && p99 <= UnkeyedP99Max
			t.Got += fmt.Sprintf("; p99 median %s of the bare server's (%s)", fmtRatio(p99), ratioList(each))
		}
		out = append(out, t)
	}
	hot := Target{Store: st.Store, Phase: PhaseKeyedFirst,
		Name: fmt.Sprintf("hot wallet: keyed first calls on one wallet ≥ %.2f× their rate on one wallet per client", HotWalletMin)}
	if len(st.Rounds) == 0 {
		out = append(out, notMeasured(hot))
	} else {
		med, each := medianOf(st.Rounds, Round.hotRatio)
		hot.Measured, hot.Met = true, med >= HotWalletMin
		hot.Got = fmt.Sprintf("median %s of %d interleaved rounds (%s)", fmtRatio(med), len(each), ratioList(each))
		out = append(out, hot)
	}
	for _, keyed := range []bool{true, false} {
		t := Target{Store: st.Store, Name: fmt.Sprintf("%s twin storm of %d answered within %s, one dispatch, one debit",
			keyWord(keyed), stormN, fmtDur(StormDeadline))}
		if st.Store == PostgreSQL {
			t.Name += fmt.Sprintf(", all settled within %s", fmtDur(StormSettlePG))
		}
		s, ok := st.storm(keyed)
		if !ok {
			out = append(out, notMeasured(t))
			continue
		}
		t.Measured = true
		t.Met = s.N == stormN && s.Answered <= StormDeadline && s.Other == 0 && s.Unsettled == 0 &&
			s.Dispatches == 1 && s.Debits == 1
		t.Got = fmt.Sprintf("all answered in %s, settled in %s; %d dispatch(es), %d debit(s)", fmtDur(s.Answered), fmtDur(s.Settled), s.Dispatches, s.Debits)
		if st.Store == PostgreSQL && s.Settled > StormSettlePG {
			t.Met = false
		}
		if s.Other > 0 {
			t.Got += fmt.Sprintf("; %d unexpected answer(s)", s.Other)
		}
		if s.Unsettled > 0 {
			t.Got += fmt.Sprintf("; %d unsettled", s.Unsettled)
		}
		out = append(out, t)
	}
	return out
}

// MissedPhases are the phases to profile: those of st's missed targets,
// each once.
func MissedPhases(st StoreResults, stormN int) []string {
	var out []string
	for _, t := range StoreTargets(st, stormN) {
		if t.Measured && !t.Met && t.Phase != "" && !slices.Contains(out, t.Phase) {
			out = append(out, t.Phase)
		}
	}
	return out
}

func ratioList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmtRatio(x)
	}
	return strings.Join(parts, ", ")
}

func because(s StoreResults) string {
	switch {
	case s.Reason != "":
		return ": " + s.Reason
	case s.Err != "":
		return ": " + s.Err
	}
	return ""
}

func (s StoreResults) storm(keyed bool) (Storm, bool) {
	for _, st := range s.Storms {
		if st.Keyed == keyed {
			return st, true
		}
	}
	return Storm{}, false
}

func keyWord(keyed bool) string {
	if keyed {
		return "keyed"
	}
	return "unkeyed"
}

// Render writes r as markdown.
func Render(w io.Writer, r Results) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# mcpconform benchmarks\n\n")
	p("Written by `go run ./cmd/mcpbench` (`make bench`) from one run on one machine; not edited by hand.\n\n")
	p("| machine | |\n|---|---|\n")
	p("| date | %s |\n", r.Date.UTC().Format(time.RFC3339))
	p("| go | %s |\n", r.Machine.GoVersion)
	p("| GOOS/GOARCH | %s/%s |\n", r.Machine.OS, r.Machine.Arch)
	p("| nproc | %d (GOMAXPROCS %d) |\n", r.Machine.NumCPU, r.Machine.GOMAXPROCS)
	if r.Machine.CPU != "" {
		p("| cpu | %s |\n", cell(r.Machine.CPU))
	}
	if r.Machine.PostgreSQL != "" {
		p("| PostgreSQL database | %s |\n", cell(r.Machine.PostgreSQL))
	}
	p("| client | %d goroutines, closed loop, %s warm-up then %s per phase; stateless MCP 2026-07-28 over HTTP/1.1 keep-alive on 127.0.0.1, the same client for every figure |\n",
		r.Setup.Concurrency, fmtDur(r.Setup.Warmup), fmtDur(r.Setup.Duration))
	p("| bench wall time | %s |\n\n", fmtDur(r.Wall))

	p("## Targets\n\n")
	p("Each rate target is the median, over the interleaved rounds below, of the gateway's rate against that round's own ideal: the bare server and the store alone composed with nothing else (same-run limits, below); the ratio to the bare server is given beside it. A missed target names the profile of its phase (below).\n\n")
	p("| store | target | this run | verdict |\n|---|---|---|---|\n")
	for _, t := range Targets(r) {
		verdict := "**not met**"
		switch {
		case !t.Measured:
			verdict = "not measured"
		case t.Met:
			verdict = "met"
		case t.Phase != "":
			verdict += " (profile: " + t.Phase + ")"
		}
		p("| %s | %s | %s | %s |\n", t.Store, cell(t.Name), cell(t.Got), verdict)
	}

	for _, st := range r.Stores {
		if len(st.Rounds) == 0 {
			continue
		}
		p("\n## Interleaved rounds (%s)\n\n", st.Store)
		p("Each round measures the bare server, then the gateway's keyed first calls (every client on one wallet), their replays, unkeyed calls, and keyed first calls with one wallet per client, back to back; " +
			"each ratio is to that round's own bare-server figure, the hot-wallet ratio one wallet over one wallet per client.")
		if roundsHaveStore(st.Rounds) {
			p(" The store alone ran between the bare server and the gateway's phases (same-run limits, below).")
		}
		if st.RoundDatabases != "" {
			p(" %s", st.RoundDatabases)
		}
		p("\n\n")
		p("| round | bare server | keyed first calls | × bare | keyed replays | × bare | unkeyed calls | × bare | unkeyed p99 × bare p99 | one wallet per client | one wallet ÷ per client |\n" +
			"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, rd := range st.Rounds {
			p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", i+1, fmtRate(rd.Baseline.Rate),
				fmtRate(rd.First.Rate), fmtRatio(rd.ratio(PhaseKeyedFirst)),
				fmtRate(rd.Replay.Rate), fmtRatio(rd.ratio(PhaseKeyedReplay)),
				fmtRate(rd.Unkeyed.Rate), fmtRatio(rd.ratio(PhaseUnkeyed)), fmtRatio(rd.p99Ratio(PhaseUnkeyed)),
				fmtRate(rd.Spread.Rate), fmtRatio(rd.hotRatio()))
		}
	}

	renderLimits(p, r)
	renderRoundCores(p, r)

	p("\n## Calls per second and latency\n\n")
	p("The rounds' phases (last round) and the phases measured once, against the bare go-sdk server: calls/s × bare (higher is better), latency × bare (lower is better); " +
		"a round's phase against that round's bare figure, a phase measured once against the fastest bare run. " +
		"Only calls answered as expected count (a first call: a fresh receipt; a replay: `replayed: true`); errors are the others.\n\n")
	if len(r.BaselineRuns) > 1 {
		var rates []string
		for _, b := range r.BaselineRuns {
			rates = append(rates, fmtRate(b.Rate))
		}
		p("The bare server was measured %d times outside the rounds, before and after each store's phases (%s); the fastest is the one shown, so a slower moment of the machine does not flatter the gateway.\n\n",
			len(r.BaselineRuns), strings.Join(rates, ", "))
	}
	p("| store | phase | calls | errors | calls/s | × bare | p50 | × bare | p99 | × bare |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	bl := r.Baseline
	blName := bl.Name
	if len(r.BaselineRuns) > 1 {
		blName += " (fastest run)"
	}
	p("| none | %s | %d | %d | %s | 1.00× | %s | 1.00× | %s | 1.00× |\n", blName, bl.Calls, bl.Errors, fmtRate(bl.Rate), fmtDur(bl.P50), fmtDur(bl.P99))
	phaseRow := func(store string, ph, base Stats) {
		p("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", store, ph.Name, ph.Calls, ph.Errors,
			fmtRate(ph.Rate), fmtRatio(div(ph.Rate, base.Rate)),
			fmtDur(ph.P50), fmtRatio(div(float64(ph.P50), float64(base.P50))),
			fmtDur(ph.P99), fmtRatio(div(float64(ph.P99), float64(base.P99))))
	}
	for _, st := range r.Stores {
		if !st.Measured {
			p("| %s | not measured: %s | | | | | | | | |\n", st.Store, cell(st.Reason))
			continue
		}
		if n := len(st.Rounds); n > 0 {
			rd := st.Rounds[n-1]
			phaseRow(st.Store, Stats{Name: fmt.Sprintf("round %d: %s", n, PhaseBaseline), Calls: rd.Baseline.Calls, Errors: rd.Baseline.Errors,
				Rate: rd.Baseline.Rate, P50: rd.Baseline.P50, P99: rd.Baseline.P99}, rd.Baseline)
			for _, ph := range []Stats{rd.First, rd.Replay, rd.Unkeyed, rd.Spread} {
				ph.Name = fmt.Sprintf("round %d: %s", n, ph.Name)
				phaseRow(st.Store, ph, rd.Baseline)
			}
		}
		for _, ph := range st.Phases {
			phaseRow(st.Store, ph, bl)
		}
		if st.Err != "" {
			p("| %s | stopped: %s | | | | | | | | |\n", st.Store, cell(st.Err))
		}
	}
	var firstErrs []string
	for _, st := range r.Stores {
		phases := slices.Clone(st.Phases)
		for _, rd := range st.Rounds {
			phases = append(phases, rd.First, rd.Replay, rd.Unkeyed, rd.Spread)
		}
		seen := map[string]bool{}
		for _, ph := range phases {
			if ph.FirstError != "" && !seen[ph.Name] {
				seen[ph.Name] = true
				firstErrs = append(firstErrs, fmt.Sprintf("- %s, %s: first error: %s\n", st.Store, ph.Name, ph.FirstError))
			}
		}
	}
	if bl.FirstError != "" {
		firstErrs = append([]string{fmt.Sprintf("- %s: first error: %s\n", bl.Name, bl.FirstError)}, firstErrs...)
	}
	if len(firstErrs) > 0 {
		p("\n%s", strings.Join(firstErrs, ""))
	}

	renderAllocs(p, r)
	renderScale(p, r)
	renderProfiles(p, r)

	p("\n## Twin storms\n\n")
	p("%d identical `partner.echo` calls on a fresh wallet, each on its own warm connection, released together by a barrier. "+
		"*All answered*: until every twin had its first answer (a result or the retryable `idempotency_in_progress`). "+
		"*All settled*: until every twin held a result, each in-progress answer retried after a jittered exponential backoff (%s doubling to %s). "+
		"Dispatches and debits are read back through the control API.\n\n", r.Setup.StormN, fmtDur(SettleBackoff), fmtDur(SettleBackoffMax))
	p("| store | key | twins | all answered | all settled | first answers: fresh / replayed / in progress / other | receipts | dispatches | debits |\n|---|---|---:|---:|---:|---|---:|---:|---:|\n")
	for _, st := range r.Stores {
		if !st.Measured {
			p("| %s | not measured: %s | | | | | | | |\n", st.Store, cell(st.Reason))
			continue
		}
		for _, s := range st.Storms {
			settled := fmtDur(s.Settled)
			if s.Unsettled > 0 {
				settled = fmt.Sprintf("%d unsettled after %s", s.Unsettled, fmtDur(SettleTimeout))
			}
			p("| %s | %s | %d | %s | %s | %d / %d / %d / %d | %d | %d | %d |\n", st.Store, keyWord(s.Keyed), s.N,
				fmtDur(s.Answered), settled, s.Fresh, s.Replayed, s.InProgress, s.Other, s.Receipts, s.Dispatches, s.Debits)
		}
	}
	for _, st := range r.Stores {
		for _, s := range st.Storms {
			if s.FirstOther != "" {
				p("\n- %s %s storm, first unexpected answer: %s\n", st.Store, keyWord(s.Keyed), cell(s.FirstOther))
			}
		}
	}

	p("\n## The harness\n\n")
	p("`runner.Run` against the reference gateway as `make run` does (the gateway a child process of the `mcpconform` binary, a report written), timed from start to return: target start-up and report writing included.\n\n")
	p("| run | store | scenarios | --concurrency | wall | per scenario | passed / failed / skipped |\n|---|---|---:|---:|---:|---:|---|\n")
	row := func(s SuiteRun) {
		if s.Err != "" && s.Scenarios == 0 {
			p("| %s | %s | | %d | %s | | error: %s |\n", s.Label, s.Store, s.Concurrency, fmtDur(s.Wall), cell(s.Err))
			return
		}
		per := ""
		if s.Scenarios > 0 {
			per = fmtDur(s.Wall / time.Duration(s.Scenarios))
		}
		p("| %s | %s | %d | %d | %s | %s | %d / %d / %d |\n", s.Label, s.Store, s.Scenarios, s.Concurrency, fmtDur(s.Wall), per, s.Passed, s.Failed, s.Skipped)
	}
	for _, st := range r.Stores {
		switch {
		case st.Suite != nil:
			row(*st.Suite)
		case !st.Measured:
			p("| full suite | %s | | | not measured: %s | | |\n", st.Store, cell(st.Reason))
		}
	}
	for _, s := range r.Scaling {
		row(s)
	}
	for _, s := range r.Twins {
		row(s)
	}
	if f := fitRuns(r.Scaling, func(s SuiteRun) float64 { return float64(s.Scenarios) }); f.OK {
		p("\nGrowth with scenario count (least squares over the scenario-count runs): wall ≈ %s + %s per scenario.\n", fmtDur(f.Fixed), fmtDur(f.PerUnit))
	}
	if f := fitRuns(r.Twins, func(s SuiteRun) float64 { return float64(s.Concurrency) }); f.OK {
		p("\nGrowth with twin count (twins-01; `--concurrency N` runs N twins, the scenario asks for 32, so N above 32 changes nothing): wall ≈ %s + %s per twin.\n", fmtDur(f.Fixed), fmtDur(f.PerUnit))
	}
	var errs []string
	for _, s := range append(append([]SuiteRun(nil), r.Scaling...), r.Twins...) {
		if s.Err != "" && s.Scenarios > 0 {
			errs = append(errs, fmt.Sprintf("- %s (%s): %s\n", s.Label, s.Store, cell(s.Err)))
		}
	}
	for _, st := range r.Stores {
		if st.Suite != nil && st.Suite.Err != "" && st.Suite.Scenarios > 0 {
			errs = append(errs, fmt.Sprintf("- %s (%s): %s\n", st.Suite.Label, st.Store, cell(st.Suite.Err)))
		}
	}
	if len(errs) > 0 {
		p("\n%s", strings.Join(errs, ""))
	}
	if notes := Notes(r); len(notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range notes {
			p("- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Notes are the observations the figures support, each written only when
// the figures show it.
func Notes(r Results) []string {
	var out []string
	for _, st := range r.Stores {
		one, ok1 := st.scaleAt(1, 1)
		conc, ok2 := st.scaleAt(1, r.Setup.Concurrency)
		if ok1 && ok2 && one.Stats.Rate > 0 && conc.Stats.Rate < 1.5*one.Stats.Rate {
			out = append(out, fmt.Sprintf("%s keyed first calls: %d clients on one wallet reach %s, one client %s: %d× the clients give %.1f× the calls. "+
				"The calls queue on the store's writes (SQLite admits one writer at a time; on PostgreSQL every charge of the wallet updates its row); "+
				"the block profile of a missed target's phase shows where they wait.",
				st.Store, r.Setup.Concurrency, fmtRate(conc.Stats.Rate), fmtRate(one.Stats.Rate), r.Setup.Concurrency, conc.Stats.Rate/one.Stats.Rate))
		}
	}
	for _, st := range r.Stores {
		// A wallet per client removes the one row every charge updates: when
		// that buys little, the row is not what bounds first calls, whatever
		// share of the waits its lock has.
		if med, each := medianOf(st.Rounds, Round.hotRatio); st.Store == PostgreSQL && len(each) > 0 && med >= HotWalletMin {
			out = append(out, fmt.Sprintf("%s keyed first calls: with a wallet of its own for every client they run at %s the rate of all clients on one wallet "+
				"(median of %d rounds): splitting the wallet's row would buy at most that. The rest of a first call's cost is its two commits and the CPU "+
				"the gateway, the store and the load client share on this machine's %d cores.",
				st.Store, fmtRatio(1/med), len(each), r.Machine.NumCPU))
		}
	}
	for _, st := range r.Stores {
		hot, _ := medianOf(st.Rounds, Round.hotRatio)
		for _, pr := range st.Profiles {
			if n := profileNote(pr, hot); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// profileNote says what a profile shows, when it shows one cause clearly:
// on PostgreSQL the sessions' row-lock and WAL-flush waits, on SQLite the
// wait for this process's one writer.
// hot is the store's median hot-wallet ratio (0 when not measured): once
// one wallet runs nearly as fast as a wallet per client, the wallet's row
// is not what would meet a target.
func profileNote(pr Profiled, hot float64) string {
	sat := saturatedNote(pr)
	if sat != "" && !strings.Contains(pr.Phase, "replays") {
		return sat
	}
	if strings.Contains(pr.Phase, "replays") {
		// A replay's cost is all CPU: the saturation note says whose, the
		// breakdown below what it is spent on; both stay.
		if sat != "" {
			sat += " "
		}
		var mcp float64
		for _, c := range pr.CPUCum {
			if strings.HasSuffix(c.Package, "go-sdk/mcp") || strings.HasSuffix(c.Package, "/reference/wire") {
				mcp = max(mcp, c.Frac)
			}
		}
		head := fmt.Sprintf("%s %s: a replay", pr.Store, pr.Phase)
		if sat != "" {
			head = sat + "A replay"
		}
		return head + fmt.Sprintf(" writes nothing; it costs its reads and the MCP stack. It reads the API key, with the tool registry's version in the same statement "+
			"(the process keeps the tool's entry while that version stays the same), and the stored record: two store round trips. "+
			"go-sdk's server and the gateway's wire layer are on %.0f%% of the CPU samples' stacks (HTTP, JSON-RPC, the stored result written into the answer). "+
			"Its store work is the two reads its ideal counts, so what is left between it and the target is the MCP stack's own cost "+
			"(go-sdk's JSON path takes a fresh decoder buffer for each internal Unmarshal, which the GC then collects).", 100*mcp)
	}
	var lock, wal float64
	for _, w := range pr.DBWaits {
		switch {
		case strings.Contains(w.Package, "Lock:transactionid"), strings.Contains(w.Package, "Lock:tuple"):
			lock += w.Frac
		case strings.Contains(w.Package, "WALWrite"), strings.Contains(w.Package, "WALSync"):
			wal += w.Frac
		}
	}
	if lock+wal >= 0.3 && hot >= HotWalletMin {
		return fmt.Sprintf("%s %s: the gateway's sessions were waiting on a row lock in %.0f%% of the samples and on the WAL flush of a commit in %.0f%%. "+
			"A row stays locked until its commit is flushed to disk, so the waits on a lock are also waits on a flush; yet one wallet runs at %s the rate of a wallet per client, "+
			"so the wallet's row is not what bounds the calls: a first call's two commits and their WAL flushes are, with the CPU the gateway, the server and the load client share. "+
			"What would meet the target: a faster WAL flush (the server's disk, or its commit_delay grouping flushes), or a first call with fewer commits, "+
			"which its reservation before the dispatch and its outcome after rule out.",
			pr.Store, pr.Phase, 100*lock, 100*wal, fmtRatio(hot))
	}
	if lock+wal >= 0.3 {
		return fmt.Sprintf("%s %s: the gateway's sessions were waiting on a row lock in %.0f%% of the samples and on the WAL flush of a commit in %.0f%%. "+
			"Every charge of a wallet updates its row, which stays locked until the commit is flushed to disk, so the charges of one wallet run one flush after another: "+
			"the server's commit latency, not this process, bounds them (a first call commits twice: the reservation with its charge, then the outcome). "+
			"What would meet the target: charges of one wallet that do not all wait on one row "+
			"(its balance split over a few rows, or debited from an allowance set aside in advance), and a faster WAL flush (the server's disk, or its commit_delay grouping flushes).",
			pr.Store, pr.Phase, 100*lock, 100*wal)
	}
	for _, b := range pr.Block {
		if strings.HasSuffix(b.Package, "/reference/store/sqlite") && b.Frac >= 0.5 {
			return fmt.Sprintf("%s %s: %.0f%% of the gateway's waiting was for this process's one SQLite writer (the store's write queue): "+
				"SQLite admits one writer, and a first call makes two write transactions (the reservation with its charge, then the outcome, an unkeyed one too, its retry lock taken inside the first), "+
				"which queued writes share by group commit; no commit waits for a checkpoint (they run off the commit path), but each appends every page it changed to the WAL "+
				"(the record and its indexes, the permit, the ledger entry, the wallet), two writes a page, all on the one writer. "+
				"What would meet the target: fewer pages changed per call, or a store that admits more than one writer "+
				"(PostgreSQL, whose limit is then the wallet row).", pr.Store, pr.Phase, 100*b.Frac)
		}
	}
	return ""
}

// saturatedNote: when the bench process and the PostgreSQL server kept
// the machine's cores busy, a wait on a lock or a flush is partly a wait
// for a core, so the waits do not say what would meet the target; less CPU
// per call would, on the side that used most.
func saturatedNote(pr Profiled) string {
	u := pr.Cores
	if !u.Saturated() {
		return ""
	}
	in := "the load client and the gateway"
	if !u.DB {
		in += ", SQLite in it"
	}
	used := fmt.Sprintf("the bench process (%s) used %.2f cores", in, u.Self)
	switch {
	case u.DB && u.DBUnmeasured != "":
		used += " (PostgreSQL's server processes not measured: " + u.DBUnmeasured + ")"
	case u.DB:
		used += fmt.Sprintf(" and PostgreSQL's server processes %.2f", u.DBCores)
	}
	most := "in the bench process, which used the most: the gateway's work per call (the CPU profile above says where; the load client's share is the bench's own)"
	switch {
	case !u.DB:
		most = "in the bench process, where the gateway and SQLite run: their work per call (the CPU profile above says where; the load client's share is the bench's own)"
	case u.DBUnmeasured == "" && u.DBCores > u.Self:
		most = "in PostgreSQL's server processes, which used the most: fewer or cheaper statements and commits per call"
	}
	return fmt.Sprintf("%s %s: the machine's cores were saturated: %s, %.2f of %d (%.0f%% or more counts as saturated). "+
		"The phase was CPU-bound, whatever its waits show (whoever holds a lock or flushes a commit waits for a core too): "+
		"what would meet the target is less CPU per call, first %s.",
		pr.Store, pr.Phase, used, u.Self+u.dbCores(), u.Of, 100*SaturatedFrac, most)
}

func (s StoreResults) scaleAt(procs, clients int) (ScalePoint, bool) {
	for _, sp := range s.Scale {
		if sp.Processes == procs && sp.Clients == clients {
			return sp, true
		}
	}
	return ScalePoint{}, false
}

// any reports whether f holds for a store.
func (r Results) any(f func(StoreResults) bool) bool {
	return slices.ContainsFunc(r.Stores, f)
}

// renderScale writes the scale table: keyed first calls on one wallet at
// growing client counts, and over several gateway processes.
func renderScale(p func(string, ...any), r Results) {
	if !r.any(func(st StoreResults) bool { return len(st.Scale) > 0 }) {
		return
	}
	p("\n## Scale: keyed first calls on one wallet\n\n")
	p("Closed-loop clients all on one wallet; with several gateway processes (separate `mcpconform` processes on one PostgreSQL) the clients take the processes in turn. " +
		"Each figure is one phase, measured after the rounds; × 1 client is the rate over the same store's one-client, one-process figure.\n\n")
	p("| store | gateway processes | clients | calls/s | × 1 client | per client | p50 | p99 | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, st := range r.Stores {
		one, _ := st.scaleAt(1, 1)
		for _, sp := range st.Scale {
			p("| %s | %d | %d | %s | %s | %s | %s | %s | %d |\n", st.Store, sp.Processes, sp.Clients, fmtRate(sp.Stats.Rate),
				fmtRatio(div(sp.Stats.Rate, one.Stats.Rate)), fmtRate(sp.Stats.Rate/float64(max(1, sp.Clients))),
				fmtDur(sp.Stats.P50), fmtDur(sp.Stats.P99), sp.Stats.Errors)
		}
	}
}

// renderRoundCores writes how many cores each phase of a store's last
// round used.
func renderRoundCores(p func(string, ...any), r Results) {
	if !r.any(func(st StoreResults) bool { return len(st.Rounds) > 0 && len(st.Rounds[len(st.Rounds)-1].Cores) > 0 }) {
		return
	}
	p("\n## Cores used in the last round\n\n")
	p("CPU time during each phase of the last round over its wall time, of the bench process (the load client, the bare server and the gateway) and of the PostgreSQL server's processes, out of nproc, as in the profiles' table (below).\n\n")
	p("| store | phase | calls/s | cores used |\n|---|---|---:|---|\n")
	for _, st := range r.Stores {
		if len(st.Rounds) == 0 {
			continue
		}
		rd := st.Rounds[len(st.Rounds)-1]
		phases := []Stats{rd.Baseline}
		if rd.Store != nil {
			phases = append(phases, rd.Store.First, rd.Store.Replay, rd.Store.Unkeyed)
		}
		for _, ph := range append(phases, rd.First, rd.Replay, rd.Unkeyed, rd.Spread) {
			if u, ok := rd.Cores[ph.Name]; ok {
				p("| %s | round %d: %s | %s | %s |\n", st.Store, len(st.Rounds), ph.Name, fmtRate(ph.Rate), cell(u.cores()))
			}
		}
	}
}

// renderProfiles writes the profiles of the missed targets' phases.
func renderProfiles(p func(string, ...any), r Results) {
	if !r.any(func(st StoreResults) bool { return len(st.Profiles) > 0 }) {
		return
	}
	p("\n## Profiles of the missed targets' phases\n\n")
	p("Each phase of a missed target run once more with the CPU profiler on and the block profiler recording every wait of %d µs or more (the gateway runs in the bench's process, so its client is in the profile too). "+
		"*CPU, flat*: on-CPU time by the package of the running function; *CPU, cumulative*: by every package on the stack; "+
		"*waited*: goroutines' blocked time by the first package up the stack that is not a waiting primitive's (runtime, sync, context, time, a pool's semaphore): the code that waited; "+
		"the load client's waits (its HTTP transport's included) and the MCP transport's wait for the tool handler's answer, which only contain the others, are left out. "+
		"Network reads (a PostgreSQL round trip) are not blocking in this sense: they show as the gap between the wall time and the CPU time.\n\n", BlockRate/1000)
	p("*PostgreSQL sessions*: the gateway's sessions sampled every %s during the phase (pg_stat_activity, idle ones left out), by state and wait event: "+
		"`Lock:transactionid` or `Lock:tuple` is a queue on a row lock, `Client:ClientRead` inside a transaction a session waiting for the gateway's next statement.\n\n", fmtDur(WaitEvery))
	p("*Cores used*: CPU time during the phase over its wall time, of the bench process (getrusage; the load client, the gateway and the profilers) and of every `postgres` process of a server on this machine (/proc/<pid>/stat, all its sessions, other databases' too), out of nproc; "+
		"a process that ended during the phase is left out, so the figure can fall short, never overstate; a server not on this machine is not measured, nor are other programs sharing the cores. At %.0f%% of nproc or more the cores were saturated.\n\n", 100*SaturatedFrac)
	p("| store | phase | calls/s profiled | cores used | CPU, flat | CPU, cumulative | waited | PostgreSQL sessions | files |\n|---|---|---:|---|---|---|---|---|---|\n")
	for _, st := range r.Stores {
		for _, pr := range st.Profiles {
			if pr.Err != "" {
				p("| %s | %s | | | error: %s | | | | |\n", st.Store, pr.Phase, cell(pr.Err))
				continue
			}
			db := "–"
			if len(pr.DBWaits) > 0 {
				db = shareList(pr.DBWaits)
			}
			p("| %s | %s | %s | %s | %.1f s: %s | %s | %.1f s: %s | %s | `%s`, `%s` |\n", st.Store, pr.Phase, fmtRate(pr.Rate), cell(pr.Cores.cores()),
				pr.CPUTotal, shareList(pr.CPU), shareList(pr.CPUCum), pr.BlockTotal, shareList(pr.Block), db,
				filepath.Base(pr.CPUFile), filepath.Base(pr.BlockFile))
		}
	}
}

func ratioOf(s StoreResults, phase string, base float64) string {
	p, ok := s.Phase(phase)
	if !ok {
		return "–"
	}
	return fmtRatio(div(p.Rate, base))
}

func keyedAnswered(s StoreResults) string {
	if k, ok := s.storm(true); ok {
		return fmtDur(k.Answered)
	}
	return "–"
}

func fitRuns(runs []SuiteRun, x func(SuiteRun) float64) Fit {
	var xs []float64
	var ys []time.Duration
	for _, s := range runs {
		if s.Scenarios == 0 {
			continue
		}
		xs = append(xs, x(s))
		ys = append(ys, s.Wall)
	}
	return FitLine(xs, ys)
}

func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

func fmtRate(r float64) string { return fmt.Sprintf("%.0f/s", r) }

// fmtDur writes a duration in ms below 1 s (more decimals the shorter), else in s.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
