package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Phase names of a target bench (mcpconform bench), in the order a round
// runs them. The bare phase calls the harness's probe directly, the very
// upstream the gateway forwards to, so a ratio is the gateway's own cost.
const (
	TargetBare       = "bare probe (the upstream, called directly)"
	TargetKeyedFirst = "keyed first calls"
	TargetReplays    = "keyed replays"
	TargetUnkeyed    = "unkeyed calls"
)

// TargetSpec is what MeasureTarget needs of a gateway and of the probe its
// tool forwards to. It speaks to both only through drivers/wire clients,
// configured as the profile says (key placement, auth, protocol), so any
// gateway a profile describes can be measured.
type TargetSpec struct {
	Bare     *wire.Client // the probe's MCP endpoint
	BareTool string       // the probe's tool the gateway's Tool forwards to
	Gateway  *wire.Client
	Tool     string // the gateway's tool that forwards to BareTool
	// NoUnkeyed says why unkeyed calls are not measured ("" measures
	// them): a gateway whose policy refuses them has nothing to time.
	NoUnkeyed string
	// InProgress reports the gateway's retryable refusal of a twin while
	// the first call runs: a storm's twins retry it until they settle.
	InProgress func(*wire.Answer) bool
	// Dispatches counts the probe's dispatches of tokens starting with
	// prefix: the harness counts, never the gateway.
	Dispatches func(ctx context.Context, prefix string) (int, error)
	Prefix     string // every token starts with it (the run id), so a shared probe never mixes runs
	Load       Load   // each phase of each round
	Rounds     int
	StormN     int
	// Settle is how long a storm's late dispatches get to show before the
	// probe is read.
	Settle   time.Duration
	Progress func(format string, args ...any) // one line per phase; nil for none
}

// TargetPhase is one phase of one round: its figures, the calls sent
// (warm-up and past the window included) and the dispatches the probe
// counted for their tokens.
type TargetPhase struct {
	Stats
	Sent       int     `json:"sent"`
	Dispatches int     `json:"dispatches"`
	Ratio      float64 `json:"ratio"`     // rate over the round's bare rate (1 for the bare phase)
	P99Ratio   float64 `json:"p99_ratio"` // p99 over the round's bare p99; 0 when nothing was answered
}

// TargetSummary is one phase over every round: medians of the figures
// and ratios, totals of calls, errors, sends and dispatches.
type TargetSummary struct {
	Name       string        `json:"name"`
	Rate       float64       `json:"rate"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Ratio      float64       `json:"ratio"`
	P99Ratio   float64       `json:"p99_ratio"`
	Calls      int           `json:"calls"`
	Errors     int           `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	Sent       int           `json:"sent"`
	Dispatches int           `json:"dispatches"`
}

// TargetStorm is N identical calls released together, through the
// gateway (keyed: one key, one dispatch is the contract) or to the bare
// probe (which dispatches each: it is the timing reference).
type TargetStorm struct {
	Through string `json:"through"` // "gateway" or "bare"
	N       int    `json:"n"`
	// Answered: from the release until every call had its first answer;
	// Settled: until every one held a result, in-progress refusals retried.
	Answered   time.Duration `json:"answered"`
	Settled    time.Duration `json:"settled"`
	Results    int           `json:"results"`     // first answers that were results
	InProgress int           `json:"in_progress"` // first answers that were the in-progress refusal
	Other      int           `json:"other"`
	FirstOther string        `json:"first_other,omitempty"`
	Unsettled  int           `json:"unsettled"` // still without a result at the deadline
	Receipts   int           `json:"receipts"`  // distinct receipts once settled ("" not counted)
	Dispatches int           `json:"dispatches"`
	Ratio      float64       `json:"ratio"` // settled time over the bare storm's (lower is better); 0 without one
}

// TargetResults are one target bench.
type TargetResults struct {
	Date     time.Time       `json:"date"`
	Wall     time.Duration   `json:"wall"`
	Target   string          `json:"target"`
	Profile  string          `json:"profile,omitempty"`
	Protocol string          `json:"protocol,omitempty"`
	Tool     string          `json:"tool"`
	Setup    TargetSetup     `json:"setup"`
	Summary  []TargetSummary `json:"summary"`
	Rounds   [][]TargetPhase `json:"rounds"`
	Storms   []TargetStorm   `json:"storms"`
	Skipped  []string        `json:"skipped,omitempty"` // phases not measured, and why
	Findings []string        `json:"findings"`
	Err      string          `json:"err,omitempty"` // a failure part-way; the figures before it stand
}

