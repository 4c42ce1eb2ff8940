// Package repro turns what one scenario did into repro.sh: a bash script
// of curl calls that replays the recorded run against a running gateway
// and says, by observing again what the failed checks observed, whether
// the same thing happened: REPRODUCED (exit 0) or NOT REPRODUCED (exit 1).
//
// The script is built from the run's record alone, never from the step
// text: the MCP exchanges (bodies and headers as sent), the control API
// calls and the upstream probe's stalls and waits, in the order they
// started. What overlapped in the recorded run overlaps in the replay:
// every MCP request is sent in the background and collected once a later
// action started after it had ended, so a crowd of twins goes out together
// and a call paused at a fault point waits while the script steers it. A
// new step therefore never needs teaching twice, and a scenario against a
// gateway without a control API replays as well as any.
//
// Values of the recorded run are replaced where the replay needs its own:
// the ids the control API hands out (wallets, keys, faults) are read from
// the replay's answers, the API keys (recorded as fingerprints) likewise or
// from the environment, session ids from the replay's handshakes, and probe
// tokens, idempotency keys and tool names get a prefix fresh to each run of
// the script, so a second run is never answered from the first's results.
//
// Everything here is a pure function of its input, golden-tested.
package repro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// DefaultGateway is the script's GATEWAY when the environment sets none.
const DefaultGateway = "http://127.0.0.1:8719"

// Input is what a script is made from.
type Input struct {
	Scenario reports.Scenario // the record of the run
	Entry    catalog.Entry    // the catalog entry (file and line of the source)
	Target   reports.Target   // what the recorded run tested, for the header
}

// Result is the script and what it cannot reproduce faithfully.
type Result struct {
	Script   []byte
	Warnings []string
	// Env are the variables the script stops without, in the order its
	// header names them (GATEWAY has a default and is not among them).
	Env []string
	// Gateway is GATEWAY's default: the origin of the URL target the run
	// tested, or DefaultGateway for the reference (its port is gone).
	Gateway string
}

// action is one request of the recorded run: an MCP exchange, or a control
// API or probe call.
type action struct {
	ex   reports.Exchange
	mcp  bool
	num  int    // the exchange's number in the report (MCP), or in Control
	name string // the script's file stem for it
	bg   bool   // sent in the background, collected later
	gate string // the FIFO a crowd's request waits at
}

// binding replaces a recorded value in the script by a shell expression;
// a fresh value keeps its text after the run's prefix (literal).
type binding struct {
	value, expr string
	literal     bool
}

type gen struct {
	in      Input
	sends   bool // the script sends requests (so GATEWAY must answer)
	b       strings.Builder
	warn    []string
	binds   []binding // recorded value -> shell expression, longest first when used
	bound   map[string]bool
	running []*action // MCP requests sent and not yet collected
	env     []string  // credentials the script takes from the environment
	gates   int       // crowds released so far
	// witnessed are the exchanges that judged checks of fault points name
	// (whether a call waited at a point); ended, those whose answer the
	// script notes as there or not when it steers on.
	witnessed map[int]bool
	ended     map[string]bool
	usesCtl   bool
	usesPrb   bool
	usesIdP   bool             // the run registered its identity provider: the replay registers IDP
	tokens    []principalToken // principal tokens the run sent, minted anew
	resetCtl  []string         // control paths cleanup resets (faults, clock, settings)
}

// Script writes repro.sh for one scenario.
func Script(in Input) (Result, error) {
	sc := in.Scenario
	if sc.ID == "" {
		return Result{}, fmt.Errorf("repro: the scenario has no ID")
	}
	g := &gen{in: in, bound: map[string]bool{}, witnessed: map[int]bool{}, ended: map[string]bool{}}
	for _, c := range judged(sc) {
		if c.Witness != nil && c.Capability == judge.CapFaults {
			for _, ix := range c.Witness.Exchanges {
				g.witnessed[ix] = true
			}
		}
	}
	acts := g.actions()
	if len(acts) == 0 {
		g.warn = append(g.warn, fmt.Sprintf("the recorded run made no request (%s: %s); there is nothing to replay", sc.Verdict, oneLine(sc.Reason)))
	}
	g.bindFresh(acts)
	g.emitTokens()
	for i := 0; i < len(acts); {
		a := &acts[i]
		g.collect(a.ex.Started, !a.mcp)
		if n := g.crowdAt(acts, i); n > 1 {
			g.crowd(acts[i : i+n])
			i += n
			continue
		}
		// A call still running when a later one started runs in the
		// background (a wait at the probe while the twins go out); the
		// others in the foreground.
		a.bg = a.mcp || slices.ContainsFunc(acts[i+1:], func(b action) bool { return b.ex.Started.Before(a.ex.Finished) })
		g.emit(a)
		i++
	}
	g.collect(time.Time{}, false)
	g.observe()
	body := g.b.String()
	g.b.Reset()
	g.sends = len(acts) > 0
	g.header()
	g.b.WriteString(body)
	var env []string
	for _, v := range []struct {
		uses bool
		name string
	}{{g.usesCtl, "CONTROL_TOKEN"}, {g.usesPrb, "PROBE"}, {g.usesIdP, "IDP"}} {
		if v.uses {
			env = append(env, v.name)
		}
	}
	return Result{Script: []byte(g.b.String()), Warnings: g.warn, Env: append(env, g.env...), Gateway: g.gateway()}, nil
}

