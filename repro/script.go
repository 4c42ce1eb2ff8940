// Package repro turns one scenario's evidence into repro.sh: a plain bash
// script of curl calls that replays the scenario's MCP exchanges against a
// running gateway, with the control API calls the scenario made (fixtures,
// faults, clock, settings) in order, and the ledger and dispatch-log reads
// that show what the gateway did. It needs only bash, curl, sed and grep.
//
// The recorded exchanges are replayed as sent (bodies verbatim, headers but
// the redacted credential), so tool names, arguments and keys are the
// original run's; the fixtures are new: the script creates its own wallet and
// API key, and registers the scenario's tools as aliases of partner.echo
// (docs/control-api.md), since the harness's upstream probe is gone.
//
// Everything here is a pure function of its input, golden-tested.
package repro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

// DefaultGateway is the script's GATEWAY when the environment sets none.
const DefaultGateway = "http://127.0.0.1:8719"

// Input is what a script is made from.
type Input struct {
	Scenario reports.Scenario // the evidence of the recorded run
	Entry    catalog.Entry    // the catalog entry (file and line of the source)
	Steps    []string         // the scenario's steps, as Steps returns them
	Target   reports.Target   // what the recorded run tested, for the header
}

// Result is the script and what it cannot reproduce faithfully.
type Result struct {
	Script []byte
	// Warnings name steps the script only approximates or cannot run.
	Warnings []string
}

// Step patterns, the same sentences as steps/ registers.
var (
	reWallet    = regexp.MustCompile(`^a wallet with (\d+) credits and an API key$`)
	reTool      = regexp.MustCompile(`^an upstream (read-only |approval-gated )?tool "([^"]*)" priced (\d+) credits?$`)
	reCall      = regexp.MustCompile(`^"([^"]*)" (calls|starts calling) "([^"]*)" with (\{.*\}) (?:using key "([^"]*)"|without a key)$`)
	reDrop      = regexp.MustCompile(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) using key "([^"]*)" and drops the connection once the tool runs$`)
	reRetry     = regexp.MustCompile(`^"([^"]*)" retries (?:its|their) last call with a new JSON-RPC id( until it is not in progress)?$`)
	reCrowd     = regexp.MustCompile(`^(\d+) clients (split across every gateway URL )?call "([^"]*)" with (\{.*\}) (?:using key "([^"]*)"|without a key) at once(?:, the first dispatch held)?$`)
	reWorkload  = regexp.MustCompile(`^a random workload of (\d+) calls runs on "([^"]*)"`)
	reRaw       = regexp.MustCompile(`^"([^"]*)" (sends the raw body .+|sends a batch of two tools/call requests)$`)
	reBig       = regexp.MustCompile(`^"([^"]*)" sends a tools/call body (?:of (\d+) MiB|over the gateway's body limit)$`)
	reProtocol  = regexp.MustCompile(`^"([^"]*)" speaks protocol (\S+)$`)
	rePrincipal = regexp.MustCompile(`^client "([^"]*)" acts as principal "([^"]*)"$`)
	reForged    = regexp.MustCompile(`^client "([^"]*)" presents a forged principal token$`)
	reRevoke    = regexp.MustCompile(`^principal "([^"]*)" is revoked$`)
	reRemove    = regexp.MustCompile(`^the tool "([^"]*)" is removed$`)
	reFreeze    = regexp.MustCompile(`^the gateway clock is frozen (?:(\S+) before a window boundary|at a window boundary)$`)
	reAdvance   = regexp.MustCompile(`^the gateway clock advances (\d\S*|past the effective window|past the stale-lock threshold)$`)
	reSetting   = regexp.MustCompile(`^the (unkeyed retry window|stale-lock threshold) is (\d+) seconds$`)
	reArm       = regexp.MustCompile(`^a (pause|failure) is armed at "([^"]*)" for "([^"]*)"$`)
	reDropResp  = regexp.MustCompile(`^the gateway will drop the response after dispatching "([^"]*)"$`)
	reWaits     = regexp.MustCompile(`^"([^"]*)" waits at "([^"]*)"$`)
	reRelease   = regexp.MustCompile(`^the pause at "([^"]*)" is released$`)
	reStall     = regexp.MustCompile(`^the probe (stalls|releases) "([^"]*)"$`)
	reLedger    = regexp.MustCompile(`^the ledger has (\d+) debits? and (\d+) refunds?$`)
	reSaw       = regexp.MustCompile(`^the probe saw "([^"]*)" dispatched (\d+) times?$`)
	reSawAll    = regexp.MustCompile(`^the probe saw (\d+) dispatch(?:es)? in all$`)
	reBalance   = regexp.MustCompile(`^the wallet balance changed by (-?\d+)$`)
	reWho       = regexp.MustCompile(`^(?:the last answer of )?"([^"]*)" `)
	reVar       = regexp.MustCompile(`\$[a-z]+[0-9]+`)
)