// TargetSetup is how the figures were measured.
type TargetSetup struct {
	Concurrency int           `json:"concurrency"`
	Warmup      time.Duration `json:"warmup"`
	Duration    time.Duration `json:"duration"`  // each phase's window
	MaxCalls    int           `json:"max_calls"` // counted calls per phase at most
	Rounds      int           `json:"rounds"`
	StormN      int           `json:"storm_n"`
	Budget      time.Duration `json:"budget"`
}

// MeasureTarget runs s.Rounds interleaved rounds (bare probe, keyed first
// calls, their replays, unkeyed calls) and then a storm to the bare probe
// and one through the gateway, and states what the probe's counts show.
// It stops at ctx's end with what it has, the error in res.Err.
func MeasureTarget(ctx context.Context, s TargetSpec) TargetResults {
	res := TargetResults{Tool: s.Tool}
	if s.NoUnkeyed != "" {
		res.Skipped = append(res.Skipped, TargetUnkeyed+": "+s.NoUnkeyed)
	}
	fail := func(err error) TargetResults {
		res.Err = err.Error()
		res.finish()
		return res
	}
	for i := range s.Rounds {
		round, err := s.round(ctx, i)
		if len(round) > 0 {
			res.Rounds = append(res.Rounds, round)
		}
		if err != nil {
			return fail(fmt.Errorf("round %d: %w", i+1, err))
		}
	}
	if s.StormN > 0 {
		for _, through := range []string{"bare", "gateway"} {
			st, err := s.storm(ctx, through)
			if err != nil {
				return fail(fmt.Errorf("storm %s: %w", through, err))
			}
			res.Storms = append(res.Storms, st)
			s.progress("storm %s: %d identical calls: answered %v, settled %v, %d dispatches at the probe",
				through, st.N, st.Answered.Round(time.Microsecond), st.Settled.Round(time.Microsecond), st.Dispatches)
		}
		res.Storms[0].Ratio = 1 // the bare storm is its own reference
		if b := res.Storms[0]; b.Settled > 0 && res.Storms[1].Unsettled == 0 {
			res.Storms[1].Ratio = float64(res.Storms[1].Settled) / float64(b.Settled)
		}
	}
	res.finish()
	return res
}

func (s TargetSpec) progress(format string, args ...any) {
	if s.Progress != nil {
		s.Progress(format, args...)
	}
}

// round is round i: each phase back to back, its ratios against this
// round's bare phase, so a machine that slows between rounds moves both.
func (s TargetSpec) round(ctx context.Context, i int) ([]TargetPhase, error) {
	tag := func(phase string) string { return s.Prefix + "-" + phase + strconv.Itoa(i) + "-" }
	var out []TargetPhase
	add := func(p TargetPhase) {
		base := p.Stats // the bare phase, first, is its own baseline
		if len(out) > 0 {
			base = out[0].Stats
		}
		p.Ratio, p.P99Ratio = RateRatio(p.Stats, base), finite(P99Ratio(p.Stats, base))
		out = append(out, p)
		s.progress("round %d/%d: %s: %.0f calls/s (%.2fx bare), p50 %v, p99 %v, %d errors, %d sent, %d dispatches",
			i+1, s.Rounds, p.Name, p.Rate, p.Ratio, p.P50, p.P99, p.Errors, p.Sent, p.Dispatches)
	}
	bare, err := s.phase(ctx, TargetBare, tag("b"), s.Bare, s.BareTool, nil, false)
	if err != nil {
		return out, err
	}
	add(bare)
	first, done, err := s.keyedFirst(ctx, tag("k"))
	if err != nil {
		return out, err
	}
	add(first)
	if len(done) == 0 {
		return out, fmt.Errorf("no keyed first call through the gateway was answered with a result: %s", first.FirstError)
	}
	// A replay is a new dispatch only if the gateway dispatched the key
	// again: the count after the replays less the count after the first
	// calls.
	before, err := s.Dispatches(ctx, tag("k"))
	if err != nil {
		return out, fmt.Errorf("count dispatches: %w", err)
	}
	replays, err := s.phase(ctx, TargetReplays, tag("k"), s.Gateway, s.Tool, done, true)
	if err != nil {
		return out, err
	}
	replays.Dispatches -= before
	add(replays)
	if s.NoUnkeyed == "" {
		unkeyed, err := s.phase(ctx, TargetUnkeyed, tag("u"), s.Gateway, s.Tool, nil, false)
		if err != nil {
			return out, err
		}
		add(unkeyed)
	}
	return out, ctx.Err()
}