// actions merges the exchanges and the control and probe calls in the
// order they started (an exchange first on a tie: it was sent first).
func (g *gen) actions() []action {
	sc := g.in.Scenario
	var acts []action
	for i, ex := range sc.Exchanges {
		acts = append(acts, action{ex: ex, mcp: true, num: i + 1, name: fmt.Sprintf("x%02d", i+1)})
	}
	for i, ex := range sc.Control {
		acts = append(acts, action{ex: ex, num: i + 1, name: fmt.Sprintf("c%02d", i+1)})
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].ex.Started.Before(acts[j].ex.Started) })
	return acts
}

func (g *gen) bind(value, expr string) {
	if value == "" || g.bound[value] {
		return
	}
	g.bound[value] = true
	g.binds = append(g.binds, binding{value: value, expr: expr})
}

// fresh binds a value the replay makes its own with the run's prefix.
func (g *gen) fresh(value string) {
	if value == "" || g.bound[value] {
		return
	}
	g.bound[value] = true
	g.binds = append(g.binds, binding{value: value, expr: "${RUN}", literal: true})
}

// bindFresh binds what the replay must not share with the recorded run
// (or with an earlier replay): the gateways' and the probe's addresses,
// probe tokens, idempotency keys and registered tool names.
func (g *gen) bindFresh(acts []action) {
	gateways := 0
	probe := ""
	for _, a := range acts {
		if isProbe(a.ex) {
			probe = origin(a.ex.URL)
		}
		if a.ex.Method == "POST" && pathOf(a.ex) == "/tools" {
			var t struct {
				Name        string `json:"name"`
				UpstreamURL string `json:"upstream_url"`
			}
			if json.Unmarshal(a.ex.RequestBody, &t) == nil {
				if t.UpstreamURL != "" {
					probe = origin(t.UpstreamURL)
				}
				g.fresh(t.Name)
			}
		}
	}
	if probe != "" {
		g.usesPrb = true
		g.bind(probe, "${PROBE}")
	}
	g.bindPrincipals(acts)
	// A control call naming another server of the recorded run that the
	// replay has no stand-in for cannot be replayed once the run ended.
	gw := map[string]bool{probe: true}
	for _, a := range acts {
		gw[origin(a.ex.URL)] = true
	}
	for _, a := range acts {
		for _, u := range urlText.FindAllString(string(a.ex.RequestBody), -1) {
			if o := origin(u); o != "" && !gw[o] && !g.bound[o] {
				gw[o] = true
				g.warn = append(g.warn, fmt.Sprintf("%s names %s, a server of the recorded run that is gone", oneLine(a.ex.Label), o))
			}
		}
	}
	for _, a := range acts {
		if o := origin(a.ex.URL); o != probe && !g.bound[o] {
			gateways++
			v := "${GATEWAY}"
			if gateways > 1 {
				v = fmt.Sprintf("${GATEWAY%d}", gateways)
			}
			g.bind(o, v)
		}
		for _, tok := range tokensIn(a.ex) {
			g.fresh(tok)
		}
		// The key as the header carries it (a Structured Field string keeps
		// its escapes): the run's prefix needs none.
		k := headerOf(a.ex.RequestHeaders, "Idempotency-Key")
		if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
			k = k[1 : len(k)-1]
		}
		g.fresh(k)
	}
	for _, d := range g.in.Scenario.Dispatches {
		g.fresh(d.Token)
	}
}

// crowdGap is the most time between the starts of two MCP requests of one
// crowd: requests the harness released together at a barrier start within
// a few milliseconds of each other, even on a busy machine.
const crowdGap = 10 * time.Millisecond

// crowdAt is how many MCP requests from acts[i] on go out together: each
// started within crowdGap of the one before and while one before it was
// still in flight, on a lane of its own with nothing else in flight (so no
// member waits for another's session). A request that started after all
// the ones before it had their answers followed them, however soon: on an
// idle machine a call and the next step's call start within a millisecond
// or two, and sending them together would reorder the run.
func (g *gen) crowdAt(acts []action, i int) int {
	busy := map[string]bool{}
	for _, r := range g.running {
		busy[r.ex.Lane] = true
	}
	n := 0
	var last time.Time // the latest answer among the crowd so far
	open := false      // one of them had no answer at all
	for j := i; j < len(acts) && acts[j].mcp; j++ {
		ex := acts[j].ex
		followed := j > i && !open && !ex.Started.Before(last)
		if busy[ex.Lane] || followed || (j > i && ex.Started.Sub(acts[j-1].ex.Started) > crowdGap) {
			break
		}
		busy[ex.Lane] = true
		n++
		if ex.Finished.IsZero() {
			open = true
		} else if ex.Finished.After(last) {
			last = ex.Finished
		}
	}
	return n
}

