package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

type worldKey struct{}

// world is one scenario's state. It travels in the context under an
// unexported key, so no two scenarios ever share a variable.
type world struct {
	env   *Env
	entry catalog.Entry
	start time.Time

	mu          sync.Mutex
	vars        map[string]string // $op1 -> a value unique to this scenario
	walletID    string
	otherWallet string // a second wallet the harness made for the scenario ("other" in the history)
	apiKey      string
	keyID       string
	tools       map[string]string   // alias in the feature -> tool name on the target
	toolInfo    map[string]toolInfo // tool name on the target -> its role and price
	// repriced: tool name -> the prices it had before the scenario
	// re-priced it, oldest first.
	repriced     map[string][]int64
	prices       map[string]int64 // alias -> price
	clients      map[string]*client
	faults       map[string]string         // fault point -> fault id
	faultArmed   map[string]judge.EnvValue // fault point -> its last fault as the history has it
	principal    map[string]string         // principal name -> principal id on the target
	permits      map[string]string         // permit alias in the feature -> permit id on the target
	baseline     int64                     // wallet balance right after the fixture
	receipts     []string                  // every receipt seen, in order
	tokens       []string                  // every probe token used
	crowd        []*answer                 // answers of the last concurrent step
	holdToken    string                    // the token a held crowd stalls at the probe
	workloadTool string
	staleLock    time.Duration // a scenario's own stale-lock threshold, if it set one
	keep         time.Duration // a scenario's own retention, if it set one
	window       int64         // a scenario's own effective window (seconds), if it set one
	settled      *settlement   // the operator's settlement, once a step made one
	dims         dimensions    // the crossed dimensions it set (dimensions.go)
	history      []judge.Op
	evidence     reports.Scenario
	// counted are the probe-count checks, recounted once the probe settled:
	// a dispatch that arrives after the check still fails the scenario.
	counted    []countedCheck
	made       []madeCall  // every call made, with its client, for the last step of a generated scenario
	lastLedger *ledgerMark // the last ledger check, reread at the end of the run
	finalMark  *ledgerMark // the wallet as the scenario settled, reread at the end of the run

	clockMoved, settingsMoved, faultsArmed bool
	notApplicableWhy                       string // why the scenario does not apply to the target
	effectsRecorded                        bool
	// ended is set once the scenario's steps are over: what is recorded
	// then (a late dispatch) belongs to no step, and no step's check saw it.
	ended   bool
	stepErr error // the first step error or skip
	stepIdx int   // index of the step running, in the pickle's order
	// seen is what the running step looked at since its last check: the
	// witness the next check carries.
	seen judge.Witness
}

func getWorld(ctx context.Context) *world {
	w, _ := ctx.Value(worldKey{}).(*world)
	return w
}

// toolInfo is what the scenario set up a tool as.
type toolInfo struct {
	role  string
	price int64
}

// client is one named caller ("A", "alice"): its wire client and its answers.
type client struct {
	name string
	wire *wire.Client
	url  int // the index of its gateway URL
	// Who it is, as the history names it for the model: its API key
	// ("" the scenario's own, "second-key", "other-wallet"), the wallet it
	// charges ("" the scenario's, "other"), the principal it acts as, and
	// whether its principal token is forged.
	credential, wallet, principal string
	forged                        bool
	answers                       []*answer
	last                          *wire.Call
	pending                       chan callOutcome
	cancel                        context.CancelFunc // abandons the call in flight (pending)
}

type countedCheck struct {
	step, token string
	seen        int
	stepIdx     int // the step that made the check; a late recount is its own
	// n and atMost are what the check allowed: exactly n, or at most n.
	n      int
	atMost bool
}

type callOutcome struct {
	answer *answer
	err    error
}

var varRef = regexp.MustCompile(`\$(?:[a-z]+|K|L)[0-9]+`)

// longKeyPrefix is what every $L key starts with: 240 characters, so two
// $L keys are alike up to there and differ only in their last dozen (a key
// cut to any shorter length makes them one).
var longKeyPrefix = strings.Repeat("long-key-", 27)[:240]

// maxPad is the most characters a $pad reference stands for.
const maxPad = 1 << 20

// expand replaces $op1-style references with values unique to the scenario,
// so scenarios never collide on keys or probe tokens, even across runs.
// $K1 is $k1's value in capitals (another key: keys are case-sensitive);
// $L1 is $k1's value behind longKeyPrefix; $pad5000 is 5000 x's, an
// argument of that size.
func (w *world) expand(s string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if n, err := strconv.Atoi(strings.TrimPrefix(ref, "$pad")); strings.HasPrefix(ref, "$pad") && err == nil {
			return strings.Repeat("x", min(n, maxPad))
		}
		if strings.HasPrefix(ref, "$K") {
			return strings.ToUpper(w.valueLocked("$k" + strings.TrimPrefix(ref, "$K")))
		}
		if strings.HasPrefix(ref, "$L") {
			return longKeyPrefix + w.valueLocked("$k"+strings.TrimPrefix(ref, "$L"))
		}
		return w.valueLocked(ref)
	})
}