// keyedFirst is the keyed first-call phase: a new token (and key) each.
// It returns the tokens answered with a result, for the replays.
func (s TargetSpec) keyedFirst(ctx context.Context, prefix string) (TargetPhase, []string, error) {
	var mu sync.Mutex
	var done []string
	var sent atomic.Int64
	st := Run(ctx, s.Load, func(ctx context.Context, i int) error {
		sent.Add(1)
		token := prefix + strconv.Itoa(i)
		if err := answered(s.Gateway.CallTool(ctx, wire.Call{Tool: s.Tool, Arguments: tokenArgs(token), IdempotencyKey: token})); err != nil {
			return err
		}
		mu.Lock()
		done = append(done, token)
		mu.Unlock()
		return nil
	})
	st.Name = TargetKeyedFirst
	p, err := s.counted(ctx, st, int(sent.Load()), prefix)
	return p, done, err
}

// phase runs calls of tool through c: new tokens under prefix, or, when
// replay is given, those tokens again round robin, keyed when keyed.
func (s TargetSpec) phase(ctx context.Context, name, prefix string, c *wire.Client, tool string, replay []string, keyed bool) (TargetPhase, error) {
	var sent atomic.Int64
	st := Run(ctx, s.Load, func(ctx context.Context, i int) error {
		sent.Add(1)
		token := prefix + strconv.Itoa(i)
		if len(replay) > 0 {
			token = replay[i%len(replay)]
		}
		call := wire.Call{Tool: tool, Arguments: tokenArgs(token)}
		if keyed {
			call.IdempotencyKey = token
		}
		return answered(c.CallTool(ctx, call))
	})
	st.Name = name
	return s.counted(ctx, st, int(sent.Load()), prefix)
}

// counted is a phase's figures with the probe's count of its tokens.
func (s TargetSpec) counted(ctx context.Context, st Stats, sent int, prefix string) (TargetPhase, error) {
	n, err := s.Dispatches(ctx, prefix)
	if err != nil {
		return TargetPhase{Stats: st, Sent: sent}, fmt.Errorf("%s: count dispatches: %w", st.Name, err)
	}
	return TargetPhase{Stats: st, Sent: sent, Dispatches: n}, nil
}

