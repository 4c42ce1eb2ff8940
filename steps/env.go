// Package steps holds the godog step definitions. They talk to a target only
// through drivers/ (the MCP wire, the control API, the upstream probe and the
// identity provider): nothing here may reach into reference/ internals, so the
// reference gateway is tested exactly as a vendor's.
//
// A Then step records checks; each names the capability that observes it.
// When the target lacks that capability the check is recorded as not
// observed and the scenario goes on, so everything the target does let the
// harness see is still judged. A Given or When step that cannot create its
// situation at all (no clock to move, no fault point) skips the scenario,
// naming the capability that would have let it run.
package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// Upstream is the harness's probe as the steps use it: in this process or
// another's (drivers/probe implements it both ways).
type Upstream interface {
	URL() string
	Count(ctx context.Context, token string) (int, error)
	Dispatches(ctx context.Context, tokenPrefix string) ([]judge.Dispatch, error)
	WaitFor(ctx context.Context, token string, n int) error
	Stall(ctx context.Context, token string) error
	Unstall(ctx context.Context, token string) error
	Fail(ctx context.Context, token, how string) error
	Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error
}

// Observer sees the target's dispatches of the run's operation tokens: the
// probe behind the target's tools (capability upstream), or the target's
// own read tool (capability effects, drivers/effects). Every dispatch
// check reads it, whichever it is.
type Observer interface {
	Count(ctx context.Context, token string) (int, error)
	// Dispatches are the dispatches of the tokens.
	Dispatches(ctx context.Context, tokens []string) ([]judge.Dispatch, error)
	// Quiet returns once no dispatch came for quiet.
	Quiet(ctx context.Context, quiet time.Duration) error
}

// probeObserver is the probe as an Observer of one run's tokens.
type probeObserver struct {
	probe Upstream
	runID string
}

func (p probeObserver) Count(ctx context.Context, token string) (int, error) {
	return p.probe.Count(ctx, token)
}

