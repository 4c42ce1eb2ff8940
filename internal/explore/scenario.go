// Package explore is `mcpconform explore`: a seeded, bounded random
// workload against a target, written as Gherkin scenarios of the suite's
// own steps and run through the runner, so every history is recorded and
// judged as any scenario's is (the steps' recorder, judge.Model, the
// verdict rule, the reports and repro.sh). A violation is shrunk to a
// minimal sequence of steps (delta debugging) and written out as a
// scenario of its own.
//
// A generated scenario is data first (Scenario: its operations, clients
// and actions), rendered to Gherkin last, so the shrinker removes actions
// and renders again instead of editing text; an action that makes no sense
// once another is gone (a release without its pause, a cancellation with
// no call in flight) is dropped by Normalize, so any subset of actions is
// a scenario the steps can run.
package explore

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Tool aliases a scenario can use; Given steps register each one used.
const (
	ToolWrite    = "write"
	ToolWrite2   = "write2"
	ToolRead     = "count"
	ToolApproval = "approve"
	ToolAsk      = "ask"
	ToolSample   = "sample"
	ToolPricey   = "pricey"
)

// Client is a named caller of a scenario and who it is.
type Client struct {
	// Cred is the API key it uses: "" the wallet's own, CredSecond another
	// of the same wallet, CredOther a key of another wallet.
	Cred string `json:"cred,omitempty"`
	// Principal is the enterprise principal it acts as, "" none.
	Principal string `json:"principal,omitempty"`
	// Version is the protocol version it speaks first, "" the negotiated one.
	Version string `json:"version,omitempty"`
	// URL is the gateway URL it talks to, 1-based; 0 is the first.
	URL int `json:"url,omitempty"`
	// Forged: it presents a principal token signed by a key nobody trusts.
	Forged bool `json:"forged,omitempty"`
}

// Credentials of a client.
const (
	CredSecond = "second-key"
	CredOther  = "other-wallet"
)

// Op is one call as a client sends it: a tool, its arguments (a probe
// token and an optional note) and how it names its operation (a key, an
// explicit permit, or nothing). Which operation it is also depends on who
// sends it: the same Op from another API key is another operation.
type Op struct {
	Tool   string `json:"tool"`
	Token  int    `json:"token"`            // the arguments' token is $op<Token>
	Note   string `json:"note,omitempty"`   // a second argument, "" none
	Nested string `json:"nested,omitempty"` // a note one object deeper, {"meta":{"note":…}}, "" none
	Pad    int    `json:"pad,omitempty"`    // characters of padding in a "pad" argument, 0 none
	// List is a "tags" argument, a JSON list whose order is part of the
	// arguments: the same tags in another order are other arguments.
	List []string `json:"list,omitempty"`
	Key  int      `json:"key,omitempty"` // the key is $k<Key>; 0 unkeyed
	// KeyForm writes the key otherwise: KeyUpper the same key in capitals
	// (another key: keys are case-sensitive), KeyLong behind the 240
	// characters every long key shares ($L: keys are compared whole, up to
	// 255 characters).
	KeyForm string `json:"key_form,omitempty"`
	Permit  string `json:"permit,omitempty"`
	// reordered writes the arguments' members the other way round: the
	// same arguments to a gateway, which must not fingerprint the bytes.
	reordered bool
}

// Key forms.
const (
	KeyUpper = "upper"
	KeyLong  = "long"
)

// keyText is the key as the steps write it.
func (o Op) keyText() string {
	switch o.KeyForm {
	case KeyUpper:
		return fmt.Sprintf("$K%d", o.Key)
	case KeyLong:
		return fmt.Sprintf("$L%d", o.Key)
	}
	return fmt.Sprintf("$k%d", o.Key)
}

// Keyed says the op carries an idempotency key.
func (o Op) Keyed() bool { return o.Key > 0 }

