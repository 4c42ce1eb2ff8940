package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/steps"
)

// Finding is one thing the doctor looked at.
type Finding struct {
	Check  string
	OK     bool
	Detail string
}

// Group is the scenarios a run gives one verdict for one reason, when
// nothing fails.
type Group struct {
	steps.Fate
	Level     string // the level of the capability it lacks; "" when none
	Scenarios []string
	// Keeping is how many of them keep a run claiming the doctor's level
	// from a PASS (skipped or incomplete @must scenarios within it).
	Keeping int
}

// Diagnosis is what `mcpconform doctor` reports.
type Diagnosis struct {
	Target   reports.Target
	Level    string // the highest level the target can claim
	Findings []Finding
	// Groups is what a run will make of every scenario, passed first.
	Groups []Group
}

// Predicted is each scenario's verdict, by ID, as the groups have it.
func (d Diagnosis) Predicted() map[string]judge.Verdict {
	out := map[string]judge.Verdict{}
	for _, g := range d.Groups {
		for _, id := range g.Scenarios {
			out[id] = g.Verdict
		}
	}
	return out
}

// OK reports whether every finding is fine (gaps are not failures: they
// are what the target chose not to offer).
func (d Diagnosis) OK() bool {
	for _, f := range d.Findings {
		if !f.OK {
			return false
		}
	}
	return true
}

// Doctor checks a target the way a run would start on it, without running
// a scenario: reachable, credentials accepted, MCP initialize works, the
// profile's tools are listed, one call through reaches the harness probe;
// then what a run will make of each scenario, by the rules the steps
// follow when they run it.
// A set-up error is returned as such; findings are problems of wiring.
func Doctor(ctx context.Context, cfg Config) (Diagnosis, error) {
	env, closeAll, tgt, err := bringUp(ctx, cfg)
	if err != nil {
		return Diagnosis{}, err
	}
	defer closeAll()
	d := Diagnosis{Target: tgt, Level: reports.HighestLevel(env.Caps)}
	d.Findings = append(d.Findings, Finding{Check: "reachable, credentials accepted, MCP connection", OK: true,
		Detail: fmt.Sprintf("protocol %s, server %s %s", tgt.Protocol, orNone(tgt.ServerName), tgt.ServerVersion)})
	d.Findings = append(d.Findings, listedTools(ctx, env)...)
	d.Findings = append(d.Findings, callThrough(ctx, env))
	if c := env.Control(); c != nil {
		caps, err := c.Capabilities(ctx)
		f := Finding{Check: "control API", OK: err == nil}
		if err != nil {
			f.Detail = err.Error()
		} else {
			f.Detail = fmt.Sprintf("capabilities %v", caps.Capabilities)
		}
		d.Findings = append(d.Findings, f)
	}
	entries, err := catalog.Load(features.FS)
	if err != nil {
		return d, setupErr("load features: %w", err)
	}
	d.Groups = fates(env, entries, d.Level)
	return d, nil
}

func orNone(s string) string {
	if s == "" {
		return "(no serverInfo)"
	}
	return s
}

// listedTools holds the profile's tools to the target's tools/list.
func listedTools(ctx context.Context, env *steps.Env) []Finding {
	if env.Control() != nil && env.Caps[judge.CapFixtures] {
		return nil // tools are registered per scenario
	}
	c := env.Profile.Client(env.URLs[0])
	a, err := c.ListTools(ctx)
	if err != nil {
		return []Finding{{Check: "tools/list", Detail: err.Error()}}
	}
	names, err := toolNames(a.Result())
	if err != nil {
		return []Finding{{Check: "tools/list", Detail: fmt.Sprintf("HTTP %d: %v", a.Status, err)}}
	}
	var out []Finding
	for _, role := range []string{target.RoleWrite, target.RoleWriteOther, target.RoleReadOnly, target.RoleApproval} {
		t, ok := env.Profile.Tool(role)
		if !ok {
			continue
		}
		f := Finding{Check: fmt.Sprintf("tool %s (%s) is listed", t.Name, role), OK: slices.Contains(names, t.Name)}
		if !f.OK {
			f.Detail = fmt.Sprintf("tools/list has %v", names)
		}
		out = append(out, f)
	}
	return out
}