// gen is one script being written.
type gen struct {
	in           Input
	b            strings.Builder
	warn         []string
	used         []bool
	tools        map[string]string // feature alias -> tool name
	vars         map[string]string // $op1 -> the recorded value
	pending      map[string]bool   // lanes with a call in the background
	sessions     map[string]string // recorded Mcp-Session-Id -> script variable
	last         map[string]int    // lane -> index of its last exchange
	faults       map[string]string // fault point -> script variable
	n            int               // script-made names
	stale        string            // the scenario's own stale-lock threshold, ms
	stalled      bool              // a probe stall is standing in as a pause
	needCaps     bool              // the script reads the gateway's windows
	faultsUsed   bool              // cleanup resets the faults
	clockUsed    bool              // cleanup resets the clock
	settingsUsed bool              // cleanup resets the settings
}

// Script writes repro.sh for one scenario.
func Script(in Input) (Result, error) {
	if in.Scenario.ID == "" {
		return Result{}, fmt.Errorf("repro: the scenario has no ID")
	}
	g := &gen{
		in: in, used: make([]bool, len(in.Scenario.Exchanges)), tools: map[string]string{}, vars: map[string]string{},
		pending: map[string]bool{}, sessions: map[string]string{}, last: map[string]int{}, faults: map[string]string{},
	}
	g.learn()
	if in.Scenario.Verdict == reports.Skipped || in.Scenario.Verdict == reports.Undefined {
		g.warn = append(g.warn, fmt.Sprintf("the recorded run did not run this scenario (%s: %s); the script has only its steps", in.Scenario.Verdict, oneLine(in.Scenario.Reason)))
	}
	for _, s := range in.Steps {
		if err := g.step(s); err != nil {
			return Result{}, err
		}
	}
	g.leftovers()
	g.effects()
	body := g.b.String()
	g.b.Reset()
	g.header()
	g.b.WriteString(body)
	return Result{Script: []byte(g.b.String()), Warnings: g.warn}, nil
}

// learn maps each feature alias to the tool name the recorded run used, and
// each $var to its recorded value, from the exchanges' labels and bodies.
func (g *gen) learn() {
	for _, ex := range g.in.Scenario.Exchanges {
		_, alias, ok := strings.Cut(ex.Label, ": ")
		if !ok || alias == "retry" {
			continue
		}
		if name := toolOf(ex); name != "" {
			if _, seen := g.tools[alias]; !seen {
				g.tools[alias] = name
			}
		}
	}
	// Bind $vars by matching each call step's template to its exchange.
	used := make([]bool, len(g.in.Scenario.Exchanges))
	for _, s := range g.in.Steps {
		var who, alias, args, key string
		if m := reCall.FindStringSubmatch(s); m != nil {
			who, alias, args, key = m[1], m[3], m[4], m[5]
		} else if m := reDrop.FindStringSubmatch(s); m != nil {
			who, alias, args, key = m[1], m[2], m[3], m[4]
		} else {
			continue
		}
		i := findExchange(g.in.Scenario.Exchanges, used, func(ex reports.Exchange) bool { return ex.Label == who+": "+alias })
		if i < 0 {
			continue
		}
		used[i] = true
		ex := g.in.Scenario.Exchanges[i]
		var tmpl, got any
		if json.Unmarshal([]byte(args), &tmpl) == nil && json.Unmarshal(argumentsOf(ex), &got) == nil {
			bind(tmpl, got, g.vars)
		}
		if reVar.MatchString(key) {
			if v := unquoteSF(header(ex.RequestHeaders, "Idempotency-Key")); v != "" {
				g.vars[key] = v
			}
		}
	}
}

func bind(tmpl, got any, vars map[string]string) {
	switch t := tmpl.(type) {
	case string:
		if s, ok := got.(string); ok && reVar.MatchString(t) && reVar.FindString(t) == t {
			vars[t] = s
		}
	case map[string]any:
		if m, ok := got.(map[string]any); ok {
			for k, v := range t {
				bind(v, m[k], vars)
			}
		}
	case []any:
		if a, ok := got.([]any); ok {
			for i := range t {
				if i < len(a) {
					bind(t[i], a[i], vars)
				}
			}
		}
	}
}

func findExchange(exs []reports.Exchange, used []bool, ok func(reports.Exchange) bool) int {
	for i, ex := range exs {
		if !used[i] && ok(ex) {
			return i
		}
	}
	return -1
}

func (g *gen) take(ok func(reports.Exchange) bool) (int, bool) {
	i := findExchange(g.in.Scenario.Exchanges, g.used, ok)
	if i < 0 {
		return -1, false
	}
	g.used[i] = true
	return i, true
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

func (g *gen) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	g.warn = append(g.warn, w)
	g.p("# NOTE: %s", w)
}

func (g *gen) toolName(alias string) string {
	if n, ok := g.tools[alias]; ok {
		return n
	}
	if strings.Contains(alias, ".") {
		return alias
	}
	n := "repro." + alias
	g.tools[alias] = n
	return n
}

