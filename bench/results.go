package bench

import (
	"fmt"
	"io"
	"math"
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
	Store    string    `json:"store"` // "SQLite", "PostgreSQL"
	Measured bool      `json:"measured"`
	Reason   string    `json:"reason,omitempty"` // why not measured
	Phases   []Stats   `json:"phases,omitempty"`
	Storms   []Storm   `json:"storms,omitempty"`
	Rounds   []Round   `json:"rounds,omitempty"` // interleaved, for the rate targets
	Suite    *SuiteRun `json:"suite,omitempty"`
	Err      string    `json:"err,omitempty"` // a failure part-way
}

// Round is one interleaved measurement for the rate targets: the bare
// server, then the gateway's keyed first calls and replays, back to back.
type Round struct {
	Baseline Stats `json:"baseline"`
	First    Stats `json:"first"`
	Replay   Stats `json:"replay"`
}

// ratio is the gateway phase's rate over the round's own baseline, 0 when
// either is missing.
func (r Round) ratio(phase string) float64 {
	p := r.First
	if phase == PhaseKeyedReplay {
		p = r.Replay
	}
	if r.Baseline.Rate <= 0 || p.Calls == 0 {
		return 0
	}
	return p.Rate / r.Baseline.Rate
}

// medianRatio is the median of the rounds' ratios for phase.
func medianRatio(rounds []Round, phase string) (float64, []float64) {
	rs := make([]float64, len(rounds))
	for i, r := range rounds {
		rs[i] = r.ratio(phase)
	}
	sorted := slices.Clone(rs)
	slices.Sort(sorted)
	n := len(sorted)
	if n == 0 {
		return 0, nil
	}
	if n%2 == 1 {
		return sorted[n/2], rs
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2, rs
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

// Target is one of issue 5's targets and how this run did.
type Target struct {
	Name     string
	Got      string
	Measured bool
	Met      bool
}

// StormDeadline is the storm target's bound.
const StormDeadline = 2 * time.Second

// Targets evaluates issue 5's targets: keyed first calls at no less than a
// third of the bare server's rate on SQLite, replays at no less than half,
// and a twin storm answered within 2 s with one dispatch (and one debit), on
// every store measured.
func Targets(r Results) []Target {
	var out []Target
	sq, _ := r.Store(SQLite)
	rate := func(phase string, num, den int) Target {
		t := Target{Name: fmt.Sprintf("%s on SQLite ≥ %d/%d of the bare server's rate", phase, num, den)}
		if len(sq.Rounds) > 0 {
			// The rounds decide: each ratio against the bare server as it
			// ran seconds before, not a minute away.
			med, each := medianRatio(sq.Rounds, phase)
			parts := make([]string, len(each))
			for i, x := range each {
				parts[i] = fmtRatio(x)
			}
			t.Measured = true
			t.Met = med*float64(den) >= float64(num)
			t.Got = fmt.Sprintf("median %s of %d interleaved rounds (%s)", fmtRatio(med), len(each), strings.Join(parts, ", "))
			return t
		}
		p, ok := sq.Phase(phase)
		if !ok || r.Baseline.Rate == 0 {
			t.Got = "not measured" + because(sq)
			return t
		}
		ratio := p.Rate / r.Baseline.Rate
		t.Measured = true
		t.Met = ratio*float64(den) >= float64(num) && p.Calls > 0
		t.Got = fmt.Sprintf("%s (%s vs %s)", fmtRatio(ratio), fmtRate(p.Rate), fmtRate(r.Baseline.Rate))
		return t
	}
	out = append(out, rate(PhaseKeyedFirst, 1, 3), rate(PhaseKeyedReplay, 1, 2))
	for _, st := range r.Stores {
		for _, keyed := range []bool{true, false} {
			t := Target{Name: fmt.Sprintf("%s twin storm of %d on %s answered within %s, one dispatch, one debit",
				keyWord(keyed), r.Setup.StormN, st.Store, fmtDur(StormDeadline))}
			s, ok := st.storm(keyed)
			if !ok {
				t.Got = "not measured" + because(st)
				out = append(out, t)
				continue
			}
			t.Measured = true
			t.Met = s.N == r.Setup.StormN && s.Answered <= StormDeadline && s.Other == 0 &&
				s.Dispatches == 1 && s.Debits == 1
			t.Got = fmt.Sprintf("all answered in %s; %d dispatch(es), %d debit(s)", fmtDur(s.Answered), s.Dispatches, s.Debits)
			if s.Other > 0 {
				t.Got += fmt.Sprintf("; %d unexpected answer(s)", s.Other)
			}
			out = append(out, t)
		}
	}
	return out
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
	p("Written by `go run ./bench/cmd/mcpbench` (`make bench`) from one run on one machine; not edited by hand.\n\n")
	p("| machine | |\n|---|---|\n")
	p("| date | %s |\n", r.Date.UTC().Format(time.RFC3339))
	p("| go | %s |\n", r.Machine.GoVersion)
	p("| GOOS/GOARCH | %s/%s |\n", r.Machine.OS, r.Machine.Arch)
	p("| nproc | %d (GOMAXPROCS %d) |\n", r.Machine.NumCPU, r.Machine.GOMAXPROCS)
	if r.Machine.CPU != "" {
		p("| cpu | %s |\n", cell(r.Machine.CPU))
	}
	p("| client | %d goroutines, closed loop, %s warm-up then %s per phase; stateless MCP 2026-07-28 over HTTP/1.1 keep-alive on 127.0.0.1, the same client for every figure |\n",
		r.Setup.Concurrency, fmtDur(r.Setup.Warmup), fmtDur(r.Setup.Duration))
	p("| bench wall time | %s |\n\n", fmtDur(r.Wall))

	p("## Targets (issue 5)\n\n| target | this run | verdict |\n|---|---|---|\n")
	for _, t := range Targets(r) {
		verdict := "**not met**"
		switch {
		case !t.Measured:
			verdict = "not measured"
		case t.Met:
			verdict = "met"
		}
		p("| %s | %s | %s |\n", cell(t.Name), cell(t.Got), verdict)
	}

	for _, st := range r.Stores {
		if len(st.Rounds) == 0 {
			continue
		}
		p("\n## Interleaved rounds (%s)\n\n", st.Store)
		p("The rate targets are judged on these: each round measures the bare server, then the gateway's keyed first calls and their replays, back to back, " +
			"and each ratio is to that round's own bare-server figure; the target uses the median round.\n\n")
		p("| round | bare server | keyed first calls | × bare | keyed replays | × bare |\n|---:|---:|---:|---:|---:|---:|\n")
		for i, rd := range st.Rounds {
			p("| %d | %s | %s | %s | %s | %s |\n", i+1, fmtRate(rd.Baseline.Rate), fmtRate(rd.First.Rate), fmtRatio(rd.ratio(PhaseKeyedFirst)),
				fmtRate(rd.Replay.Rate), fmtRatio(rd.ratio(PhaseKeyedReplay)))
		}
	}

	p("\n## Calls per second and latency\n\n")
	p("Ratios are to the bare go-sdk server measured in the same run: calls/s × bare (higher is better), latency × bare (lower is better). " +
		"Only calls answered as expected count (a first call: a fresh receipt; a replay: `replayed: true`); errors are the others.\n\n")
	if len(r.BaselineRuns) > 1 {
		var rates []string
		for _, b := range r.BaselineRuns {
			rates = append(rates, fmtRate(b.Rate))
		}
		p("The bare server was measured %d times in this run, before and after each store's phases (%s); the ratios use the fastest of them, so a slower moment of the machine does not flatter the gateway.\n\n",
			len(r.BaselineRuns), strings.Join(rates, ", "))
	}
	p("| store | phase | calls | errors | calls/s | × bare | p50 | × bare | p99 | × bare |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	bl := r.Baseline
	blName := bl.Name
	if len(r.BaselineRuns) > 1 {
		blName += " (fastest run)"
	}
	p("| none | %s | %d | %d | %s | 1.00× | %s | 1.00× | %s | 1.00× |\n", blName, bl.Calls, bl.Errors, fmtRate(bl.Rate), fmtDur(bl.P50), fmtDur(bl.P99))
	for _, st := range r.Stores {
		if !st.Measured {
			p("| %s | not measured: %s | | | | | | | | |\n", st.Store, cell(st.Reason))
			continue
		}
		for _, ph := range st.Phases {
			p("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", st.Store, ph.Name, ph.Calls, ph.Errors,
				fmtRate(ph.Rate), fmtRatio(div(ph.Rate, bl.Rate)),
				fmtDur(ph.P50), fmtRatio(div(float64(ph.P50), float64(bl.P50))),
				fmtDur(ph.P99), fmtRatio(div(float64(ph.P99), float64(bl.P99))))
		}
		if st.Err != "" {
			p("| %s | stopped: %s | | | | | | | | |\n", st.Store, cell(st.Err))
		}
	}
	var firstErrs []string
	for _, st := range r.Stores {
		for _, ph := range st.Phases {
			if ph.FirstError != "" {
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
	sq, _ := r.Store(SQLite)
	first, ok1 := sq.Phase(PhaseKeyedFirst)
	serial, ok2 := sq.Phase(PhaseKeyedSerial)
	firstMissed := false
	for _, t := range Targets(r) {
		if strings.HasPrefix(t.Name, PhaseKeyedFirst+" on SQLite") {
			firstMissed = t.Measured && !t.Met
		}
	}
	if ok1 && ok2 && firstMissed && serial.Rate > 0 && first.Rate < 1.5*serial.Rate {
		out = append(out, fmt.Sprintf("SQLite keyed first calls: %d clients reach %s, one client %s: %d× the clients give %.1f× the calls, and a p99 of %s. "+
			"Each first call makes three write transactions (reserve, charge, finish with its dispatch row; an unkeyed call five, with the lock row's acquire and release), "+
			"and SQLite admits one writer at a time: this process's writes queue for it, and those queued together share one transaction (group commit). "+
			"The write path, not the MCP layer, is what misses the target: replays, which only read, run at %s of the bare server.",
			r.Setup.Concurrency, fmtRate(first.Rate), fmtRate(serial.Rate), r.Setup.Concurrency, first.Rate/serial.Rate, fmtDur(first.P99),
			ratioOf(sq, PhaseKeyedReplay, r.Baseline.Rate)))
	}
	for _, st := range r.Stores {
		s, ok := st.storm(false)
		if !ok {
			continue
		}
		if s.Answered > StormDeadline && st.Store == SQLite {
			out = append(out, fmt.Sprintf("SQLite unkeyed storm: a twin that reads no live retry lock takes the database's write lock to acquire it "+
				"(AcquireLock's insert, an immediate transaction), while the holder needs four more write transactions (fenced reserve, charge, "+
				"finish, the lock's release) and queues for the same lock as %d others; keyed twins take the write lock for their reservation too but roll back "+
				"without committing, and all answered in %s.", s.N-1, keyedAnswered(st)))
		}
		if s.Unsettled > 0 || s.Settled > 4*max(s.Answered, time.Second) {
			left := fmt.Sprintf("all settled in %s, %.1f× the time to answer", fmtDur(s.Settled), float64(s.Settled)/float64(max(s.Answered, 1)))
			if s.Unsettled > 0 {
				left = fmt.Sprintf("%d still unsettled after %s", s.Unsettled, fmtDur(SettleTimeout))
			}
			out = append(out, fmt.Sprintf("%s unkeyed storm, settling: a twin that retries after the first call finished still needs the retry lock to join "+
				"its slot, so retries of one finished unkeyed call run one at a time and the others are told in progress again (%s).", st.Store, left))
		}
	}
	return out
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
