package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

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

// Gap is a capability the target lacks, and what that costs a run.
type Gap struct {
	Capability string
	Level      string   // the level the capability belongs to
	Skipped    []string // scenarios whose situation needs it
	Incomplete []string // scenarios with checks it would observe
}

// Diagnosis is what `mcpconform doctor` reports.
type Diagnosis struct {
	Target   reports.Target
	Level    string // the highest level the target can claim
	Findings []Finding
	Gaps     []Gap
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
// then which capabilities are missing and what each leaves unobserved.
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
	d.Gaps = gaps(entries, env.Caps)
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
	t, ok := env.Profile.Tool(target.RoleWrite)
	if !ok {
		f.OK, f.Detail = true, "skipped: the profile names no write tool (upstream checks will not be observed)"
		if env.Control() != nil && env.Caps[judge.CapFixtures] {
			f.Detail = "skipped: tools are registered per scenario through the control API"
		}
		return f
	}
	token := env.RunID + "-doctor-" + uuid.NewString()[:8]
	c := env.Profile.Client(env.URLs[0])
	a, err := c.CallTool(ctx, wireCall(t.Name, token))
	if err != nil {
		f.Detail = err.Error()
		return f
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := env.Probe.WaitFor(wctx, token, 1); err != nil {
		f.Detail = fmt.Sprintf("the probe at %s never saw token %s (answer: HTTP %d %s); point the tool's upstream at it", env.Probe.URL(), token, a.Status, snippet(a.Body))
		return f
	}
	f.OK, f.Detail = true, "probe saw the dispatch"
	return f
}

// gaps lists, per missing capability, the scenarios it leaves skipped or
// incomplete, from the catalog alone.
func gaps(entries []catalog.Entry, caps map[string]bool) []Gap {
	byCap := map[string]*Gap{}
	get := func(c string) *Gap {
		if byCap[c] == nil {
			byCap[c] = &Gap{Capability: c, Level: reports.CapabilityLevel(c)}
		}
		return byCap[c]
	}
	for _, e := range entries {
		skipped := false
		for _, n := range e.Needs {
			if !caps[n] {
				g := get(n)
				g.Skipped = append(g.Skipped, e.ID)
				skipped = true
			}
		}
		if skipped {
			continue
		}
		seen := map[string]bool{}
		for _, st := range e.Steps {
			if c := steps.ObservedBy(st.Text); c != "" && !caps[c] && !seen[c] {
				seen[c] = true
				g := get(c)
				g.Incomplete = append(g.Incomplete, e.ID)
			}
		}
	}
	var out []Gap
	for _, g := range byCap {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := reports.LevelRank(out[i].Level), reports.LevelRank(out[j].Level); ri != rj {
			return ri < rj
		}
		return out[i].Capability < out[j].Capability
	})
	return out
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
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