// Dispatches lists the run's dispatches once and keeps the tokens': the
// probe lists by prefix, and op1-x is a prefix of op1-x2.
func (p probeObserver) Dispatches(ctx context.Context, tokens []string) ([]judge.Dispatch, error) {
	prefix := p.runID
	if len(tokens) == 1 {
		prefix = tokens[0]
	}
	ds, err := p.probe.Dispatches(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var mine []judge.Dispatch
	for _, d := range ds {
		if slices.Contains(tokens, d.Token) {
			mine = append(mine, d)
		}
	}
	return mine, nil
}

func (p probeObserver) Quiet(ctx context.Context, quiet time.Duration) error {
	return p.probe.Quiet(ctx, p.runID, quiet)
}

// Env is what the runner hands the steps: one target and the harness-owned
// peers, shared by every scenario of a run (scenarios run one at a time).
type Env struct {
	URLs     []string
	Profile  *target.Profile
	Controls []*control.Client // one per URL; empty when the target has no control API
	Probe    Upstream
	// Effects reads the target's own effects (profile effects); the
	// dispatch checks use it where the probe is not behind the target.
	Effects Observer
	IdP     *idp.IdP
	// Caps are the capabilities the target offers (reports.Cap*).
	Caps     map[string]bool
	Settings control.Settings // as the target advertised them
	// FaultPoints are the fault points the control API lists: a scenario
	// arming another is not applicable there.
	FaultPoints []string
	// FaultActions are the fault actions the control API lists: a
	// scenario arming another (a crash) is not applicable there.
	FaultActions []string
	Catalog      map[string]catalog.Entry
	Seed         int64
	// Evident are optional features (reports.Cap*) the target showed it has
	// (its tools/list), with what showed it: their scenarios are gaps, not
	// "not applicable", when the profile leaves the feature out.
	Evident map[string]string
	// Speaks are the MCP versions the target serves, as the preflight found.
	Speaks map[string]bool
	// ProbeAnswers: the run's wiring call of a write tool got a result
	// carrying the probe's answer to its token (judge.Facts.ProbeAnswers).
	ProbeAnswers bool
	// Policy is the target's unkeyed policy (target.UnkeyedDerived or
	// target.UnkeyedRefuse).
	Policy string
	// RunID prefixes every probe token of the run, so runs sharing one probe
	// never count each other's dispatches.
	RunID string
	// MaxConcurrency caps the clients of one concurrent step (--concurrency).
	MaxConcurrency int
	// CallTimeout bounds one call of a step.
	CallTimeout time.Duration
	// Settle is how long the probe must stay quiet before a scenario's
	// dispatches are final (a late duplicate dispatch is then seen).
	Settle time.Duration
	// OnResult, when set, hears of each scenario as it finishes.
	OnResult func(reports.Scenario)
	// Stop, when set and true as a scenario is about to start, leaves it
	// out of the run (no record at all): explore stops exploring at its
	// first finding, or when its time is up, without ending the suite.
	Stop func() bool

	mu      sync.Mutex
	results []reports.Scenario
	counted [][]countedCheck // per result, its probe-count checks
	tokens  [][]string       // per result, every token it used
	ledgers []*ledgerMark    // per result, its last ledger check (or nil)
	finals  []*ledgerMark    // per result, its wallet's read once the scenario settled (or nil)
	trusted bool
}

// facts are what the model needs to know of the target, the first event
// of every scenario's history.
func (e *Env) facts() judge.Facts {
	f := judge.Facts{Policy: e.Policy, WindowSeconds: control.WholeSeconds(e.Settings.EffectiveWindowSeconds),
		StaleLockSeconds: control.WholeSeconds(e.Settings.StaleLockSeconds), PermitTTLSeconds: control.WholeSeconds(e.Settings.PermitTTLSeconds),
		RetentionSeconds: control.WholeSeconds(e.Settings.RetentionSeconds), ProbeAnswers: e.ProbeAnswers}
	for v, ok := range e.Speaks {
		if ok {
			f.Wires = append(f.Wires, v)
		}
	}
	for c, ok := range e.Caps {
		if ok {
			f.Capabilities = append(f.Capabilities, c)
		}
	}
	sort.Strings(f.Wires)
	sort.Strings(f.Capabilities)
	return f
}

// observer is what sees the target's dispatches and the capability that
// names it: the probe where the target's tools reach it, else the
// target's read tool where the profile declares effects; nil and
// CapUpstream (what a check then lacks) when neither.
func (e *Env) observer() (Observer, string) {
	switch {
	case e.Probe != nil && e.Caps[judge.CapUpstream]:
		return probeObserver{probe: e.Probe, runID: e.RunID}, judge.CapUpstream
	case e.Effects != nil && e.Caps[judge.CapEffects]:
		return e.Effects, judge.CapEffects
	}
	return nil, judge.CapUpstream
}

// observes reports whether a check needing capability is observed on the
// target: a dispatch check (CapUpstream) is also observed through effects.
func (e *Env) observes(capability string) bool {
	if capability == judge.CapUpstream {
		obs, _ := e.observer()
		return obs != nil
	}
	return e.Caps[capability]
}

// Control is the first URL's control client, or nil.
func (e *Env) Control() *control.Client {
	if len(e.Controls) == 0 {
		return nil
	}
	return e.Controls[0]
}

// TakeResults returns the evidence of every scenario run so far and
// forgets it, with what the end-of-run recount would read again: a session
// that runs several suites (explore's rounds) judges each on its own.
func (e *Env) TakeResults() []reports.Scenario {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.results
	e.results, e.counted, e.tokens, e.ledgers, e.finals = nil, nil, nil, nil, nil
	return out
}

// Results returns the evidence of every scenario run so far.
func (e *Env) Results() []reports.Scenario {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]reports.Scenario(nil), e.results...)
}

