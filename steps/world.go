package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

type worldKey struct{}

// world is one scenario's state. It travels in the context under an
// unexported key, so no two scenarios ever share a variable.
type world struct {
	env   *Env
	entry catalog.Entry
	start time.Time

	mu           sync.Mutex
	vars         map[string]string // $op1 -> a value unique to this scenario
	walletID     string
	apiKey       string
	keyID        string
	tools        map[string]string // alias in the feature -> tool name on the target
	prices       map[string]int64  // alias -> price
	clients      map[string]*client
	faults       map[string]string // fault point -> fault id
	principal    map[string]string // principal name -> principal id on the target
	permits      map[string]string // permit alias in the feature -> permit id on the target
	baseline     int64             // wallet balance right after the fixture
	receipts     []string          // every receipt seen, in order
	tokens       []string          // every probe token used
	crowd        []*answer
	workloadTool string
	staleLock    time.Duration // a scenario's own stale-lock threshold, if it set one // answers of the last concurrent step
	history      []reports.Op
	evidence     reports.Scenario

	clockMoved, settingsMoved, faultsArmed bool
	effectsRecorded                        bool
}

func getWorld(ctx context.Context) *world {
	w, _ := ctx.Value(worldKey{}).(*world)
	return w
}

// client is one named caller ("A", "alice"): its wire client and its answers.
type client struct {
	name    string
	wire    *wire.Client
	answers []*answer
	last    *wire.Call
	pending chan callOutcome
}

type callOutcome struct {
	answer *answer
	err    error
}

var varRef = regexp.MustCompile(`\$[a-z]+[0-9]+`)

// expand replaces $op1-style references with values unique to the scenario,
// so scenarios never collide on keys or probe tokens, even across runs.
func (w *world) expand(s string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := w.vars[ref]; ok {
			return v
		}
		v := strings.TrimPrefix(ref, "$") + "-" + uuid.NewString()[:8]
		w.vars[ref] = v
		if strings.HasPrefix(ref, "$op") {
			w.tokens = append(w.tokens, v)
		}
		return v
	})
}

func (w *world) record(op reports.Op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	op.Index = len(w.history)
	if op.Time.IsZero() {
		op.Time = time.Now()
	}
	w.history = append(w.history, op)
}

func (w *world) addExchange(ex reports.Exchange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.evidence.Exchanges = append(w.evidence.Exchanges, ex)
}

// check records an observed assertion and turns a mismatch into the step's
// error: expected next to actual, and the exchange to look at.
func (w *world) check(step string, ok bool, expected, actual string) error {
	w.mu.Lock()
	w.evidence.Checks = append(w.evidence.Checks, reports.Check{Step: step, OK: ok, Expected: expected, Actual: actual})
	if !ok && w.evidence.Expected == "" {
		w.evidence.Expected, w.evidence.Actual = expected, actual
	}
	w.mu.Unlock()
	if ok {
		return nil
	}
	return fmt.Errorf("%s\n  expected: %s\n  actual:   %s\n  evidence: evidence/%s.json", step, expected, actual, reports.SafeName(w.entry.ID))
}

// Register installs the hooks and steps for one scenario.
func Register(sc *godog.ScenarioContext, env *Env) {
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		w := newWorld(env, p)
		ctx = context.WithValue(ctx, worldKey{}, w)
		if missing := env.missing(w.entry.Needs); len(missing) > 0 {
			w.evidence.Verdict = reports.Skipped
			w.evidence.Reason = "target lacks capability " + strings.Join(missing, ", ")
			return ctx, fmt.Errorf("%s: %w", w.evidence.Reason, godog.ErrSkip)
		}
		return ctx, nil
	})
	sc.After(func(ctx context.Context, p *godog.Scenario, err error) (context.Context, error) {
		w := getWorld(ctx)
		if w == nil {
			return ctx, nil
		}
		w.finish(ctx, err)
		return ctx, nil
	})
	registerFixtures(sc)
	registerCalls(sc)
	registerControl(sc)
	registerAssertions(sc)
	registerCrowds(sc)
}

func newWorld(env *Env, p *godog.Scenario) *world {
	var tags []string
	for _, t := range p.Tags {
		tags = append(tags, t.Name)
	}
	id := catalog.IDOf(tags)
	entry, ok := env.Catalog[id]
	if !ok {
		entry = catalog.Entry{ID: id, Title: p.Name, Tags: tags}
	}
	w := &world{
		env: env, entry: entry, start: time.Now(),
		vars: map[string]string{}, tools: map[string]string{}, prices: map[string]int64{},
		clients: map[string]*client{}, faults: map[string]string{}, principal: map[string]string{}, permits: map[string]string{},
	}
	w.evidence = reports.Scenario{
		ID: entry.ID, Title: entry.Title, Feature: entry.Feature, Level: entry.Level,
		Tags: entry.Tags, Requirement: entry.Requirement, Source: entry.Source,
	}
	return w
}

// missing lists the needed capabilities the target lacks.
func (e *Env) missing(needs []string) []string {
	var out []string
	for _, n := range needs {
		if !e.Caps[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// finish settles the verdict from what was observed, collects the effects and
// puts the shared target back as it was (clock, faults, settings).
func (w *world) finish(ctx context.Context, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Put the target back first: resetting the faults releases any call a
	// failed step left paused, so it ends now instead of at its timeout.
	w.restore(ctx)
	// Let background calls end so their exchanges are part of the evidence.
	for _, c := range w.clients {
		if c.pending != nil {
			select {
			case out := <-c.pending:
				if out.answer != nil {
					c.answers = append(c.answers, out.answer)
				}
			case <-time.After(w.env.CallTimeout):
			}
			c.pending = nil
		}
	}
	if w.walletID != "" && w.env.Caps[CapLedger] {
		if l, lerr := w.ledger(ctx); lerr == nil {
			w.evidence.LedgerAfter = l
		}
	}
	if w.env.Probe != nil {
		for _, d := range w.env.Probe.Dispatches() {
			for _, tok := range w.tokens {
				if d.Token == tok {
					w.evidence.Dispatches = append(w.evidence.Dispatches, d)
				}
			}
		}
	}
	_ = w.recordEffects(ctx)
	w.evidence.History = w.history
	w.evidence.Duration = reports.Duration(time.Since(w.start))
	switch {
	case w.evidence.Verdict == reports.Skipped:
	case err == nil && len(w.evidence.Checks) == 0:
		// A scenario that observed nothing has not passed.
		w.evidence.Verdict, w.evidence.Reason = reports.Failed, "no check was observed"
	case err == nil:
		w.evidence.Verdict = reports.Passed
	case errors.Is(err, godog.ErrSkip):
		w.evidence.Verdict, w.evidence.Reason = reports.Skipped, err.Error()
	case errors.Is(err, godog.ErrUndefined) || strings.Contains(err.Error(), "step is undefined"):
		w.evidence.Verdict, w.evidence.Reason = reports.Undefined, err.Error()
	default:
		w.evidence.Verdict, w.evidence.Reason = reports.Failed, err.Error()
	}
	w.env.addResult(w.evidence)
}

func (w *world) restore(ctx context.Context) {
	for _, c := range w.env.Controls {
		if w.faultsArmed {
			_ = c.ResetFaults(ctx)
		}
		if w.clockMoved {
			_ = c.ResetClock(ctx)
		}
		if w.settingsMoved {
			_ = c.ResetSettings(ctx)
		}
	}
	if w.env.Probe != nil {
		for _, tok := range w.tokens {
			w.env.Probe.Unstall(tok)
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", err.Error()))
	}
	return b
}