// step writes one Gherkin step: a comment with its text, then its calls.
func (g *gen) step(s string) error {
	g.p("")
	g.p("# Step: %s", oneLine(s))
	switch {
	case reWallet.MatchString(s):
		m := reWallet.FindStringSubmatch(s)
		g.p(`WALLET=$(ctl POST /wallets '{"balance":%s}' | field wallet_id)`, m[1])
		g.p(`KEY=$(ctl POST /keys "{\"wallet_id\":\"$WALLET\"}" | field api_key)`)
		g.p(`BASE=$(ctl GET "/wallets/$WALLET" | number balance)`)
		g.p(`echo "wallet $WALLET, balance $BASE"`)
	case reTool.MatchString(s):
		m := reTool.FindStringSubmatch(s)
		price, _ := strconv.ParseInt(m[3], 10, 64)
		body, _ := json.Marshal(struct {
			Name      string `json:"name"`
			LocalTool string `json:"local_tool"`
			Price     int64  `json:"price"`
			ReadOnly  bool   `json:"read_only"`
			Approval  bool   `json:"approval"`
		}{g.toolName(m[2]), "partner.echo", price, m[1] == "read-only ", m[1] == "approval-gated "})
		g.p("# %q forwarded to the harness's upstream probe; here it is an alias of partner.echo.", m[2])
		g.p(`ctl POST /tools %s >/dev/null`, sq(string(body)))
	case reCall.MatchString(s):
		m := reCall.FindStringSubmatch(s)
		who, alias := m[1], m[3]
		g.settle(who)
		i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == who+": "+alias })
		if !ok {
			g.synthesize(who, g.toolName(alias), m[4], m[5])
			break
		}
		if m[2] == "starts calling" {
			g.exchange(i, "&")
			g.p(`PID_%s=$!`, shvar(who))
			g.pending[who] = true
		} else {
			g.exchange(i, "")
		}
	case reDrop.MatchString(s):
		m := reDrop.FindStringSubmatch(s)
		g.drop(m[1], m[2])
	case reRetry.MatchString(s):
		m := reRetry.FindStringSubmatch(s)
		who := m[1]
		g.settle(who)
		if m[2] != "" {
			g.retryLoop(who)
			break
		}
		i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == who+": retry" })
		if !ok {
			g.resend(who)
			break
		}
		g.exchange(i, "")
	case reCrowd.MatchString(s):
		m := reCrowd.FindStringSubmatch(s)
		g.crowd(m[3])
		if m[2] != "" {
			g.p("# The recorded run split the clients across every gateway URL; this script sends all to GATEWAY.")
		}
	case reWorkload.MatchString(s):
		n := 0
		for {
			i, ok := g.take(func(ex reports.Exchange) bool { return ex.Lane == "workload" })
			if !ok {
				break
			}
			g.exchange(i, "")
			n++
		}
		g.p("# %d workload call(s), as the recorded run's seed chose them.", n)
	case reRaw.MatchString(s):
		if i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == "raw" }); ok {
			g.exchange(i, "")
		} else {
			g.warnf("no recorded exchange for %q", s)
		}
	case reBig.MatchString(s):
		m := reBig.FindStringSubmatch(s)
		g.big(m[2])
	case reProtocol.MatchString(s):
		for _, label := range []string{"initialize", "initialized"} {
			if i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == label }); ok {
				g.exchange(i, "")
			}
		}
	case rePrincipal.MatchString(s):
		g.warnf("principals need the harness's identity provider (a JWKS the gateway trusts); its tokens in the recorded exchanges are not valid against this gateway")
	case reForged.MatchString(s):
		g.p("# The recorded forged token is replayed as is: no trusted key signed it.")
	case reRevoke.MatchString(s):
		g.warnf("revoking a principal needs the principal the harness created; skipped")
	case reRemove.MatchString(s):
		m := reRemove.FindStringSubmatch(s)
		g.p(`ctl DELETE %s >/dev/null`, sq("/tools/"+g.toolName(m[1])))
	case reFreeze.MatchString(s):
		m := reFreeze.FindStringSubmatch(s)
		off := "0"
		if m[1] != "" {
			off = durationMS(m[1])
		}
		g.needCaps, g.clockUsed = true, true
		g.p(`# A boundary of the effective window a little in the future, minus the offset.`)
		g.p(`BOUNDARY=$(( ($(date +%%s) * 1000 / WINDOW_MS) * WINDOW_MS + 2 * WINDOW_MS ))`)
		g.p(`ctl PUT /clock "{\"now\":\"$(iso $(( BOUNDARY - %s )))\"}"; echo`, off)
	case reAdvance.MatchString(s):
		m := reAdvance.FindStringSubmatch(s)
		g.clockUsed = true
		switch m[1] {
		case "past the effective window":
			g.needCaps = true
			g.p(`ctl POST /clock/advance "{\"by\":\"$(( WINDOW_MS + 1000 ))ms\"}"; echo`)
		case "past the stale-lock threshold":
			if g.stale != "" {
				g.p(`ctl POST /clock/advance '{"by":"%dms"}'; echo`, atoi(g.stale)+1000)
			} else {
				g.needCaps = true
				g.p(`ctl POST /clock/advance "{\"by\":\"$(( STALE_MS + 1000 ))ms\"}"; echo`)
			}
		default:
			g.p(`ctl POST /clock/advance %s; echo`, sq(fmt.Sprintf(`{"by":%q}`, m[1])))
		}
	case reSetting.MatchString(s):
		m := reSetting.FindStringSubmatch(s)
		g.settingsUsed = true
		field := "window_seconds"
		if m[1] == "stale-lock threshold" {
			field = "stale_lock_seconds"
			g.stale = fmt.Sprint(atoi(m[2]) * 1000)
		}
		g.p(`ctl PUT /settings '{"%s":%s}'; echo`, field, m[2])
	case reArm.MatchString(s):
		m := reArm.FindStringSubmatch(s)
		action := "pause"
		if m[1] == "failure" {
			action = "fail"
		}
		g.arm(m[2], action, m[3])
	case reDropResp.MatchString(s):
		m := reDropResp.FindStringSubmatch(s)
		g.arm("dispatch.after", "drop_response", m[1])
	case reWaits.MatchString(s):
		m := reWaits.FindStringSubmatch(s)
		v, ok := g.faults[m[2]]
		if !ok {
			return fmt.Errorf("repro: step %q: no fault armed at %s", s, m[2])
		}
		g.p(`ctl POST "/faults/$%s/await" '{"waiting":1,"timeout":"30s"}' >/dev/null \`, v)
		g.p(`  && echo "-- %s waits at %s" || echo "!! %s never waited at %s (see its answer)"`, m[1], m[2], m[1], m[2])
	case reRelease.MatchString(s):
		m := reRelease.FindStringSubmatch(s)
		v, ok := g.faults[m[1]]
		if !ok {
			return fmt.Errorf("repro: step %q: no fault armed at %s", s, m[1])
		}
		g.p(`ctl POST "/faults/$%s/release" >/dev/null`, v)
	case reStall.MatchString(s):
		m := reStall.FindStringSubmatch(s)
		if m[1] == "stalls" {
			g.stalled = true
			g.p("# The probe is gone; the next dropped call is held by a pause at dispatch.after instead.")
		} else if v, ok := g.faults["stall"]; ok {
			g.p(`ctl POST "/faults/$%s/release" >/dev/null`, v)
			delete(g.faults, "stall")
		} else {
			g.p("# Nothing to release: no call was held.")
		}
	default:
		g.check(s)
	}
	return nil
}

// check writes an assertion step: it settles what it reads, and prints the
// claim so the output can be read against it.
func (g *gen) check(s string) {
	if reLedger.MatchString(s) || reSaw.MatchString(s) || reSawAll.MatchString(s) || reBalance.MatchString(s) ||
		strings.HasPrefix(s, "exactly one operation") || strings.HasPrefix(s, "every dispatched") || strings.HasPrefix(s, "no operation") {
		g.settleAll()
	} else if m := reWho.FindStringSubmatch(s); m != nil {
		g.settle(m[1])
	}
	g.p(`echo %s`, sq("-- then: "+g.expand(s)))
}

func (g *gen) expand(s string) string {
	return reVar.ReplaceAllStringFunc(s, func(v string) string {
		if x, ok := g.vars[v]; ok {
			return x
		}
		return v
	})
}

func (g *gen) settle(lane string) {
	if g.pending[lane] {
		g.p(`wait "$PID_%s"`, shvar(lane))
		delete(g.pending, lane)
	}
}

func (g *gen) settleAll() {
	var lanes []string
	for l := range g.pending {
		lanes = append(lanes, l)
	}
	sort.Strings(lanes)
	for _, l := range lanes {
		g.settle(l)
	}
}

func (g *gen) arm(point, action, alias string) {
	g.faultsUsed = true
	v := "FAULT_" + shvar(point)
	g.faults[point] = v
	spec := fmt.Sprintf(`{"point":%q,"action":%q,"count":1,"match":{"tool":%q,"wallet_id":"@WALLET@"}}`, point, action, g.toolName(alias))
	g.p(`%s=$(ctl POST /faults %s | field fault_id)`, v, dq(spec))
}

// exchange replays recorded exchange i; bg "&" sends it in the background.
// handshakes are the exchanges a client makes to open its session before
// its first call (drivers/wire connects lazily).
var handshakes = map[string]bool{"initialize": true, "initialized": true, "server/discover": true}

func (g *gen) exchange(i int, bg string) {
	// The recorded run opened a session before this call: replay every
	// handshake recorded before it first, so the call goes on a session
	// this script opened.
	for j := 0; j < i; j++ {
		if ex := g.in.Scenario.Exchanges[j]; !g.used[j] && handshakes[ex.Label] {
			g.used[j] = true
			g.exchange(j, "")
		}
	}
	ex := g.in.Scenario.Exchanges[i]
	g.last[ex.Lane] = i
	name := fmt.Sprintf("x%02d", i+1)
	body := string(ex.RequestBody)
	if len(ex.RequestBody) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, ex.RequestBody) == nil {
			body = c.String()
		}
	} else {
		body = ex.RequestBodyText
	}
	g.p(`printf '%%s' %s > "$TMP/%s.req"`, sq(body), name)
	args := g.headers(ex)
	line := fmt.Sprintf(`mcp %s %s`, name, sq(ex.Label))
	for _, a := range args {
		line += " \\\n  " + a
	}
	if bg != "" {
		line += " &"
	}
	g.p("%s", line)
	if ex.Error != "" {
		g.p("# The recorded exchange ended in a transport error: %s", oneLine(ex.Error))
	}
	if sid := ex.ResponseHeaders["Mcp-Session-Id"]; sid != "" {
		v := fmt.Sprintf("SESSION_%d", len(g.sessions)+1)
		g.sessions[sid] = v
		g.p(`%s=$(header Mcp-Session-Id < "$TMP/%s.headers")`, v, name)
	}
}

// headers are the recorded request headers as curl arguments: the credential
// is this script's key, a session id the one this script got.
func (g *gen) headers(ex reports.Exchange) []string {
	var keys []string
	for k := range ex.RequestHeaders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v := ex.RequestHeaders[k]
		switch {
		case strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length"):
		case strings.HasSuffix(v, "***"): // the redacted credential
			out = append(out, "-H "+dq(k+": "+strings.TrimSuffix(v, "***")+"@KEY@"))
		case strings.EqualFold(k, "Mcp-Session-Id") && g.sessions[v] != "":
			out = append(out, fmt.Sprintf(`-H "%s: $%s"`, k, g.sessions[v]))
		default:
			out = append(out, "-H "+sq(k+": "+v))
		}
	}
	return out
}

// retryLoop retries the lane's last call until it is not in progress, as
// the step does (at most 100 times, 50 ms apart).
func (g *gen) retryLoop(who string) {
	first, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == who+": retry" })
	if !ok {
		g.resend(who)
		return
	}
	n := 1
	for {
		if _, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == who+": retry" }); !ok {
			break
		}
		n++
	}
	g.p("# The recorded run retried %d time(s).", n)
	g.p(`for i in $(seq 1 100); do`)
	g.b.WriteString("  ")
	g.exchange(first, "")
	g.p(`  grep -q '"idempotency_in_progress"' "$TMP/x%02d.body" || break`, first+1)
	g.p(`  sleep 0.05`)
	g.p(`done`)
}

// resend repeats the lane's last call when the recorded run stopped before
// this retry: the same request with another JSON-RPC id.
func (g *gen) resend(who string) {
	i, ok := g.last[who]
	if !ok {
		g.warnf("%s has no earlier call to retry in the recorded run", who)
		return
	}
	g.p("# Not run in the recorded run (it stopped earlier): the last call again with a new JSON-RPC id.")
	ex := g.in.Scenario.Exchanges[i]
	g.n++
	name := fmt.Sprintf("r%02d", g.n)
	g.p(`sed 's/^{"id":[0-9]*/{"id":%d/' "$TMP/x%02d.req" > "$TMP/%s.req"`, 900+g.n, i+1, name)
	line := fmt.Sprintf(`mcp %s %s`, name, sq(who+": retry"))
	for _, a := range g.headers(ex) {
		line += " \\\n  " + a
	}
	g.p("%s", line)
}

// synthesize builds a call the recorded run never made (it stopped before
// the step), from the step's text and the lane's earlier headers.
func (g *gen) synthesize(who, tool, args, key string) {
	g.p("# Not run in the recorded run (it stopped earlier): built from the step's text.")
	args = reVar.ReplaceAllStringFunc(args, func(v string) string {
		if x, ok := g.vars[v]; ok {
			return x
		}
		x := strings.TrimPrefix(v, "$") + "-repro"
		g.vars[v] = x
		return x
	})
	g.n++
	name := fmt.Sprintf("s%02d", g.n)
	body := fmt.Sprintf(`{"id":%d,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":%s,"name":%q}}`, 900+g.n, args, tool)
	g.p(`printf '%%s' %s > "$TMP/%s.req"`, sq(body), name)
	hs := []string{`-H 'Accept: application/json, text/event-stream'`, `-H 'Content-Type: application/json'`, `-H 'Mcp-Protocol-Version: 2025-11-25'`, `-H "Authorization: Bearer $KEY"`}
	if i, ok := g.last[who]; ok {
		hs = nil
		for _, h := range g.headers(g.in.Scenario.Exchanges[i]) {
			if !strings.Contains(h, "Idempotency-Key:") {
				hs = append(hs, h)
			}
		}
	}
	if key != "" {
		// Quoted as the harness sends it: the gateway refuses a bare key with a
		// comma or semicolon (two field lines, or parameters), and a bare key
		// cannot hold a quote or backslash at all.
		hs = append(hs, "-H "+sq("Idempotency-Key: "+wire.SFString(g.expand(key))))
	}
	line := fmt.Sprintf(`mcp %s %s`, name, sq(who+": "+tool))
	for _, a := range hs {
		line += " \\\n  " + a
	}
	g.p("%s", line)
}

// drop sends the call, waits until the tool has run (a pause at
// dispatch.after holds the gateway there), and drops the connection.
func (g *gen) drop(who, alias string) {
	i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == who+": "+alias })
	if !ok {
		g.warnf("no recorded exchange for %s's dropped call", who)
		return
	}
	g.faultsUsed = true
	g.p("# The harness dropped the connection once its probe saw the tool run; here a pause at")
	g.p("# dispatch.after holds the call after the tool ran, and the client (curl) is killed there.")
	spec := fmt.Sprintf(`{"point":"dispatch.after","action":"pause","count":1,"match":{"tool":%q,"wallet_id":"@WALLET@"}}`, g.toolName(alias))
	g.p(`FAULT_stall=$(ctl POST /faults %s | field fault_id)`, dq(spec))
	g.exchange(i, "&")
	g.p(`PID_drop=$!`)
	g.p(`ctl POST "/faults/$FAULT_stall/await" '{"waiting":1,"timeout":"30s"}' >/dev/null || echo "!! the call never reached dispatch.after"`)
	g.p(`kill "$PID_drop" 2>/dev/null || true; wait "$PID_drop" 2>/dev/null || true`)
	g.p(`echo "-- %s dropped the connection after the tool ran"`, who)
	if g.stalled {
		g.faults["stall"] = "FAULT_stall"
	} else {
		g.p(`ctl POST "/faults/$FAULT_stall/release" >/dev/null`)
	}
}