// crowd sends requests the recorded run released together the same way:
// each waits at a gate (a FIFO), and opening the gate releases them all.
func (g *gen) crowd(acts []action) {
	g.gates++
	gate := fmt.Sprintf("gate%d", g.gates)
	g.p("")
	g.p("# %d requests released together, as the recorded run did: each waits at a gate.", len(acts))
	g.p(`mkfifo "$TMP/%s"`, gate)
	for i := range acts {
		acts[i].bg = true
		acts[i].gate = gate
		g.emitMCP(&acts[i])
	}
	g.p(`at_gate %s %d`, gate, len(acts))
	g.p(`exec {GATE_%d}<>"$TMP/%s" # opens it for all of them, and stays open`, g.gates, gate)
}

// collect waits for every request still running that had ended, in the
// recorded run, before t (all of them for the zero t); a request the
// harness dropped on purpose is dropped here too.
func (g *gen) collect(t time.Time, steer bool) {
	var keep, done []*action
	for _, r := range g.running {
		if !t.IsZero() && (r.ex.Finished.IsZero() || !r.ex.Finished.Before(t)) {
			keep = append(keep, r)
			continue
		}
		if steer && r.mcp && g.witnessed[r.num-1] && r.ex.Error == "" {
			// Whether a witnessed call had its answer before the harness
			// steered on (released a pause, reset the faults) tells a call
			// that never reached a fault point from one that waited there.
			// Given twice the time the run's answer took, and a second at least.
			ticks := max(20, int(2*r.ex.Finished.Sub(r.ex.Started)/(50*time.Millisecond))+1)
			g.p(`ENDED_%s=$(ended %s %d)`, r.name, r.name, ticks)
			g.ended[r.name] = true
		}
		if strings.HasPrefix(r.ex.Error, "connection closed by the client") {
			g.p(`kill "$PID_%s" 2>/dev/null || true; wait "$PID_%s" 2>/dev/null || true`, r.name, r.name)
			g.p(`echo "-- #%d %s: connection dropped by the client, as the recorded run did"`, r.num, oneLine(r.ex.Label))
		} else {
			done = append(done, r)
		}
	}
	if len(done) > 0 {
		var pids []string
		for _, r := range done {
			pids = append(pids, fmt.Sprintf(`"$PID_%s"`, r.name))
		}
		g.p(`await %s`, strings.Join(pids, " "))
	}
	for _, r := range done {
		if !r.mcp {
			g.bindAnswer(r)
			continue
		}
		if sid := headerOf(r.ex.ResponseHeaders, "Mcp-Session-Id"); sid != "" && !g.bound[sid] {
			v := "SESSION_" + r.name
			g.p(`%s=$(header Mcp-Session-Id < "$TMP/%s.headers")`, v, r.name)
			g.bind(sid, "${"+v+"}")
		}
	}
	g.running = keep
}

func (g *gen) emit(a *action) {
	switch {
	case a.mcp:
		g.emitMCP(a)
	case isProbe(a.ex):
		act := path.Base(pathOf(a.ex))
		line := fmt.Sprintf(`probe %s %s > "$TMP/%s.body"`, act, g.word(compact(a.ex.RequestBody)), a.name)
		if a.bg {
			g.p(`{ %s || echo "!! probe %s failed"; } &`, line, act)
			g.p(`PID_%s=$!`, a.name)
			g.running = append(g.running, a)
			return
		}
		g.p(`%s || echo "!! probe %s failed"`, line, act)
	default:
		g.emitControl(a)
	}
}

func (g *gen) emitMCP(a *action) {
	ex := a.ex
	g.p("")
	g.p("# #%d %s (%s lane)", a.num, oneLine(ex.Label), oneLine(ex.Lane))
	body := compact(ex.RequestBody)
	if len(ex.RequestBody) == 0 {
		body = ex.RequestBodyText
	}
	if prefix, n := oversized(body); n > 0 {
		// The evidence kept the opening of a body over its cap: the body is
		// rebuilt at its recorded size, the rest a run of x closing a
		// string and the objects it opened.
		g.p("# The evidence kept the first %d bytes of this %d-byte body; the rest is rebuilt.", len(prefix), len(prefix)+n)
		g.p(`{ printf '%%s' %s; head -c %d /dev/zero | tr '\0' x; printf '%%s' '"}}}'; } > "$TMP/%s.req"`, g.word(prefix), max(n-4, 0), a.name)
	} else {
		g.p(`printf '%%s' %s > "$TMP/%s.req"`, g.word(body), a.name)
	}
	call := "mcp"
	if k := Kind(ex.Status, ex.ResponseBody, ex.Error); k == "result" || k == "replay" {
		call = "mcp --settle"
	}
	line := fmt.Sprintf(`%s %s %s %s`, call, a.name, sq(fmt.Sprintf("#%d %s", a.num, oneLine(ex.Label))), g.word(pathAndQuery(ex.URL)))
	for _, h := range g.headers(ex) {
		line += " \\\n  " + h
	}
	if a.gate != "" {
		line = fmt.Sprintf(`{ touch "$TMP/%s.%s"; : < "$TMP/%s"; %s; }`, a.gate, a.name, a.gate, line)
	}
	g.p("%s &", line)
	g.p(`PID_%s=$!`, a.name)
	g.running = append(g.running, a)
}

