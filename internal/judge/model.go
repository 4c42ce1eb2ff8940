package judge

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Reasons of docs/wire.md the model reasons about.
const (
	ReasonInProgress      = "idempotency_in_progress"
	ReasonKeyRequired     = "idempotency_key_required"
	ReasonKeyReused       = "idempotency_key_reused"
	ReasonPrincipalDenied = "principal_denied"
	ReasonPrincipalBad    = "principal_invalid"
	ReasonUnknownTool     = "unknown_tool"
	ReasonFunds           = "insufficient_funds"
	ReasonDispatchFailed  = "dispatch_failed"
	ReasonResponseFailed  = "response_failed"
	ReasonCapabilities    = "client_capabilities_missing"
	// ReasonOutcomeUnknown is a final answer that the operation may have run
	// and its outcome was never stored: its owner stopped between its charge
	// and its outcome, and only an operator can settle it.
	ReasonOutcomeUnknown = "outcome_unknown"

	// UpstreamRefuse is EnvUpstreamFail's Action for a JSON-RPC error
	// before the tool runs.
	UpstreamRefuse = "refuse"
)

// finalForCaller are the refusals that, where the contract allows them,
// stay the answer to every later call of the caller: an operation ending
// in one is decided for it, though whether it ran may stay unknown.
var finalForCaller = map[string]bool{ReasonPrincipalDenied: true, ReasonPrincipalBad: true, ReasonUnknownTool: true, ReasonFunds: true}

// retryableReasons are the refusals a client may send again unchanged.
var retryableReasons = map[string]bool{ReasonInProgress: true, ReasonDispatchFailed: true, ReasonResponseFailed: true}

// notRun are the refusals that say the call did no work: its tool was not
// dispatched for it and nothing stays charged.
var notRun = map[string]bool{
	ReasonKeyRequired: true, ReasonKeyReused: true, ReasonPrincipalDenied: true, ReasonPrincipalBad: true,
	ReasonUnknownTool: true, ReasonFunds: true, ReasonDispatchFailed: true, ReasonCapabilities: true,
	"permit_invalid": true, "permit_exhausted": true, "permit_expired": true, "unauthenticated": true,
	"invalid_arguments": true, "idempotency_key_invalid": true, "session_not_found": true,
}

// Tool roles the model knows (the profile's, and the probe's own tools).
const (
	// RoleWrite is the tool whose effects the target's read tool counts
	// (profile effects): a result of it is an effect the target made.
	RoleWrite    = "write"
	RoleReadOnly = "read_only"
	RoleApproval = "approval"
	RoleAsk      = "ask"    // a multi-round tool: asks for input first
	RoleSample   = "sample" // needs the client to declare sampling
)

// Policies of an unkeyed mutating call.
const (
	PolicyDerived = "derived"
	PolicyRefuse  = "refuse"
)

// Kinds of the model's checks.
const (
	KindAnswer     = "answer"     // call: every answer is one the contract allows at its point
	KindShape      = "shape"      // call: the answer is valid for its protocol version
	KindDispatches = "dispatches" // token: dispatches as the operations' answers allow
	KindLedger     = "ledger"     // wallet: one debit of its price per operation that ran, nothing else
	KindDecided    = "decided"    // op: retried until decided, every operation gets an outcome (explore)
)

// HasFacts reports whether a history opens with the target's facts, as
// every history the model can judge does.
func HasFacts(ops []Op) bool {
	for _, op := range ops {
		if op.F == FTarget {
			return true
		}
	}
	return false
}

// Options change what the model requires beyond what every history must
// show.
type Options struct {
	// Decided requires every operation to end decided: a result, or a
	// refusal that says nothing ran. explore retries every operation until
	// it is decided before it judges, so an operation left in progress for
	// ever (charged, never run) is seen.
	Decided bool
}

// Model judges a history against the retry contract (docs/wire.md) and
// returns its checks: a violated check for each deviation it finds, and,
// for each kind of check it could make and found nothing wrong with, one
// held check saying what it looked at. Where the contract admits several
// answers the model admits each; what the history cannot decide (an
// answer lost on the wire) is never guessed against the gateway.
func Model(ops []Op, opts ...Options) []Check {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	m := newModel(ops)
	// A history in which the harness retried every operation until decided
	// (explore's last step) says so, so every judge of it (the run, recheck,
	// bundle verify) requires the same.
	o.Decided = o.Decided || m.since(forever, EnvDecide, func(EnvValue) bool { return true })
	var out []Check
	out = append(out, m.answers()...)
	out = append(out, m.dispatchChecks()...)
	out = append(out, m.ledgerChecks()...)
	if o.Decided {
		out = append(out, m.decided()...)
	}
	return out
}

// mcall is one call of the history: its invoke and its outcome.
type mcall struct {
	inv, out   int    // event indexes; out -1 while unanswered
	proc       string // the client (the events' process) that made it
	v          CallValue
	a          CallValue // the outcome's value
	typ        string    // the outcome's type, "" unanswered
	start, end time.Time // wall times; end is far away while unanswered
	slot       string
	scope      string
	fp         string // the arguments, canonical, numbers as written
	vfp        string // the arguments, canonical, numbers by value
	op         *mop
}

func (c *mcall) result() bool { return c.typ == OK && !c.a.InputRequired }
func (c *mcall) refusal() bool {
	return c.typ != OK && c.typ != "" && (c.a.Reason != "" || len(c.a.Means) > 0)
}
func (c *mcall) unknown() bool {
	return c.typ == "" || (!c.result() && !c.refusal() && !c.inputRound())
}
func (c *mcall) inputRound() bool { return c.typ == OK && c.a.InputRequired }
func (c *mcall) meaning() string  { return c.a.Meaning() }

// meanings are what a refusal may mean: each reason the profile maps its
// spelling to (a code several reasons share means any of them), else its
// data.reason.
func (c *mcall) meanings() []string {
	if len(c.a.Means) > 0 {
		return c.a.Means
	}
	return []string{c.a.Reason}
}
func (c *mcall) keyed() bool  { return c.v.Key != "" }
func (c *mcall) name() string { return fmt.Sprintf("call #%d (%s)", c.inv, c.v.Tool) }
func (c *mcall) overlaps(d *mcall) bool {
	return c != d && d.start.Before(c.end) && c.start.Before(d.end)
}

// ranNothing says the call's answer tells the client no work was done.
func (c *mcall) ranNothing() bool {
	if c.inputRound() {
		return true
	}
	if !c.refusal() || c.a.Status >= 500 {
		return false
	}
	for _, r := range c.meanings() {
		if !notRun[r] {
			return false
		}
	}
	return true
}

// mop is one operation as the model groups calls: a key's calls with one
// fingerprint, an unkeyed call and its retries inside the window, the
// calls under one explicit permit.
type mop struct {
	id         int
	calls      []*mcall
	token      string
	reuseOf    *mop   // a key's first operation, when this one reuses the key with other arguments
	mustRefuse string // the refusal every call of it must get, "" when it may run
	outcome    *mcall // the first call that got a result
	wallet     string
	price      int64
	priced     bool
	// next is the operation the same unkeyed call started anew once this
	// one's window had passed, nil when none did.
	next *mop
}

// ran says a call of the operation got a result.
func (o *mop) ran() bool { return o.outcome != nil }

// mayRun says the tool may have run for the operation: some call of it was
// not answered with a refusal that says nothing ran.
func (o *mop) mayRun() bool {
	if o.mustRefuse != "" {
		return false
	}
	for _, c := range o.calls {
		if !c.ranNothing() {
			return true
		}
	}
	return false
}

// proven says a result of the operation proves its dispatch. Behind the
// probe, a result carrying the probe's answer to its own token: the probe
// saw the dispatch. Where the target's read tool counts the write tool's
// effects (byEffects), a result of that tool that is no tool error: the
// result says the write was made, and no result carries a token to match,
// so without this no count would ever be too low. A result served after
// an operator settled the operation completed is the operator's, not the
// tool's (settledRun): it proves nothing.
func (o *mop) proven(byEffects bool, settledRun func(*mcall) bool) bool {
	for _, c := range o.calls {
		if !c.result() {
			continue
		}
		if c.a.Served != "" && c.a.Served == o.token {
			return true
		}
		if byEffects && c.v.Role == RoleWrite && !c.a.IsError && !settledRun(c) {
			return true
		}
	}
	return false
}

// answeredSettled says c was answered after an operator settled its
// operation completed: begun before (the holder that woke) or after, its
// result may be the operator's, which proves no dispatch.
func (m *model) answeredSettled(c *mcall) bool {
	s, ok := m.settledBefore(c, c.end)
	return ok && s.Outcome == SettleCompleted
}

// settledCompleted says c was made after an operator settled its
// operation completed: its result is the settled one.
func (m *model) settledCompleted(c *mcall) bool {
	s, ok := m.settled(c)
	return ok && s.Outcome == SettleCompleted
}

type model struct {
	ops    []Op
	facts  Facts
	calls  []*mcall
	mops   []*mop
	env    []envAt
	reads  map[string]ledgerAt // the last final read of each wallet
	every  []ledgerAt          // every read, in order
	prices map[string]int64    // tool -> price, from the scenario's tools
	raws   []rawAt             // the answers to raw bodies
}

// rawAt is the answer to a raw body a client sent.
type rawAt struct {
	i       int
	process string
	status  int
}

type envAt struct {
	i   int
	t   time.Time
	env EnvValue
}

type ledgerAt struct {
	i    int
	read LedgerRead
}

var forever = time.Unix(1<<40, 0)