// crowd sends every twin's call at once and waits for all of them.
func (g *gen) crowd(alias string) {
	var idx []int
	for {
		i, ok := g.take(func(ex reports.Exchange) bool {
			return strings.HasPrefix(ex.Lane, "twin-") && ex.Label == ex.Lane+": "+alias
		})
		if !ok {
			break
		}
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return g.in.Scenario.Exchanges[idx[a]].Lane < g.in.Scenario.Exchanges[idx[b]].Lane
	})
	g.p("# %d identical calls at once, each from its own client.", len(idx))
	for _, i := range idx {
		g.exchange(i, "&")
	}
	g.p(`wait`)
}

func (g *gen) big(mib string) {
	if mib == "" {
		mib = "2" // over the reference's 1 MiB limit, which the script's gateway has
	}
	i, ok := g.take(func(ex reports.Exchange) bool { return ex.Label == "raw" })
	g.p("# A tools/call body of %s MiB (too large to keep in the evidence; built here).", mib)
	g.p(`{ printf '%%s' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.echo","arguments":{"pad":"'`)
	g.p(`  head -c $(( %s * 1048576 )) /dev/zero | tr '\0' x; printf '%%s' '"}}}'; } > "$TMP/big.req"`, mib)
	hs := []string{`-H 'Accept: application/json, text/event-stream'`, `-H 'Content-Type: application/json'`, `-H "Authorization: Bearer $KEY"`}
	if ok {
		hs = nil
		for _, h := range g.headers(g.in.Scenario.Exchanges[i]) {
			if !strings.Contains(h, "Content-Length") {
				hs = append(hs, h)
			}
		}
	}
	line := `mcp big 'raw'`
	for _, a := range hs {
		line += " \\\n  " + a
	}
	g.p("%s", line)
}