func (g *gen) emitControl(a *action) {
	ex := a.ex
	g.usesCtl = true
	p := pathAndQuery(ex.URL)
	if i := strings.Index(p, "/control"); i >= 0 {
		p = p[i+len("/control"):]
	}
	for _, reset := range []string{"/faults", "/clock", "/settings"} {
		if strings.HasPrefix(p, reset) && ex.Method != "GET" && !slices.Contains(g.resetCtl, reset) {
			g.resetCtl = append(g.resetCtl, reset)
		}
	}
	line := fmt.Sprintf(`ctl %s %s`, ex.Method, g.word(p))
	if len(ex.RequestBody) > 0 {
		line += " " + g.word(compact(ex.RequestBody))
	}
	line += fmt.Sprintf(` > "$TMP/%s.body"`, a.name)
	if ex.Status >= 300 || ex.Error != "" {
		g.p("# The recorded run got %s.", statusText(ex))
		line += " || true"
	} else {
		line = fmt.Sprintf(`%s || die %s`, line, sq(fmt.Sprintf("control call %s (%s) failed", a.name, ex.Method)))
	}
	if a.bg {
		g.p(`{ %s; } &`, line)
		g.p(`PID_%s=$!`, a.name)
		g.running = append(g.running, a)
		return
	}
	g.p("%s", line)
	g.bindAnswer(a)
}

// bindAnswer reads the ids a control answer hands out: they stand for the
// recorded ones from here on.
func (g *gen) bindAnswer(a *action) {
	ex := a.ex
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(ex.ResponseBody), &m) != nil {
		return
	}
	for _, k := range slices.Sorted(mapsKeys(m)) {
		var v string
		if (k != "id" && k != "api_key" && !strings.HasSuffix(k, "_id")) || json.Unmarshal(m[k], &v) != nil || v == "" || g.bound[v] {
			continue
		}
		name := fmt.Sprintf("%s_%s", strings.ToUpper(a.name), strings.ToUpper(k))
		g.p(`%s=$(field %s < "$TMP/%s.body")`, name, k, a.name)
		g.bind(v, "${"+name+"}")
	}
}

// headers are the recorded request headers as curl arguments; the
// credential is the key the replay created (or one from the environment),
// a session id the replay's own.
func (g *gen) headers(ex reports.Exchange) []string {
	var out []string
	for _, k := range slices.Sorted(mapsKeys(ex.RequestHeaders)) {
		v := ex.RequestHeaders[k]
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		if i := strings.Index(v, "***"); i >= 0 && !g.bound[v] && !g.bound[v[i:]] {
			fp := strings.TrimPrefix(v[i:], "***")
			name := "KEY_" + shvar(fp)
			if fp == "" {
				name = "KEY"
			}
			g.bind(v[i:], "${"+name+"}")
			g.env = append(g.env, name)
			g.warn = append(g.warn, fmt.Sprintf("%s: a credential the replay does not create (a profile's key or a principal's token); the script takes it from %s", oneLine(ex.Label), name))
		}
		out = append(out, "-H "+g.word(k+": "+v))
	}
	return out
}

// word quotes s for the shell with every bound value replaced by its
// expression: literal runs in single quotes, expressions in double quotes.
func (g *gen) word(s string) string {
	binds := slices.Clone(g.binds)
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].value) > len(binds[j].value) })
	var b strings.Builder
	lit := 0
	flush := func(end int) {
		if end > lit {
			b.WriteString(sq(s[lit:end]))
		}
	}
	for i := 0; i < len(s); {
		hit := -1
		for j, bd := range binds {
			if strings.HasPrefix(s[i:], bd.value) {
				hit = j
				break
			}
		}
		if hit < 0 {
			i++
			continue
		}
		flush(i)
		b.WriteString(`"` + binds[hit].expr + `"`)
		lit = i + len(binds[hit].value)
		if binds[hit].literal {
			lit = i // the recorded text follows the expression, quoted with what follows it
		}
		i += len(binds[hit].value)
	}
	flush(len(s))
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