// storm releases StormN identical calls together (one token; through the
// gateway one key too), retries in-progress refusals with make bench's
// backoff until they settle, then reads the probe's count.
func (s TargetSpec) storm(ctx context.Context, through string) (TargetStorm, error) {
	c, tool, keyed := s.Gateway, s.Tool, true
	if through == "bare" {
		c, tool, keyed = s.Bare, s.BareTool, false
	}
	token := s.Prefix + "-storm-" + through
	call := wire.Call{Tool: tool, Arguments: tokenArgs(token)}
	if keyed {
		call.IdempotencyKey = token
	}
	n := s.StormN
	firsts := make([]*wire.Answer, n)
	firstErr := make([]error, n)
	firstAt := make([]time.Duration, n)
	receipts := make([]string, n)
	settledOK := make([]bool, n)
	var released time.Time
	var once sync.Once
	deadline := time.Now().Add(SettleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	settled, _, _ := Release(ctx, n, func(i int) func(context.Context) error {
		return func(ctx context.Context) error {
			once.Do(func() { released = time.Now() })
			a, err := c.CallTool(ctx, call)
			firstAt[i], firsts[i], firstErr[i] = time.Since(released), a, err
			a, err = SettleTwin(a, err, s.inProgress, deadline, func() (*wire.Answer, error) { return c.CallTool(ctx, call) })
			if answered(a, err) == nil {
				settledOK[i], receipts[i] = true, a.Receipt()
			}
			return err
		}
	})
	st := TargetStorm{Through: through, N: n, Settled: settled}
	distinct := map[string]bool{}
	for i := range n {
		st.Answered = max(st.Answered, firstAt[i])
		switch err := answered(firsts[i], firstErr[i]); {
		case err == nil:
			st.Results++
		case firstErr[i] == nil && s.inProgress(firsts[i]):
			st.InProgress++
		default:
			st.Other++
			if st.FirstOther == "" {
				st.FirstOther = err.Error()
			}
		}
		if !settledOK[i] {
			st.Unsettled++
		} else if receipts[i] != "" {
			distinct[receipts[i]] = true
		}
	}
	st.Receipts = len(distinct)
	// A gateway may dispatch after it answered (a retry of its own, a
	// queue): the probe is read once they have had Settle to show.
	select {
	case <-ctx.Done():
	case <-time.After(s.Settle):
	}
	d, err := s.Dispatches(context.WithoutCancel(ctx), token)
	if err != nil {
		return st, fmt.Errorf("count dispatches: %w", err)
	}
	st.Dispatches = d
	return st, nil
}

func (s TargetSpec) inProgress(a *wire.Answer) bool {
	return a != nil && s.InProgress != nil && s.InProgress(a)
}

// tokenArgs are a probe call's arguments: the token it counts by.
func tokenArgs(token string) map[string]any { return map[string]any{"token": token} }

// answered is nil for a tool result that is not an error, else why not.
func answered(a *wire.Answer, err error) error {
	switch {
	case err != nil:
		return err
	case a == nil:
		return errors.New("no answer")
	case a.Status != http.StatusOK:
		return fmt.Errorf("HTTP %d", a.Status)
	case a.HasError():
		return fmt.Errorf("error %d %s: %s", a.ErrorCode(), a.ErrorReason(), a.ErrorMessage())
	case a.IsError():
		return fmt.Errorf("tool error: %.200s", a.Text())
	}
	return nil
}

// finite keeps +Inf (nothing answered) out of JSON, which cannot hold it:
// 0 there means no figure.
func finite(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return x
}

// finish sums the rounds up by phase and states the findings.
func (r *TargetResults) finish() {
	byName := map[string][]TargetPhase{}
	var order []string
	for _, round := range r.Rounds {
		for _, p := range round {
			if _, ok := byName[p.Name]; !ok {
				order = append(order, p.Name)
			}
			byName[p.Name] = append(byName[p.Name], p)
		}
	}
	r.Summary = nil
	for _, name := range order {
		ps := byName[name]
		sum := TargetSummary{Name: name}
		var rates, ratios, p99r, p50s, p99s []float64
		for _, p := range ps {
			rates, ratios, p99r = append(rates, p.Rate), append(ratios, p.Ratio), append(p99r, p.P99Ratio)
			p50s, p99s = append(p50s, float64(p.P50)), append(p99s, float64(p.P99))
			sum.Calls, sum.Errors, sum.Sent, sum.Dispatches = sum.Calls+p.Calls, sum.Errors+p.Errors, sum.Sent+p.Sent, sum.Dispatches+p.Dispatches
			if sum.FirstError == "" {
				sum.FirstError = p.FirstError
			}
		}
		sum.Rate, sum.Ratio, sum.P99Ratio = Median(rates), Median(ratios), Median(p99r)
		sum.P50, sum.P99 = time.Duration(Median(p50s)), time.Duration(Median(p99s))
		r.Summary = append(r.Summary, sum)
	}
	r.Findings = targetFindings(r.Summary, r.Storms)
}

// targetFindings are what the probe's counts show, one line each; a
// double dispatch leads its line with DOUBLE DISPATCH.
func targetFindings(sum []TargetSummary, storms []TargetStorm) []string {
	var out []string
	for _, s := range sum {
		switch {
		case s.Name == TargetReplays && s.Dispatches > 0:
			out = append(out, fmt.Sprintf("DOUBLE DISPATCH: %d replays (same key, same arguments) reached the probe again %d times; a replay must be answered from the record", s.Sent, s.Dispatches))
		case s.Name == TargetReplays:
			out = append(out, fmt.Sprintf("replays: %d replays, no new dispatch at the probe", s.Sent))
		case s.Name == TargetKeyedFirst && s.Dispatches > s.Sent:
			out = append(out, fmt.Sprintf("DOUBLE DISPATCH: %d keyed first calls made %d dispatches at the probe", s.Sent, s.Dispatches))
		}
		if s.Errors > 0 {
			out = append(out, fmt.Sprintf("%s: %d of %d answered calls were not results; the first: %s", s.Name, s.Errors, s.Errors+s.Calls, s.FirstError))
		}
	}
	for _, st := range storms {
		if st.Through != "gateway" {
			continue
		}
		switch {
		case st.Dispatches > 1:
			out = append(out, fmt.Sprintf("DOUBLE DISPATCH: a storm of %d identical keyed calls dispatched %d times at the probe (want 1): the gateway does not hold one key to one dispatch", st.N, st.Dispatches))
		case st.Dispatches == 1:
			out = append(out, fmt.Sprintf("storm: %d identical keyed calls, 1 dispatch at the probe", st.N))
		default:
			out = append(out, fmt.Sprintf("storm: %d identical keyed calls, no dispatch at the probe (is the tool's upstream this probe?)", st.N))
		}
		if st.Unsettled > 0 {
			out = append(out, fmt.Sprintf("storm: %d of %d twins held no result at the deadline; the first other answer: %s", st.Unsettled, st.N, st.FirstOther))
		}
		if st.Receipts > 1 {
			out = append(out, fmt.Sprintf("storm: %d twins of one key hold %d distinct receipts", st.N, st.Receipts))
		}
	}
	return out
}

// RenderTarget writes a target bench as Markdown: the findings first, then
// each phase's medians with its ratio to the bare probe, the storms, and
// how it was measured.
func RenderTarget(w io.Writer, r TargetResults) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# mcpconform bench: %s\n\n", r.Target)
	fmt.Fprintf(&b, "Tool `%s`", r.Tool)
	if r.Profile != "" {
		fmt.Fprintf(&b, ", profile %q", r.Profile)
	}
	if r.Protocol != "" {
		fmt.Fprintf(&b, ", MCP %s", r.Protocol)
	}
	fmt.Fprintf(&b, "; %s, %v in all.\n\n", r.Date.Format(time.RFC3339), r.Wall.Round(time.Millisecond))
	if r.Err != "" {
		fmt.Fprintf(&b, "**Stopped part-way:** %s\n\n", r.Err)
	}
	b.WriteString("## Findings\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("- none\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	b.WriteString("\n## Calls (medians over the rounds; ratios within each round)\n\n")
	b.WriteString("| phase | calls/s | × bare | p50 | p99 | p99 × bare | calls | errors | sent | dispatches at the probe |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %v | %v | %.2f | %d | %d | %d | %d |\n", s.Name, s.Rate, s.Ratio,
			s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.P99Ratio, s.Calls, s.Errors, s.Sent, s.Dispatches)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "\nNot measured: %s\n", s)
	}
	if len(r.Storms) > 0 {
		fmt.Fprintf(&b, "\n## Storms (%d identical calls released together)\n\n", r.Setup.StormN)
		b.WriteString("| to | answered | settled | settled × bare | results / in progress / other first | unsettled | receipts | dispatches at the probe |\n")
		b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|\n")
		for _, s := range r.Storms {
			fmt.Fprintf(&b, "| %s | %v | %v | %.2f | %d / %d / %d | %d | %d | %d |\n", s.Through,
				s.Answered.Round(time.Microsecond), s.Settled.Round(time.Microsecond), s.Ratio, s.Results, s.InProgress, s.Other, s.Unsettled, s.Receipts, s.Dispatches)
		}
		b.WriteString("\nThe bare probe has no idempotency: it dispatches every call of its storm, and is there for the time.\n")
	}
	st := r.Setup
	fmt.Fprintf(&b, "\n## Setup\n\n%d rounds of the phases back to back, each phase %d clients, %v warm-up, %v measured or %d calls; budget %v. "+
		"Ratios are figures of one machine at one moment, not targets: compare runs on the same machine.\n",
		st.Rounds, st.Concurrency, st.Warmup.Round(time.Millisecond), st.Duration.Round(time.Millisecond), st.MaxCalls, st.Budget)
	_, err := io.WriteString(w, b.String())
	return err
}