func newModel(ops []Op) *model {
	m := &model{ops: ops, reads: map[string]ledgerAt{}, prices: map[string]int64{}}
	var reads []ledgerAt
	byInvoke := map[int]*mcall{}
	open := map[string][]*mcall{} // process -> calls awaiting an outcome, in order
	for i, op := range ops {
		switch op.F {
		case FTarget:
			_ = json.Unmarshal(op.Value, &m.facts)
		case FEnv:
			var e EnvValue
			if json.Unmarshal(op.Value, &e) == nil {
				m.env = append(m.env, envAt{i, op.Time, e})
				if e.Kind == EnvTool && e.Price != nil {
					m.prices[e.Tool] = *e.Price
				}
			}
		case FLedgerRead:
			var r LedgerRead
			if json.Unmarshal(op.Value, &r) == nil {
				reads = append(reads, ledgerAt{i, r})
			}
		case FRaw:
			// A raw body is no operation, but its answer is an answer: an
			// HTTP 5xx is never one the client can act on.
			var v CallValue
			if op.Type != Invoke && json.Unmarshal(op.Value, &v) == nil {
				m.raws = append(m.raws, rawAt{i, op.Process, v.Status})
			}
		case FCall:
			var v CallValue
			if json.Unmarshal(op.Value, &v) != nil {
				continue
			}
			if op.Type == Invoke {
				c := &mcall{inv: i, out: -1, proc: op.Process, v: v, start: op.Time, end: forever}
				// The arguments as they were recorded: decoded into any, their
				// numbers would lose how they were written, and repeated
				// members all but one.
				var raw struct {
					Arguments json.RawMessage `json:"arguments"`
				}
				if json.Unmarshal(op.Value, &raw) == nil && raw.Arguments != nil {
					c.v.Arguments = raw.Arguments
				}
				byInvoke[i] = c
				m.calls = append(m.calls, c)
				open[op.Process] = append(open[op.Process], c)
				continue
			}
			var c *mcall
			if v.Call != nil {
				c = byInvoke[*v.Call]
			} else if q := open[op.Process]; len(q) > 0 {
				c = q[0] // a file from before calls were paired: the process's oldest open call
			}
			if c == nil || c.out >= 0 {
				continue
			}
			c.out, c.a, c.typ, c.end = i, v, op.Type, op.Time
			if c.v.Wire == "" {
				c.v.Wire = v.Wire // the version the client spoke, which its answer records
			}
			q := open[op.Process]
			for k, x := range q {
				if x == c {
					open[op.Process] = append(q[:k:k], q[k+1:]...)
					break
				}
			}
		}
	}
	// The ledger judged is each wallet's last read once the scenario's
	// effects settled: its final read, or a read after it (the end of the
	// run's).
	settled := map[string]bool{}
	for _, r := range reads {
		if r.read.Final {
			settled[r.read.Wallet] = true
		}
	}
	for _, r := range reads {
		if settled[r.read.Wallet] {
			m.reads[r.read.Wallet] = r
		}
	}
	m.every = reads
	m.group()
	return m
}

// GatewayTime is the gateway clock at wall time t as a history's clock
// events set it: a step that must know how old an operation is on the
// gateway reads it as the model does.
func GatewayTime(ops []Op, t time.Time) time.Time {
	m := &model{}
	for i, op := range ops {
		var e EnvValue
		if op.F == FEnv && json.Unmarshal(op.Value, &e) == nil {
			m.env = append(m.env, envAt{i, op.Time, e})
		}
	}
	return m.gatewayTime(t)
}

// gatewayTime is the gateway clock at wall time t, as the harness set it.
func (m *model) gatewayTime(t time.Time) time.Time {
	now := t
	for _, e := range m.env {
		if e.t.After(t) {
			break
		}
		if e.env.Kind == EnvClock && e.env.Now != nil {
			if e.env.Frozen {
				now = *e.env.Now
			} else {
				now = e.env.Now.Add(t.Sub(e.t))
			}
		}
	}
	return now
}

// latestGatewayTime is the latest the gateway clock read between wall
// times from and to: at to, or at a clock move between them.
func (m *model) latestGatewayTime(from, to time.Time) time.Time {
	latest := m.gatewayTime(to)
	for _, e := range m.env {
		if e.env.Kind != EnvClock || e.env.Now == nil || !e.t.After(from) || !e.t.Before(to) {
			continue
		}
		// The clock as it was set, and as it had run until just before.
		for _, t := range []time.Time{*e.env.Now, m.gatewayTime(e.t.Add(-time.Nanosecond))} {
			if t.After(latest) {
				latest = t
			}
		}
	}
	return latest
}

// window is the unkeyed retry window in force at wall time t; known is
// false when neither the facts nor a setting say it (a vendor's gateway).
func (m *model) window(t time.Time) (w time.Duration, known bool) {
	secs, known := m.facts.WindowSeconds, m.facts.WindowSeconds > 0
	for _, e := range m.env {
		if e.t.After(t) {
			break
		}
		if e.env.Kind == EnvSetting && e.env.WindowSeconds != nil {
			secs, known = *e.env.WindowSeconds, true
		}
	}
	return time.Duration(secs) * time.Second, known
}

// unknownWindow is how long a gateway whose window nobody stated is held to
// replaying an unkeyed retry: past it either a replay or a new operation
// is allowed.
const unknownWindow = time.Second

func (m *model) refusesUnkeyed(c *mcall) string {
	switch {
	case c.v.Role == RoleReadOnly || c.v.Role == RoleApproval:
		return ReasonKeyRequired
	case c.v.Permit != "":
		return "" // the permit names the operation: no derived key to turn off
	case m.facts.Policy == PolicyRefuse:
		return ReasonKeyRequired
	}
	if w, known := m.window(c.start); known && w == 0 {
		return ReasonKeyRequired
	}
	return ""
}

// group sorts calls into operations, in the order they were made.
func (m *model) group() {
	sort.SliceStable(m.calls, func(i, j int) bool { return m.calls[i].inv < m.calls[j].inv })
	slots := map[string][]*mop{}
	firstOfKey := map[string]*mop{} // scope|tool|key -> the key's first operation
	newOp := func(c *mcall) *mop {
		o := &mop{id: len(m.mops), token: c.v.Token, wallet: c.v.Wallet}
		if c.v.Price != nil {
			o.price, o.priced = *c.v.Price, true
		} else if p, ok := m.prices[c.v.Tool]; ok {
			o.price, o.priced = p, true
		}
		m.mops = append(m.mops, o)
		return o
	}
	for _, c := range m.calls {
		c.scope = c.v.Credential + "|" + c.v.Principal
		fps := fingerprint(c.v.Arguments)
		c.fp, c.vfp = fps.literal, fps.value
		unkeyed := !c.keyed()
		switch {
		case unkeyed && c.v.Permit != "":
			// A principal's call is its own: another principal's call
			// under the permit is never handed its result.
			c.slot = "permit|" + c.v.Permit + "|" + c.v.Principal + "|" + c.fp
		case unkeyed:
			c.slot = "unkeyed|" + c.scope + "|" + c.v.Tool + "|" + c.fp
		default:
			c.slot = "key|" + c.scope + "|" + c.v.Tool + "|" + c.v.Key + "|" + c.fp
		}
		if unkeyed {
			if why := m.refusesUnkeyed(c); why != "" {
				o := newOp(c)
				o.mustRefuse = why
				c.op, o.calls = o, []*mcall{c}
				continue
			}
		}
		ops := slots[c.slot]
		var o *mop
		if len(ops) > 0 {
			o = ops[len(ops)-1]
			if c.v.Permit == "" && m.newUnkeyedOp(o, c) {
				o = nil
			}
		}
		if o == nil {
			o = newOp(c)
			if prev := slots[c.slot]; len(prev) > 0 {
				prev[len(prev)-1].next = o
			}
			slots[c.slot] = append(slots[c.slot], o)
			// A key names one operation of its caller and tool; an
			// explicit permit, with no key, names one operation too.
			k := c.scope + "|" + c.v.Tool + "|" + c.v.Key
			if unkeyed {
				k = "permit|" + c.v.Permit + "|" + c.v.Principal
			}
			if !unkeyed || c.v.Permit != "" {
				if first, ok := firstOfKey[k]; ok && first != o && !m.forgotten(first, c) {
					o.reuseOf = first
				} else {
					// The key's first operation, or its first since the
					// record of the one before was past its retention.
					firstOfKey[k] = o
				}
			}
		}
		c.op = o
		o.calls = append(o.calls, c)
	}
	for _, o := range m.mops {
		o.outcome = outcomeOf(o)
	}
}

// outcomeOf is the result an operation's answers hold to: the receipt most
// of its results carry (the first to answer among equals), so that when a
// gateway mints stray receipts for some twins the strays, not the stored
// outcome, are the answers found wrong.
func outcomeOf(o *mop) *mcall {
	count := map[string]int{}
	for _, c := range o.calls {
		if c.result() {
			count[c.a.Receipt+"|"+c.a.Digest]++
		}
	}
	var best *mcall
	for _, c := range o.calls {
		if !c.result() {
			continue
		}
		k := c.a.Receipt + "|" + c.a.Digest
		if best == nil {
			best = c
			continue
		}
		bk := best.a.Receipt + "|" + best.a.Digest
		if count[k] > count[bk] || (count[k] == count[bk] && c.end.Before(best.end)) {
			best = c
		}
	}
	return best
}

// newUnkeyedOp says an unkeyed call starts a new operation rather than
// retrying o: only where it may (mayBeAnew), and then only if the answer is
// not o's outcome served again (a replay past the window is allowed too).
func (m *model) newUnkeyedOp(o *mop, c *mcall) bool {
	if !m.mayBeAnew(o, c) || !c.result() {
		return false
	}
	// The operator's result, settled completed, is o's outcome replayed.
	if s, ok := m.settledBefore(o.calls[0], c.start); ok && s.Outcome == SettleCompleted &&
		(s.Receipt != "" && c.a.Receipt == s.Receipt || s.Digest != "" && c.a.Digest == s.Digest) {
		return false
	}
	for _, d := range o.calls {
		if d.result() && (d.a.Receipt != "" && d.a.Receipt == c.a.Receipt || d.a.Digest != "" && d.a.Digest == c.a.Digest) {
			return false
		}
	}
	return true
}

// forgotten says the key of o, a keyed operation, may name nothing any
// more when c is made: o's retention had passed (mayBeAnew). Then c is a
// new operation, whatever its arguments, not a reuse of the key.
func (m *model) forgotten(o *mop, c *mcall) bool {
	return c.keyed() && o.calls[0].keyed() && m.mayBeAnew(o, c)
}

// mayBeAnew says a call of o's may start a new operation: o may have ended
// before c took effect, and, on the gateway clock, o's window had passed (an
// unkeyed call) or its record's retention (a keyed one). The retention
// counts from the record's last write, which the model cannot see; it
// counts from the start of o's first call, before any write, so a gateway
// that keeps the record its retention after the outcome is never failed,
// and one that purges it sooner is failed for a retry that came inside
// the retention of the operation's start.
func (m *model) mayBeAnew(o *mop, c *mcall) bool {
	if c.v.Permit != "" || !c.end.After(m.earliestDone(o, c)) {
		return false // o was running for the whole of c: a retry joins it, whatever its age
	}
	start := m.gatewayTime(o.calls[0].start)
	// A purge may come whenever the gateway clock is past the retention,
	// also before a clock set back again: the record is gone, keyed or not.
	keep, stated := m.retention(o.calls[0].start, c.start)
	purged := stated && m.latestGatewayTime(o.calls[0].start, c.start).Sub(start) >= keep
	if c.keyed() {
		return purged // a key whose retention nobody stated names its operation for good
	}
	w, known := m.window(c.start)
	if !known {
		w = unknownWindow
	}
	return purged || m.gatewayTime(c.start).Sub(start) >= w
}