// valueLocked is ref's value, made on first use; w.mu is held.
func (w *world) valueLocked(ref string) string {
	if v, ok := w.vars[ref]; ok {
		return v
	}
	v := strings.TrimPrefix(ref, "$") + "-" + uuid.NewString()[:8]
	if strings.HasPrefix(ref, "$op") && w.env.RunID != "" {
		v = w.env.RunID + "-" + v
	}
	w.vars[ref] = v
	if strings.HasPrefix(ref, "$op") {
		w.tokens = append(w.tokens, v)
	}
	return v
}

// record appends an event to the history and returns its index.
func (w *world) record(op judge.Op) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	op.Index = len(w.history)
	if op.Step == nil {
		step := w.stepIdx
		op.Step = &step
	}
	if op.Time.IsZero() {
		op.Time = time.Now()
	}
	w.history = append(w.history, op)
	return op.Index
}

// addControl keeps a call the harness made beside the MCP exchanges.
func (w *world) addControl(ex reports.Exchange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.evidence.Control = append(w.evidence.Control, ex)
}

func (w *world) addExchange(ex reports.Exchange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.evidence.Exchanges = append(w.evidence.Exchanges, ex)
}

// what identifies a step's check: its kind and arguments (from which
// recheck recomputes it, never from its text) and the harm its violation
// means.
type what struct {
	kind string
	harm judge.Harm
	args map[string]string
}

func (id what) intArg(name string) int {
	n, _ := strconv.Atoi(id.args[name])
	return n
}

// checkOf names a check: its kind, its harm, and its arguments as name,
// value pairs.
func checkOf(kind string, harm judge.Harm, kv ...any) what {
	return what{kind: kind, harm: harm, args: judge.Args(kv...)}
}

// check records an observed assertion. A violation fails the scenario but
// does not stop it: the later steps run and their checks are observed too,
// so the evidence shows the harm a bug does (the second dispatch and debit
// after a stale holder answered wrongly), and the self-test can hold each
// bug to the check it names. The scenario's reason is built from the
// leading violated check and its witness (the requests, dispatches and
// ledger entries the step looked at) when the scenario ends.
func (w *world) check(id what, step, capability string, ok bool, expected, actual string) error {
	state := judge.Held
	if !ok {
		state = judge.Violated
	}
	if !ok && capability == judge.CapLedger {
		w.ledgerWitness()
	}
	c := judge.Check{Step: step, State: state, Capability: capability, Expected: expected, Actual: actual,
		Kind: id.kind, Args: id.args, Harm: id.harm}
	w.addCheck(c)
	return nil
}

// evidenceNote ends a failure with the file that holds the whole record.
func (w *world) evidenceNote() string {
	return fmt.Sprintf("\n  evidence: evidence/%s.json", reports.SafeName(w.entry.ID))
}

// failure is a violated check as a reason: the observation first, then
// the check and each item of its witness on a line of its own.
func failure(s reports.Scenario, c judge.Check) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  check: %s", reports.Finding(c), c.Step)
	for _, l := range reports.WitnessLines(s, c) {
		fmt.Fprintf(&b, "\n  witness: %s", l)
	}
	return b.String()
}

// ledgerWitness reads the wallet's ledger for a violated ledger check that
// looked at no entries (a balance): its debits and refunds are the
// evidence of the balance it saw.
func (w *world) ledgerWitness() {
	w.mu.Lock()
	looked := len(w.seen.Ledger) > 0
	w.mu.Unlock()
	if looked || w.walletID == "" || !w.has(judge.CapLedger) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.env.CallTimeout)
	defer cancel()
	_, _ = w.ledger(ctx) // notes the entries; a failed read leaves the witness without them
}

// noteAnswer adds the exchange that carried an answer to what the running
// step looked at.
func (w *world) noteAnswer(a *answer) {
	if a == nil || a.Answer == nil {
		return
	}
	ex := a.Exchange
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.evidence.Exchanges) - 1; i >= 0; i-- {
		e := w.evidence.Exchanges[i]
		if e.Lane == ex.Lane && e.Label == ex.Label && e.Started.Equal(ex.Started) {
			if !slices.Contains(w.seen.Exchanges, i) {
				w.seen.Exchanges = append(w.seen.Exchanges, i)
			}
			return
		}
	}
}