// observe ends the script: it observes again what the recorded run's
// violated checks observed (every check's, for a run that failed none), in
// the same terms (dispatches per probe token, ledger entries per kind, how
// each witnessed request ended and how many receipts they share), and
// compares it with what the recorded run saw.
func (g *gen) observe() {
	sc := g.in.Scenario
	checks := judged(sc)
	what := "the recorded run's violated checks"
	if len(violated(sc)) == 0 {
		what = "the recorded run's checks (none was violated)"
	}
	g.p("")
	g.p("# ---- Observe again what %s observed ----", what)
	g.p(`wait`)
	g.p(`echo`)
	seen := map[string]bool{}
	once := func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
	for _, c := range checks {
		w := c.Witness
		if w.IsEmpty() {
			continue
		}
		g.p(`echo %s`, sq("check: "+oneLine(c.Step)))
		perToken := map[string]int{}
		var tokens []string
		for _, d := range w.Dispatches {
			if perToken[d.Token] == 0 {
				tokens = append(tokens, d.Token)
			}
			perToken[d.Token]++
		}
		// An operation dispatched or charged more than once is the anomaly
		// itself, however many times the replay's timing repeats it; other
		// counts must come out the same.
		for _, t := range tokens {
			if !once("d" + t) {
				continue
			}
			g.usesPrb = true
			if perToken[t] > 1 {
				g.p(`observe %s "$(more_than_one "$(probe_count %s)")" yes`, sq(t+" dispatched more than once at the probe"), g.word(t))
			} else {
				g.p(`observe %s "$(probe_count %s)" %d`, sq("dispatches of "+t+" at the probe"), g.word(t), perToken[t])
			}
		}
		if len(w.Ledger) > 0 && sc.LedgerAfter != nil && once("ledger") {
			g.usesCtl = true
			kinds, perReceipt, most := map[string]int{}, map[string]int{}, 0
			for _, e := range w.Ledger {
				kinds[e.Kind]++
				if e.Kind == "debit" && e.Receipt != "" {
					perReceipt[e.Receipt]++
					most = max(most, perReceipt[e.Receipt])
				}
			}
			g.p(`ctl GET %s > "$TMP/ledger.json" || die 'read the ledger'`, g.word("/wallets/"+sc.LedgerAfter.WalletID+"/ledger"))
			if most > 1 {
				g.p(`observe 'a receipt debited more than once' "$(more_than_one "$(most_debits "$TMP/ledger.json")")" yes`)
			} else {
				for _, k := range []string{"debit", "refund"} {
					g.p(`observe %s "$(count '"kind":"%s"' "$TMP/ledger.json")" %d`, sq(k+"s in the wallet's ledger"), k, kinds[k])
				}
			}
		}
		var withReceipt []string
		receipts := map[string]bool{}
		for _, ix := range w.Exchanges {
			if ix < 0 || ix >= len(sc.Exchanges) {
				continue
			}
			ex := sc.Exchanges[ix]
			name := fmt.Sprintf("x%02d", ix+1)
			if once("x" + name) {
				g.p(`observe %s "$(kind %s)" %s`, sq(fmt.Sprintf("how #%d %s ended", ix+1, oneLine(ex.Label))), name, sq(Kind(ex.Status, ex.ResponseBody, ex.Error)))
				if g.ended[name] {
					g.p(`observe %s "$ENDED_%s" answered`, sq(fmt.Sprintf("whether #%d was answered before the harness steered on", ix+1)), name)
				}
			}
			if r := Receipt(ex.ResponseBody); r != "" {
				withReceipt = append(withReceipt, name)
				receipts[r] = true
			}
		}
		if len(withReceipt) > 1 && once("r"+strings.Join(withReceipt, " ")) {
			g.p(`observe %s "$(distinct %s)" %d`, sq("distinct receipts among "+strings.Join(withReceipt, ", ")), strings.Join(withReceipt, " "), len(receipts))
		}
	}
	g.p(`echo`)
	g.p(`verdict`)
}

// judged are the checks the script decides by: the violated ones, or
// every check of a scenario that violated none.
func judged(sc reports.Scenario) []judge.Check {
	if v := violated(sc); len(v) > 0 {
		return v
	}
	return sc.Checks
}

func violated(sc reports.Scenario) []judge.Check {
	var out []judge.Check
	for _, c := range sc.Checks {
		if c.Status() == judge.Violated {
			out = append(out, c)
		}
	}
	return out
}

// Kind is how an answer ended, in terms the script's kind function reads
// from the raw answer the same way: "refusal REASON", "replay", "result",
// "http STATUS" or "no answer". It reads the body as the script's grep
// does, not as JSON (reports reads it so for the report): the kind it
// expects must be the one the script computes from the same bytes. The
// order of the decision is reports.Answer's, the one every reader uses.
func Kind(status int, body, transportErr string) string {
	a := reports.Answer{
		Status:   status,
		Refusal:  strings.Contains(body, `"error":{`),
		Replayed: replayRE.MatchString(body),
		Result:   strings.Contains(body, `"result":`),
	}
	switch k := a.Kind(); k {
	case reports.AnswerRefusal:
		if m := reasonRE.FindStringSubmatch(body); m != nil {
			return "refusal " + m[1]
		}
		return "refusal"
	case reports.AnswerHTTP:
		return fmt.Sprintf("http %d", status)
	default: // "no answer", "replay", "result"
		return string(k)
	}
}

var (
	reasonRE  = regexp.MustCompile(`"reason":"([^"]*)"`)
	replayRE  = regexp.MustCompile(`"io\.mcpconform/receipt":\{[^}]*"replayed":true`)
	receiptRE = regexp.MustCompile(`"io\.mcpconform/receipt":\{[^}]*"id":"([^"]*)"`)
)