func (g *gen) leftovers() {
	for i, u := range g.used {
		if !u {
			g.p("")
			g.p("# A recorded exchange no step accounted for, replayed last.")
			g.settleAll()
			g.used[i] = true
			g.exchange(i, "")
		}
	}
}

// effects reads the wallet, the ledger and the dispatch log, and states what
// a correct gateway shows, from the scenario's checks.
func (g *gen) effects() {
	g.settleAll()
	g.p("")
	g.p("# ---- What the gateway did ----")
	g.p(`wait`)
	g.p(`echo`)
	g.p(`echo "== wallet"; ctl GET "/wallets/$WALLET"`)
	g.p(`echo "== ledger"; ctl GET "/wallets/$WALLET/ledger" | tee "$TMP/ledger.json"`)
	g.p(`echo "== dispatch log (the gateway's own)"; ctl GET "/dispatches?wallet_id=$WALLET" | tee "$TMP/dispatches.json"`)
	g.p(`BALANCE=$(ctl GET "/wallets/$WALLET" | number balance)`)
	g.p(`echo`)
	g.p(`echo "observed: $(count '"kind":"debit"' "$TMP/ledger.json") debit(s), $(count '"kind":"refund"' "$TMP/ledger.json") refund(s), $(count '"fingerprint":' "$TMP/dispatches.json") dispatch(es), balance $BALANCE ($(( BALANCE - BASE )))"`)
	exp := g.expected()
	if exp != "" {
		g.p(`echo %s`, sq("expected: "+exp))
	}
	sc := g.in.Scenario
	if sc.Verdict != "" {
		g.p(`echo %s`, sq(fmt.Sprintf("recorded run: %s %s", sc.ID, sc.Verdict)))
	}
	for _, c := range sc.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		line := fmt.Sprintf("  %s %s: expected %s", mark, oneLine(c.Step), oneLine(c.Expected))
		if !c.OK {
			line += "; actual " + oneLine(c.Actual)
		}
		g.p(`echo %s`, sq(line))
	}
}