// noteDispatches adds probe dispatches to what the running step looked at.
func (w *world) noteDispatches(ds []judge.Dispatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen.Dispatches = append(w.seen.Dispatches, ds...)
}

// noteLedger adds a ledger's debits and refunds to what the running step
// looked at.
func (w *world) noteLedger(l *reports.Ledger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen.Ledger = nil // the latest read is the one judged
	for _, e := range l.Entries {
		if e.Kind == "debit" || e.Kind == "refund" {
			w.seen.Ledger = append(w.seen.Ledger, e)
		}
	}
}

// unobserved records a check the target gives no way to observe; the
// scenario goes on, and cannot pass.
func (w *world) unobserved(id what, step, capability, expected string) error {
	return w.unobservedBecause(id, step, capability, expected, capabilityHint(capability))
}

// unobservedBecause is unobserved with why the check could not be made.
func (w *world) unobservedBecause(id what, step, capability, expected, why string) error {
	w.addCheck(judge.Check{Step: step, State: judge.NotObserved, Capability: capability, Expected: expected,
		Actual: "not observed: " + why, Kind: id.kind, Args: id.args, Harm: id.harm})
	return nil
}

// addCheck records a check made by the step running.
func (w *world) addCheck(c judge.Check) {
	w.mu.Lock()
	i := w.stepIdx
	w.mu.Unlock()
	w.addCheckAt(i, c)
}

// addCheckAt records a check made by step i: a late recount belongs to the
// step whose count it contradicts, not to the one running. A check without
// a witness of its own takes what the step looked at since the last check.
func (w *world) addCheckAt(i int, c judge.Check) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.StepIndex = i
	if c.Witness == nil && !w.seen.IsEmpty() {
		wit := w.seen
		c.Witness = &wit
	}
	w.seen = judge.Witness{}
	w.evidence.Checks = append(w.evidence.Checks, c)
	if c.State == judge.Violated && w.evidence.Expected == "" {
		w.evidence.Expected, w.evidence.Actual = c.Expected, c.Actual
	}
}

// has reports whether the target offers a capability.
func (w *world) has(capability string) bool { return w.env.Caps[capability] }

// skipNeed is why a situation could not be created: the capability that
// would have let the harness create it.
type skipNeed struct{ capability, why string }

func (s *skipNeed) Error() string { return s.why }

// cannot skips the scenario: its situation needs a capability the target
// lacks. Checks recorded before stay, and make the scenario incomplete.
func (w *world) cannot(capability, why string) error {
	if w.env.absentFeature(capability) {
		return w.notApplicable(fmt.Sprintf("%s: the profile declares no such feature of the gateway (%s)", why, capabilityHint(capability)))
	}
	if ev := w.env.Evident[capability]; ev != "" {
		why += "; the target has the feature (" + ev + ")"
	}
	return fmt.Errorf("%w (needs %s: %s): %w", &skipNeed{capability: capability, why: why}, capability, capabilityHint(capability), godog.ErrSkip)
}

// notApplicable ends a scenario written for gateways unlike the target
// (another unkeyed policy, an MCP version it does not serve); it does not
// count towards the run.
func (w *world) notApplicable(why string) error {
	w.mu.Lock()
	w.notApplicableWhy = why
	w.mu.Unlock()
	return fmt.Errorf("%s: %w", why, godog.ErrSkip)
}

// optionalFeature are features a metered gateway may not have at all:
// enterprise principals, approval gates, metered read-only tools. A profile
// that declares none is for a gateway without them, and their scenarios
// are not applicable to it; a second key, another wallet or another tool,
// which every metered gateway has, are gaps when missing.
var optionalFeature = map[string]bool{
	judge.CapPrincipalTokens: true,
	judge.CapToolReadOnly:    true,
	judge.CapToolApproval:    true,
}

// capabilityHint says what would give the harness a capability.
func capabilityHint(capability string) string {
	switch capability {
	case judge.CapUpstream:
		return "the target's tools must reach the harness's upstream probe (profile tools, or a control API with fixtures)"
	case judge.CapLedger:
		return "a control API with ledger (docs/control-api.md) would show debits, refunds and balances"
	case judge.CapPrincipalTokens:
		return "the profile's identity (harness_idp with subjects, or principal_tokens) would let the harness act as distinct principals"
	case judge.CapSecondKey:
		return "a second API key of the same wallet in the profile's credentials.api_keys"
	case judge.CapOtherWallet:
		return "an API key of another wallet in the profile's credentials.other_wallet"
	case judge.CapToolWriteOther:
		return "a second mutating tool routed to the probe (profile tools.write_other)"
	case judge.CapToolReadOnly:
		return "a metered read-only tool routed to the probe (profile tools.read_only)"
	case judge.CapToolApproval:
		return "an approval-gated tool routed to the probe (profile tools.approval)"
	case judge.CapTwoURLs:
		return "two gateway URLs on one store (profile urls, or --workers 2 for the reference)"
	}
	return fmt.Sprintf("a control API offering %q (docs/control-api.md)", capability)
}

