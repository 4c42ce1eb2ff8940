package explore

import (
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Dims are the dimensions a target lets explore draw from: its
// capabilities, its unkeyed policy and the protocol versions it serves.
type Dims struct {
	Caps map[string]bool
	// Policy is the target's unkeyed policy (judge.PolicyDerived or
	// judge.PolicyRefuse).
	Policy string
	// Wires are the protocol versions it serves, and Default the one a
	// client speaks unless told otherwise.
	Wires   []string
	Default string
}

func (d Dims) has(c string) bool { return d.Caps[c] }

// The protocol versions whose behaviour differs.
const (
	wireSession   = "2025-11-25"
	wireStateless = "2026-07-28"
)

// forcedEach is how many episodes of a scenario the seed's turn of every
// kind draws (the rest are drawn by weight).
const forcedEach = 3

// Points a pause can be armed at: those every fresh call reaches, and
// those only an unkeyed call under the derived policy does (its retry lock).
var (
	callPoints = []string{"reserve.done", "dispatch.before", "dispatch.after"}
	lockPoints = []string{"lock.acquired", "fence.read", "claim.held"}
)

// Generate draws scenario n of seed: a random sequence of at most max
// actions over what d allows. The same seed, n, d and max give the same
// scenario, so a seed reruns what it found.
func Generate(seed int64, n int, d Dims, max int) Scenario {
	rng := rand.New(rand.NewSource(seed*1_000_003 + int64(n)))
	g := &gen{rng: rng, d: d, max: max, removed: map[string]bool{}, revoked: map[string]bool{}, unmet: map[string]bool{},
		pending: map[string]bool{}, version: map[string]string{}, spent: map[string]int64{}, asked: map[int]bool{}}
	g.sc = Scenario{Seed: seed, N: n, Prices: map[string]int64{}, Permits: map[string]Permit{}, Clients: map[string]Client{}}
	// Each scenario is a few episodes, each a situation the contract says
	// something about, with random parameters, interleaved with noise:
	// retries of earlier operations by any client, waits, version switches.
	// The first few are the seed's turn of every kind.
	eps := g.episodes()
	first := forced(seed, n, len(eps), forcedEach)
	for _, k := range first {
		g.small = g.small || (eps[k].small && eps[k].w > 0)
	}
	g.setUp()
	for _, k := range first {
		if eps[k].w > 0 {
			eps[k].f()
		}
	}
	for g.room() > 0 {
		before := len(g.sc.Actions)
		g.episode()
		if len(g.sc.Actions) == before {
			g.noise() // an episode that found no room or nothing to do
		}
		if len(g.sc.Actions) == before {
			break
		}
	}
	// Every call started in the background is answered before the last
	// step: its pause or hold is released by its group's last action.
	return g.sc.Normalize()
}

type gen struct {
	rng  *rand.Rand
	d    Dims
	sc   Scenario
	max  int
	ids  int
	grps int
	// What the scenario did so far, for what may come next.
	removed map[string]bool
	revoked map[string]bool
	unmet   map[string]bool // tools a failure may still be armed for (a pause there may never be reached)
	// windowSet: the scenario changed the window, whose length the
	// retention's clock moves would then not know.
	windowSet bool
	pending   map[string]bool   // clients with a call in flight
	version   map[string]string // the version each client speaks now
	spent     map[string]int64  // wallet ("" or "other") -> the most it may have been charged
	asked     map[int]bool      // multi-round ops whose first round was answered
	keyed     []int             // keyed ops called so far
	called    []int             // ops called so far
	window0   bool              // unkeyed calls are refused (policy refuse, or window 0)
	small     bool              // set up a small wallet, an exact multiple of the write tool's price
	frozen    bool              // the clock was frozen before a boundary
	// frac is the frozen gateway clock's time past its whole second: what
	// the moves since the freeze added below a second (windows, stale
	// thresholds and permit lives are whole seconds).
	frac time.Duration
	// clockSpent is how far ahead of real time the gateway clock may be.
	clockSpent time.Duration
	// staleSecs is the stale-lock threshold the scenario set, 0 none.
	staleSecs int64
	tokens    int
	keys      int
	clients   []string // every client name
	ownScope  []string // clients of the wallet's own key and no principal
}

func (g *gen) room() int { return g.max - len(g.sc.Actions) }

// chance is true with probability p.
func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

// pick returns one of xs.
func pick[T any](g *gen, xs []T) T { return xs[g.rng.Intn(len(xs))] }

// weighted returns the index drawn by weights.
func (g *gen) weighted(ws []int) int {
	total := 0
	for _, w := range ws {
		total += w
	}
	if total == 0 {
		return -1
	}
	r := g.rng.Intn(total)
	for i, w := range ws {
		if r < w {
			return i
		}
		r -= w
	}
	return len(ws) - 1
}

func (g *gen) add(a Action) int {
	g.ids++
	a.ID = g.ids
	g.sc.Actions = append(g.sc.Actions, a)
	return a.ID
}

func (g *gen) group() int { g.grps++; return g.grps }

// prices spread wide: free calls, cheap ones, costly ones.
var priceChoices = []int64{0, 1, 1, 2, 3, 3, 5, 7, 10, 25, 50, 99}

// setUp draws the wallet, the prices, the permits and the clients.
func (g *gen) setUp() {
	fix := g.d.has(judge.CapFixtures)
	switch r := g.rng.Intn(10); {
	case fix && (r == 0 || g.small):
		g.sc.Wallet = int64(10 + g.rng.Intn(40)) // runs out: insufficient funds
	case fix && r < 4:
		g.sc.Wallet = int64(100 + g.rng.Intn(300)) // a tool may cost more than it holds
	default:
		g.sc.Wallet = 1000
	}
	for _, t := range toolOrder {
		g.sc.Prices[t] = pick(g, priceChoices)
	}
	g.sc.Prices[ToolPricey] = 500
	if g.small && g.sc.Prices[ToolWrite] == 0 {
		g.sc.Prices[ToolWrite] = pick(g, priceChoices[1:])
	}
	if p := g.sc.Prices[ToolWrite]; g.sc.Wallet < 50 && p > 0 && (g.small || g.chance(0.5)) {
		// A wallet that reaches exactly the price, then zero.
		g.sc.Wallet = p * int64(2+g.rng.Intn(4))
	}
	g.sc.Permits["P1"] = Permit{Tool: ToolWrite, Budget: 3 * max(1, g.sc.Prices[ToolWrite]), TTL: 60 * time.Second}
	ro := ToolRead
	if !g.d.has(judge.CapToolReadOnly) {
		ro = ToolWrite
	}
	g.sc.Permits["P2"] = Permit{Tool: ro, Budget: 5 * max(1, g.sc.Prices[ro]), TTL: 60 * time.Second}
	if g.d.has(judge.CapToolApproval) {
		g.sc.Permits["P3"] = Permit{Tool: ToolApproval, Budget: 2 * max(1, g.sc.Prices[ToolApproval]), TTL: 60 * time.Second}
	}
	g.window0 = g.d.Policy == judge.PolicyRefuse
	newClient := func(name string, c Client, own bool) {
		if c.Version == "" && len(g.d.Wires) > 1 && g.chance(0.5) {
			c.Version = pick(g, g.d.Wires)
		}
		g.sc.Clients[name] = c
		g.version[name] = c.Version
		if c.Version == "" {
			g.version[name] = g.d.Default
		}
		g.clients = append(g.clients, name)
		if own {
			g.ownScope = append(g.ownScope, name)
		}
	}
	newClient("A", Client{}, true)
	b := Client{}
	if g.d.has(judge.CapTwoURLs) && g.chance(0.6) {
		b.URL = 2
	}
	newClient("B", b, true)
	newClient("C", Client{}, true)
	if g.d.has(judge.CapSecondKey) {
		newClient("K", Client{Cred: CredSecond}, false)
	}
	if g.d.has(judge.CapOtherWallet) {
		newClient("W", Client{Cred: CredOther}, false)
	}
	if g.d.has(judge.CapPrincipalTokens) {
		// The principals speak one version between them: a binding a
		// gateway drops on one wire only shows where both call on it.
		v := ""
		if len(g.d.Wires) > 1 && g.chance(0.7) {
			v = pick(g, g.d.Wires)
		}
		newClient("alice", Client{Principal: "alice", Version: v}, false)
		newClient("bob", Client{Principal: "bob", Version: v}, false)
		// mallory's token is signed by nobody the gateway trusts: every
		// call of hers is refused, so no episode but the scope one draws
		// her (an episode's plan assumes its callers' calls run).
		g.sc.Clients["mallory"] = Client{Forged: true, Version: v}
		g.version["mallory"] = v
		if v == "" {
			g.version["mallory"] = g.d.Default
		}
		if g.d.has(judge.CapPrincipals) {
			newClient("carol", Client{Principal: "carol"}, false)
		}
	}
}

// walletOf names the wallet a client charges.
func (g *gen) walletOf(client string) string {
	if g.sc.Clients[client].Cred == CredOther {
		return "other"
	}
	return ""
}

func (g *gen) balance(wallet string) int64 {
	if wallet == "other" {
		return 1000 // what the steps give another wallet
	}
	return g.sc.Wallet
}

// affords says a client's wallet surely holds n more charges of the tool
// after the most every operation so far may have cost.
func (g *gen) affords(client, tool string, n int64) bool {
	w := g.walletOf(client)
	return g.spent[w]+n*g.sc.Prices[tool] <= g.balance(w)
}

func (g *gen) charge(client, tool string) {
	g.spent[g.walletOf(client)] += g.sc.Prices[tool]
}

// free are clients with no call in flight, of the wallet's own key and
// no principal when own is set.
func (g *gen) free(own bool) []string {
	var out []string
	list := g.clients
	if own {
		list = g.ownScope
	}
	for _, c := range list {
		if !g.pending[c] && !g.revoked[g.sc.Clients[c].Principal] {
			out = append(out, c)
		}
	}
	return out
}

// firstURL keeps the clients of the first gateway URL: faults are armed
// through its process's control API, and only its calls meet them.
func (g *gen) firstURL(clients []string) []string {
	var out []string
	for _, c := range clients {
		if g.sc.Clients[c].URL <= 1 {
			out = append(out, c)
		}
	}
	return out
}

// tools are the tool aliases the target has for a role, not removed.
func (g *gen) writeTools() []string {
	out := []string{}
	for _, t := range []string{ToolWrite, ToolWrite2} {
		if (t == ToolWrite || g.d.has(judge.CapToolWriteOther)) && !g.removed[t] {
			out = append(out, t, ToolWrite) // write twice as often
		}
	}
	if g.removed[ToolWrite] {
		out = slices.DeleteFunc(out, func(t string) bool { return t == ToolWrite })
	}
	return out
}

// newOp makes a fresh operation of a tool: keyed, unkeyed or under a permit.
func (g *gen) newOp(tool string, keyed bool) int {
	g.tokens++
	op := Op{Tool: tool, Token: g.tokens}
	if keyed {
		g.keys++
		op.Key = g.keys
	}
	if g.chance(0.2) {
		op.Note = pick(g, []string{"hello", "one", "two", "x"})
	}
	if g.chance(0.15) {
		op.Nested = pick(g, []string{"deep", "inner"})
	}
	if g.chance(0.07) {
		// Large arguments: a gateway must bind, store and fingerprint
		// them as it does small ones.
		op.Pad = pick(g, []int{3000, 20000, 70000})
	}
	g.sc.Ops = append(g.sc.Ops, op)
	return len(g.sc.Ops) - 1
}

// dispatches says a fresh op's first call by client surely reaches its
// tool on a correct gateway: what a pause, a hold, a drop or a fault
// needs. A keyed read-only or approval-gated call runs too; an unkeyed one
// only for a mutating tool under the derived policy.
func (g *gen) dispatches(op int, client string) bool {
	o := g.sc.Ops[op]
	switch {
	case g.removed[o.Tool], o.Permit != "", g.revoked[g.sc.Clients[client].Principal]:
		return false
	case g.unmet[o.Tool]:
		// A failure may still be armed for the tool: the call may be
		// failed before it dispatches.
		return false
	case o.Tool == ToolAsk || o.Tool == ToolSample || o.Tool == ToolPricey:
		return false
	case !o.Keyed() && (g.window0 || o.Tool == ToolRead || o.Tool == ToolApproval):
		return false
	}
	return g.affords(client, o.Tool, 2)
}

func (g *gen) markCalled(op int, client string) {
	if !slices.Contains(g.called, op) {
		g.called = append(g.called, op)
		if g.sc.Ops[op].Keyed() {
			g.keyed = append(g.keyed, op)
		}
	}
	g.charge(client, g.sc.Ops[op].Tool)
}

func (g *gen) call(client string, op int) int {
	g.markCalled(op, client)
	return g.add(Action{Kind: KCall, Client: client, Op: op})
}

// wait adds real time passing: mostly short, now and then a couple of seconds.
func (g *gen) wait() {
	if g.room() < 1 {
		return
	}
	ms := pick(g, []int{50, 50, 100, 100, 200, 200, 300, 500, 1000, 2000})
	g.add(Action{Kind: KWait, Dur: time.Duration(ms) * time.Millisecond})
}

// caller is the client an episode starts with, one of clients, when the
// scenario has room for n more actions; false when it has not, or there
// is none.
func (g *gen) caller(n int, clients []string) (string, bool) {
	if g.room() < n || len(clients) == 0 {
		return "", false
	}
	return pick(g, clients), true
}

// maybeWait waits with probability p.
func (g *gen) maybeWait(p float64) {
	if g.chance(p) {
		g.wait()
	}
}

// retries adds up to n retries of op, by client or another of its scope
// (same key, same wallet, same principal), spread in time.
func (g *gen) retries(op int, client string, n int) {
	for i := 0; i < n && g.room() > 0; i++ {
		g.maybeWait(0.5)
		who := client
		if g.chance(0.3) && g.sc.Clients[client].Cred == "" && g.sc.Clients[client].Principal == "" {
			if f := g.free(true); len(f) > 0 {
				who = pick(g, f)
			}
		}
		if g.pending[who] || g.room() < 1 {
			continue
		}
		g.maybeSpeak(who)
		g.call(who, op)
		if o := g.sc.Ops[op]; o.members() > 1 && o.Tool != ToolAsk && g.chance(0.3) {
			g.sc.Actions[len(g.sc.Actions)-1].Variant = VariantReordered
		}
	}
}

// maybeSpeak switches a client's protocol version now and then.
func (g *gen) maybeSpeak(client string) {
	if len(g.d.Wires) < 2 || g.pending[client] || g.room() < 2 || !g.chance(0.15) {
		return
	}
	v := pick(g, g.d.Wires)
	g.version[client] = v
	g.add(Action{Kind: KSpeak, Client: client, Version: v})
}

// on is w where the target allows a situation, else 0.
func on(ok bool, w int) int {
	if ok {
		return w
	}
	return 0
}

// ep is a kind of episode: its weight where the target allows it (0 where
// it does not) and what it draws.
type ep struct {
	w int
	f func()
	// small: the episode needs a small wallet, an exact multiple of the
	// write tool's price; a scenario whose first episodes include it is
	// set up with one.
	small bool
}

// pauseWeights are epPause's variants' weights, in its order.
var pauseWeights = []int{3, 5, 2, 5, 5, 3, 3, 3, 3}

// episodes are the kinds of episode, in a fixed order, each pause variant
// a kind of its own.
func (g *gen) episodes() []ep {
	d := g.d
	fix, faults, clock := d.has(judge.CapFixtures), d.has(judge.CapFaults), d.has(judge.CapClock)
	eps := []ep{
		{5, g.epRepeat, false},
		{2, g.epReuse, false},
		{on(d.has(judge.CapSecondKey) || d.has(judge.CapOtherWallet) || d.has(judge.CapToolWriteOther) || d.has(judge.CapPrincipalTokens), 3), g.epScope, false},
		{3, g.epRefusals, false},
		{3, g.epTwins, false},
		{3, g.epHold, false},
		{2, g.epDrop, false},
		{on(faults, 3), g.epFault, false},
		{on(clock, 3), g.epClock, false},
		{on(d.has(judge.CapSettings), 3), g.epSetting, false},
		{on(d.has(judge.CapSettings) && clock, 3), g.epRetention, false},
		{on(d.has(judge.CapPrincipals), 2), g.epRevoke, false},
		{on(fix, 4), g.epPermit, false},
		{on(fix, 3), g.epRounds, false},
		{1, g.epBurst, false},
		{on(fix, 1), g.epRemove, false},
		{2, g.epUpstream, false},
		{2, g.epKeyForms, false},
		{w: on(fix, 2), f: g.epDrain, small: true},
	}
	for v, w := range pauseWeights {
		eps = append(eps, ep{on(faults, w), func() { g.epPause(v) }, false})
	}
	return eps
}

// episode draws one situation by the weights the target allows.
func (g *gen) episode() {
	eps := g.episodes()
	ws := make([]int, len(eps))
	for i, e := range eps {
		ws[i] = e.w
	}
	if i := g.weighted(ws); i >= 0 {
		eps[i].f()
	}
}

// forced are the kinds of episode scenario n of a seed draws first, so
// that every kind the target allows comes up a few times in every seed's
// first scenarios, not only when the dice say: the seed shuffles the
// kinds once, and scenario n takes the next few of them in turn.
func forced(seed int64, n, kinds, each int) []int {
	order := rand.New(rand.NewSource(seed ^ 0x5eed)).Perm(kinds)
	out := make([]int, each)
	for j := range out {
		out[j] = order[((n-1)*each+j)%kinds]
	}
	return out
}

// noise is a retry of an earlier operation by any client (another API
// key, wallet or principal makes it another operation), a wait, or a
// version switch.
func (g *gen) noise() {
	if g.room() < 1 {
		return
	}
	switch {
	case len(g.called) > 0 && g.chance(0.6):
		op := pick(g, g.called)
		if f := g.free(false); len(f) > 0 {
			g.call(pick(g, f), op)
		}
	case g.chance(0.1):
		// A body that is not JSON: refused, never an HTTP 5xx.
		if f := g.free(false); len(f) > 0 {
			g.add(Action{Kind: KRaw, Client: pick(g, f)})
		}
	case g.chance(0.5):
		g.wait()
	default:
		if f := g.free(false); len(f) > 0 {
			c := pick(g, f)
			if g.sc.Clients[c].Principal == "" || !g.revoked[g.sc.Clients[c].Principal] {
				op := g.newOp(pick(g, g.writeToolsOr()), g.chance(0.5))
				g.call(c, op)
			}
		}
	}
}

// writeToolsOr is writeTools, or write itself when every mutating tool
// was removed (its calls are then refused, which is a case too).
func (g *gen) writeToolsOr() []string {
	if ts := g.writeTools(); len(ts) > 0 {
		return ts
	}
	return []string{ToolWrite}
}

// epRepeat: a fresh operation of any tool and form, called and retried.
func (g *gen) epRepeat() {
	who, ok := g.caller(2, g.free(false))
	if !ok {
		return
	}
	tools := g.writeToolsOr()
	if g.d.has(judge.CapToolReadOnly) {
		tools = append(tools, ToolRead)
	}
	if g.d.has(judge.CapToolApproval) {
		tools = append(tools, ToolApproval)
	}
	if g.d.has(judge.CapFixtures) {
		tools = append(tools, ToolSample)
		if g.sc.Wallet < 500 {
			tools = append(tools, ToolPricey)
		}
	}
	// Tools by weight: the mutating ones most, then the ones whose
	// unkeyed calls must be refused, then the special ones.
	var weighted []string
	for _, t := range tools {
		n := map[string]int{ToolWrite: 4, ToolWrite2: 2, ToolRead: 3, ToolApproval: 2, ToolSample: 1, ToolPricey: 3}[t]
		for i := 0; i < n; i++ {
			weighted = append(weighted, t)
		}
	}
	tool := pick(g, weighted)
	var op int
	switch r := g.rng.Intn(10); {
	case r < 5:
		op = g.newOp(tool, true)
	case r < 8 || !g.d.has(judge.CapFixtures):
		op = g.newOp(tool, false)
	default:
		op = g.newOp(tool, false)
		g.sc.Ops[op].Permit = pick(g, []string{"P1", "P2"})
		g.sc.Ops[op].Tool = g.sc.Permits[g.sc.Ops[op].Permit].Tool
	}
	g.maybeSpeak(who)
	g.call(who, op)
	g.retries(op, who, g.rng.Intn(4))
}

// epReuse: a key used again with other arguments: a refusal, never the
// first arguments' result.
func (g *gen) epReuse() {
	if g.room() < 2 {
		return
	}
	who := pick(g, g.free(true))
	if g.chance(0.3) {
		g.listReordered(who)
		return
	}
	if len(g.keyed) == 0 || g.chance(0.3) {
		op := g.newOp(pick(g, g.writeToolsOr()), true)
		if g.chance(0.5) {
			g.sc.Ops[op].Nested = pick(g, []string{"deep", "inner"})
		}
		g.call(who, op)
		g.maybeWait(0.4)
	}
	first := g.sc.Ops[pick(g, g.keyed)]
	if i := slices.IndexFunc(g.keyed, func(o int) bool { return g.sc.Ops[o].Nested != "" }); i >= 0 && g.chance(0.5) {
		first = g.sc.Ops[g.keyed[i]] // arguments with depth, to differ only there
	}
	g.tokens++
	// Other arguments: at the top, or only one object deeper.
	reuse := Op{Tool: first.Tool, Token: first.Token, Key: first.Key, KeyForm: first.KeyForm, Note: first.Note, Nested: "other", Pad: first.Pad}
	if first.Nested == "" || g.chance(0.4) {
		reuse = Op{Tool: first.Tool, Token: g.tokens, Key: first.Key, KeyForm: first.KeyForm, Note: "other"}
	}
	g.sc.Ops = append(g.sc.Ops, reuse)
	op := len(g.sc.Ops) - 1
	if g.room() > 0 {
		g.call(who, op)
		g.retries(op, who, g.rng.Intn(2))
	}
}

// listReordered: a keyed operation whose arguments hold a list, then its
// key with the same arguments but the list's items in the other order:
// other arguments (a list's order is part of its value), so a reuse of
// the key, never a replay. Keyed only: unkeyed, the two would be two
// operations dispatching one probe token.
func (g *gen) listReordered(who string) {
	op := g.newOp(pick(g, g.writeToolsOr()), true)
	g.sc.Ops[op].List = pick(g, [][]string{{"a", "b"}, {"x", "y", "z"}})
	g.call(who, op)
	g.maybeWait(0.4)
	other := g.sc.Ops[op]
	other.List = slices.Clone(other.List)
	slices.Reverse(other.List)
	g.sc.Ops = append(g.sc.Ops, other)
	if g.room() > 0 {
		g.call(who, len(g.sc.Ops)-1)
		g.retries(len(g.sc.Ops)-1, who, g.rng.Intn(2))
	}
}

// epScope: one operation's key and arguments sent again by other callers:
// another API key of the wallet, a key of another wallet, the same key on
// another tool; and unkeyed calls with the same arguments from two
// principals. Each is its own operation (or a refusal), never the first
// caller's result, and each pays for its own.
func (g *gen) epScope() {
	if g.room() < 3 {
		return
	}
	free := g.free(false)
	has := func(c string) bool { return slices.Contains(free, c) }
	tool := ToolWrite
	if g.removed[tool] {
		tool = pick(g, g.writeToolsOr())
	}
	op := g.newOp(tool, true)
	g.call("A", op)
	o := g.sc.Ops[op]
	var others []func()
	for _, c := range []string{"K", "W"} {
		if has(c) {
			c := c
			others = append(others, func() { g.call(c, op) })
		}
	}
	if g.d.has(judge.CapToolWriteOther) && !g.removed[ToolWrite] && !g.removed[ToolWrite2] {
		other := ToolWrite2
		if o.Tool == ToolWrite2 {
			other = ToolWrite
		}
		others = append(others, func() {
			g.sc.Ops = append(g.sc.Ops, Op{Tool: other, Token: o.Token, Note: o.Note, Key: o.Key})
			g.call("A", len(g.sc.Ops)-1)
		})
	}
	if _, ok := g.sc.Clients["mallory"]; ok {
		others = append(others, func() { g.call("mallory", g.newOp(tool, g.chance(0.5))) })
	}
	if has("alice") && has("bob") {
		others = append(others, func() {
			first, second := "alice", "bob"
			if g.chance(0.5) {
				first, second = second, first
			}
			p := g.newOp(tool, g.chance(0.3))
			if g.sc.Ops[p].Token%3 == 0 && g.sc.Ops[p].Pad == 0 {
				// Large arguments a third of the time (by the token, not
				// the dice, so the draws that follow stay as they were): a
				// binding a gateway keeps for small arguments only.
				g.sc.Ops[p].Pad = 20000
			}
			g.call(first, p)
			g.maybeWait(0.2)
			g.call(second, p)
		})
	}
	g.rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	for _, f := range others {
		if g.room() < 1 {
			break
		}
		g.maybeWait(0.2)
		f()
	}
}

// epRefusals: calls the contract refuses before anything runs, first call
// and retry: unkeyed read-only and approval-gated calls, under a permit
// too, and a tool that costs more than the wallet holds. Each refusal
// final, never a result, never charged.
func (g *gen) epRefusals() {
	if g.room() < 2 {
		return
	}
	f := g.free(false)
	if len(f) == 0 {
		return
	}
	var calls []func()
	refused := func(tool, permit string) func() {
		return func() {
			who := pick(g, g.free(false))
			op := g.newOp(tool, false)
			g.sc.Ops[op].Permit = permit
			g.call(who, op)
			if g.chance(0.6) {
				g.call(who, op)
			}
		}
	}
	if g.d.has(judge.CapToolReadOnly) && !g.removed[ToolRead] {
		calls = append(calls, refused(ToolRead, ""))
		if _, ok := g.sc.Permits["P2"]; ok && g.d.has(judge.CapFixtures) {
			calls = append(calls, refused(ToolRead, "P2"))
		}
	}
	if g.d.has(judge.CapToolApproval) && !g.removed[ToolApproval] {
		calls = append(calls, refused(ToolApproval, ""))
		if _, ok := g.sc.Permits["P3"]; ok && g.d.has(judge.CapFixtures) {
			calls = append(calls, refused(ToolApproval, "P3"))
		}
	}
	if g.sc.Wallet < 500 && g.d.has(judge.CapFixtures) {
		calls = append(calls, func() {
			op := g.newOp(ToolPricey, true)
			who := pick(g, g.free(true))
			g.call(who, op)
			g.call(who, op)
		})
	}
	if g.window0 {
		calls = append(calls, refused(pick(g, g.writeToolsOr()), ""))
	}
	if g.d.has(judge.CapFixtures) && !g.removed[ToolSample] {
		// A tool that needs the client to declare sampling: refused as
		// the upstream refuses it, and nothing kept charged.
		calls = append(calls, func() {
			who := pick(g, g.free(false))
			op := g.newOp(ToolSample, g.chance(0.7))
			g.call(who, op)
			g.call(who, op)
		})
	}
	if g.d.has(judge.CapFixtures) && !g.removed[ToolAsk] && slices.Contains(g.d.Wires, wireSession) {
		// A multi-round tool called by a 2025-11-25 client, which cannot
		// answer its input request: refused, never handed the request.
		calls = append(calls, func() {
			who := pick(g, g.free(false))
			if g.version[who] != wireSession {
				g.version[who] = wireSession
				g.add(Action{Kind: KSpeak, Client: who, Version: wireSession})
			}
			op := g.newOp(ToolAsk, true)
			g.call(who, op)
			g.call(who, op)
		})
	}
	// A body that is not JSON: refused, never an HTTP 5xx.
	calls = append(calls, func() { g.add(Action{Kind: KRaw, Client: pick(g, g.free(false))}) })
	g.rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
	for i, c := range calls {
		if i == 4 || g.room() < 2 {
			break
		}
		c()
	}
}

// epTwins: N clients at once, the first dispatch held or not, split
// across the gateway URLs where there are two.
func (g *gen) epTwins() {
	if g.room() < 1 {
		return
	}
	n := pick(g, []int{2, 2, 3, 4, 8, 16})
	tool := pick(g, g.writeToolsOr())
	switch r := g.rng.Intn(10); {
	case r < 4:
		op := g.newOp(tool, true)
		variant := ""
		if g.dispatches(op, "A") && g.chance(0.5) {
			variant = "held"
		}
		g.markCalled(op, "A")
		g.add(Action{Kind: KTwins, Op: op, N: n, Variant: variant})
	case r < 6 && g.d.has(judge.CapTwoURLs):
		op := g.newOp(tool, false)
		g.markCalled(op, "A")
		g.add(Action{Kind: KTwins, Op: op, N: n, Variant: "split"})
	default:
		op := g.newOp(tool, r < 8)
		g.markCalled(op, "A")
		g.add(Action{Kind: KTwins, Op: op, N: n})
	}
	op := len(g.sc.Ops) - 1
	if f := g.free(true); len(f) > 0 {
		g.retries(op, pick(g, f), g.rng.Intn(2))
	}
}

// reachingOp draws a free caller (with room for n more actions) and a
// fresh operation of a mutating tool, keyed or not, whose first call by it
// surely reaches the probe; ok is false when there is none, or when the
// operation would not reach it (then it is called as it is, and that is
// all).
func (g *gen) reachingOp(n int) (who string, op int, ok bool) {
	who, ok = g.caller(n, g.free(false))
	if !ok {
		return "", 0, false
	}
	op = g.newOp(pick(g, g.writeToolsOr()), g.chance(0.6))
	if !g.dispatches(op, who) {
		g.call(who, op)
		return "", 0, false
	}
	return who, op, true
}

// epHold: the probe holds a dispatch while others call the same operation,
// the clock moves, or the caller cancels; then lets it go.
func (g *gen) epHold() {
	who, op, ok := g.reachingOp(3)
	if !ok {
		return
	}
	grp := g.group()
	g.markCalled(op, who)
	hold := g.add(Action{Kind: KHold, Client: who, Op: op, Group: grp})
	g.pending[who] = true
	for i, n := 0, g.rng.Intn(3); i < n && g.room() > 3; i++ {
		switch g.rng.Intn(4) {
		case 0:
			if o := g.sameScope(who); o != "" {
				g.call(o, op)
			}
		case 1:
			g.wait()
		case 2:
			if g.d.has(judge.CapClock) {
				g.clock(Action{Variant: pick(g, []string{ClockPastStale, ClockPastWindow, ClockAdvance}), Dur: 2 * time.Millisecond})
			}
		case 3:
			if o := g.sameScope(who); o != "" {
				g.add(Action{Kind: KTwins, Op: op, N: pick(g, []int{2, 4})})
			}
		}
	}
	// A duplicate once the upstream has been slow for a while: an in-flight
	// claim must last as long as its dispatch, not a second or two.
	late := ""
	if g.room() > 4 && g.chance(0.85) {
		if o := g.sameScope(who); o != "" {
			g.add(Action{Kind: KWait, Dur: 1500 * time.Millisecond})
			g.markCalled(op, o)
			if g.sc.Ops[op].Keyed() {
				// Its answer may come only once the probe lets go.
				g.add(Action{Kind: KCall, Client: o, Op: op, Variant: VariantWhileHeld})
				g.pending[o], late = true, o
			} else {
				g.add(Action{Kind: KCall, Client: o, Op: op})
			}
		}
	}
	if g.room() > 1 && g.chance(0.5) {
		variant := "close"
		if g.version[who] == wireSession && g.chance(0.6) {
			variant = "notify"
		}
		g.add(Action{Kind: KCancel, Client: who, Op: op, Variant: variant, Needs: []int{hold}})
	}
	g.add(Action{Kind: KUnhold, Op: op, Group: grp})
	g.settle(who, op)
	if late != "" {
		g.settle(late, op)
	}
}

// settle ends a client's call in flight with its retry, after a wait now
// and then: until then the client can do nothing else (Normalize).
func (g *gen) settle(who string, op int) {
	g.maybeWait(0.4)
	g.pending[who] = false
	g.add(Action{Kind: KCall, Client: who, Op: op})
}

// sameScope is another free client of who's scope ("" none): its call of
// who's operation is a retry of the same operation.
func (g *gen) sameScope(who string) string {
	c := g.sc.Clients[who]
	for _, o := range g.free(false) {
		if o != who && g.sc.Clients[o].Cred == c.Cred && g.sc.Clients[o].Principal == c.Principal {
			return o
		}
	}
	return ""
}

// epDrop: the client drops the connection once the tool runs, then retries.
func (g *gen) epDrop() {
	who, ok := g.caller(2, g.free(false))
	if !ok {
		return
	}
	op := g.newOp(pick(g, g.writeToolsOr()), true)
	if !g.dispatches(op, who) {
		g.call(who, op)
		return
	}
	g.markCalled(op, who)
	g.add(Action{Kind: KDrop, Client: who, Op: op})
	g.retries(op, who, 1+g.rng.Intn(2))
}

// epFault: a failure before or after dispatch, or a response dropped
// after it; the tool removed or the clock moved now and then; retries.
func (g *gen) epFault() {
	// A fault is armed for the scenario's wallet: a caller of another
	// would never meet it, and it would stay armed for a later call.
	who, ok := g.caller(2, slices.DeleteFunc(g.firstURL(g.free(false)), func(c string) bool { return g.walletOf(c) != "" }))
	if !ok {
		return
	}
	op := g.newOp(pick(g, g.writeToolsOr()), g.chance(0.5))
	if g.d.has(judge.CapFixtures) && g.chance(0.2) {
		g.sc.Ops[op].Permit, g.sc.Ops[op].Tool = "P1", g.sc.Permits["P1"].Tool
	}
	if !g.dispatches(op, who) && g.sc.Ops[op].Permit == "" {
		g.call(who, op)
		return
	}
	if g.removed[g.sc.Ops[op].Tool] || !g.affords(who, g.sc.Ops[op].Tool, 2) {
		return
	}
	a := Action{Kind: KFault, Client: who, Op: op}
	switch g.rng.Intn(3) {
	case 0:
		a.Variant, a.Point = "fail", "dispatch.before"
	case 1:
		a.Variant, a.Point = "fail", "dispatch.after"
	default:
		a.Variant = "drop"
	}
	g.markCalled(op, who)
	g.add(a)
	if g.sc.Ops[op].Permit != "" {
		// A call under a permit may be refused before it dispatches (the
		// permit spent or expired): the failure may stay armed, to meet a
		// later call of the tool first.
		g.unmet[g.sc.Ops[op].Tool] = true
	}
	switch {
	case g.d.has(judge.CapFixtures) && g.chance(0.35) && g.room() > 1:
		g.remove(g.sc.Ops[op].Tool)
	case g.d.has(judge.CapClock) && g.chance(0.3) && g.room() > 1:
		if g.sc.Ops[op].Permit != "" {
			g.clock(Action{Variant: ClockAdvance, Dur: 61 * time.Second})
		} else {
			g.clock(Action{Variant: pick(g, []string{ClockPastWindow, ClockPastStale})})
		}
	}
	g.retries(op, who, 1+g.rng.Intn(2))
}

// epUpstream: the upstream fails an operation's first dispatch. A tool
// error is a result like any other (charged, stored, replayed whole, never
// run again); a refusal before the tool ran is refunded, and a retry runs
// the call.
func (g *gen) epUpstream() {
	who, op, ok := g.reachingOp(2)
	if !ok {
		return
	}
	g.markCalled(op, who)
	g.add(Action{Kind: KUpstream, Client: who, Op: op, Variant: pick(g, []string{probe.FailToolError, probe.FailRefuse})})
	g.retries(op, who, 1+g.rng.Intn(2))
}

// epKeyForms: keys a gateway must keep apart: a key and the same key in
// capitals, or two keys that differ only past a long shared prefix. Each
// names its own operation, run and charged once.
func (g *gen) epKeyForms() {
	who, ok := g.caller(3, g.free(true))
	if !ok {
		return
	}
	tool := pick(g, g.writeToolsOr())
	var ops []int
	if g.chance(0.5) {
		first := g.newOp(tool, true)
		g.call(who, first)
		g.maybeWait(0.3)
		g.tokens++
		g.sc.Ops = append(g.sc.Ops, Op{Tool: tool, Token: g.tokens, Key: g.sc.Ops[first].Key, KeyForm: KeyUpper})
		ops = append(ops, len(g.sc.Ops)-1)
	} else {
		for i := 0; i < 2; i++ {
			op := g.newOp(tool, true)
			g.sc.Ops[op].KeyForm = KeyLong
			ops = append(ops, op)
		}
	}
	for _, op := range ops {
		if g.room() < 1 {
			return
		}
		g.call(who, op)
	}
	g.retries(pick(g, ops), who, g.rng.Intn(2))
}

// epDrain: calls of the write tool until the wallet cannot pay for
// another, and one more: the calls that leave it at zero are paid for, the
// one after refused insufficient_funds, the balance never below zero. In
// turn, or all at once (operations of their own racing for the last
// credits); now and then after a first attempt the upstream refused, which
// is retried once the wallet is drained: new work it can no longer pay for.
func (g *gen) epDrain() {
	who, ok := g.caller(3, g.free(true))
	p := g.sc.Prices[ToolWrite]
	if !ok || p == 0 || g.removed[ToolWrite] || g.sc.Wallet > 100 {
		return
	}
	refused := -1
	if g.room() > 4 && g.chance(0.4) {
		refused = g.newOp(ToolWrite, true)
		g.markCalled(refused, who)
		g.add(Action{Kind: KUpstream, Client: who, Op: refused, Variant: probe.FailRefuse})
	}
	left := g.balance("") - g.spent[""]
	if refused < 0 && left >= p && g.chance(0.4) && g.drainHeld(who, p) {
		return
	}
	if g.chance(0.5) {
		// More calls at once than the wallet pays for, now and then many
		// more: the more of them check the balance before any is charged,
		// the surer a check made apart from the debit lets two through.
		n := int(min(max(left/p+1, 2), 8))
		if g.chance(0.5) {
			n = 8
		}
		op := g.newOp(ToolWrite, g.chance(0.7))
		g.markCalled(op, who)
		g.spent[""] += p * int64(n-1)
		g.add(Action{Kind: KTwins, Op: op, N: n, Variant: VariantDistinct})
	} else {
		for ; left >= 0 && g.room() > 1; left -= p {
			g.call(who, g.newOp(ToolWrite, g.chance(0.7)))
		}
	}
	if refused >= 0 && g.room() > 0 {
		g.call(who, refused)
	}
}

// drainHeld is funds-02's situation: a call held between its reservation
// and its charge while other operations spend whatever the wallet has left
// (as many as its whole balance pays for at price p: the generator knows
// only the most the scenario may have spent); released, it is refused
// insufficient_funds (or, where the gateway held the credits at its
// reservation, the others are). False when the target or the scenario
// leaves no room for it.
func (g *gen) drainHeld(who string, p int64) bool {
	others := slices.DeleteFunc(g.free(true), func(c string) bool { return c == who })
	n := g.balance("") / p
	if !g.d.has(judge.CapFaults) || len(others) == 0 || g.sc.Clients[who].URL > 1 || n > 6 || g.room() < int(n)+4 {
		return false
	}
	held := g.newOp(ToolWrite, g.window0 || g.chance(0.6))
	grp := g.group()
	g.markCalled(held, who)
	g.add(Action{Kind: KPause, Client: who, Op: held, Point: "reserve.done", Group: grp})
	g.pending[who] = true
	for range n {
		g.call(pick(g, others), g.newOp(ToolWrite, g.window0 || g.chance(0.7)))
	}
	g.add(Action{Kind: KRelease, Group: grp})
	g.settle(who, held)
	return true
}

// setStale sets the stale-lock threshold.
func (g *gen) setStale(secs int64) {
	g.staleSecs = secs
	g.add(Action{Kind: KSetting, Variant: SetStale, Value: secs})
}

// clockBudget is how far ahead of real time a scenario may put the
// gateway clock: the harness signs principal tokens for ten minutes, and a
// gateway rightly refuses one its clock says has expired.
const clockBudget = 8 * time.Minute

// justBeforeSecond is where a call is made whose retry half a second short
// of the window is read a whole window later in whole seconds.
const justBeforeSecond = 999 * time.Millisecond

// clock moves the gateway clock, unless that could put it more than the
// clock budget ahead of real time; false when it did not. A freeze puts
// it at most two windows (four minutes) ahead, whatever it was; an
// advance adds to how far ahead it is.
func (g *gen) clock(a Action) bool {
	ahead := g.clockSpent
	switch a.Variant {
	case ClockFreezeBefore, ClockFreezeAt:
		ahead = 4 * time.Minute
	case ClockAdvance:
		ahead += a.Dur
	case ClockShortOfRetention, ClockPastRetention:
		// The retention is set a minute past a window of (by default)
		// two minutes.
		ahead += 3*time.Minute + time.Second
	case ClockPastStale:
		if g.staleSecs > 0 {
			ahead += time.Duration(g.staleSecs+1) * time.Second
		} else {
			ahead += 2*time.Minute + time.Second
		}
	default: // past or short of the window, past the permit's life
		ahead += 2*time.Minute + time.Second
	}
	if ahead > clockBudget {
		return false
	}
	g.clockSpent = ahead
	switch a.Variant {
	case ClockFreezeBefore:
		g.frac = (time.Second - a.Dur%time.Second) % time.Second
	case ClockFreezeAt:
		g.frac = 0
	case ClockAdvance:
		g.frac = (g.frac + a.Dur) % time.Second
	case ClockShortOfWindow:
		g.frac = (g.frac + time.Second - a.Dur%time.Second) % time.Second
	}
	a.Kind = KClock
	g.add(a)
	return true
}

func (g *gen) remove(tool string) {
	g.removed[tool] = true
	g.add(Action{Kind: KRemove, Tool: tool})
}

// epPause: a call held at a fault point while something happens that the
// contract says how to answer: another caller's call of the same operation
// (at once, once the holder's lock or reservation looks stale, once its
// window passed), a second caller held at a point of the lock of its own
// (the fence's takeover), the tool removed, the auto permit's life over;
// then released, in either order where two are held.
func (g *gen) epPause(which int) {
	if g.room() < 4 {
		return
	}
	f := g.firstURL(g.free(true))
	if len(f) < 2 {
		return
	}
	who := pick(g, f)
	var others []string
	for _, o := range g.free(true) {
		if o != who {
			others = append(others, o)
		}
	}
	other := func() string { return pick(g, others) }
	derived := !g.window0
	clock := g.d.has(judge.CapClock)
	// A variant: whether the call is unkeyed, where it is held, what
	// happens meanwhile.
	type variant struct {
		ok      bool // the target and the scenario allow it
		unkeyed bool
		points  []string
		inner   func(op, pause int, point string) []Action // the releases, in order, after the first
	}
	stale := func() bool { return g.clock(Action{Variant: ClockPastStale}) }
	variants := []variant{
		// Another call of the operation meanwhile: the lookup before the
		// reservation, the reservation before the dispatch.
		{ok: true, unkeyed: derived && g.chance(0.5), points: []string{"reserve.done", "dispatch.before", "dispatch.after", "claim.held"},
			inner: func(op, _ int, _ string) []Action { g.call(other(), op); return nil }},
		// The holder's lock or reservation looks stale: a takeover, which
		// a charged reservation and a live fence must not allow.
		{ok: clock, unkeyed: derived, points: []string{"fence.read", "fence.read", "lock.acquired", "claim.held", "claim.held", "reserve.done", "dispatch.before"},
			inner: func(op, _ int, _ string) []Action {
				stale()
				g.maybeWait(0.3)
				g.call(other(), op)
				return nil
			}},
		{ok: clock, points: []string{"reserve.done", "dispatch.before"},
			inner: func(op, _ int, _ string) []Action {
				stale()
				g.call(other(), op)
				return nil
			}},
		// Two holders of the lock: the second takes it over once the first
		// looks stale and is held at a point of its own.
		{ok: clock && derived && len(g.firstURL(others)) > 0, unkeyed: true, points: []string{"lock.acquired", "fence.read"},
			inner: func(op, pause int, point string) []Action {
				if !stale() {
					// No takeover without the clock: the second caller
					// would never reach its point.
					g.call(other(), op)
					return nil
				}
				nested := map[string]string{"lock.acquired": "fence.read", "fence.read": "lock.acquired"}[point]
				second := pick(g, g.firstURL(others))
				others = slices.DeleteFunc(others, func(c string) bool { return c == second })
				g2 := g.group()
				g.add(Action{Kind: KPause, Client: second, Op: op, Point: nested, Group: g2, Needs: []int{pause}})
				g.pending[second] = true
				if len(others) > 0 && g.chance(0.5) {
					g.call(other(), op) // a third caller while both are held
				}
				return []Action{{Kind: KRelease, Group: g2, Client: second, Op: op}}
			}},
		// Past the window: a retry joins an operation still running.
		{ok: clock, unkeyed: derived, points: []string{"reserve.done", "dispatch.before", "dispatch.before"},
			inner: func(op, _ int, _ string) []Action {
				g.clock(Action{Variant: ClockPastWindow})
				g.call(other(), op)
				return nil
			}},
		// The tool removed under a stalled reservation: no takeover runs it.
		{ok: clock && g.d.has(judge.CapFixtures), points: []string{"reserve.done"},
			inner: func(op, _ int, _ string) []Action {
				g.remove(g.sc.Ops[op].Tool)
				stale()
				g.call(other(), op)
				return nil
			}},
		// A keyed retry of a stale, uncharged reservation held between
		// its read and its takeover, while the holder wakes and charges:
		// the takeover must not trust what it read.
		{ok: clock && len(g.firstURL(others)) > 0, points: []string{"reserve.done"},
			inner: func(op, pause int, _ string) []Action {
				if !stale() {
					g.call(other(), op)
					return nil
				}
				second := pick(g, g.firstURL(others))
				others = slices.DeleteFunc(others, func(c string) bool { return c == second })
				g2 := g.group()
				g.add(Action{Kind: KPause, Client: second, Op: op, Point: "takeover.read", Group: g2, Needs: []int{pause}})
				g.pending[second] = true
				// The holder first: it charges while the retry is held.
				return []Action{{Kind: KRelease, Group: g2, Client: second, Op: op}}
			}},
		// The holder charged and silent past the threshold: a retry is
		// answered outcome_unknown, and an operator settles the operation
		// before the holder wakes.
		{ok: clock && g.d.has(judge.CapFaults), points: []string{"dispatch.before", "dispatch.after"},
			inner: func(op, _ int, _ string) []Action {
				if !stale() {
					g.call(other(), op)
					return nil
				}
				caller := other()
				g.call(caller, op)
				g.add(Action{Kind: KSettle, Client: caller, Op: op, Variant: pick(g, []string{judge.SettleRefunded, judge.SettleCompleted})})
				if g.chance(0.5) {
					g.call(caller, op)
				}
				return nil
			}},
		// The auto permit's life over while the call is held before its
		// charge: nothing ran, so it is answered retryable.
		{ok: clock && derived && g.clockSpent+2*time.Minute+time.Second <= clockBudget, unkeyed: true, points: []string{"reserve.done"},
			inner: func(op, _ int, _ string) []Action {
				g.clock(Action{Variant: ClockPastPermit})
				return nil
			}},
	}
	// The variant asked for, or, where the target or the scenario's state
	// rules it out, one drawn by weight.
	i := which
	if !variants[i].ok {
		ws := make([]int, len(variants))
		for j, v := range variants {
			ws[j] = on(v.ok, pauseWeights[j])
		}
		if i = g.weighted(ws); i < 0 {
			return
		}
	}
	v := variants[i]
	tools := slices.DeleteFunc(g.writeToolsOr(), func(t string) bool { return g.unmet[t] })
	if len(tools) == 0 {
		return
	}
	op := g.newOp(pick(g, tools), !v.unkeyed)
	if !g.dispatches(op, who) {
		g.call(who, op)
		return
	}
	points := v.points
	if !v.unkeyed {
		// Only an unkeyed call takes the retry lock.
		points = slices.DeleteFunc(slices.Clone(points), func(p string) bool { return slices.Contains(lockPoints, p) })
	}
	if len(points) == 0 {
		g.call(who, op)
		return
	}
	point := pick(g, points)
	if g.d.has(judge.CapSettings) && !g.frozen && g.chance(0.5) {
		// The locks feature's set-up: the clock frozen just before a
		// window boundary and a short stale-lock threshold, so a takeover
		// lands in the next bucket (a stale holder with no fence then cuts
		// a slot of its own). Without it, the default threshold is longer
		// than the window, which crosses a boundary too.
		g.clock(Action{Variant: ClockFreezeBefore, Dur: time.Millisecond})
		g.frozen = true
		g.setStale(10)
	}
	grp := g.group()
	g.markCalled(op, who)
	pause := g.add(Action{Kind: KPause, Client: who, Op: op, Point: point, Group: grp})
	g.pending[who] = true
	g.maybeWait(0.2)
	more := v.inner(op, pause, point)
	releases := append([]Action{{Kind: KRelease, Group: grp, Client: who, Op: op}}, more...)
	if g.chance(0.5) {
		slices.Reverse(releases)
	}
	for i, r := range releases {
		g.add(Action{Kind: KRelease, Group: r.Group})
		if i == 0 && len(releases) > 1 && len(others) > 0 && g.chance(0.6) {
			g.call(other(), op)
		}
	}
	for _, r := range releases {
		g.settle(r.Client, r.Op)
	}
}

// epClock: calls across a window boundary and past the effective window.
func (g *gen) epClock() {
	who, ok := g.caller(3, g.free(false))
	if !ok {
		return
	}
	keyed := g.chance(0.3)
	variants := []string{ClockAdvance, ClockAdvance, ClockPastWindow, ClockPastPermit, ClockShortOfWindow}
	if !keyed {
		// An unkeyed retry's replay depends on the window alone: its edge
		// is where a slot's age is misread.
		variants = append(variants, ClockShortOfWindow, ClockShortOfWindow, ClockShortOfWindow)
	}
	v := pick(g, variants)
	if v == ClockShortOfWindow && g.clockSpent+2*time.Minute+2*time.Second > clockBudget && (g.frozen || g.clockSpent > 0) {
		// No budget left for the move: the clock goes 2 ms on instead.
		v = ClockAdvance
	}
	if !g.frozen && (v == ClockShortOfWindow || g.chance(0.7)) {
		// Half a second short of the window from a call made just before a
		// boundary: the two calls' whole seconds are a window apart.
		if v == ClockShortOfWindow || g.chance(0.7) {
			g.clock(Action{Variant: ClockFreezeBefore, Dur: time.Millisecond})
		} else {
			g.clock(Action{Variant: ClockFreezeAt})
		}
		g.frozen = true
	}
	if v == ClockShortOfWindow && g.frozen && g.frac != justBeforeSecond {
		// The clock was frozen earlier and moved by parts of a second
		// since: back to just before a whole second, where the call's and
		// its retry's whole seconds are a window apart.
		g.clock(Action{Variant: ClockAdvance, Dur: (justBeforeSecond - g.frac + time.Second) % time.Second})
	}
	op := g.newOp(pick(g, g.writeToolsOr()), keyed)
	g.call(who, op)
	if v == ClockShortOfWindow {
		g.clock(Action{Variant: v, Dur: 500 * time.Millisecond})
	} else {
		g.clock(Action{Variant: v, Dur: 2 * time.Millisecond})
	}
	g.retries(op, who, 1+g.rng.Intn(2))
}

// epRetention: the retention set a minute past the window, a keyed call,
// and its retry half a minute short of the retention (a replay: the
// record is kept) or past it (the key forgotten: a new operation, or
// still a replay where the purge has not come).
func (g *gen) epRetention() {
	if g.room() < 3 || g.windowSet {
		return
	}
	who, ok := g.caller(3, g.free(true))
	if !ok {
		return
	}
	v := pick(g, []string{ClockShortOfRetention, ClockShortOfRetention, ClockPastRetention})
	if g.clockSpent+3*time.Minute+time.Second > clockBudget {
		return
	}
	// The setting and the clock move go together: without the setting a
	// move to the retention would be a day's.
	grp := g.group()
	g.add(Action{Kind: KSetting, Variant: SetRetention, Value: 60, Group: grp})
	if g.retainHeld(grp) {
		return
	}
	op := g.newOp(pick(g, g.writeToolsOr()), true)
	g.call(who, op)
	g.maybeWait(0.3)
	g.clock(Action{Variant: v, Dur: 30 * time.Second, Group: grp})
	g.retries(op, who, 1+g.rng.Intn(2))
}

// retainHeld is retention-02's situation: a keyed call charged and held
// before its dispatch while the clock passes the retention, and a retry
// meanwhile: an operation in progress or uncertain is never purged, so
// the retry is refused as the holder's age implies, not run anew. False
// when the target or the scenario leaves no room for it.
func (g *gen) retainHeld(grp int) bool {
	first := g.firstURL(g.free(true))
	tools := slices.DeleteFunc(g.writeToolsOr(), func(t string) bool { return g.unmet[t] })
	if !g.d.has(judge.CapFaults) || len(first) == 0 || len(g.free(true)) < 2 || len(tools) == 0 || g.room() < 5 || !g.chance(0.6) {
		return false
	}
	who := pick(g, first)
	others := slices.DeleteFunc(g.free(true), func(c string) bool { return c == who })
	op := g.newOp(pick(g, tools), true)
	if !g.dispatches(op, who) {
		g.call(who, op)
		return true
	}
	pause := g.group()
	g.markCalled(op, who)
	g.add(Action{Kind: KPause, Client: who, Op: op, Point: "dispatch.before", Group: pause})
	g.pending[who] = true
	g.clock(Action{Variant: ClockPastRetention, Group: grp})
	o := pick(g, others)
	g.call(o, op)
	g.add(Action{Kind: KRelease, Group: pause})
	g.settle(who, op)
	g.retries(op, o, 1)
	return true
}

// epSetting: the unkeyed window or the stale-lock threshold changed
// between a call and its retry.
func (g *gen) epSetting() {
	if g.room() < 2 {
		return
	}
	who := pick(g, g.free(true))
	switch r := g.rng.Intn(5); {
	case r < 3:
		// The window lowered (or raised) between a call and its retry:
		// the slot cut under the longer window is still the one a retry
		// inside the shorter one finds.
		op := g.newOp(pick(g, g.writeToolsOr()), false)
		g.call(who, op)
		g.add(Action{Kind: KSetting, Variant: SetWindow, Value: pick(g, []int64{1, 60, 60, 60, 300})})
		g.windowSet = true
		g.call(who, op)
		g.retries(op, who, g.rng.Intn(2))
	case r == 3 && g.d.Policy != judge.PolicyRefuse:
		g.add(Action{Kind: KSetting, Variant: SetWindow, Value: 0})
		g.windowSet = true
		g.window0 = true
		op := g.newOp(pick(g, g.writeToolsOr()), false)
		g.call(who, op)
		g.retries(op, who, 1)
	default:
		g.setStale(pick(g, []int64{1, 2, 10}))
	}
}

// epRevoke: a principal calls, is revoked, and retries.
func (g *gen) epRevoke() {
	if g.room() < 3 {
		return
	}
	who := "carol" // a principal of its own: alice and bob stay for the rest
	if !slices.Contains(g.free(false), who) {
		return
	}
	op := g.newOp(pick(g, g.writeToolsOr()), g.chance(0.6))
	if g.sc.Ops[op].Keyed() && g.dispatches(op, who) && g.chance(0.3) {
		g.markCalled(op, who)
		g.add(Action{Kind: KDrop, Client: who, Op: op})
	} else {
		g.call(who, op)
	}
	if g.d.has(judge.CapFixtures) && g.chance(0.2) {
		g.remove(g.sc.Ops[op].Tool)
	}
	p := g.sc.Clients[who].Principal
	g.add(Action{Kind: KRevoke, Who: p})
	g.revoked[p] = true
	g.call(who, op)
}

// epPermit: calls under an explicit permit, mutating, read-only or
// approval-gated, and their retries, now and then past its life.
func (g *gen) epPermit() {
	if g.room() < 2 {
		return
	}
	who := pick(g, g.free(true))
	if g.d.has(judge.CapFaults) && g.d.has(judge.CapClock) && g.clockSpent+61*time.Second <= clockBudget &&
		g.firstURL([]string{who}) != nil && !g.removed[ToolWrite] && g.affords(who, ToolWrite, 2) && g.chance(0.7) {
		// A permit of its own, its call's answer lost, then its life
		// over: the retry still gets what the permit paid for.
		name := fmt.Sprintf("P%d", len(g.sc.Permits)+1)
		g.sc.Permits[name] = Permit{Tool: ToolWrite, Budget: 3 * max(1, g.sc.Prices[ToolWrite]), TTL: 60 * time.Second}
		op := g.newOp(ToolWrite, false)
		g.sc.Ops[op].Permit = name
		g.markCalled(op, who)
		g.add(Action{Kind: KFault, Client: who, Op: op, Variant: "drop"})
		if g.clockSpent > 0 || g.frozen {
			// The clock moved since the permit was made: its life may be
			// over, its call refused before the dispatch it would drop.
			g.unmet[ToolWrite] = true
		}
		g.clock(Action{Variant: ClockAdvance, Dur: 61 * time.Second})
		g.retries(op, who, 1+g.rng.Intn(2))
		return
	}
	if p := g.sc.Prices[ToolWrite]; p > 0 && !g.removed[ToolWrite] && g.affords(who, ToolWrite, 2) && g.room() >= 3 && g.chance(0.35) {
		// A permit that pays for one call, whose first dispatch the
		// upstream refuses: the refund gives the permit its budget back
		// as it gives the wallet its credits, and the retry runs.
		name := fmt.Sprintf("P%d", len(g.sc.Permits)+1)
		g.sc.Permits[name] = Permit{Tool: ToolWrite, Budget: p, TTL: 60 * time.Second}
		op := g.newOp(ToolWrite, false)
		g.sc.Ops[op].Permit = name
		g.markCalled(op, who)
		g.add(Action{Kind: KUpstream, Client: who, Op: op, Variant: probe.FailRefuse})
		g.retries(op, who, 1+g.rng.Intn(2))
		return
	}
	names := []string{"P1", "P2"}
	if _, ok := g.sc.Permits["P3"]; ok {
		names = append(names, "P3")
	}
	name := pick(g, names)
	op := g.newOp(g.sc.Permits[name].Tool, false)
	g.sc.Ops[op].Permit = name
	g.call(who, op)
	if g.d.has(judge.CapClock) && g.chance(0.2) && g.room() > 1 {
		g.clock(Action{Variant: ClockAdvance, Dur: 61 * time.Second})
	}
	g.retries(op, who, g.rng.Intn(3))
}

// epRounds: a multi-round call: asked for input, answered, retried (its
// last round, or its first one again); on 2025-11-25, refused.
func (g *gen) epRounds() {
	if g.removed[ToolAsk] {
		return
	}
	who, ok := g.caller(2, g.free(false))
	if !ok {
		return
	}
	// Mostly a client that can answer input (2026-07-28), often one that
	// cannot (2025-11-25), which must be refused, never handed the request.
	if want := pick(g, []string{wireStateless, wireStateless, wireStateless, wireSession, wireSession}); len(g.d.Wires) > 1 && g.version[who] != want {
		g.version[who] = want
		g.add(Action{Kind: KSpeak, Client: who, Version: want})
	}
	op := g.newOp(ToolAsk, true)
	first := g.call(who, op)
	if g.room() > 0 && g.chance(0.8) {
		g.add(Action{Kind: KAnswer, Client: who, Op: op, Needs: []int{first}})
	}
	// At least one more call of it: its last round again, or its first
	// round sent again once the call finished (a replay of the final
	// result, never a key reused).
	for i, n := 0, 1+g.rng.Intn(2); i < n && g.room() > 0; i++ {
		g.maybeWait(0.3)
		a := Action{Kind: KCall, Client: who, Op: op}
		if g.chance(0.4) {
			a.Variant = "again"
		}
		g.add(a)
	}
}

// epBurst: many fresh operations in a row by one client: what a gateway
// does to its n-th call shows.
func (g *gen) epBurst() {
	f := g.free(false)
	if g.room() < 6 || len(f) == 0 {
		return
	}
	who := pick(g, f)
	for i, n := 0, 6+g.rng.Intn(12); i < n && g.room() > 0; i++ {
		op := g.newOp(pick(g, g.writeToolsOr()), g.chance(0.6))
		g.call(who, op)
		if g.chance(0.15) && g.room() > 0 {
			g.call(who, op)
		}
	}
}

// epRemove: a tool removed, then calls of it: new work refused, stored
// outcomes served or refused.
func (g *gen) epRemove() {
	if g.room() < 2 || len(g.called) == 0 {
		return
	}
	op := pick(g, g.called)
	tool := g.sc.Ops[op].Tool
	if tool == ToolWrite && len(g.writeTools()) < 2 && g.room() > 8 {
		return // keep a mutating tool for what comes later
	}
	g.remove(tool)
	if f := g.free(false); len(f) > 0 {
		who := pick(g, f)
		g.call(who, op)
		if g.room() > 0 {
			g.call(who, g.newOp(tool, g.chance(0.5)))
		}
	}
}