func (e *Env) addResult(s reports.Scenario, counted []countedCheck, tokens []string, ledger, final *ledgerMark) {
	e.mu.Lock()
	e.results = append(e.results, s)
	e.counted = append(e.counted, counted)
	e.tokens = append(e.tokens, tokens)
	e.ledgers = append(e.ledgers, ledger)
	e.finals = append(e.finals, final)
	e.mu.Unlock()
	if e.OnResult != nil {
		e.OnResult(s)
	}
}

// newWire makes a client for the URL at index i, set up as the profile says.
func (e *Env) newWire(i int) *wire.Client {
	return e.Profile.Client(e.URLs[i%len(e.URLs)])
}

// fixtures reports whether the target makes wallets, keys and tools on
// demand (a control API with fixtures); otherwise the profile's do.
func (e *Env) fixtures() bool { return e.Caps[judge.CapFixtures] && e.Control() != nil }

// Recount reads every probe count a check saw once more, after the whole
// run, once the probe has been quiet for quiet: a duplicate dispatch that
// came later than a scenario's own settle period (a gateway that re-sends a
// finished operation seconds later) still fails the scenario it belongs to,
// with a check of its own; so does a ledger entry written after a
// scenario's last ledger check (see reread). It returns the IDs of the
// scenarios it failed.
func (e *Env) Recount(ctx context.Context, quiet time.Duration) ([]string, error) {
	obs, observer := e.observer()
	probe := obs != nil
	if !probe && !e.Caps[judge.CapLedger] {
		return nil, nil
	}
	if probe {
		if err := obs.Quiet(ctx, quiet); err != nil {
			return nil, fmt.Errorf("wait for the %s observer to be quiet: %w", observer, err)
		}
	} else {
		select {
		case <-time.After(quiet):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var failed []string
	elsewhere := receiptsElsewhere(e.results)
	for i := range e.results {
		s := &e.results[i]
		late, err := e.reread(ctx, s, e.ledgers[i], quiet)
		if err != nil {
			return failed, err
		}
		shared := len(elsewhere[i]) > 0
		if shared {
			at := s.History[len(s.History)-1].Time
			for _, v := range elsewhere[i] {
				s.History = append(s.History, judge.Op{Index: len(s.History), Process: "harness", Type: judge.OK, F: judge.FEnv, Time: at, Value: mustJSON(v)})
			}
		}
		moved, err := e.rereadFinal(ctx, s, e.finals[i])
		if err != nil {
			return failed, err
		}
		late = late || moved
		unread := false
		if probe {
			// Every token's dispatches, not only the counted ones: the model
			// judges a duplicate that came after the scenario ended.
			moved, err := lateDispatches(ctx, obs, s, e.tokens[i])
			if err != nil && observer == judge.CapEffects {
				// The target's read tool failed: not observed, as at the
				// scenario's end (recordEffects), not a failed run.
				unreadIn(s, e.tokens[i], err)
				unread = true
			} else if err != nil {
				return failed, err
			}
			late = late || moved
		}
		if probe && !unread {
			after := fmt.Sprintf("once the %s had been quiet for %v after the last scenario", observerName(observer), quiet)
			for _, c := range e.counted[i] {
				check, isLate, err := lateDispatch(ctx, obs, observer, c, reports.LateSuffixes[1], judge.LateRun, after)
				if err != nil {
					return failed, err
				}
				if !isLate {
					continue
				}
				late = true
				s.Checks = append(s.Checks, check)
			}
		}
		var whys []string
		if late {
			whys = append(whys, "a dispatch or ledger entry arrived after the scenario ended")
		}
		if shared {
			whys = append(whys, "a receipt it got also answered another scenario's operation")
		}
		if len(whys) == 0 && !unread {
			continue
		}
		end := judge.Ending{}
		if s.Ending != nil {
			end = *s.Ending
		}
		// The history grew: the model judges it again, and the verdict
		// rule decides again from the checks.
		was := s.Verdict
		setModelChecks(s)
		applyDecision(s, end, fmt.Sprintf("\n  evidence: evidence/%s.json", reports.SafeName(s.ID)))
		if s.Verdict == judge.Failed && was != judge.Failed {
			s.Reason = fmt.Sprintf("%s (it was %s)\n  %s", strings.Join(whys, ", and "), was, s.Reason)
			failed = append(failed, s.ID)
		}
	}
	return failed, nil
}

// reread reads a scenario's wallet once more at the end of the run and
// judges its last ledger check again, unless a call came after that check
// (its entries are then the scenario's own doing): an entry written since
// that breaks the check (a second debit sent some time after the answer)
// is a violation of its own, and the reread and the late entries go into
// the history, so recheck reaches the same verdict.
func (e *Env) reread(ctx context.Context, s *reports.Scenario, m *ledgerMark, quiet time.Duration) (bool, error) {
	if m == nil || e.Control() == nil || !e.Caps[judge.CapLedger] {
		return false, nil
	}
	for _, op := range s.History[min(m.histLen, len(s.History)):] {
		if op.Type == "invoke" {
			return false, nil
		}
	}
	r, l, entries, moved, err := e.readAgain(ctx, s, m)
	if err != nil || !moved {
		return false, err
	}
	var ok bool
	var expected, actual string
	switch m.id.kind {
	case judge.KindLedgerHas:
		ok, expected, actual = judge.LedgerHas(r, m.id.intArg("debits"), m.id.intArg("refunds"))
	case judge.KindBalance:
		ok, expected, actual = judge.BalanceChanged(r, int64(m.id.intArg("delta")))
	default:
		return false, nil
	}
	if ok {
		return false, nil
	}
	idx := m.stepIdx
	s.History = append(s.History, judge.Op{Index: len(s.History), Process: "ledger", Type: "ok", F: judge.FLedgerRead,
		Step: &idx, Time: time.Now(), Value: mustJSON(r)})
	appendLateEntries(s, entries)
	s.LedgerAfter = l
	args := maps.Clone(m.id.args)
	args["late"] = judge.LateRun
	s.Checks = append(s.Checks, judge.Check{
		Step: m.step + reports.LateSuffixes[1], State: judge.Violated, Capability: judge.CapLedger,
		StepIndex: m.stepIdx, Expected: expected, Kind: m.id.kind, Args: args, Harm: m.id.harm,
		Actual: fmt.Sprintf("%s; read again %v after the last scenario: an entry written after the check", actual, quiet),
	})
	return true, nil
}

// appendLateEntries adds to a scenario's history the ledger entries it does
// not have yet (those written after its effects were recorded).
func appendLateEntries(s *reports.Scenario, entries []judge.LedgerEntry) {
	recorded := 0
	for _, op := range s.History {
		if op.F == judge.FDebit || op.F == judge.FRefund || op.F == judge.FEntry {
			recorded++
		}
	}
	for _, le := range entries[min(recorded, len(entries)):] {
		f := map[string]string{judge.EntryDebit: judge.FDebit, judge.EntryRefund: judge.FRefund}[le.Kind]
		if f == "" {
			f = judge.FEntry
		}
		s.History = append(s.History, judge.Op{Index: len(s.History), Process: "ledger", Type: "ok", F: f, Time: le.At,
			Value: mustJSON(judge.EffectValue{Amount: le.Amount, Receipt: le.Receipt, Kind: le.Kind, Tool: le.Tool})})
	}
}

// readAgain reads the wallet of a mark once more: the read as the mark's
// with the balance and entries now, the ledger, the scenario's entries, and
// whether anything moved since the mark.
func (e *Env) readAgain(ctx context.Context, s *reports.Scenario, m *ledgerMark) (judge.LedgerRead, *reports.Ledger, []judge.LedgerEntry, bool, error) {
	l, err := e.Control().Snapshot(ctx, m.walletID)
	if err != nil {
		return judge.LedgerRead{}, nil, nil, false, fmt.Errorf("read wallet %s again: %w", m.walletID, err)
	}
	entries := scenarioEntries(s.LedgerBefore, l)
	r := m.read
	r.Balance, r.Entries = l.Balance, readEntries(entries)
	return r, l, entries, r.Balance != m.read.Balance || len(r.Entries) != len(m.read.Entries), nil
}

// rereadFinal reads a scenario's own wallet once more at the end of the
// run: when it moved since the scenario settled (a debit sent some time
// after the answer), the new read goes into the history as the wallet's
// settled ledger, for the model to judge again.
func (e *Env) rereadFinal(ctx context.Context, s *reports.Scenario, m *ledgerMark) (bool, error) {
	if m == nil || e.Control() == nil {
		return false, nil
	}
	r, l, entries, moved, err := e.readAgain(ctx, s, m)
	if err != nil || !moved {
		return false, err
	}
	idx := m.stepIdx
	s.History = append(s.History, judge.Op{Index: len(s.History), Process: "ledger", Type: "ok", F: judge.FLedgerRead,
		Step: &idx, Time: time.Now(), Value: mustJSON(r)})
	appendLateEntries(s, entries)
	s.LedgerAfter = l
	return true, nil
}

// unreadIn records in a scenario's history that the target's read tool
// could not count tokens (judge.EnvUnread).
func unreadIn(s *reports.Scenario, tokens []string, err error) {
	at := s.History[len(s.History)-1].Time
	for _, t := range tokens {
		s.History = append(s.History, judge.Op{Index: len(s.History), Process: "harness", Type: judge.OK, F: judge.FEnv, Time: at,
			Value: mustJSON(judge.EnvValue{Kind: judge.EnvUnread, Token: t, Action: err.Error()})})
	}
}

// lateDispatches adds to a scenario's history the dispatches of its tokens
// it does not hold yet (those that came after it ended), so the model (and
// recheck) judges them; it reports whether there were any.
func lateDispatches(ctx context.Context, obs Observer, s *reports.Scenario, tokens []string) (bool, error) {
	if len(tokens) == 0 {
		return false, nil
	}
	ds, err := obs.Dispatches(ctx, tokens)
	if err != nil {
		return false, fmt.Errorf("read the dispatches of %s again: %w", s.ID, err)
	}
	late := unrecorded(s.History, ds)
	for _, d := range late {
		op := dispatchOp(d)
		op.Index = len(s.History)
		s.History = append(s.History, op)
		s.Dispatches = append(s.Dispatches, d)
	}
	return len(late) > 0, nil
}

// receiptsElsewhere finds receipts that answered operations of two
// scenarios: each scenario's model sees only its own history, so a gateway
// whose processes mint receipts from counters of their own (or that hands
// one scenario another's stored result) shows only across scenarios. It
// returns, per scenario index, the events that tell its model so.
func receiptsElsewhere(results []reports.Scenario) map[int][]judge.EnvValue {
	type use struct {
		scenario int
		token    string
	}
	first := map[string]use{}
	out := map[int][]judge.EnvValue{}
	noted := map[[2]int]map[string]bool{}
	note := func(at, other use, receipt string) {
		k := [2]int{at.scenario, other.scenario}
		if noted[k] == nil {
			noted[k] = map[string]bool{}
		}
		if noted[k][receipt] {
			return
		}
		noted[k][receipt] = true
		out[at.scenario] = append(out[at.scenario], judge.EnvValue{Kind: judge.EnvReceiptElsewhere, Receipt: receipt,
			Token: other.token, Elsewhere: results[other.scenario].ID})
	}
	for i, s := range results {
		for _, op := range s.History {
			if op.F != judge.FCall || op.Type != judge.OK {
				continue
			}
			var v judge.CallValue
			if json.Unmarshal(op.Value, &v) != nil || v.Receipt == "" || v.Token == "" {
				continue
			}
			here := use{i, v.Token}
			f, seen := first[v.Receipt]
			switch {
			case !seen:
				first[v.Receipt] = here
			case f.scenario != i && f.token != v.Token:
				note(here, f, v.Receipt)
				note(f, here, v.Receipt)
			}
		}
	}
	return out
}