// Register installs the hooks and steps for one scenario.
func Register(sc *godog.ScenarioContext, env *Env) {
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		if env.Stop != nil && env.Stop() {
			return ctx, godog.ErrSkip // no world: the scenario leaves no record
		}
		w := newWorld(env, p)
		ctx = context.WithValue(ctx, worldKey{}, w)
		ctx = control.WithRecorder(ctx, w.addControl)
		if r, ok := env.Effects.(exchangeRecorder); ok {
			// The read tool's calls are the harness's, like the control
			// API's: evidence beside the calls they judge.
			r.RecordTo(w.addControl)
		}
		w.record(judge.Op{Process: "harness", Type: judge.OK, F: judge.FTarget, Value: mustJSON(env.facts())})
		if why := env.inapplicable(w.entry); why != "" {
			return ctx, w.notApplicable(why)
		}
		return ctx, nil
	})
	sc.StepContext().Before(func(ctx context.Context, st *godog.Step) (context.Context, error) {
		if w := getWorld(ctx); w != nil {
			w.mu.Lock()
			w.stepIdx++
			w.seen = judge.Witness{}
			w.mu.Unlock()
		}
		return ctx, nil
	})
	sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
		if w := getWorld(ctx); w != nil {
			w.noteStep(st, status, err)
		}
		return ctx, err
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
	registerCrash(sc)
	registerSettle(sc)
	registerAssertions(sc)
	registerCrowds(sc)
	registerCancel(sc)
	registerRounds(sc)
	registerDimensions(sc)
	registerExplore(sc)
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
		vars: map[string]string{}, tools: map[string]string{}, toolInfo: map[string]toolInfo{}, prices: map[string]int64{},
		clients: map[string]*client{}, faults: map[string]string{}, faultArmed: map[string]judge.EnvValue{}, principal: map[string]string{}, permits: map[string]string{}, stepIdx: -1,
	}
	w.evidence = reports.Scenario{
		ID: entry.ID, Title: entry.Title, Feature: entry.Feature, File: entry.File, Line: entry.Line, Level: entry.Level,
		Tags: entry.Tags, Requirement: entry.Requirement, Source: entry.Source,
	}
	for _, st := range entry.Steps {
		w.evidence.Steps = append(w.evidence.Steps, reports.StepResult{Keyword: st.Keyword, Text: st.Text, Line: st.Line, Status: "not run"})
	}
	return w
}

// speaksStep is a step that makes a client speak a protocol version.
var speaksStep = regexp.MustCompile(`speaks? protocol (\S+)$`)

// noteStep keeps each step's outcome for the report, and the first skip or
// step error: godog hands the After hook a nil error after a skip, so the
// verdict cannot rely on it.
func (w *world) noteStep(st *godog.Step, status godog.StepResultStatus, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := w.stepIdx
	for len(w.evidence.Steps) <= i {
		w.evidence.Steps = append(w.evidence.Steps, reports.StepResult{Status: "not run"})
	}
	r := &w.evidence.Steps[i]
	r.Text, r.Status = st.Text, status.String()
	if status == godog.StepUndefined && w.stepErr == nil {
		w.stepErr = fmt.Errorf("%w: %s", godog.ErrUndefined, st.Text)
	}
	for _, c := range w.evidence.Checks {
		// A violated check lets the scenario go on, but its step failed.
		if c.StepIndex == i && c.Status() == judge.Violated && r.Error == "" {
			r.Status, r.Error = "failed", failure(w.evidence, c)
		}
	}
	if err != nil {
		r.Error = err.Error()
		if w.stepErr == nil {
			w.stepErr = err
		}
	}
}