// args is the op's arguments as the steps write them.
func (o Op) args() string {
	members := []string{fmt.Sprintf(`"token":"$op%d"`, o.Token)}
	if o.Note != "" {
		members = append(members, fmt.Sprintf(`"note":%q`, o.Note))
	}
	if o.Nested != "" {
		members = append(members, fmt.Sprintf(`"meta":{"note":%q,"v":1}`, o.Nested))
	}
	if o.Pad > 0 {
		members = append(members, fmt.Sprintf(`"pad":"$pad%d"`, o.Pad))
	}
	if len(o.List) > 0 {
		tags := make([]string, len(o.List))
		for i, t := range o.List {
			tags[i] = strconv.Quote(t)
		}
		members = append(members, `"tags":[`+strings.Join(tags, ",")+"]")
	}
	if o.reordered {
		slices.Reverse(members)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// members counts the arguments' top-level members.
func (o Op) members() int {
	n := 1
	for _, on := range []bool{o.Note != "", o.Nested != "", o.Pad > 0, len(o.List) > 0} {
		if on {
			n++
		}
	}
	return n
}

// Permit is an explicit permit the scenario grants.
type Permit struct {
	Tool   string        `json:"tool"`
	Budget int64         `json:"budget"`
	TTL    time.Duration `json:"ttl"`
}

// Kinds of action.
const (
	// KCall: Client calls Op (a retry when it is not the op's first call).
	// Variant "again" repeats the client's last call of Op as it was sent
	// (a multi-round call's later round); otherwise a multi-round call is
	// sent again from its first round.
	KCall = "call"
	// VariantReordered: a KCall that sends Op's arguments with their
	// members the other way round.
	VariantReordered = "reordered"
	// VariantWhileHeld: a KCall of a keyed Op while the probe holds its
	// dispatch: the call's wait ends at its answer or at the probe seeing
	// the operation dispatched again (a gateway that lets the duplicate
	// through has it held too), and its answer is collected by the
	// client's next retry.
	VariantWhileHeld = "while-held"
	// VariantDistinct: a KTwins whose calls are each an operation of its
	// own (their tokens and keys suffixed -0, -1...).
	VariantDistinct = "distinct"
	// KDrop: Client calls Op (keyed) and drops the connection once the tool runs.
	KDrop = "drop"
	// KTwins: N clients call Op at once; Variant "held" holds the first
	// dispatch, "split" splits them across the gateway URLs (unkeyed),
	// VariantDistinct makes each call an operation of its own.
	KTwins = "twins"
	// KPause: a pause armed at Point for Op's tool, Client starts calling
	// Op and waits there; KRelease (same Group) releases it.
	KPause   = "pause"
	KRelease = "release"
	// KHold: the probe stalls Op's token, Client starts calling Op and the
	// probe sees it dispatched; KUnhold (same Group) lets it go.
	KHold   = "hold"
	KUnhold = "unhold"
	// KCancel: Client cancels its call in flight (Variant "notify":
	// notifications/cancelled; "close": the response stream closed).
	KCancel = "cancel"
	// KFault: a fault armed for Op's tool (Variant "fail" at Point, or
	// "drop" the response after dispatch), then Client calls Op.
	KFault = "fault"
	// KUpstream: the probe fails Op's next dispatch (Variant
	// probe.FailToolError or probe.FailRefuse), then Client calls Op.
	KUpstream = "upstream"
	// KWait: Dur of real time passes.
	KWait = "wait"
	// KClock: the gateway clock moves (Variant: ClockFreezeBefore,
	// ClockFreezeAt, ClockAdvance by Dur, ClockPastWindow, ClockPastStale,
	// ClockPastPermit, ClockShortOfWindow by Dur).
	KClock = "clock"
	// KSetting: Variant SetWindow or SetStale is set to Value seconds.
	KSetting = "setting"
	// KRevoke: the principal Who is revoked.
	KRevoke = "revoke"
	// KRemove: Tool is removed.
	KRemove = "remove"
	// KSpeak: Client speaks protocol Version from here on.
	KSpeak = "speak"
	// KAnswer: Client answers the input its last answer asked for, if it asked.
	KAnswer = "answer"
	// KRaw: Client sends a body that is not JSON (cut short).
	KRaw = "raw"
	// KSettle: an operator settles the operation of Client's last call,
	// where the gateway lists it uncertain (Variant: judge.SettleRefunded
	// or judge.SettleCompleted, with settledResult).
	KSettle = "settle"
)

// settledResult is the result a KSettle completed settles with.
const settledResult = `{"content":[{"type":"text","text":"settled by the operator"}]}`

// rawBody is the malformed body a KRaw sends: a tools/call cut short.
const rawBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`

// Variants of a clock action and of a setting.
const (
	ClockFreezeBefore = "freeze-before"
	ClockFreezeAt     = "freeze-at"
	ClockAdvance      = "advance"
	ClockPastWindow   = "past-window"
	ClockPastStale    = "past-stale"
	ClockPastPermit   = "past-permit"
	// ClockShortOfWindow: Dur short of the effective window, still inside
	// it though a whole-second reading of the two times is a window apart.
	ClockShortOfWindow = "short-of-window"
	// ClockShortOfRetention: Dur short of the retention (inside it);
	// ClockPastRetention: a second past it.
	ClockShortOfRetention = "short-of-retention"
	ClockPastRetention    = "past-retention"
	SetWindow             = "window"
	SetStale              = "stale"
	// SetRetention: the retention set Value seconds past the effective
	// window (a retention shorter than the window is refused).
	SetRetention = "retention"
)

// Action is one thing a scenario does: one step, or a few that only make
// sense together (a pause armed, a call started and waiting at it).
type Action struct {
	// ID names the action across shrinking (the index changes).
	ID      int           `json:"id"`
	Kind    string        `json:"kind"`
	Client  string        `json:"client,omitempty"`
	Op      int           `json:"op,omitempty"` // index into Ops
	Point   string        `json:"point,omitempty"`
	N       int           `json:"n,omitempty"`
	Dur     time.Duration `json:"dur,omitempty"`
	Variant string        `json:"variant,omitempty"`
	Value   int64         `json:"value,omitempty"`
	Version string        `json:"version,omitempty"`
	Tool    string        `json:"tool,omitempty"`      // KRemove's tool
	Who     string        `json:"principal,omitempty"` // KRevoke's principal
	// Group ties actions kept or dropped together (a pause and its
	// release); 0 none.
	Group int `json:"group,omitempty"`
	// Needs are the IDs of actions this one makes no sense without.
	Needs []int `json:"needs,omitempty"`
}

// Scenario is one generated scenario.
type Scenario struct {
	Seed int64 `json:"seed"`
	N    int   `json:"n"` // its number in the seed's sequence, from 1
	// Wallet is the scenario wallet's balance in credits.
	Wallet  int64             `json:"wallet"`
	Prices  map[string]int64  `json:"prices"` // by tool alias
	Permits map[string]Permit `json:"permits,omitempty"`
	Clients map[string]Client `json:"clients"`
	Ops     []Op              `json:"ops"`
	Actions []Action          `json:"actions"`
	// Title, Requirement and Source describe a found scenario; empty, the
	// renderer writes an explored one's.
	Title, Requirement, Source string `json:"-"`
	// Name, when set, is the ID instead of explore-<seed>-<n>: a
	// shrinker's candidate (shrink-<round>-<k>).
	Name string `json:"-"`
}

// ID is the scenario's stable ID: explore-<seed>-<n>.
func (s Scenario) ID() string {
	if s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("explore-%d-%d", s.Seed, s.N)
}

// clone copies a scenario deeply enough to edit its actions.
func (s Scenario) clone() Scenario {
	c := s
	c.Actions = append([]Action(nil), s.Actions...)
	return c
}

// Without returns the scenario without the actions whose IDs are in drop,
// nor any action tied to one of them or needing one, then normalized.
func (s Scenario) Without(drop map[int]bool) Scenario {
	gone := map[int]bool{}
	for id := range drop {
		gone[id] = true
	}
	for changed := true; changed; {
		changed = false
		groups := map[int]bool{}
		for _, a := range s.Actions {
			if gone[a.ID] && a.Group != 0 {
				groups[a.Group] = true
			}
		}
		for _, a := range s.Actions {
			if gone[a.ID] {
				continue
			}
			out := a.Group != 0 && groups[a.Group]
			for _, n := range a.Needs {
				out = out || gone[n]
			}
			if out {
				gone[a.ID], changed = true, true
			}
		}
	}
	c := s.clone()
	c.Actions = c.Actions[:0]
	for _, a := range s.Actions {
		if !gone[a.ID] {
			c.Actions = append(c.Actions, a)
		}
	}
	return c.Normalize()
}

// Normalize drops the actions that make no sense where they stand once
// others are gone, so the steps can run every scenario it returns:
// anything a client does while a call of its own is in flight, other than
// retrying that call or cancelling it; a cancellation with no call in
// flight; a release of a pause or hold that is not there; an answer to
// input its client's last call cannot have asked for.
func (s Scenario) Normalize() Scenario {
	c := s.clone()
	c.Actions = c.Actions[:0]
	pending := map[string]int{} // client -> op of its call in flight, +1
	// whileHeld: clients whose call in flight was sent while the probe
	// held its operation: it may have been answered, so only a retry
	// collects it (a cancellation would find nothing in flight).
	whileHeld := map[string]bool{}
	lastOp := map[string]int{} // client -> op of its last call, +1
	started := map[int]bool{}  // groups whose pause or hold is kept
	for _, a := range s.Actions {
		p := pending[a.Client]
		switch a.Kind {
		case KRelease, KUnhold:
			if !started[a.Group] {
				continue
			}
		case KCall:
			if p != 0 && p != a.Op+1 {
				continue
			}
			delete(pending, a.Client)
			whileHeld[a.Client] = a.Variant == VariantWhileHeld
			if whileHeld[a.Client] {
				pending[a.Client] = a.Op + 1
			}
			lastOp[a.Client] = a.Op + 1
		case KCancel:
			if p == 0 || whileHeld[a.Client] {
				continue
			}
			delete(pending, a.Client)
		case KPause, KHold:
			if p != 0 {
				continue
			}
			pending[a.Client] = a.Op + 1
			lastOp[a.Client] = a.Op + 1
			started[a.Group] = true
		case KDrop, KFault, KUpstream:
			if p != 0 {
				continue
			}
			lastOp[a.Client] = a.Op + 1
		case KSpeak, KRaw:
			if p != 0 {
				continue
			}
		case KAnswer:
			if p != 0 || lastOp[a.Client] != a.Op+1 {
				continue
			}
		case KSettle:
			if lastOp[a.Client] != a.Op+1 {
				continue
			}
		}
		c.Actions = append(c.Actions, a)
	}
	return c
}

// Size is what the shrinker makes smaller: the steps first, then the real
// time the scenario waits, then the clients its crowds use.
type Size struct {
	Steps int
	Wait  time.Duration
	Crowd int
}

// Less orders sizes.
func (a Size) Less(b Size) bool {
	if a.Steps != b.Steps {
		return a.Steps < b.Steps
	}
	if a.Wait != b.Wait {
		return a.Wait < b.Wait
	}
	return a.Crowd < b.Crowd
}

// Size measures the scenario as rendered.
func (s Scenario) Size() Size {
	z := Size{Steps: len(s.steps())}
	for _, a := range s.Actions {
		switch a.Kind {
		case KWait:
			z.Wait += a.Dur
		case KTwins:
			z.Crowd += a.N
		}
	}
	return z
}

// step is one rendered Gherkin step.
type step struct {
	keyword, text string
}

// Render writes the scenario as a feature file of its own.
func (s Scenario) Render() []byte { return RenderAll([]Scenario{s}) }

// RenderAll writes scenarios as one feature file, in order.
func RenderAll(ss []Scenario) []byte {
	var b strings.Builder
	b.WriteString(featureHeader)
	for _, s := range ss {
		b.WriteString(s.renderScenario())
	}
	return []byte(b.String())
}

const featureHeader = `@explore
Feature: Explored: random sequences of the suite's steps
  Written by mcpconform explore. Each scenario is a seeded random sequence
  of calls, retries, twins, waits and changes to the target, ended by
  retrying every operation until it is decided; the model of the retry
  contract (docs/judge.md) judges its whole history.
`

func (s Scenario) renderScenario() string {
	var b strings.Builder
	title, req, src := s.Title, s.Requirement, s.Source
	if title == "" {
		title = fmt.Sprintf("Explored scenario %d of seed %d", s.N, s.Seed)
	}
	if req == "" {
		req = "Every answer, dispatch and ledger entry of this sequence is one the retry contract allows, and every operation ends decided once retried."
	}
	if src == "" {
		src = fmt.Sprintf("mcpconform explore --seed %d (scenario %d)", s.Seed, s.N)
	}
	fmt.Fprintf(&b, "\n  @%s @must", s.ID())
	for _, n := range s.Needs() {
		fmt.Fprintf(&b, " @needs-%s", n)
	}
	fmt.Fprintf(&b, "\n  Scenario: %s\n    Requirement: %s\n    Source: %s\n", oneLine(title), oneLine(req), oneLine(src))
	for _, st := range s.steps() {
		fmt.Fprintf(&b, "    %s %s\n", st.keyword, st.text)
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Needs are the capabilities the scenario's steps need, as @needs- tags
// name them.
func (s Scenario) Needs() []string {
	set := map[string]bool{"upstream": true}
	tools, clients := s.used()
	for t := range tools {
		switch t {
		case ToolWrite2:
			set["tool-write-other"] = true
		case ToolRead:
			set["tool-read-only"] = true
		case ToolApproval:
			set["tool-approval"] = true
		case ToolAsk, ToolSample, ToolPricey:
			set["fixtures"] = true
		}
	}
	if len(s.permitsUsed()) > 0 {
		set["fixtures"] = true
	}
	for name := range clients {
		c := s.Clients[name]
		switch {
		case c.Cred == CredSecond:
			set["second-key"] = true
		case c.Cred == CredOther:
			set["other-wallet"] = true
		}
		if c.Principal != "" {
			set["principal-tokens"] = true
		}
		if c.URL > 1 {
			set["two-urls"] = true
		}
	}
	for _, a := range s.Actions {
		switch a.Kind {
		case KPause, KFault:
			set["faults"] = true
		case KSettle:
			set["clock"] = true // an operation is uncertain only past the stale-lock threshold
		case KClock:
			set["clock"] = true
		case KSetting:
			set["settings"] = true
		case KRevoke:
			set["principals"] = true
		case KRemove:
			set["fixtures"] = true
		case KTwins:
			if a.Variant == "split" {
				set["two-urls"] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// used are the tool aliases and client names the actions use.
func (s Scenario) used() (tools, clients map[string]bool) {
	tools, clients = map[string]bool{}, map[string]bool{}
	for _, a := range s.Actions {
		if a.Client != "" {
			clients[a.Client] = true
		}
		switch a.Kind {
		case KCall, KDrop, KTwins, KPause, KHold, KFault, KUpstream:
			tools[s.Ops[a.Op].Tool] = true
		case KRemove:
			tools[a.Tool] = true
		case KRevoke:
			for name, c := range s.Clients {
				if c.Principal == a.Who {
					clients[name] = true
				}
			}
		}
	}
	return tools, clients
}

// permitsUsed are the permits the actions' ops name, sorted.
func (s Scenario) permitsUsed() []string {
	set := map[string]bool{}
	for _, a := range s.Actions {
		switch a.Kind {
		case KCall, KPause, KHold, KFault, KUpstream:
			if p := s.Ops[a.Op].Permit; p != "" {
				set[p] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// toolOrder is the order the Given steps register tools in.
var toolOrder = []string{ToolWrite, ToolWrite2, ToolRead, ToolApproval, ToolAsk, ToolSample, ToolPricey}

// steps renders the scenario's steps: the Given steps its actions need
// (wallet, tools, permits, clients), then each action, then the last step.
func (s Scenario) steps() []step {
	var out []step
	kw := "Given"
	add := func(text string) {
		out = append(out, step{kw, text})
		if kw == "Given" || kw == "When" {
			kw = "And"
		}
	}
	add(fmt.Sprintf("a wallet with %d credits and an API key", s.Wallet))
	tools, clients := s.used()
	for _, t := range toolOrder {
		if !tools[t] {
			continue
		}
		p := s.Prices[t]
		switch t {
		case ToolWrite:
			add(fmt.Sprintf("an upstream tool %q priced %d %s", t, p, credits(p)))
		case ToolWrite2:
			add(fmt.Sprintf("a second upstream tool %q priced %d %s", t, p, credits(p)))
		case ToolRead:
			add(fmt.Sprintf("an upstream read-only tool %q priced %d %s", t, p, credits(p)))
		case ToolApproval:
			add(fmt.Sprintf("an upstream approval-gated tool %q priced %d %s", t, p, credits(p)))
		case ToolAsk:
			add(fmt.Sprintf("an upstream multi-round tool %q priced %d %s", t, p, credits(p)))
		case ToolSample:
			add(fmt.Sprintf("an upstream tool %q that needs the client to declare sampling, priced %d %s", t, p, credits(p)))
		case ToolPricey:
			add(fmt.Sprintf("an upstream tool %q priced %d %s, more than the wallet holds", t, p, credits(p)))
		}
	}
	for _, name := range s.permitsUsed() {
		p := s.Permits[name]
		add(fmt.Sprintf("an explicit permit %q for %q with a budget of %d %s, valid for %s", name, p.Tool, p.Budget, credits(p.Budget), p.TTL))
	}
	names := make([]string, 0, len(clients))
	for n := range clients {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := s.Clients[n]
		if c.URL > 1 {
			add(fmt.Sprintf("client %q talks to gateway URL %d", n, c.URL))
		}
		switch c.Cred {
		case CredSecond:
			add(fmt.Sprintf("client %q uses another API key of the same wallet", n))
		case CredOther:
			add(fmt.Sprintf("client %q uses an API key of another wallet", n))
		}
		if c.Principal != "" {
			add(fmt.Sprintf("client %q acts as principal %q", n, c.Principal))
		}
		if c.Forged {
			add(fmt.Sprintf("client %q presents a forged principal token", n))
		}
		if c.Version != "" {
			add(fmt.Sprintf("%q speaks protocol %s", n, c.Version))
		}
	}
	kw = "When"
	pending := map[string]bool{}
	last := map[string]int{} // client -> the op of its last call, +1
	pauses := map[int]string{}
	for _, a := range s.Actions {
		op := Op{}
		if a.Kind != KWait && a.Kind != KClock && a.Kind != KSetting && a.Kind != KRevoke && a.Kind != KRemove && a.Kind != KRaw {
			op = s.Ops[a.Op]
		}
		switch a.Kind {
		case KCall:
			if a.Variant == VariantReordered {
				op.reordered = true
				add(callText(a.Client, "calls", op))
			} else if a.Variant == VariantWhileHeld && op.Keyed() {
				add(fmt.Sprintf("%s while the probe holds \"$op%d\"", callText(a.Client, "calls", op), op.Token))
			} else if last[a.Client] == a.Op+1 && (pending[a.Client] || op.Tool != ToolAsk || a.Variant == "again") {
				add(fmt.Sprintf("%q retries its last call with a new JSON-RPC id", a.Client))
			} else {
				add(callText(a.Client, "calls", op))
			}
			pending[a.Client] = a.Variant == VariantWhileHeld
			last[a.Client] = a.Op + 1
		case KDrop:
			add(fmt.Sprintf("%q calls %q with %s using key %q and drops the connection once the tool runs", a.Client, op.Tool, op.args(), op.keyText()))
			last[a.Client] = a.Op + 1
		case KTwins:
			switch a.Variant {
			case "held":
				add(fmt.Sprintf("%d clients call %q with %s using key %q at once, the first dispatch held", a.N, op.Tool, op.args(), op.keyText()))
			case "split":
				add(fmt.Sprintf("%d clients split across every gateway URL call %q with %s without a key at once", a.N, op.Tool, op.args()))
			case VariantDistinct:
				if op.Keyed() {
					add(fmt.Sprintf("%d clients call %q with %s at once, each its own operation using key %q", a.N, op.Tool, op.args(), op.keyText()))
				} else {
					add(fmt.Sprintf("%d clients call %q with %s at once, each its own operation", a.N, op.Tool, op.args()))
				}
			default:
				if op.Keyed() {
					add(fmt.Sprintf("%d clients call %q with %s using key %q at once", a.N, op.Tool, op.args(), op.keyText()))
				} else {
					add(fmt.Sprintf("%d clients call %q with %s without a key at once", a.N, op.Tool, op.args()))
				}
			}
		case KPause:
			add(fmt.Sprintf("a pause is armed at %q for %q", a.Point, op.Tool))
			add(callText(a.Client, "starts calling", op))
			add(fmt.Sprintf("%q waits at %q", a.Client, a.Point))
			pending[a.Client], last[a.Client] = true, a.Op+1
			pauses[a.Group] = a.Point
		case KRelease:
			add(fmt.Sprintf("the pause at %q is released", pauses[a.Group]))
		case KHold:
			add(fmt.Sprintf("the probe stalls \"$op%d\"", op.Token))
			add(callText(a.Client, "starts calling", op))
			add(fmt.Sprintf("the probe sees \"$op%d\" dispatched", op.Token))
			pending[a.Client], last[a.Client] = true, a.Op+1
		case KUnhold:
			add(fmt.Sprintf("the probe releases \"$op%d\"", op.Token))
		case KCancel:
			if a.Variant == "notify" {
				add(fmt.Sprintf("%q cancels its call with notifications/cancelled", a.Client))
			} else {
				add(fmt.Sprintf("%q closes its response stream", a.Client))
			}
			pending[a.Client] = false
		case KFault:
			if a.Variant == "drop" {
				add(fmt.Sprintf("the gateway will drop the response after dispatching %q", op.Tool))
			} else {
				add(fmt.Sprintf("a failure is armed at %q for %q", a.Point, op.Tool))
			}
			add(callText(a.Client, "calls", op))
			last[a.Client] = a.Op + 1
		case KUpstream:
			if a.Variant == probe.FailRefuse {
				add(fmt.Sprintf("the probe refuses the next dispatch of \"$op%d\"", op.Token))
			} else {
				add(fmt.Sprintf("the probe answers the next dispatch of \"$op%d\" with a tool error", op.Token))
			}
			add(callText(a.Client, "calls", op))
			last[a.Client] = a.Op + 1
		case KWait:
			add(fmt.Sprintf("%s seconds pass", strconv.FormatFloat(a.Dur.Seconds(), 'f', -1, 64)))
		case KClock:
			add(clockText(a))
		case KSetting:
			if a.Variant == SetRetention {
				add(fmt.Sprintf("the retention is %d seconds past the effective window", a.Value))
			} else if a.Variant == SetWindow {
				add(fmt.Sprintf("the unkeyed retry window is %d seconds", a.Value))
			} else {
				add(fmt.Sprintf("the stale-lock threshold is %d seconds", a.Value))
			}
		case KRevoke:
			add(fmt.Sprintf("principal %q is revoked", a.Who))
		case KRemove:
			add(fmt.Sprintf("the tool %q is removed", a.Tool))
		case KSettle:
			if a.Variant == judge.SettleCompleted {
				add(fmt.Sprintf("the operator settles the operation of %q as completed with %s, if it is listed uncertain", a.Client, settledResult))
			} else {
				add(fmt.Sprintf("the operator settles the operation of %q as refunded, if it is listed uncertain", a.Client))
			}
		case KSpeak:
			add(fmt.Sprintf("%q speaks protocol %s", a.Client, a.Version))
		case KAnswer:
			add(fmt.Sprintf("%q answers the input its last answer asked for, if it asked", a.Client))
			last[a.Client] = a.Op + 1
		case KRaw:
			add(fmt.Sprintf("%q sends the raw body %s", a.Client, rawBody))
		}
	}
	kw = "Then"
	add("every operation is retried until it is decided")
	return out
}

func credits(n int64) string {
	if n == 1 {
		return "credit"
	}
	return "credits"
}

// callText is a call step: "calls" or "starts calling", keyed, unkeyed or
// under a permit.
func callText(client, verb string, op Op) string {
	switch {
	case op.Keyed():
		return fmt.Sprintf("%q %s %q with %s using key %q", client, verb, op.Tool, op.args(), op.keyText())
	case op.Permit != "" && verb == "calls":
		return fmt.Sprintf("%q calls %q with %s under permit %q", client, op.Tool, op.args(), op.Permit)
	}
	return fmt.Sprintf("%q %s %q with %s without a key", client, verb, op.Tool, op.args())
}

func clockText(a Action) string {
	switch a.Variant {
	case ClockFreezeBefore:
		return fmt.Sprintf("the gateway clock is frozen %s before a window boundary", a.Dur)
	case ClockFreezeAt:
		return "the gateway clock is frozen at a window boundary"
	case ClockPastWindow:
		return "the gateway clock advances past the effective window"
	case ClockPastStale:
		return "the gateway clock advances past the stale-lock threshold"
	case ClockPastPermit:
		return "the gateway clock advances past the auto-permit life"
	case ClockShortOfWindow:
		return fmt.Sprintf("the gateway clock advances %s short of the effective window", a.Dur)
	case ClockShortOfRetention:
		return fmt.Sprintf("the gateway clock advances %s short of the retention", a.Dur)
	case ClockPastRetention:
		return "the gateway clock advances past the retention"
	}
	return fmt.Sprintf("the gateway clock advances %s", a.Dur)
}