// retention is the shortest retention of finished records in force from
// from to to (the target's, and every one a scenario set meanwhile): a
// gateway may purge under the shortest it held. False when none is known.
func (m *model) retention(from, to time.Time) (time.Duration, bool) {
	keep := time.Duration(m.facts.RetentionSeconds) * time.Second
	stated := m.facts.RetentionSeconds > 0
	for _, e := range m.env {
		if e.env.Kind != EnvSetting || e.env.RetentionSeconds == nil || !e.t.Before(to) {
			continue
		}
		set := time.Duration(*e.env.RetentionSeconds) * time.Second
		if e.t.Before(from) {
			keep, stated = set, true // in force when the operation began
			continue
		}
		if !stated || set < keep {
			keep, stated = set, true
		}
	}
	return keep, stated
}

// violation builds a model check of a deviation.
func violation(kind string, args map[string]string, capability string, harm Harm, step, expected, actual string, events ...int) Check {
	c := Check{Model: true, Kind: kind, Args: args, State: Violated, Capability: capability, Harm: harm, StepIndex: -1,
		Step: step, Expected: expected, Actual: actual}
	if len(events) > 0 {
		c.Witness = &Witness{Events: events}
	}
	return c
}

func held(kind, capability, step, expected, actual string, args map[string]string) Check {
	return Check{Model: true, Kind: kind, Args: args, State: Held, Capability: capability, StepIndex: -1, Step: step, Expected: expected, Actual: actual}
}

// answers holds every answer to what the contract allows at its point.
func (m *model) answers() []Check {
	var out []Check
	answered := 0
	flagged := map[int]bool{}
	for _, c := range m.calls {
		if c.typ == "" {
			continue
		}
		answered++
		if bad := m.answer(c); len(bad) > 0 {
			flagged[c.inv] = true
			out = append(out, bad...)
		}
		if c.result() || c.inputRound() {
			if ok, exp := FinalShape(true, c.a, c.v.Wire); !ok && !c.inputRound() && c.v.Wire != "" {
				out = append(out, violation(KindShape, Args("call", c.inv), CapWire, HarmShape,
					fmt.Sprintf("the result of %s is valid for %s", c.name(), c.v.Wire), exp, answerShape(c), c.out))
			} else if c.inputRound() && c.v.Wire != "" && c.v.Wire < "2026-07-28" {
				out = append(out, violation(KindShape, Args("call", c.inv), CapWire, HarmShape,
					fmt.Sprintf("the result of %s is valid for %s", c.name(), c.v.Wire),
					"a final result: "+c.v.Wire+" has no input-required results", answerShape(c), c.out))
			}
		}
	}
	for _, r := range m.raws {
		answered++
		if r.status >= 500 {
			out = append(out, violation(KindAnswer, Args("raw", r.i), CapWire, HarmWrongRefusal,
				fmt.Sprintf("the raw body %s sent is answered as the contract allows", r.process),
				"an answer the client can act on: a refusal below HTTP 500", fmt.Sprintf("HTTP %d", r.status), r.i))
		}
	}
	out = append(out, m.crossOperation(flagged)...)
	if answered > 0 && len(out) == 0 {
		out = append(out, held(KindAnswer, CapWire, "every answer is one the contract allows at its point",
			"each answer allowed by the calls, refusals, revocations and faults before it", fmt.Sprintf("%d answer(s), all allowed", answered), Args("answers", answered)))
	}
	return out
}

func answerShape(c *mcall) string {
	rt := c.a.ResultType
	if rt == "" {
		rt = "(absent)"
	}
	s := "resultType " + rt
	if c.a.NoContent {
		s += ", no content list"
	}
	return "a result with " + s
}

// describe is an answer in a finding.
func describe(c *mcall) string {
	switch {
	case c.result():
		s := fmt.Sprintf("a result with receipt %q", c.a.Receipt)
		if c.a.Served != "" && c.a.Served != c.v.Token {
			s += fmt.Sprintf(" carrying the probe's answer for %s", c.a.Served)
		}
		return s
	case c.refusal() && c.a.Receipt != "":
		return fmt.Sprintf("refused %q retryable=%v naming receipt %q (HTTP %d)", c.meaning(), c.a.Retryable, c.a.Receipt, c.a.Status)
	case c.refusal():
		return fmt.Sprintf("refused %q retryable=%v (HTTP %d)", c.meaning(), c.a.Retryable, c.a.Status)
	case c.a.Error != "":
		return "no answer: " + c.a.Error
	case c.inputRound():
		return "a request for input (resultType input_required)"
	}
	return fmt.Sprintf("HTTP %d with no JSON-RPC answer", c.a.Status)
}

// since reports whether an environment change of kind, matching, happened
// before wall time t.
func (m *model) since(t time.Time, kind string, match func(EnvValue) bool) bool {
	for _, e := range m.env {
		if e.t.Before(t) && e.env.Kind == kind && match(e.env) {
			return true
		}
	}
	return false
}

// during reports whether, at some point of c's call, a change of kind
// matching was in force (made before c ended, not undone before c began).
func (m *model) during(c *mcall, kind, undo string, match func(EnvValue) bool) bool {
	for _, e := range m.env {
		if e.env.Kind != kind || !match(e.env) || !e.t.Before(c.end) {
			continue
		}
		undone := false
		for _, u := range m.env {
			if u.env.Kind == undo && u.i > e.i && u.t.Before(c.start) && (u.env.Token == e.env.Token && u.env.Point == e.env.Point && u.env.Wallet == e.env.Wallet) &&
				// A release that names its fault's tool and action undoes
				// that fault only; one that does not, every fault at its point.
				(u.env.Tool == "" || u.env.Tool == e.env.Tool) && (u.env.Action == "" || u.env.Action == e.env.Action) {
				undone = true
			}
		}
		if !undone {
			return true
		}
	}
	return false
}

// upstreamRefused says the probe was told to refuse c's token before it
// was called: the upstream may have refused c before its tool ran.
func (m *model) upstreamRefused(c *mcall) bool {
	for _, e := range m.env {
		if e.env.Kind != EnvUpstreamFail || e.env.Token != c.v.Token || e.env.Action != UpstreamRefuse || !e.t.Before(c.end) {
			continue
		}
		// The probe refuses one dispatch: once a call of the token reached
		// it after the arming (it ran, or was itself refused as the
		// upstream refused it), the refusal is spent, and later calls run.
		// A call refused before dispatch (funds, a key required) never
		// reached the probe.
		spent := false
		for _, d := range m.calls {
			if d != c && d.v.Token == c.v.Token && e.t.Before(d.start) && d.end.Before(c.start) &&
				(d.result() || (d.refusal() && (slices.Contains(d.meanings(), ReasonDispatchFailed) || !d.ranNothing()))) {
				spent = true
				break
			}
		}
		if !spent {
			return true
		}
	}
	return false
}

// listedUncertain says the target listed c's operation uncertain (control
// API) within a second of gateway time after c was answered, while a call
// of the operation still waited at a pause it had reached at least the
// stale-lock threshold before c was answered, and no other call of it
// began: the holder wrote nothing since reaching its pause, and the
// listing shows no lease renewed (a gateway that renews a live holder's
// lease never lists it), so the operation was uncertain when c was
// answered. The operation is known by the receipt any of its answers
// carries.
func (m *model) listedUncertain(c *mcall) bool {
	stale, known := m.staleLock(c)
	if !known {
		return false
	}
	receipts := map[string]bool{}
	for _, d := range c.op.calls {
		if d.a.Receipt != "" {
			receipts[d.a.Receipt] = true
		}
	}
	if len(receipts) == 0 {
		return false
	}
	for _, e := range m.env {
		if e.env.Kind != EnvListed || e.env.Wallet != c.v.Wallet || !e.t.After(c.end) ||
			m.gatewayTime(e.t).Sub(m.gatewayTime(c.end)) >= time.Second ||
			!slices.ContainsFunc(e.env.Receipts, func(r string) bool { return receipts[r] }) {
			continue
		}
		quiet := true
		for _, d := range c.op.calls {
			if d != c && d.start.After(c.end) && d.start.Before(e.t) {
				quiet = false
			}
		}
		// The holder may have charged just before it reached its pause:
		// only its age from there tells the record was stale at c.
		since, waiting := m.waitingSince(c.op, e.t)
		if quiet && waiting && m.gatewayTime(c.end).Sub(m.gatewayTime(since)) >= stale {
			return true
		}
	}
	return false
}

// waitingSince is when a call of o was last seen arriving at a pause where
// it still waited at t (it wrote nothing after); ok is false when none did.
func (m *model) waitingSince(o *mop, t time.Time) (since time.Time, ok bool) {
	for _, w := range m.env {
		if w.env.Kind != EnvWaiting || !w.t.Before(t) || !m.releaseOf(w).After(t) {
			continue
		}
		for _, d := range o.calls {
			if d.proc == w.env.Client && d.start.Before(w.t) && d.end.After(t) {
				since, ok = w.t, true
			}
		}
	}
	return since, ok
}

// crashedStale says a call of c's operation died with its gateway process
// (an env crash event) at least the stale-lock threshold of gateway time
// before c began, and no other call of the operation overlaps c.
func (m *model) crashedStale(c *mcall) bool {
	s, known := m.staleLock(c)
	if !known {
		return false
	}
	crashed := false
	for _, e := range m.env {
		if e.env.Kind == EnvCrash && e.t.Before(c.start) && m.lastOpOf(e.env.Client, e.t) == c.op &&
			m.gatewayTime(c.start).Sub(m.gatewayTime(e.t)) >= s {
			crashed = true
		}
	}
	if !crashed {
		return false
	}
	for _, d := range c.op.calls {
		if d != c && d.start.Before(c.end) && d.end.After(c.start) {
			return false
		}
	}
	return true
}

// faultMeets says a fault armed as e may meet call c: a fault names its
// tool, and may name a wallet ("" any).
func faultMeets(e EnvValue, c *mcall) bool {
	return (e.Tool == "" || e.Tool == c.v.Tool) && (e.Wallet == "" || e.Wallet == c.v.Wallet)
}