// Receipt is the receipt id in a raw answer, "" when none.
func Receipt(body string) string {
	if m := receiptRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

func (g *gen) header() {
	sc, e, t := g.in.Scenario, g.in.Entry, g.in.Target
	g.p("#!/usr/bin/env bash")
	g.p("# mcpconform repro %s: %s", sc.ID, oneLine(sc.Title))
	g.p("#")
	g.p("# Scenario:    %s (%s:%d, @%s)", sc.ID, e.File, e.Line, sc.Level)
	g.p("# Requirement: %s", oneLine(sc.Requirement))
	g.p("# Source:      %s", oneLine(sc.Source))
	rec := "against " + t.Kind
	if t.Store != "" {
		rec += " (" + t.Store + ")"
	}
	if len(t.Bugs) > 0 {
		rec += " with bug switch(es) " + strings.Join(t.Bugs, ", ")
	}
	if sc.Verdict != "" {
		rec += ": " + string(sc.Verdict)
		if r := firstLine(sc.Reason); r != "" {
			rec += " (" + r + ")"
		}
	}
	g.p("# Recorded:    %s", oneLine(rec))
	g.p("#")
	g.p("# Replays what the recorded run sent, in the order it started (what overlapped then")
	g.p("# overlaps now), then observes again what its checks observed and ends with REPRODUCED")
	g.p("# (exit 0) or NOT REPRODUCED (exit 1); 2 when the replay itself could not run.")
	var need []string
	need = append(need, fmt.Sprintf("GATEWAY (default %s)", g.gateway()))
	if g.usesCtl {
		need = append(need, "CONTROL_TOKEN (the gateway's control API token)")
	}
	if g.usesPrb {
		need = append(need, "PROBE (a running `mcpconform probe`, e.g. http://127.0.0.1:8720, that the gateway reaches at that address)")
	}
	if g.usesIdP {
		need = append(need, "IDP (a running `mcpconform idp`, e.g. http://127.0.0.1:8721, that the gateway reaches at that address: the script registers it as the run registered its identity provider, and mints the principals' tokens there)")
	}
	for _, v := range g.env {
		need = append(need, v)
	}
	for _, pt := range g.tokens {
		if pt.env != "" && !slices.Contains(need, pt.env) {
			need = append(need, fmt.Sprintf("%s (a principal token for subject %s that the gateway accepts; without it, IDP: the identity provider the gateway trusts, %s, e.g. `mcpconform idp --addr %s --key THE-RUN'S-IDP-KEY`, mints one)",
				pt.env, pt.subject, pt.issuer, strings.TrimPrefix(pt.issuer, "http://")))
		}
	}
	g.p("# Environment: %s.", strings.Join(need, "; "))
	g.p("# Needs bash, curl, sed and grep.")
	for _, w := range g.warn {
		g.p("# NOTE: %s", oneLine(w))
	}
	g.p("set -uo pipefail")
	g.p("")
	// A variable the replay cannot run without, or a peer that does not
	// answer, stops it with exit 2: never NOT REPRODUCED (exit 1), which
	// a reviewer would read as the bug being fixed.
	g.p(`need() { [ -n "${!1:-}" ] || { echo "repro.sh: $2" >&2; echo "NOT REPRODUCED (the replay could not run)"; exit 2; }; }`)
	g.p(`GATEWAY="${GATEWAY:-%s}"`, g.gateway())
	g.p(`GATEWAY="${GATEWAY%%/}"`)
	for i := 2; i <= 9; i++ {
		if g.boundExpr(fmt.Sprintf("${GATEWAY%d}", i)) {
			g.p(`GATEWAY%d="${GATEWAY%d:-$GATEWAY}"`, i, i)
		}
	}
	if g.usesCtl {
		g.p(`need CONTROL_TOKEN "set CONTROL_TOKEN to the --control-token of the gateway"`)
	}
	if g.usesPrb {
		g.p(`need PROBE "start mcpconform probe and set PROBE to its address (http://HOST:PORT)"`)
		g.p(`PROBE="${PROBE%%/}"`)
	}
	if g.usesIdP {
		g.p(`need IDP "start mcpconform idp and set IDP to its address (http://HOST:PORT)"`)
	}
	if len(g.tokens) > 0 && !g.usesIdP {
		g.p(`IDP="${IDP:-}"`)
	}
	if len(g.tokens) > 0 {
		g.p(`IDP="${IDP%%/}"`)
	}
	for _, v := range g.env {
		g.p(`need %s "set %s to the credential whose fingerprint the evidence shows"`, v, v)
	}
	g.p(`RUN="rp$(date +%%s)$$-"  # fresh tokens, keys and tool names for each run of the script`)
	g.p(`TMP=$(mktemp -d)`)
	g.p(`MISMATCH=0 OBSERVED=0`)
	g.p("")
	g.p(`cleanup() {`)
	g.p(`  jobs -p | while read -r pid; do kill "$pid" 2>/dev/null || true; done`)
	for _, r := range g.resetCtl {
		g.p(`  ctl DELETE %s >/dev/null 2>&1 || true`, r)
	}
	g.p(`  rm -rf "$TMP"`)
	g.p(`}`)
	g.p(`trap cleanup EXIT`)
	g.b.WriteString(helpers)
	if len(g.tokens) > 0 {
		g.b.WriteString(mintHelper)
	}
	g.p("")
	if g.sends {
		g.p(`curl -sS -o /dev/null --max-time 10 "$GATEWAY/" 2>/dev/null || die "no server answers at GATEWAY=$GATEWAY (set GATEWAY to the gateway's base URL)"`)
	}
	if g.usesPrb {
		g.p(`curl -sSf -o /dev/null --max-time 10 "$PROBE/probe/v1" 2>/dev/null || die "no mcpconform probe answers at PROBE=$PROBE (start mcpconform probe; PROBE is its base URL, without /mcp)"`)
	}
}

// gateway is GATEWAY's default: the URL target the run tested, whose
// address a vendor's gateway keeps; the reference's port died with its run.
func (g *gen) gateway() string {
	if t := g.in.Target; t.Kind != "reference" && len(t.URLs) > 0 {
		if o := origin(t.URLs[0]); o != "" {
			return o
		}
	}
	return DefaultGateway
}

func (g *gen) boundExpr(expr string) bool {
	return slices.ContainsFunc(g.binds, func(b binding) bool { return b.expr == expr })
}

const helpers = `
die() { echo "repro.sh: $*" >&2; echo "NOT REPRODUCED (the replay could not run)"; exit 2; }

# ctl METHOD PATH [BODY]: one control API call; prints the answer, fails on an error status.
ctl() {
  local method=$1 path=$2 body=${3:-} status
  local args=(-sS --max-time 60 -X "$method" -H "Authorization: Bearer $CONTROL_TOKEN" -o "$TMP/ctl.out" -w '%{http_code}')
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-raw "$body"); fi
  status=$(curl "${args[@]}" "$GATEWAY/control$path") || status=000
  cat "$TMP/ctl.out" 2>/dev/null
  if [ "${status#2}" = "$status" ]; then
    echo "repro.sh: control API $method $path: HTTP $status" >&2
    return 1
  fi
}

# probe ACTION BODY: one call of the probe's observation API.
probe() {
  curl -sS --max-time 70 -X POST -H 'Content-Type: application/json' --data-raw "$2" "$PROBE/probe/v1/$1"
}

# probe_count TOKEN: how often the probe saw TOKEN dispatched.
probe_count() {
  curl -sS --max-time 30 -G --data-urlencode "token=$1" "$PROBE/probe/v1/count" | number count
}

# mcp [--settle] NAME LABEL PATH [curl args]: POST $TMP/NAME.req; keeps the answer, its
# headers and status. With --settle (the recorded call ended in a result) an answer of
# the retryable idempotency_in_progress is sent again after a backoff, as the harness's
# client does: a busy store may answer so before the call is admitted.
mcp() {
  local settle=0; [ "$1" = --settle ] && { settle=1; shift; }
  local name=$1 label=$2 path=$3 status tries=0 delay=10; shift 3
  while :; do
    status=$(curl -sS --max-time 60 -X POST "$GATEWAY$path" "$@" --data-binary "@$TMP/$name.req" \
      -o "$TMP/$name.body" -D "$TMP/$name.headers" -w '%{http_code}' 2>"$TMP/$name.err") || status=000
    touch "$TMP/$name.body" "$TMP/$name.headers"
    [ "$settle" = 1 ] && [ "$tries" -lt 10 ] && grep -q '"reason":"idempotency_in_progress"' "$TMP/$name.body" || break
    tries=$((tries + 1))
    sleep "$(printf '0.%03d' "$delay")"; delay=$((delay * 2 > 320 ? 320 : delay * 2))
  done
  echo "$status" > "$TMP/$name.status"
  local again=""; [ "$tries" -gt 0 ] && again=" (sent again after $tries in-progress answers)"
  echo "-> $label: HTTP $status $(kind "$name")$again"
}

# kind NAME: how answer NAME ended, as the generator named it for the recorded run.
kind() {
  local body status
  body=$(cat "$TMP/$1.body" 2>/dev/null); status=$(cat "$TMP/$1.status" 2>/dev/null || echo 000)
  if [ "$status" = 000 ]; then echo "no answer"
  elif grep -q '"error":{' <<<"$body"; then
    local r; r=$(grep -o '"reason":"[^"]*"' <<<"$body" | head -n 1 | sed 's/^"reason":"\(.*\)"$/\1/')
    if [ -n "$r" ]; then echo "refusal $r"; else echo "refusal"; fi
  elif grep -q '"io\.mcpconform/receipt":{[^}]*"replayed":true' <<<"$body"; then echo "replay"
  elif grep -q '"result":' <<<"$body"; then echo "result"
  else echo "http $status"
  fi
}

# distinct NAME...: how many distinct receipts the answers carry.
distinct() {
  local n
  for n in "$@"; do grep -o '"io\.mcpconform/receipt":{[^}]*"id":"[^"]*"' "$TMP/$n.body" | head -n 1 | sed 's/.*"id":"\([^"]*\)"$/\1/'; done | sort -u | grep -c . || true
}

# await PID...: waits for requests the recorded run saw answered by now, at most 5 s in
# all: in the replay another twin may be the one held at the probe. The final wait
# collects what is left.
await() {
  local i pid left
  for i in $(seq 100); do
    left=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.05
  done
  for pid in "$@"; do
    if kill -0 "$pid" 2>/dev/null; then echo "-- still waiting for an answer the recorded run had by now; going on"
    else wait "$pid" || true; fi
  done
}

# at_gate GATE N: waits until N requests wait at GATE (at most 5 s).
at_gate() {
  local i
  for i in $(seq 500); do
    [ "$(ls "$TMP" | grep -c "^$1\.")" -ge "$2" ] && { sleep 0.02; return; }
    sleep 0.01
  done
}

# most_debits FILE: the most debits one receipt has in a ledger answer.
most_debits() {
  tr '{' '\n' < "$1" | grep '"kind":"debit"' | grep -o '"receipt":"[^"]*"' | sort | uniq -c | sort -rn | head -n 1 | sed 's/^ *\([0-9]*\).*/\1/'
}

# more_than_one N: yes when N > 1.
more_than_one() { if [ "${1:-0}" -gt 1 ] 2>/dev/null; then echo yes; else echo no; fi; }

# ended NAME TICKS: "answered" when request NAME has its answer within TICKS × 50 ms
# (mcp writes its status last), else "still waiting".
ended() {
  local i
  for i in $(seq "$2"); do [ -e "$TMP/$1.status" ] && { echo answered; return; }; sleep 0.05; done
  echo "still waiting"
}

# observe WHAT GOT WANT: one observation of the replay beside the recorded run's.
observe() {
  OBSERVED=$((OBSERVED + 1))
  if [ "$2" = "$3" ]; then echo "  same:      $1: $2"
  else echo "  different: $1: $2 (the recorded run: $3)"; MISMATCH=1
  fi
}

verdict() {
  if [ "$OBSERVED" -eq 0 ]; then
    echo "NOT REPRODUCED (nothing the recorded run's checks looked at can be observed again)"; exit 1
  elif [ "$MISMATCH" -eq 0 ]; then
    echo "REPRODUCED"; exit 0
  fi
  echo "NOT REPRODUCED"; exit 1
}

# field NAME: the first string value of "NAME" in the JSON on stdin.
field() { { grep -o "\"$1\":\"[^\"]*\"" || true; } | head -n 1 | sed 's/^.*:"\(.*\)"$/\1/'; }

# number NAME: the first number value of "NAME" in the JSON on stdin.
number() { { grep -o "\"$1\":-\{0,1\}[0-9.]*" || true; } | head -n 1 | sed 's/^.*://'; }

# header NAME: a response header's value from a curl -D dump on stdin.
header() { { grep -i "^$1:" || true; } | head -n 1 | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r\n'; }

# count PATTERN FILE: how often PATTERN occurs in FILE.
count() { { grep -o "$1" "$2" || true; } | wc -l | tr -d ' '; }
`

// sq quotes s for the shell in single quotes.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var nonVar = regexp.MustCompile(`[^A-Za-z0-9_]`)

func shvar(s string) string { return nonVar.ReplaceAllString(s, "_") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func statusText(ex reports.Exchange) string {
	if ex.Error != "" {
		return "an error: " + oneLine(ex.Error)
	}
	return fmt.Sprintf("HTTP %d", ex.Status)
}

func isProbe(ex reports.Exchange) bool { return ex.Lane == "probe" }

func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func pathAndQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.RequestURI()
}

// pathOf is a control call's path below /control.
func pathOf(ex reports.Exchange) string {
	p := pathAndQuery(ex.URL)
	if i := strings.Index(p, "/control"); i >= 0 {
		p = p[i+len("/control"):]
	}
	p, _, _ = strings.Cut(p, "?")
	return p
}

// tokensIn are the probe tokens a request names: a tool call's
// arguments.token (in every message of a batch), or a probe call's token.
func tokensIn(ex reports.Exchange) []string {
	var out []string
	var one struct {
		Token  string `json:"token"`
		Params struct {
			Arguments struct {
				Token string `json:"token"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(ex.RequestBody, &one) == nil {
		out = append(out, one.Token, one.Params.Arguments.Token)
	}
	var batch []json.RawMessage
	if json.Unmarshal(ex.RequestBody, &batch) == nil {
		for _, m := range batch {
			if json.Unmarshal(m, &one) == nil {
				out = append(out, one.Params.Arguments.Token)
			}
		}
	}
	if ex.RequestBodyText != "" {
		if m := tokenText.FindStringSubmatch(ex.RequestBodyText); m != nil {
			out = append(out, m[1])
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

var urlText = regexp.MustCompile(`https?://[^"\s/]+`)

var tokenText = regexp.MustCompile(`"token"\s*:\s*"([^"\\]*)"`)

// oversized reads a body the evidence cut ("… [N bytes, first K kept]"):
// the kept prefix and how many bytes followed it; n is 0 for a body kept
// whole.
func oversized(text string) (prefix string, n int) {
	m := cutNote.FindStringSubmatchIndex(text)
	if m == nil {
		return text, 0
	}
	var size, kept int
	fmt.Sscan(text[m[2]:m[3]], &size)
	fmt.Sscan(text[m[4]:m[5]], &kept)
	return text[:m[0]], size - kept
}

var cutNote = regexp.MustCompile(`… \[(\d+) bytes, first (\d+) kept\]$`)

func headerOf(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// compact is a JSON body on one line, as the harness sent it.
func compact(b json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return string(b)
	}
	return c.String()
}