// expected is what a correct gateway shows in the reads above: the ledger,
// dispatch and balance checks of the scenario, in the checks' own words when
// the recorded run got to them, else from the step's text.
func (g *gen) expected() string {
	checks := map[string]string{}
	for _, c := range g.in.Scenario.Checks {
		checks[c.Step] = c.Expected
	}
	var ledger, balance, all string
	perToken := map[string]int{}
	var order []string
	for _, s := range g.in.Steps {
		switch {
		case reLedger.MatchString(s):
			m := reLedger.FindStringSubmatch(s)
			ledger = checks[fmt.Sprintf("the ledger has %s debits and %s refunds", m[1], m[2])]
			if ledger == "" {
				ledger = fmt.Sprintf("%s debit(s) and %s refund(s)", m[1], m[2])
			}
		case reSawAll.MatchString(s):
			all = reSawAll.FindStringSubmatch(s)[1]
		case reSaw.MatchString(s):
			m := reSaw.FindStringSubmatch(s)
			tok := g.expand(m[1])
			if _, ok := perToken[tok]; !ok {
				order = append(order, tok)
			}
			perToken[tok] = atoi(m[2])
		case reBalance.MatchString(s):
			m := reBalance.FindStringSubmatch(s)
			balance = checks[fmt.Sprintf("the wallet balance changed by %s", m[1])]
			if balance == "" {
				balance = "balance change " + m[1]
			}
		}
	}
	var parts []string
	if ledger != "" {
		parts = append(parts, ledger)
	}
	switch {
	case all != "":
		parts = append(parts, all+" dispatch(es)")
	case len(order) > 0:
		n := 0
		for _, t := range order {
			n += perToken[t]
		}
		parts = append(parts, fmt.Sprintf("%d dispatch(es)", n))
	}
	if balance != "" {
		parts = append(parts, balance)
	}
	return strings.Join(parts, ", ")
}