// callThrough makes one keyed call of the write tool and waits for the
// probe to see it: the gateway's upstream is wired to the harness.
func callThrough(ctx context.Context, env *steps.Env) Finding {
	f := Finding{Check: "one call through the gateway reaches the harness probe"}
	c := env.Profile.Client(env.URLs[0])
	t, ok := env.Profile.Tool(target.RoleWrite)
	if !ok && env.Control() != nil && env.Caps[judge.CapFixtures] && env.Caps[judge.CapUpstream] {
		// Scenarios register their tools through the control API: so does
		// this call, as they do (a priced tool, as theirs are, so a gateway
		// that treats free tools apart is not judged by one; a wallet and
		// key of its own).
		name, key, err := wiringTool(ctx, env)
		if err != nil {
			f.Detail = err.Error()
			return f
		}
		t, ok, c.APIKey = target.ToolRef{Name: name}, true, key
	}
	if !ok {
		f.OK, f.Detail = true, "skipped: the profile names no write tool (upstream checks will not be observed)"
		return f
	}
	token := env.RunID + "-doctor-" + uuid.NewString()[:8]
	a, err := c.CallTool(ctx, wireCall(t.Name, token))
	if err != nil {
		f.Detail = err.Error()
		return f
	}
	// A result carrying the probe's answer to the token shows this target
	// hands the tool's answer on: the model then requires it of every
	// write call's result, in every scenario (judge.Facts.ProbeAnswers).
	env.ProbeAnswers = a.ResultValue().Served == token
	wait := 5 * time.Second
	if env.Profile.Effects != nil {
		// A read tool that lags (effects.read.lag_ms) shows the write
		// that much later: the wait outlasts it.
		wait = max(wait, env.Profile.Effects.Lag()+3*time.Second)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if env.Effects != nil && env.Caps[judge.CapEffects] {
		return effectThrough(wctx, env, f, token, a)
	}
	if err := env.Probe.WaitFor(wctx, token, 1); err != nil {
		// A gateway that refuses the call may be looking for the key
		// elsewhere: say where it went.
		f.Detail = fmt.Sprintf("the probe at %s never saw token %s (answer: HTTP %d %s; the key went in %s); point the tool's upstream at it",
			env.Probe.URL(), token, a.Status, snippet(a.Body), env.Profile.KeyWhere())
		return f
	}
	f.OK, f.Detail = true, "probe saw the dispatch; the key went in "+env.Profile.KeyWhere()
	return f
}

// effectThrough is callThrough for a target whose write tool is the side
// effect: the read tool must show exactly the one effect of the call's
// token. Without that, every dispatch check would rest on a read that
// cannot see writes (a wrong count path, a token the read does not match).
func effectThrough(ctx context.Context, env *steps.Env, f Finding, token string, a *wire.Answer) Finding {
	f.Check = "one call of the write tool shows one effect through the target's read tool"
	read := env.Profile.Effects.Read
	for {
		n, err := env.Effects.Count(ctx, token)
		switch {
		case err != nil && ctx.Err() != nil:
			// The deadline fell inside a read (each count reads until two
			// reads agree): the read tool never counted the effect in time.
			n = 0
		case err != nil:
			f.Detail = fmt.Sprintf("read tool %s for token %s: %v", read.Tool, token, err)
			return f
		case n == 1:
			f.OK, f.Detail = true, fmt.Sprintf("read tool %s counts 1 effect of the token at %s (the target reports its own effects); the key went in %s",
				read.Tool, read.Count, env.Profile.KeyWhere())
			return f
		case n > 1:
			f.Detail = fmt.Sprintf("read tool %s counts %d effects of token %s after one call: does the read match other tokens?", read.Tool, n, token)
			return f
		}
		select {
		case <-ctx.Done():
			f.Detail = fmt.Sprintf("read tool %s never counted an effect of token %s at %s (write answer: HTTP %d %s; the key went in %s)",
				read.Tool, token, read.Count, a.Status, snippet(a.Body), env.Profile.KeyWhere())
			return f
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fates groups the scenarios by what a run will make of them (env.Fate),
// passed first, then by level and capability, then the reason.
func fates(env *steps.Env, entries []catalog.Entry, level string) []Group {
	byKey := map[steps.Fate]*Group{}
	var out []*Group
	for _, e := range entries {
		f := env.Fate(e)
		g := byKey[f]
		if g == nil {
			g = &Group{Fate: f}
			if f.Capability != "" {
				g.Level = reports.CapabilityLevel(f.Capability)
			}
			byKey[f] = g
			out = append(out, g)
		}
		g.Scenarios = append(g.Scenarios, e.ID)
		if keepsFromPass(e, f, level) {
			g.Keeping++
		}
	}
	rank := map[judge.Verdict]int{judge.Passed: 0, judge.Incomplete: 1, judge.Skipped: 2, judge.NotApplicable: 3}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Verdict] != rank[b.Verdict] {
			return rank[a.Verdict] < rank[b.Verdict]
		}
		if ra, rb := reports.LevelRank(a.Level), reports.LevelRank(b.Level); ra != rb {
			return ra < rb
		}
		if a.Capability != b.Capability {
			return a.Capability < b.Capability
		}
		return a.Why < b.Why
	})
	groups := make([]Group, len(out))
	for i, g := range out {
		groups[i] = *g
	}
	return groups
}

// keepsFromPass reports whether a scenario of that fate keeps a run at
// level from a PASS, as the run's verdict rule (reports.Judge) decides it.
func keepsFromPass(e catalog.Entry, f steps.Fate, level string) bool {
	if f.Verdict != judge.Skipped && f.Verdict != judge.Incomplete {
		return false
	}
	s := reports.Scenario{ID: e.ID, Level: e.Level, Tags: e.Tags, Verdict: f.Verdict}
	if f.Situation {
		s.Missing = f.Capability
	} else {
		s.Checks = []judge.Check{{Step: f.Why, State: judge.NotObserved, Capability: f.Capability}}
	}
	run := reports.Run{Level: level, Scenarios: []reports.Scenario{s}}
	result, _ := reports.Judge(run)
	return result != reports.RunPass
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// wiringTool registers a tool priced one credit whose upstream is the
// probe, with a wallet of 100 credits (a gateway that charges wrongly is
// the scenarios' to fail, not a set-up error) and an API key to call it,
// as a scenario's set-up does.
func wiringTool(ctx context.Context, env *steps.Env) (name, key string, err error) {
	if key, err = walletKey(ctx, env, 100); err != nil {
		return "", "", err
	}
	name = "probe.wiring." + uuid.NewString()[:8]
	if _, err := env.Control().CreateTool(ctx, control.Tool{Name: name, Price: control.Ptr(int64(1)), UpstreamURL: env.Probe.URL(), UpstreamTool: "probe.write"}); err != nil {
		return "", "", fmt.Errorf("register a tool whose upstream is the probe: %w", err)
	}
	return name, key, nil
}

// walletKey makes a wallet holding balance and an API key of it through
// the control API, for a call the harness makes outside any scenario.
func walletKey(ctx context.Context, env *steps.Env, balance int64) (string, error) {
	ctl := env.Control()
	w, err := ctl.CreateWallet(ctx, balance)
	if err != nil {
		return "", fmt.Errorf("create a wallet through the control API: %w", err)
	}
	k, err := ctl.CreateKey(ctx, w.WalletID)
	if err != nil {
		return "", fmt.Errorf("create an API key through the control API: %w", err)
	}
	return k.APIKey, nil
}

func wireCall(tool, token string) wire.Call {
	return wire.Call{Tool: tool, Arguments: map[string]any{"token": token}, IdempotencyKey: "mcpconform-doctor-" + token, Label: "doctor: one call through"}
}

// toolNames reads the names out of a tools/list result.
func toolNames(result json.RawMessage) ([]string, error) {
	tools, err := listed(result)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out, nil
}