// finish settles the verdict from what was observed, collects the effects and
// puts the shared target back as it was (clock, faults, settings).
func (w *world) finish(ctx context.Context, err error) {
	interrupted := ctx.Err() != nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second+w.env.Settle)
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
		if c.cancel != nil {
			c.cancel()
		}
	}
	obs, observer := w.env.observer()
	if obs != nil && w.env.Settle > 0 {
		// Effects are final before they are judged: wait for the observer
		// to stay quiet, then recount what each dispatch check saw.
		_ = obs.Quiet(ctx, w.lagQuiet(obs))
		w.recount(ctx, obs, observer)
	}
	if w.walletID != "" && w.has(judge.CapLedger) {
		if l, lerr := w.ledger(ctx); lerr == nil {
			w.evidence.LedgerAfter = l
		}
	}
	if obs != nil {
		if ds, derr := obs.Dispatches(ctx, w.tokenList()); derr == nil {
			w.evidence.Dispatches = append(w.evidence.Dispatches, ds...)
		}
	}
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	_ = w.recordEffects(ctx)
	w.finalRead(ctx)
	w.evidence.History = w.history
	setModelChecks(&w.evidence)
	w.evidence.Duration = reports.Duration(time.Since(w.start))
	w.decide(err, interrupted)
	if r, ok := w.env.Effects.(exchangeRecorder); ok {
		r.RecordTo(nil)
	}
	w.env.addResult(w.evidence, w.counted, w.tokenList(), w.lastLedger, w.finalMark)
}

// exchangeRecorder is an Observer whose reads are exchanges with the
// target (drivers/effects): the running scenario keeps them.
type exchangeRecorder interface {
	RecordTo(func(reports.Exchange))
}

// recount compares each probe count a check saw with the count once the
// probe settled; a dispatch that came later is a violation of its own.
func (w *world) recount(ctx context.Context, obs Observer, observer string) {
	after := fmt.Sprintf("after the scenario's calls were answered and the %s was quiet for %v", observerName(observer), w.env.Settle)
	for i, c := range w.counted {
		if _, ok := obs.(laggingObserver); ok {
			// A rise the lag explains is the count the check allows,
			// now shown: the end-of-run recount starts from it.
			if n, err := obs.Count(ctx, c.token); err == nil && lagged(obs, c, n) {
				w.counted[i].seen = n
				continue
			}
		}
		late, ok, err := lateDispatch(ctx, obs, observer, c, reports.LateSuffixes[0], judge.LateScenario, after)
		if err != nil || !ok {
			continue
		}
		w.addCheckAt(c.stepIdx, late)
	}
}

// tokenList is the scenario's tokens, in the order they were made.
func (w *world) tokenList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.tokens)
}

func (w *world) tokenSet() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]bool, len(w.tokens))
	for _, t := range w.tokens {
		m[t] = true
	}
	return m
}

// decide derives the verdict with the one verdict rule (judge.Decide)
// from the checks and how the steps ended, and leads a failure's reason
// with its most harmful violated check.
func (w *world) decide(err error, interrupted bool) {
	if err == nil {
		err = w.stepErr
	}
	end := judge.Ending{NotApplicable: w.notApplicableWhy, Interrupted: interrupted}
	var skip *skipNeed
	switch {
	case err == nil:
	case errors.Is(err, godog.ErrUndefined):
		end.Undefined = err.Error()
	case errors.As(err, &skip):
		end.Skip, end.Missing = err.Error(), skip.capability
	case errors.Is(err, godog.ErrSkip):
		if end.NotApplicable == "" {
			end.Skip = err.Error()
		}
	default:
		end.Error = err.Error()
	}
	w.settleVerdict(end)
}

// settleVerdict applies the verdict rule to the scenario's checks and
// ending, again whenever a check is added after the scenario ended.
func (w *world) settleVerdict(end judge.Ending) {
	applyDecision(&w.evidence, end, w.evidenceNote())
}

// applyDecision sets a scenario's verdict, reason and missing capability
// from the verdict rule; note ends a failure's reason (where its evidence
// is).
func applyDecision(ev *reports.Scenario, end judge.Ending, note string) {
	d := judge.Decide(ev.Checks, end)
	ev.Ending = &end
	ev.Verdict, ev.Reason, ev.Missing = d.Verdict, d.Reason, end.Missing
	ev.Expected, ev.Actual = "", ""
	if d.First < 0 {
		return
	}
	first := ev.Checks[d.First]
	ev.Expected, ev.Actual = first.Expected, first.Actual
	if d.Verdict != judge.Failed {
		return
	}
	ev.Reason = failure(*ev, first) + note
	var also []string
	for i, c := range ev.Checks {
		if i != d.First && c.Status() == judge.Violated {
			also = append(also, c.Step)
		}
	}
	if len(also) > 0 {
		ev.Reason += "\n  also violated: " + strings.Join(also, "; ")
	}
	if end.Error != "" {
		ev.Reason += "\n  then: " + end.Error
	}
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
		for tok := range w.tokenSet() {
			_ = w.env.Probe.Unstall(ctx, tok)
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