// allowed is the set of refusals the contract allows for c at its point.
func (m *model) allowed(c *mcall) map[string]bool {
	a := map[string]bool{}
	if c.op.mustRefuse != "" {
		a[c.op.mustRefuse] = true
	}
	busy := false
	for _, d := range m.calls {
		if d.overlaps(c) {
			busy = true
			break
		}
	}
	_, uncertain := m.uncertainSince(c)
	faulted := m.during(c, EnvFault, EnvRelease, func(e EnvValue) bool { return faultMeets(e, c) })
	held := m.during(c, EnvHold, EnvLetGo, func(e EnvValue) bool { return e.Token == c.v.Token })
	if busy || uncertain || faulted || held {
		a[ReasonInProgress] = true
	}
	if a[ReasonInProgress] && !faulted && !held && m.crashedStale(c) {
		// The call that held the operation died with its process, longer
		// than the stale-lock threshold ago, and no other call of it is
		// in flight: nothing can still be running it, nor renewing its
		// lease. A retry is taken over and run (never charged), replayed
		// (stored), or told outcome_unknown (charged), never told to wait.
		delete(a, ReasonInProgress)
	}
	if uncertain && m.whyNotUncertain(c) == "" {
		a[ReasonOutcomeUnknown] = true
		if m.listedUncertain(c) {
			// Uncertain when it was answered, as the gateway's own
			// listing shows: in progress would have c retry for ever.
			delete(a, ReasonInProgress)
		}
	}
	for _, d := range m.calls {
		if d == c || !d.start.Before(c.end) || (d.fp == c.fp && d.v.Tool == c.v.Tool && d.scope == c.scope) {
			continue
		}
		if (c.keyed() && d.v.Key == c.v.Key) || (!c.keyed() && !d.keyed() && c.v.Permit != "" && d.v.Permit == c.v.Permit) {
			a[ReasonKeyReused] = true
		}
	}
	if c.v.Principal != "" && m.since(c.end, EnvRevoke, func(e EnvValue) bool { return e.Principal == c.v.Principal }) {
		a[ReasonPrincipalDenied] = true
	}
	if c.v.Forged {
		a[ReasonPrincipalBad] = true
	}
	if c.keyed() && !wellFormedKey(c.v.Key) {
		a["idempotency_key_invalid"] = true
	}
	if duplicateMembers(c.v.Arguments) {
		a["invalid_arguments"] = true
	}
	// A server may end a 2025-11-25 session whenever it likes; the client
	// initializes again (MCP Streamable HTTP).
	a["session_not_found"] = true
	if c.v.Role == "" || m.since(c.end, EnvRemoveTool, func(e EnvValue) bool { return e.Tool == c.v.Tool }) {
		a[ReasonUnknownTool] = true
	}
	if m.lowFunds(c) {
		a[ReasonFunds] = true
	}
	clockMoved := false
	for _, e := range m.env {
		clockMoved = clockMoved || (e.env.Kind == EnvClock && e.t.After(c.start) && e.t.Before(c.end))
	}
	// A failure armed (fail, drop_response) may fail any call of its tool
	// that meets it; a pause fails none but, at most, the call it held.
	failing := m.during(c, EnvFault, EnvRelease, func(e EnvValue) bool {
		return e.Action != "pause" && faultMeets(e, c)
	})
	pausedHere := m.since(c.end, EnvWaiting, func(e EnvValue) bool { return e.Client == c.proc }) && faulted
	if m.upstreamRefused(c) {
		// The upstream refused the call before its tool ran: the contract
		// says dispatch_failed; a gateway may say the same in its own
		// words or its upstream's, which the profile may map to no
		// meaning. Either way the debit is refunded (the ledger check) and
		// a retry may run it.
		a[ReasonDispatchFailed] = true
		// In its own words: a refusal the gateway marks retryable, or
		// one with no reason at all (the upstream's error handed on).
		if c.a.Retryable || (c.a.Reason == "" && len(c.a.Means) == 0) {
			for _, m := range c.meanings() {
				a[m] = true
			}
		}
	}
	if failing || pausedHere || held || clockMoved || c.v.Role == RoleSample || (c.v.Role == RoleAsk && c.v.Wire < "2026-07-28") {
		a[ReasonDispatchFailed] = true
	}
	if failing || pausedHere {
		a[ReasonResponseFailed] = true
	}
	if c.v.Permit != "" {
		a["permit_invalid"], a["permit_expired"] = true, true
		a["permit_exhausted"] = m.permitSpent(c)
	}
	if c.v.Role == RoleSample {
		a[ReasonCapabilities] = true
	}
	return a
}

// uncertainSince says whether an earlier call of c's operation may have
// charged it and run its tool with no result of it come back before c
// began, and the start of the earliest such call: no write of the
// operation's record can be older than that.
func (m *model) uncertainSince(c *mcall) (since time.Time, uncertain bool) {
	if m.settledCompleted(c) {
		return time.Time{}, false // decided: every call of it replays the settlement
	}
	for _, d := range c.op.calls {
		if d == c || !d.start.Before(c.start) {
			continue
		}
		if d.result() && d.end.Before(c.start) {
			return time.Time{}, false
		}
		if !d.ranNothing() {
			if !uncertain {
				since = d.start
			}
			uncertain = true
		}
	}
	return since, uncertain
}

// staleLock is the smallest stale-lock threshold in force at some point
// of c's call; known is false when neither the facts nor a setting say it
// (a vendor's gateway), or when one says 0 (nothing is ever stale, or the
// harness could not read it: both read as unknown, so the model never
// refuses outcome_unknown on a threshold it does not know).
func (m *model) staleLock(c *mcall) (s time.Duration, known bool) {
	secs := m.facts.StaleLockSeconds
	least := secs
	for _, e := range m.env {
		if !e.t.Before(c.end) {
			break
		}
		if e.env.Kind != EnvSetting || e.env.StaleLockSeconds == nil {
			continue
		}
		secs = *e.env.StaleLockSeconds
		if e.t.Before(c.start) {
			least = secs // the threshold c began under
		} else {
			least = min(least, secs) // changed while c ran
		}
	}
	return time.Duration(least) * time.Second, least > 0
}

// whyNotUncertain says why c, a call of an operation that may have run
// with no result come back (uncertainSince), may not be answered
// outcome_unknown; "" when it may. docs/wire.md makes an operation
// uncertain only once it was charged and then not written for the
// stale-lock threshold: a call whose answer was merely lost, or a twin
// still running, is in progress, and a reservation never charged is taken
// over, not uncertain. The model cannot see the record's writes, so it
// bounds the last one by the start of the operation's earliest call that
// may have run: a gateway that renews a live owner's lease writes later
// still, and answers in progress, which is allowed anyway. An answer meaning
// outcome_unknown must name the debit in question in data.receipt (a
// priced tool's: a free tool's charge writes no entry), and the wallet's
// settled ledger must hold that debit, not refunded by the time c began (an
// operator may refund it after, and a retry then runs afresh).
func (m *model) whyNotUncertain(c *mcall) string {
	if c.op.mustRefuse != "" {
		return "the operation must be refused " + c.op.mustRefuse
	}
	if s, ok := m.settled(c); ok {
		return fmt.Sprintf("an operator settled the operation %s (control API) before this call: it is decided", s.Outcome)
	}
	since, uncertain := m.uncertainSince(c)
	if !uncertain {
		return "no earlier call of the operation may have run it with no result come back"
	}
	if s, known := m.staleLock(c); known {
		if age := m.gatewayTime(c.end).Sub(m.gatewayTime(since)); age < s {
			return fmt.Sprintf("the operation was last written at most %v before this call was answered (gateway clock; its first call began then), short of the stale-lock threshold of %v: its owner may still be running it",
				age, s)
		}
	}
	if !c.refusal() || !slices.Contains(c.meanings(), ReasonOutcomeUnknown) || c.a.HTTPOnly {
		return ""
	}
	if c.a.Receipt == "" {
		if c.op.priced && c.op.price > 0 {
			return fmt.Sprintf("it names no debit in data.receipt (or where the profile's refusal_receipt_path says), though its tool costs %d credits", c.op.price)
		}
		return ""
	}
	if at, ok := m.reads[c.v.Wallet]; ok && !slices.ContainsFunc(at.read.Entries, func(e EffectValue) bool {
		return e.Kind == EntryDebit && e.Receipt == c.a.Receipt
	}) {
		return fmt.Sprintf("its data.receipt %q names no debit in the wallet's ledger: nothing was charged to be unsure of (a reservation never charged is taken over and run)", c.a.Receipt)
	}
	for _, r := range m.every {
		if r.read.Wallet != c.v.Wallet || !m.ops[r.i].Time.Before(c.start) {
			continue
		}
		if slices.ContainsFunc(r.read.Entries, func(e EffectValue) bool { return e.Kind == EntryRefund && e.Receipt == c.a.Receipt }) {
			return fmt.Sprintf("its data.receipt %q names a debit a ledger read before the call shows refunded: the operation is decided, not run", c.a.Receipt)
		}
	}
	return ""
}

// settled is the last settlement of c's operation made before c began:
// the operation of the last call its client had made when the operator
// settled it (another operation may share its token: a key reused with
// other arguments), or, for a history that names no client, the one of
// its token and wallet.
func (m *model) settled(c *mcall) (EnvValue, bool) { return m.settledBefore(c, c.start) }

// settledBefore is the last settlement of c's operation made before t.
func (m *model) settledBefore(c *mcall, t time.Time) (EnvValue, bool) {
	e, ok := m.settlementBefore(c, t)
	return e.env, ok
}

// settlementBefore is settledBefore with when the settlement was made.
func (m *model) settlementBefore(c *mcall, t time.Time) (envAt, bool) {
	var last envAt
	found := false
	for _, e := range m.env {
		if e.env.Kind != EnvSettle || !e.t.Before(t) {
			continue
		}
		var same bool
		if op := m.settledOp(e); op != nil {
			same = c.op == op
		} else if e.env.Client != "" {
			same = c.op != nil && m.lastOpOf(e.env.Client, e.t) == c.op
		} else {
			same = e.env.Token != "" && e.env.Token == c.v.Token && e.env.Wallet == c.v.Wallet
		}
		if same {
			last, found = e, true
		}
	}
	return last, found
}

// settledOp is the operation whose debit a settlement gave back or stood
// by: the one an answer before it named that receipt in (outcome_unknown's
// data.receipt), preferring the settling client's last call's; nil when no
// answer named it (then the client's last call, or the token, says).
func (m *model) settledOp(e envAt) *mop {
	if e.env.Receipt == "" {
		return nil
	}
	var first *mop
	for _, c := range m.calls {
		if c.out < 0 || !c.end.Before(e.t) || c.a.Receipt != e.env.Receipt || !c.refusal() {
			continue
		}
		if e.env.Client != "" && c.proc == e.env.Client {
			return c.op
		}
		if first == nil {
			first = c.op
		}
	}
	return first
}