func (g *gen) header() {
	sc, e := g.in.Scenario, g.in.Entry
	g.p("#!/usr/bin/env bash")
	g.p("# mcpconform repro %s: %s", sc.ID, oneLine(sc.Title))
	g.p("#")
	g.p("# Scenario:    %s (%s:%d, @%s)", sc.ID, e.File, e.Line, sc.Level)
	g.p("# Requirement: %s", oneLine(sc.Requirement))
	g.p("# Source:      %s", oneLine(sc.Source))
	t := g.in.Target
	rec := "against " + t.Kind
	if t.Store != "" {
		rec += " (" + t.Store + ")"
	}
	if len(t.Bugs) > 0 {
		rec += " with bug switch(es) " + strings.Join(t.Bugs, ", ")
	}
	if sc.Verdict != "" {
		reason, _, _ := strings.Cut(sc.Reason, "\n")
		rec += ": " + sc.Verdict
		if reason != "" {
			rec += " (" + reason + ")"
		}
	}
	g.p("# Recorded:    %s", oneLine(rec))
	g.p("#")
	g.p("# Replays the scenario's MCP exchanges with curl against a running gateway that")
	g.p("# serves the conformance control API (docs/control-api.md), then prints the wallet,")
	g.p("# its ledger and the gateway's dispatch log. Needs bash, curl, sed and grep.")
	g.p("#   CONTROL_TOKEN=... [GATEWAY=%s] bash repro.sh", DefaultGateway)
	g.p("# Request bodies, tool names and keys are the recorded run's; the wallet, the API key")
	g.p("# and the tools (aliases of partner.echo) are made fresh by this script.")
	for _, w := range g.warn {
		g.p("# NOTE: %s", w)
	}
	g.p("set -euo pipefail")
	g.p("")
	g.p(`GATEWAY="${GATEWAY:-%s}"`, DefaultGateway)
	g.p(`GATEWAY="${GATEWAY%%/}"`)
	g.p(`: "${CONTROL_TOKEN:?set CONTROL_TOKEN to the --control-token of the gateway}"`)
	g.p(`TMP=$(mktemp -d)`)
	g.p(`WALLET= KEY= BASE=0`)
	g.p("")
	g.p(`cleanup() {`)
	g.p(`  jobs -p | while read -r pid; do kill "$pid" 2>/dev/null || true; done`)
	if g.faultsUsed {
		g.p(`  ctl DELETE /faults >/dev/null 2>&1 || true`)
	}
	if g.clockUsed {
		g.p(`  ctl DELETE /clock >/dev/null 2>&1 || true`)
	}
	if g.settingsUsed {
		g.p(`  ctl DELETE /settings >/dev/null 2>&1 || true`)
	}
	g.p(`  rm -rf "$TMP"`)
	g.p(`}`)
	g.p(`trap cleanup EXIT`)
	g.b.WriteString(helpers)
	if len(g.warn) > 0 {
		g.p("")
		g.p(`if [ "${REPRO_FORCE:-}" != 1 ]; then`)
		g.p(`  echo "repro.sh: this scenario cannot be reproduced faithfully with curl alone:" >&2`)
		for _, w := range g.warn {
			g.p(`  echo %s >&2`, sq("  - "+w))
		}
		g.p(`  echo "set REPRO_FORCE=1 to run it anyway" >&2`)
		g.p(`  exit 3`)
		g.p(`fi`)
	}
	if g.needCaps {
		g.p("")
		g.p(`# The gateway's windows, from its capabilities.`)
		g.p(`CAPS=$(ctl GET /capabilities)`)
		g.p(`WINDOW_MS=$(ms "$(number effective_window_seconds <<<"$CAPS")")`)
		g.p(`STALE_MS=$(ms "$(number stale_lock_seconds <<<"$CAPS")")`)
		g.p(`[ "$WINDOW_MS" -gt 0 ] || { echo "repro.sh: the gateway advertises no effective window" >&2; exit 2; }`)
	}
}