// lastOpOf is the operation of the last call proc began before t.
func (m *model) lastOpOf(proc string, t time.Time) *mop {
	var op *mop
	for _, c := range m.calls {
		if c.proc == proc && c.start.Before(t) {
			op = c.op
		}
	}
	return op
}

// rerunServed says c's result is the outcome of a call of its operation
// begun after the refunded settlement s (the operation run afresh), which
// the holder that woke after it may be answered with: it ran nothing.
func (m *model) rerunServed(c *mcall, s envAt) bool {
	at := s.t
	for _, d := range c.op.calls {
		ranAfresh := d.start.After(at) && d.end.Before(c.end) && (d.a.Replayed == nil || !*d.a.Replayed)
		if d != c && d.result() && ranAfresh && d.a.Receipt != "" && d.a.Receipt == c.a.Receipt && d.a.Receipt != s.env.Receipt {
			return true
		}
	}
	return false
}

// waitedOver says c was seen waiting at a pause before its dispatch
// (EnvWaiting at a point its outcome is not stored by) and still there when
// settlement s was made.
func (m *model) waitedOver(c *mcall, s envAt) bool {
	at := s.t
	for _, e := range m.env {
		if e.env.Kind == EnvWaiting && e.env.Client == c.proc && !afterOutcome[e.env.Point] && e.t.After(c.start) && e.t.Before(at) && m.releaseOf(e).After(at) {
			return true
		}
	}
	return false
}

// lowFunds says the wallet may hold less than c's price when c is made:
// its balance is unknown, or its known balance less the price of every
// operation of it that may have run before is below the price.
func (m *model) lowFunds(c *mcall) bool {
	var balance *int64
	for _, e := range m.env {
		if e.env.Kind == EnvWallet && e.env.Wallet == c.v.Wallet && e.env.Balance != nil && e.t.Before(c.end) {
			balance = e.env.Balance
		}
	}
	if balance == nil || !c.op.priced {
		return true
	}
	left := *balance
	for _, o := range m.mops {
		if o != c.op && o.wallet == c.v.Wallet && o.calls[0].start.Before(c.end) && o.mayRun() {
			left -= o.price
		}
	}
	if o := c.op; o.calls[0] != c && m.mayBeAnew(o, c) && o.mayHaveRunBefore(c.start) {
		// Past its window the call may be a new operation, which o's own
		// charge leaves less to pay for.
		left -= o.price
	}
	return left < c.op.price
}

// answer judges one answer.
func (m *model) answer(c *mcall) []Check {
	args := Args("call", c.inv)
	step := fmt.Sprintf("%s is answered as the contract allows", c.name())
	bad := func(harm Harm, expected string, events ...int) []Check {
		return []Check{violation(KindAnswer, args, CapWire, harm, step, expected, describe(c), append([]int{c.inv, c.out}, events...)...)}
	}
	switch {
	case c.a.Status >= 500:
		return bad(HarmWrongRefusal, "an answer the client can act on: a result or a refusal below HTTP 500")
	case c.refusal():
		allowed := m.allowed(c)
		meaning := ""
		for _, r := range c.meanings() {
			if allowed[r] {
				meaning = r
				break
			}
		}
		if meaning == "" {
			if why := m.whyNotUncertain(c); slices.Contains(c.meanings(), ReasonOutcomeUnknown) && why != "" {
				return bad(HarmWrongRefusal, "an answer allowed here: "+m.expectation(c, allowed)+"; not "+ReasonOutcomeUnknown+": "+why)
			}
			return bad(HarmWrongRefusal, "an answer allowed here: "+m.expectation(c, allowed))
		}
		if c.a.Retryable && !retryableReasons[meaning] && !m.upstreamRefused(c) {
			return bad(HarmWrongRefusal, fmt.Sprintf("%q not marked retryable: the same call is refused again", meaning))
		}
		return nil
	case c.inputRound() && c.op.outcome != nil && c.op.outcome.end.Before(c.start) && !m.forgotten(c.op, c):
		// A round of a multi-round call sent again once the call finished
		// is answered with its final result (docs/wire.md), never asked
		// again for input it was given; past the record's retention the
		// key is forgotten, and the call starts over.
		return bad(HarmLostOutcome, fmt.Sprintf("its final result served again: receipt %q", c.op.outcome.a.Receipt), c.op.outcome.out)
	case !c.result():
		return nil
	}
	// A result.
	o := c.op
	switch {
	case c.v.Forged:
		return bad(HarmWrongRefusal, "a refusal meaning "+ReasonPrincipalBad+": the principal token is signed by no key the gateway trusts")
	case c.v.Principal != "" && m.since(c.start, EnvRevoke, func(e EnvValue) bool { return e.Principal == c.v.Principal }):
		return bad(HarmCrossScope, fmt.Sprintf("a refusal meaning %s: principal %q was revoked before the call", ReasonPrincipalDenied, c.v.Principal))
	case o.mustRefuse != "":
		return bad(HarmWrongRefusal, fmt.Sprintf("a refusal meaning %s: %s", o.mustRefuse, m.mustRefuseWhy(c)))
	}
	if _, before := m.settled(c); !before && c.result() {
		// A call begun before an operator settled its operation completed
		// and answered after (the holder that woke) may get the settled
		// result: the operator decided while it waited. Seen waiting before
		// its dispatch when the operator settled, it must get it: it runs
		// nothing, and is answered as the settlement says.
		if se, ok := m.settlementBefore(c, c.end); ok {
			s, waited := se.env, m.waitedOver(c, se)
			switch {
			case s.Outcome == SettleRefunded && waited && !m.rerunServed(c, se):
				return bad(HarmWrongRefusal, "a refusal meaning "+ReasonInProgress+" (retryable): the operator refunded the operation while this call waited before its dispatch, so it runs nothing")
			case s.Outcome != SettleCompleted:
			case (s.Receipt == "" || c.a.Receipt == s.Receipt) && (s.Digest == "" || c.a.Digest == s.Digest):
				if c.a.Replayed != nil && !*c.a.Replayed {
					return bad(HarmLostOutcome, "the settled result marked a replay (replayed: true, or the profile's replay_marker): the operator settled the operation while this call waited")
				}
				return nil
			case waited:
				return bad(HarmLostOutcome, fmt.Sprintf("the settled result replayed whole under receipt %q: the operator settled the operation while this call waited before its dispatch", s.Receipt))
			}
		}
	}
	if s, ok := m.settled(c); ok && s.Outcome == SettleRefunded && s.Receipt != "" && c.a.Receipt == s.Receipt {
		return bad(HarmLostOutcome, fmt.Sprintf("a result under a receipt of its own: %q names the debit the operator refunded", s.Receipt))
	}
	if s, ok := m.settled(c); ok && s.Outcome == SettleCompleted {
		// The operator's result stands for the tool's: every call after
		// the settlement replays it, under the debit's receipt; none runs
		// the tool, and none carries the probe's answer.
		switch {
		case s.Receipt != "" && c.a.Receipt != s.Receipt:
			return bad(HarmLostOutcome, fmt.Sprintf("the settled result replayed: receipt %q, as the operator settled it", s.Receipt))
		case c.a.Replayed != nil && !*c.a.Replayed:
			return bad(HarmLostOutcome, "the settled result marked a replay (replayed: true, or the profile's replay_marker): the operator settled the operation before this call")
		case s.Digest != "" && c.a.Digest != "" && c.a.Digest != s.Digest:
			return bad(HarmLostOutcome, "the settled result replayed whole (the operator's content, structuredContent and isError): the operator settled the operation before this call")
		}
		return nil
	}
	if r := o.reuseOf; r != nil && (r.ran() || r.running(c.start)) {
		if r.outcome != nil && sameResult(r.outcome, c) {
			return bad(HarmLostOutcome, fmt.Sprintf("a refusal meaning %s: the key names another operation, whose stored result this is", ReasonKeyReused), r.outcome.out)
		}
		return bad(HarmWrongRefusal, fmt.Sprintf("a refusal meaning %s: the key already names an operation with other arguments", ReasonKeyReused), r.calls[0].inv)
	}
	if first := o.outcome; first != nil && first != c {
		if first.a.Receipt != c.a.Receipt || (first.a.Digest != "" && c.a.Digest != "" && first.a.Digest != c.a.Digest) {
			what := "its stored result served again whole (the same receipt, content, structuredContent and isError)"
			return bad(HarmLostOutcome, what+fmt.Sprintf(": receipt %q", first.a.Receipt), first.out)
		}
		if first.a.Charged != nil && c.a.Charged != nil && *first.a.Charged != *c.a.Charged {
			return bad(HarmWrongAmount, fmt.Sprintf("its stored receipt served again whole: charged %d, as when it ran", *first.a.Charged), first.out)
		}
	}
	if c.a.Replayed != nil {
		// Whichever call the tool ran for, its result is the one not marked
		// a replay; every other result of the operation is.
		for _, d := range o.calls {
			if d != c && d.inv < c.inv && d.result() && d.a.Replayed != nil && !*d.a.Replayed && !*c.a.Replayed && sameResult(d, c) {
				return bad(HarmLostOutcome, fmt.Sprintf("its stored result marked a replay (replayed: true, or the profile's replay_marker): %s already got it as the call the tool ran for", d.name()), d.out)
			}
		}
		if *c.a.Replayed && !m.othersMayHaveRun(c) && !m.resultOfAnother(c) {
			return bad(HarmLostOutcome, "a result not marked a replay (replayed: false, or without the profile's replay_marker): no other call of its operation could have run it, so the tool ran for this one")
		}
		// The check above needs the first result seen; when that answer
		// was lost, the dispatches say it: the token's only dispatch was
		// behind an earlier call before c began, so c ran nothing and its
		// result can only be the stored one.
		if d := m.ranBefore(c); !*c.a.Replayed && d != nil {
			return bad(HarmLostOutcome, fmt.Sprintf("its stored result marked a replay (replayed: true, or the profile's replay_marker): the tool ran for %s before this call began, and %s was dispatched that once only", d.name(), c.v.Token), append([]int{d.inv}, m.dispatchesOf(c.v.Token)...)...)
		}
	}
	if c.a.Served == "" && c.v.Token != "" && m.servesProbe(c) {
		// The probe answers every dispatch with its token, and this target
		// hands that answer on: a result without it is none the tool gave.
		return bad(HarmLostOutcome, "the tool's result, which carries the probe's answer (this target hands it on: the run's wiring call or another result here shows it): this is a result the tool never produced")
	}
	if first := o.outcome; first == c {
		for _, e := range m.env {
			if e.env.Kind == EnvRemoveTool && e.env.Tool == c.v.Tool && e.t.Before(c.start) && !o.mayHaveRunBefore(e.t) && !m.lostMayHaveBegun(c, e.t) {
				return bad(HarmWrongRefusal, fmt.Sprintf("a refusal meaning %s, or an outcome stored before the tool was removed: a removed tool starts no work", ReasonUnknownTool), e.i)
			}
		}
	}
	return nil
}