const helpers = `
# ctl METHOD PATH [BODY]: one control API call; prints the answer, fails on an error status.
ctl() {
  local method=$1 path=$2 body=${3:-} status
  local args=(-sS --max-time 60 -X "$method" -H "Authorization: Bearer $CONTROL_TOKEN" -o "$TMP/ctl.out" -w '%{http_code}')
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-raw "$body"); fi
  status=$(curl "${args[@]}" "$GATEWAY/control$path")
  cat "$TMP/ctl.out"
  if [ "${status#2}" = "$status" ]; then
    echo "repro.sh: control API $method $path: HTTP $status" >&2
    return 1
  fi
}

# mcp NAME LABEL [curl args]: POST $TMP/NAME.req to the MCP endpoint; prints the status,
# the receipt or refusal reason, and the answer. A transport error is reported, not fatal.
mcp() {
  local name=$1 label=$2 status; shift 2
  status=$(curl -sS --max-time 60 -X POST "$GATEWAY/mcp" "$@" --data-binary "@$TMP/$name.req" \
    -o "$TMP/$name.body" -D "$TMP/$name.headers" -w '%{http_code}' 2>"$TMP/$name.err") || status="000 ($(cat "$TMP/$name.err"))"
  touch "$TMP/$name.body"
  echo "-> $label: HTTP $status $(summary < "$TMP/$name.body")"
  echo "   $(head -c 600 "$TMP/$name.body")"
}

# summary: the receipt (id, replayed, charged) or the refusal reason of an answer on stdin.
summary() {
  local a; a=$(cat)
  { grep -o '"io.mcpconform/receipt":{[^}]*}' <<<"$a" || grep -o '"reason":"[^"]*"' <<<"$a" || true; } | head -n 1
}

# field NAME: the first string value of "NAME" in the JSON on stdin.
field() { { grep -o "\"$1\":\"[^\"]*\"" || true; } | head -n 1 | sed 's/^.*:"\(.*\)"$/\1/'; }

# number NAME: the first number value of "NAME" in the JSON on stdin.
number() { { grep -o "\"$1\":-\{0,1\}[0-9.]*" || true; } | head -n 1 | sed 's/^.*://'; }

# header NAME: a response header's value from a curl -D dump on stdin.
header() { { grep -i "^$1:" || true; } | head -n 1 | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r\n'; }

# count PATTERN FILE: how often PATTERN occurs in FILE.
count() { { grep -o "$1" "$2" || true; } | wc -l | tr -d ' '; }

# ms SECONDS: seconds (fractions allowed) as integer milliseconds.
ms() {
  local s=${1:-0} i f
  i=${s%%.*}; f=000
  if [ "$s" != "$i" ]; then f="${s#*.}000"; fi
  echo $(( ${i:-0} * 1000 + 10#${f:0:3} ))
}

# iso MILLIS: an RFC 3339 UTC time (GNU or BSD date).
iso() {
  local s=$(( $1 / 1000 )) f=$(( $1 % 1000 )) d
  d=$(date -u -d "@$s" +%Y-%m-%dT%H:%M:%S 2>/dev/null || date -u -r "$s" +%Y-%m-%dT%H:%M:%S)
  printf '%s.%03dZ' "$d" "$f"
}
`

// sq quotes s for the shell in single quotes.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// dq quotes s for the shell in double quotes, with @WALLET@ and @KEY@ turned
// into the script's variables.
func dq(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	s = r.Replace(s)
	s = strings.ReplaceAll(s, "@WALLET@", "$WALLET")
	s = strings.ReplaceAll(s, "@KEY@", "$KEY")
	return `"` + s + `"`
}

var nonVar = regexp.MustCompile(`[^A-Za-z0-9_]`)

func shvar(s string) string { return nonVar.ReplaceAllString(s, "_") }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// durationMS is a Go duration as whole milliseconds, for the script's arithmetic.
func durationMS(s string) string {
	var total float64
	re := regexp.MustCompile(`([0-9.]+)(ms|s|m|h)`)
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += v * map[string]float64{"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[m[2]]
	}
	return strconv.FormatInt(int64(total), 10)
}

func toolOf(ex reports.Exchange) string {
	var v struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(ex.RequestBody, &v)
	return v.Params.Name
}

func argumentsOf(ex reports.Exchange) json.RawMessage {
	var v struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(ex.RequestBody, &v)
	return v.Params.Arguments
}

func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// unquoteSF reads a Structured Field string ("k-1") or a bare token.
func unquoteSF(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
	}
	return v
}