// permitSpent says c's explicit permit may not have its price left: its
// budget is unknown, or what other operations under it that may have run
// cost, with c's price, passes it. A refunded operation gave its spend
// back, so it does not count.
func (m *model) permitSpent(c *mcall) bool {
	var budget *int64
	for _, e := range m.env {
		if e.env.Kind == EnvPermit && e.env.Permit == c.v.Permit {
			budget = e.env.Budget
		}
	}
	if budget == nil || !c.op.priced {
		return true
	}
	spent := c.op.price
	for _, o := range m.mops {
		if o == c.op || o.calls[0].v.Permit != c.v.Permit {
			continue
		}
		if !o.priced {
			return true
		}
		if o.ran() || o.mayRun() {
			spent += o.price
		}
	}
	return spent > *budget
}

// resultOfAnother says c carries a receipt another operation's result
// carries: a replay of that operation, which crossOperation judges with
// the harm it does (another scope's result, say).
func (m *model) resultOfAnother(c *mcall) bool {
	for _, d := range m.calls {
		if d.op != c.op && d.result() && c.a.Receipt != "" && d.a.Receipt == c.a.Receipt {
			return true
		}
	}
	return false
}

// ranBefore is an earlier call of c's token the tool is known to have run
// for before c began, when the token was dispatched once only, so c's
// result can be no dispatch of its own; nil when the history cannot tell.
// Known means seen by the harness, never taken from the gateway's word: the
// harness dropped the call only once the probe saw the token dispatched,
// the call was seen waiting at a point past its dispatch, or a fault armed
// at dispatch.after failed it (response_failed, or its response dropped).
func (m *model) ranBefore(c *mcall) *mcall {
	if c.v.Token == "" || len(m.dispatchesOf(c.v.Token)) != 1 {
		return nil
	}
	for _, d := range m.calls {
		if d == c || d.v.Token != c.v.Token || d.v.Tool != c.v.Tool || !d.end.Before(c.start) {
			continue
		}
		if d.v.Dropped || m.sawPastDispatch(d) {
			return d
		}
	}
	return nil
}

// sawPastDispatch says the harness saw call d past its dispatch: waiting
// at a point its operation's outcome is stored by, or failed by a fault
// armed there (the control API's faults at dispatch.after fail only calls
// whose tool ran).
func (m *model) sawPastDispatch(d *mcall) bool {
	for _, e := range m.env {
		if e.env.Kind == EnvWaiting && e.env.Client == d.proc && afterOutcome[e.env.Point] && e.t.After(d.start) && e.t.Before(d.end) {
			return true
		}
	}
	failedThere := func(action string) bool {
		return m.during(d, EnvFault, EnvRelease, func(e EnvValue) bool {
			return afterOutcome[e.Point] && e.Action == action && faultMeets(e, d)
		})
	}
	switch {
	case d.v.Cancelled:
		return false
	case d.unknown():
		return failedThere("drop_response")
	case d.refusal() && slices.Contains(d.meanings(), ReasonResponseFailed):
		return failedThere("fail")
	}
	return false
}

// dispatchesOf are the indexes of the history's dispatch events of token.
func (m *model) dispatchesOf(token string) []int {
	var out []int
	for i, op := range m.ops {
		var v EffectValue
		if op.F == FDispatch && json.Unmarshal(op.Value, &v) == nil && v.Token == token {
			out = append(out, i)
		}
	}
	return out
}

// othersMayHaveRun says another call that may be c's operation (of it, or
// the same call: an unkeyed call whose answer was lost may have started
// the operation the model counts c's as), begun before c's answer, may
// have run it: c's result may then be a replay.
func (m *model) othersMayHaveRun(c *mcall) bool {
	for _, d := range m.calls {
		if d != c && m.sameOperation(d, c) && d.start.Before(c.end) && !d.ranNothing() && !m.crashedBeforeDispatch(d) {
			return true
		}
	}
	return false
}

// crashedBeforeDispatch says d's gateway process was killed under it at a
// point before the dispatch (an env crash event): d ran nothing.
func (m *model) crashedBeforeDispatch(d *mcall) bool {
	for _, e := range m.env {
		if e.env.Kind == EnvCrash && e.env.Client == d.proc && !e.t.Before(d.start) && e.env.Point != "" && !afterOutcome[e.env.Point] &&
			m.lastOpOf(d.proc, e.t) == d.op {
			return true
		}
	}
	return false
}

// mayHaveRunBefore says a call of the operation made before t may have
// run it (its answer was lost, or said the tool ran and the answer failed):
// its stored outcome may be the first result a later call gets.
func (o *mop) mayHaveRunBefore(t time.Time) bool {
	for _, c := range o.calls {
		if c.start.Before(t) && !c.ranNothing() {
			return true
		}
	}
	return false
}

// lostMayHaveBegun says an unkeyed call of c's arguments whose answer was
// lost, made before t past the window of the operation the model counts
// it in, may have begun c's operation before t: the model starts a new
// unkeyed operation only at a result, so such a call stays counted in the
// operation before, though it may have run the one c's result is of.
func (m *model) lostMayHaveBegun(c *mcall, t time.Time) bool {
	if c.keyed() || c.v.Permit != "" || (c.a.Replayed != nil && !*c.a.Replayed) {
		// A result marked a first answer says the tool ran for c itself.
		return false
	}
	for _, d := range m.calls {
		if d == c || d.op == c.op || d.op == nil || !m.sameOperation(d, c) || !d.start.Before(t) ||
			d.result() || d.ranNothing() || !m.mayBeAnew(d.op, d) {
			continue
		}
		// Where the probe is watched, the lost call ran only if it saw a
		// dispatch of the token after the call began and before t.
		if !m.facts.Has(CapUpstream) || slices.ContainsFunc(m.dispatchesOf(c.v.Token), func(i int) bool {
			return m.ops[i].Time.After(d.start) && m.ops[i].Time.Before(t)
		}) {
			return true
		}
	}
	return false
}

// earliestDone is the earliest time o's outcome may have been stored, as
// far as the history tells, leaving call c out: each call that may have
// run o took effect somewhere between its start and its answer (the
// answer may still be on its way when another call begins: a gateway that
// finished o a moment before that call took effect is right to treat it
// as past o), and not before the release of a pause it was seen waiting at.
func (m *model) earliestDone(o *mop, c *mcall) time.Time {
	done := forever
	for _, d := range o.calls {
		if d == c || d.ranNothing() {
			continue
		}
		at := d.start
		for _, e := range m.env {
			if e.env.Kind == EnvWaiting && e.env.Client == d.proc && e.t.After(d.start) && e.t.Before(d.end) && !afterOutcome[e.env.Point] {
				if r := m.releaseOf(e); r.After(at) {
					at = r
				}
			}
		}
		if d.end.Before(at) {
			at = d.end // it answered: its effect is behind it
		}
		if at.Before(done) {
			done = at
		}
	}
	return done
}

// servesProbe says c's result must carry the probe's answer to its token,
// where the probe is behind the tools: the run's wiring call showed that
// this target hands it on (a write call's), or some result of the history
// carries one. A target that strips them everywhere is judged without them.
func (m *model) servesProbe(c *mcall) bool {
	if !m.facts.Has(CapUpstream) {
		return false
	}
	if m.facts.ProbeAnswers && c.v.Role == RoleWrite && m.gaveUpEarlier(c) {
		// The run's wiring call proved it before any scenario: a history
		// whose every result lacks the answer shows nothing else. Held to
		// it only after a client of the operation gave up on a call (a
		// gateway that passed the cancellation on to its upstream call):
		// an answer the gateway lost on its own (its upstream timed out)
		// is an isError result stored and charged, as docs/wire.md says.
		return true
	}
	for _, c := range m.calls {
		if c.result() && c.a.Served != "" {
			return true
		}
	}
	return false
}

// gaveUpEarlier says a call of c's operation before it was given up by its
// client on purpose: cancelled, or its connection closed once the tool ran
// (both marked on the call's invoke).
func (m *model) gaveUpEarlier(c *mcall) bool {
	for _, d := range c.op.calls {
		if d != c && d.start.Before(c.start) && (d.v.Cancelled || d.v.Dropped) {
			return true
		}
	}
	return false
}

// afterOutcome are the fault points (docs/control-api.md) a call reaches
// once its operation's outcome is stored: held there, it has done its part.
var afterOutcome = map[string]bool{"dispatch.after": true}

// releaseOf is when the pause a call was seen waiting at was released
// (forever when the history never says).
func (m *model) releaseOf(waiting envAt) time.Time {
	for _, e := range m.env {
		if e.i > waiting.i && e.env.Kind == EnvRelease && e.env.Point == waiting.env.Point {
			return e.t
		}
	}
	return forever
}

func (o *mop) running(t time.Time) bool {
	for _, c := range o.calls {
		if c.start.Before(t) && c.end.After(t) {
			return true
		}
	}
	return false
}

func sameResult(a, b *mcall) bool {
	return a.a.Receipt != "" && a.a.Receipt == b.a.Receipt || a.a.Digest != "" && a.a.Digest == b.a.Digest
}

func (m *model) mustRefuseWhy(c *mcall) string {
	switch {
	case c.v.Role == RoleReadOnly:
		return "an unkeyed read-only call (a permit is not a key)"
	case c.v.Role == RoleApproval:
		return "an unkeyed approval-gated call (a permit is not a key)"
	case m.facts.Policy == PolicyRefuse:
		return "an unkeyed mutating call under the refuse policy"
	}
	return "an unkeyed call with the window set to 0"
}

// expectation lists what c could have been answered with.
func (m *model) expectation(c *mcall, allowed map[string]bool) string {
	var rs []string
	for r := range allowed {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	s := "a result"
	if c.op.mustRefuse != "" {
		s = "a refusal"
	}
	if len(rs) > 0 {
		s += ", or a refusal meaning " + strings.Join(rs, ", ")
	}
	return s
}

// crossOperation finds a result that is another operation's: one receipt
// answering two operations, or an answer carrying the probe's answer to
// another operation's token.
func (m *model) crossOperation(flagged map[int]bool) []Check {
	var out []Check
	seen := map[string]bool{}
	report := func(c, first *mcall, what string) {
		if !flagged[c.inv] {
			flagged[c.inv] = true
			out = append(out, m.foreign(c, first, what))
		}
	}
	owner := map[string]*mcall{}
	for _, c := range m.calls {
		if !c.result() || c.a.Receipt == "" {
			continue
		}
		if first, ok := owner[c.a.Receipt]; ok && first.op != c.op && !seen[c.a.Receipt] && !m.sameOperation(first, c) {
			seen[c.a.Receipt] = true
			report(c, first, fmt.Sprintf("receipt %q, which answered %s", c.a.Receipt, first.name()))
			continue
		}
		if _, ok := owner[c.a.Receipt]; !ok {
			owner[c.a.Receipt] = c
		}
	}
	for _, e := range m.env {
		if e.env.Kind != EnvReceiptElsewhere {
			continue
		}
		for _, c := range m.calls {
			if c.result() && c.a.Receipt == e.env.Receipt && c.v.Token != e.env.Token && !flagged[c.inv] {
				flagged[c.inv] = true
				out = append(out, violation(KindAnswer, Args("call", c.inv), CapWire, HarmLostOutcome,
					fmt.Sprintf("%s is answered as the contract allows", c.name()),
					"a result under a receipt of its own: a receipt names one operation in the whole run",
					fmt.Sprintf("a result carrying receipt %q, which also answered another operation (token %s) in scenario %s", c.a.Receipt, e.env.Token, e.env.Elsewhere),
					c.inv, c.out, e.i))
			}
		}
	}
	byToken := map[string]*mcall{}
	for _, c := range m.calls {
		if c.result() && c.a.Served == c.v.Token && byToken[c.v.Token] == nil {
			byToken[c.v.Token] = c
		}
	}
	for _, c := range m.calls {
		if !c.result() || c.a.Served == "" || c.a.Served == c.v.Token {
			continue
		}
		if other := byToken[c.a.Served]; other != nil {
			report(c, other, "the probe's answer to "+c.a.Served+", another operation's token")
		} else if c.v.Token != "" && !flagged[c.inv] && m.facts.Has(CapUpstream) {
			// A token no call of this history answered with: a call of
			// another scenario, or the run's wiring call, a buffer served
			// again.
			flagged[c.inv] = true
			out = append(out, violation(KindAnswer, Args("call", c.inv), CapUpstream, HarmLostOutcome,
				fmt.Sprintf("%s is answered as the contract allows", c.name()),
				fmt.Sprintf("the tool's result for %s: the probe's answer to its own token", c.v.Token),
				fmt.Sprintf("a result carrying the probe's answer to %s, a call not of this operation", c.a.Served),
				c.inv, c.out))
		}
	}
	// The probe answers every dispatch differently, so the same content
	// under two operations is one operation's result served for the other.
	byDigest := map[string]*mcall{}
	for _, c := range m.calls {
		if !c.result() || c.a.Digest == "" || c.a.Served == "" {
			continue
		}
		if first, ok := byDigest[c.a.Digest]; ok && first.op != c.op && !m.sameOperation(first, c) {
			report(c, first, "the content of "+first.name()+"'s result")
			continue
		}
		if _, ok := byDigest[c.a.Digest]; !ok {
			byDigest[c.a.Digest] = c
		}
	}
	return out
}

// sameOperation says two calls may be one operation: calls of one, or
// calls alike in all but how their numbers are written (1 and 1.0), which
// a gateway may take for one operation as well as for two.
func (m *model) sameOperation(a, b *mcall) bool {
	return a.op == b.op || (a.vfp == b.vfp && a.scope == b.scope && a.v.Tool == b.v.Tool && a.v.Key == b.v.Key && a.v.Permit == b.v.Permit)
}

func (m *model) foreign(c, first *mcall, what string) Check {
	harm := HarmLostOutcome
	if c.scope != first.scope || c.v.Tool != first.v.Tool || c.v.Wallet != first.v.Wallet {
		harm = HarmCrossScope
	}
	return violation(KindAnswer, Args("call", c.inv), CapWire, harm,
		fmt.Sprintf("%s is answered as the contract allows", c.name()),
		"a result of its own operation, or a refusal: never another operation's stored result",
		fmt.Sprintf("a result carrying %s", what), c.inv, c.out, first.out)
}

// dispatchChecks holds each token's dispatches at the probe to what its
// operations' answers allow: at most one per operation that may have run,
// at least one per operation whose result carries the probe's answer.
func (m *model) dispatchChecks() []Check {
	// The dispatches are the probe's, or the target's own read tool's
	// (effects): either way the history holds them, and they are judged
	// alike, under the capability that saw them.
	observer := CapUpstream
	switch {
	case m.facts.Has(CapUpstream):
	case m.facts.Has(CapEffects):
		observer = CapEffects
	default:
		return nil
	}
	count := map[string][]int{}
	for i, op := range m.ops {
		var v EffectValue
		if op.F == FDispatch && json.Unmarshal(op.Value, &v) == nil {
			count[v.Token] = append(count[v.Token], i)
		}
	}
	unread := map[string]string{}
	for _, e := range m.env {
		if e.env.Kind == EnvUnread {
			unread[e.env.Token] = e.env.Action
		}
	}
	byToken := map[string][]*mop{}
	var tokens []string
	for _, o := range m.mops {
		if o.token == "" {
			continue
		}
		if byToken[o.token] == nil {
			tokens = append(tokens, o.token)
		}
		byToken[o.token] = append(byToken[o.token], o)
	}
	var out []Check
	for _, t := range tokens {
		most, least := 0, 0
		var calls []int
		for k, o := range byToken[t] {
			if o.mayRun() {
				most++
			}
			if o.proven(observer == CapEffects, m.answeredSettled) && !m.servedAgain(o, byToken[t][:k]) {
				least++
			}
			for _, c := range o.calls {
				calls = append(calls, c.inv)
			}
		}
		n := len(count[t])
		step := fmt.Sprintf("the probe saw %s dispatched as its operations allow", t)
		witness := append(append([]int{}, count[t]...), calls...)
		switch {
		case n > most && most > 0:
			out = append(out, violation(KindDispatches, Args("token", t), observer, HarmDoubleDispatch, step,
				fmt.Sprintf("at most %d dispatch(es): %s", most, m.opsSummary(byToken[t])), fmt.Sprintf("dispatched %d times", n), witness...))
		case n > most:
			out = append(out, violation(KindDispatches, Args("token", t), observer, HarmLostOutcome, step,
				"no dispatch: every call of it was refused with a refusal that says nothing ran", fmt.Sprintf("dispatched %d time(s)", n), witness...))
		case n < least && unread[t] != "":
			// Some of its dispatches may be missing from the history: what
			// the read tool did give can only be too few.
			c := violation(KindDispatches, Args("token", t), observer, "", step,
				fmt.Sprintf("at least %d dispatch(es), as its results prove", least),
				fmt.Sprintf("%d read before the target's read tool failed: %s", n, unread[t]), witness...)
			c.State, c.Harm = NotObserved, ""
			out = append(out, c)
		case n < least:
			out = append(out, violation(KindDispatches, Args("token", t), observer, HarmLostOutcome, step,
				fmt.Sprintf("at least %d dispatch(es): %d result(s) of their own carry the probe's answer", least, least), fmt.Sprintf("dispatched %d time(s)", n), witness...))
		}
	}
	flaggedTok := map[string]bool{}
	for _, c := range out {
		flaggedTok[c.Args["token"]] = true
	}
	out = append(out, m.dispatchedAfterSettled(observer, flaggedTok)...)
	if len(out) == 0 && len(tokens) > 0 {
		out = append(out, held(KindDispatches, observer, "every operation was dispatched as often as its answers allow",
			"at most one dispatch per operation that may have run, one for each whose result is the probe's answer",
			fmt.Sprintf("%d token(s), all as allowed", len(tokens)), Args("tokens", len(tokens))))
	}
	return out
}

// dispatchedAfterSettled finds an operation settled completed dispatched
// after the settlement, when each of its calls then in flight was waiting
// before its dispatch: the holder that wakes runs nothing, and every later
// call replays the settlement. Another operation of the token (a second
// API key's) may run after it.
func (m *model) dispatchedAfterSettled(observer string, flagged map[string]bool) []Check {
	var out []Check
	for _, e := range m.env {
		if e.env.Kind != EnvSettle || e.env.Outcome != SettleCompleted {
			continue
		}
		o := m.settledOp(e)
		if o == nil && e.env.Client != "" {
			o = m.lastOpOf(e.env.Client, e.t)
		}
		if o == nil || o.token == "" || flagged[o.token] {
			continue
		}
		stalled := true
		for _, c := range o.calls {
			if c.start.Before(e.t) && c.end.After(e.t) && !m.waitedOver(c, e) {
				stalled = false
			}
		}
		if !stalled {
			continue
		}
		others := 0
		for _, p := range m.mops {
			if p != o && p.token == o.token && p.mayRun() && !p.calls[len(p.calls)-1].end.Before(e.t) {
				others++
			}
		}
		var after []int
		for _, i := range m.dispatchesOf(o.token) {
			if m.ops[i].Time.After(e.t) {
				after = append(after, i)
			}
		}
		if len(after) > others {
			out = append(out, violation(KindDispatches, Args("token", o.token), observer, HarmDoubleDispatch,
				fmt.Sprintf("the probe saw %s dispatched as its operations allow", o.token),
				"no dispatch of the operation after an operator settled it completed while its holder waited before dispatch: the holder runs nothing",
				fmt.Sprintf("dispatched %d time(s) after the settlement", len(after)), append([]int{e.i}, after...)...))
		}
	}
	return out
}

// servedAgain says an operation's outcome is an earlier one's served
// again, where the two may be one operation (1 and 1.0): it proves no
// dispatch of its own.
func (m *model) servedAgain(o *mop, earlier []*mop) bool {
	if o.outcome == nil {
		return false
	}
	for _, e := range earlier {
		if e.outcome != nil && m.sameOperation(e.outcome, o.outcome) && sameResult(e.outcome, o.outcome) {
			return true
		}
	}
	return false
}

func (m *model) opsSummary(os []*mop) string {
	var parts []string
	for _, o := range os {
		state := "refused, nothing ran"
		switch {
		case o.ran():
			state = fmt.Sprintf("ran (receipt %q)", o.outcome.a.Receipt)
		case o.mayRun():
			state = "may have run (its answer was lost or in progress)"
		}
		parts = append(parts, fmt.Sprintf("operation of %s %s", o.calls[0].name(), state))
	}
	return strings.Join(parts, "; ")
}

// ledgerChecks holds each wallet's final ledger to the operations: one
// debit of its tool's price under its receipt for each operation that ran,
// nothing that stays charged for an operation that was refused, no entry
// of another kind, and a balance moved by exactly the entries.
func (m *model) ledgerChecks() []Check {
	if !m.facts.Has(CapLedger) {
		return nil
	}
	var wallets []string
	for w := range m.reads {
		wallets = append(wallets, w)
	}
	sort.Strings(wallets)
	var out []Check
	for _, w := range wallets {
		out = append(out, m.ledger(w, m.reads[w])...)
	}
	return out
}

func (m *model) ledger(wallet string, at ledgerAt) []Check {
	r := at.read
	args := Args("wallet", wallet)
	step := "the wallet's ledger holds one debit of its price for each operation that ran, and nothing else"
	if wallet != "" {
		step = fmt.Sprintf("wallet %s's ledger holds one debit of its price for each operation that ran, and nothing else", wallet)
	}
	var harm Harm
	var expected, actual []string
	add := func(h Harm, exp, act string) {
		if harm == "" || h.Rank() < harm.Rank() {
			harm = h
		}
		expected, actual = append(expected, exp), append(actual, act)
	}
	owner := map[string]*mop{}
	for _, o := range m.mops {
		for _, c := range o.calls {
			if c.result() && c.a.Receipt != "" {
				owner[c.a.Receipt] = o
			}
		}
	}
	debits, refunds := map[string][]int64{}, map[string][]int64{}
	var net int64
	receipted := true
	for _, e := range r.Entries {
		switch e.Kind {
		case EntryDebit:
			debits[e.Receipt] = append(debits[e.Receipt], e.Amount)
			net += e.Amount
		case EntryRefund:
			refunds[e.Receipt] = append(refunds[e.Receipt], e.Amount)
			net -= e.Amount
		default:
			net += e.Amount
			add(HarmWrongAmount, "debits and refunds only", fmt.Sprintf("a %q entry of %d credits", e.Kind, e.Amount))
			continue
		}
		if e.Receipt == "" {
			receipted = false
		}
	}
	if r.Baseline >= 0 && r.Balance < 0 {
		// A prepaid wallet the run's calls overdrew. One that began in
		// debt is a credit account, whose limit the harness cannot know.
		add(HarmWrongAmount, "a balance never taken below zero by the scenario's calls: a call the wallet cannot pay is refused "+ReasonFunds,
			fmt.Sprintf("balance %d (from %d)", r.Balance, r.Baseline))
	}
	if r.Delta() != -net {
		add(HarmWrongAmount, fmt.Sprintf("the balance moved by the entries' net, %+d", -net), fmt.Sprintf("balance %d, moved by %+d from %d", r.Balance, r.Delta(), r.Baseline))
	}
	price := func(o *mop, tool string) (int64, bool) {
		if o != nil && o.priced {
			return o.price, true
		}
		p, ok := r.Prices[tool]
		return p, ok
	}
	sum := func(xs []int64) (s int64) {
		for _, x := range xs {
			s += x
		}
		return s
	}
	// Operations that ran, each charged once at its price under its receipt.
	ran, maybe := 0, 0
	var missing int64   // the prices of operations that ran with no debit under their receipt
	var unpaid []string // their receipts
	var want, slack int64
	for _, o := range m.mops {
		if o.wallet != wallet {
			continue
		}
		p, known := price(o, o.calls[0].v.Tool)
		switch {
		case o.ran():
			ran++
			want += p
		case o.mayRun():
			maybe++
			slack += p
		}
		if !o.ran() || !receipted || !known {
			continue
		}
		rc := o.outcome.a.Receipt
		d, f := debits[rc], refunds[rc]
		switch {
		case len(d) > 1:
			add(HarmDoubleCharge, fmt.Sprintf("one debit of %d under receipt %s", p, rc), fmt.Sprintf("%d debits %v, %d refund(s)", len(d), d, len(f)))
		case len(d) == 1 && (d[0] != p || len(f) > 0):
			add(HarmWrongAmount, fmt.Sprintf("one debit of %d under receipt %s, not refunded", p, rc), fmt.Sprintf("a debit of %d, refunds %v", d[0], f))
		case len(d) == 0 && p > 0:
			unpaid = append(unpaid, fmt.Sprintf("%s (%d)", rc, p))
			missing += p
		}
		if ch := o.outcome.a.Charged; ch != nil && len(d) == 1 && *ch != d[0] {
			add(HarmWrongAmount, fmt.Sprintf("receipt %s saying what the ledger debited under it, %d", rc, d[0]), fmt.Sprintf("a result whose receipt says charged %d", *ch))
		}
	}
	if receipted {
		// Receipts of no operation that ran: refused or lost calls. Each
		// refund gives back its debit; what stays charged is at most one
		// price per operation that may have run unseen.
		var leftover int64
		var rows []string
		for rc, d := range debits {
			if o := owner[rc]; o != nil {
				switch {
				case o.wallet != wallet:
					add(HarmWrongAmount, fmt.Sprintf("no charge to this wallet for %s, another wallet's call", o.calls[0].name()), fmt.Sprintf("debits %v under receipt %s", d, rc))
				case o.ran() && o.outcome.a.Receipt != rc && sum(d) != sum(refunds[rc]):
					// A receipt a later answer of the operation carries: a
					// second charge for it, under another name.
					add(HarmDoubleCharge, fmt.Sprintf("one charge for the operation of %s, under its receipt %s", o.calls[0].name(), o.outcome.a.Receipt),
						fmt.Sprintf("debits %v also under receipt %s, which another answer of it carries", d, rc))
				}
				continue
			}
			if n := sum(d) - sum(refunds[rc]); n != 0 {
				leftover += n
				rows = append(rows, fmt.Sprintf("%s: debits %v, refunds %v", rc, d, refunds[rc]))
			}
		}
		for rc, f := range refunds {
			if len(debits[rc]) == 0 {
				leftover -= sum(f)
				rows = append(rows, fmt.Sprintf("%s: a refund %v of no debit", rc, f))
			}
		}
		// An operation charged under a receipt none of its answers carried
		// (its first answer was lost, a retry got a fresh receipt) paid
		// once, but the client cannot match what it paid to what it got.
		if moved := min(missing, max(leftover, 0)); moved > 0 {
			add(HarmLostOutcome, fmt.Sprintf("each operation's debit under the receipt its answers carry: %s", strings.Join(unpaid, ", ")),
				fmt.Sprintf("%d credits debited under receipts no answer carried", moved))
			missing, leftover = missing-moved, leftover-moved
		}
		if missing > 0 {
			add(HarmWrongAmount, fmt.Sprintf("one debit of its price under each receipt of an operation that ran: %s", strings.Join(unpaid, ", ")),
				fmt.Sprintf("%d credits never charged", missing))
		}
		if leftover < 0 || leftover > slack {
			harm := HarmWrongAmount
			if leftover > slack && maybe == 0 && ran > 0 {
				harm = HarmDoubleCharge
			}
			sort.Strings(rows)
			add(harm, fmt.Sprintf("each refused call's debit refunded (at most %d credits kept for %d call(s) whose answer was lost)", slack, maybe),
				fmt.Sprintf("%+d credits kept under receipts of no operation that ran: %s", leftover, strings.Join(rows, "; ")))
		}
	} else if -r.Delta() < want || -r.Delta() > want+slack {
		add(HarmWrongAmount, fmt.Sprintf("%d operation(s) ran: a net charge of %d (up to %d with %d call(s) whose answer was lost)", ran, want, want+slack, maybe),
			fmt.Sprintf("a net charge of %d", -r.Delta()))
	}
	if len(expected) > 0 {
		return []Check{violation(KindLedger, args, CapLedger, harm, step, strings.Join(expected, "; "), strings.Join(actual, "; "), at.i)}
	}
	return []Check{held(KindLedger, CapLedger, step, "one debit of its price per operation that ran, nothing else kept, the balance moved by the entries",
		fmt.Sprintf("%d operation(s) ran, %d entr(ies), balance %+d", ran, len(r.Entries), r.Delta()), args)}
}

// unkeyedRefusedAfter says a setting made after t put the unkeyed retry
// window to 0, the policy that refuses unkeyed calls.
func (m *model) unkeyedRefusedAfter(t time.Time) bool {
	for _, e := range m.env {
		if e.env.Kind == EnvSetting && e.env.WindowSeconds != nil && *e.env.WindowSeconds == 0 && e.t.After(t) {
			return true
		}
	}
	return false
}

// decided holds that every operation ended decided: a result, or a refusal
// that says nothing ran. An operation only ever answered in progress (or
// with answers lost) after explore retried it until decided is stuck.
func (m *model) decided() []Check {
	var out []Check
	for _, o := range m.mops {
		if o.ran() || !o.mayRun() || o.next != nil {
			// An unkeyed operation its window outlived and a later call
			// started anew: what became of it the client can no longer
			// learn, rightly; the later one is held to the rule.
			continue
		}
		last := o.calls[len(o.calls)-1]
		if last.refusal() && last.meaning() == ReasonOutcomeUnknown && m.allowed(last)[ReasonOutcomeUnknown] {
			// Decided as far as the gateway can: it says the operation may
			// have run and leaves it to an operator, rather than to a client
			// retrying for ever.
			continue
		}
		if last.v.Key == "" && m.unkeyedRefusedAfter(last.start) {
			// The window was set to 0 since: the gateway now refuses
			// unkeyed calls (idempotency_key_required), so what became of
			// an unkeyed operation whose answer was lost the client can no
			// longer learn, by the operator's setting.
			continue
		}
		if last.refusal() && finalForCaller[last.meaning()] && m.allowed(last)[last.meaning()] {
			// The caller may never learn the outcome, rightly: a revoked
			// principal gets no stored result, a removed tool need not
			// serve one, a wallet that cannot pay runs nothing new.
			continue
		}
		out = append(out, violation(KindDecided, Args("op", o.calls[0].inv), CapWire, HarmLostOutcome,
			fmt.Sprintf("the operation of %s is decided once retried", o.calls[0].name()),
			"a result, or a refusal that says nothing ran, once its calls stopped and it was retried",
			fmt.Sprintf("%d call(s), the last %s", len(o.calls), describe(last)), last.inv, last.out))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// wellFormedKey says a client key is one docs/wire.md takes as it is: at
// most 255 characters of printable ASCII, with none of the characters a
// proxy or a Structured Field would read as a separator.
func wellFormedKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for _, r := range k {
		if r < 0x21 || r > 0x7e || strings.ContainsRune(`,;"\`, r) {
			return false
		}
	}
	return true
}
