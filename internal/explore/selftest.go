package explore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reports"
)

// Catch is one row of explore's self-test: whether exploring the reference
// gateway with one bug switch on found a violation of the bug's harm
// (bugmap.Harms) within the budget, and how soon.
type Catch struct {
	Bug  string `json:"bug"`
	Mode string `json:"mode"` // full, or a bugmap external mode
	// Caught: a violated check of one of the bug's harms.
	Caught bool       `json:"caught"`
	Harm   judge.Harm `json:"harm,omitempty"`
	Kind   string     `json:"kind,omitempty"`
	Check  string     `json:"check,omitempty"` // what the check says
	// Run is the scenario that caught it (1-based), Explored how many ran,
	// Seconds the time from the first scenario's start to the catch (to
	// the end when not caught).
	Run      int     `json:"run,omitempty"`
	Explored int     `json:"explored"`
	Seconds  float64 `json:"seconds"`
	// Why says what happened instead when it was not caught.
	Why string `json:"why,omitempty"`
}

// Modes of the self-test: the reference with its control API, and the
// external modes bugmap lists switches for.
var Modes = []string{"full", bugmap.ModeWire, bugmap.ModeWirePrincipals, bugmap.ModeWireRefuse}

// SwitchesOf are the bug switches a mode holds explore to: every one with
// the control API, those bugmap.External lists for a mode without it.
func SwitchesOf(mode string) []string {
	if mode == "full" {
		return bugs.Names()
	}
	var out []string
	for b := range bugmap.External[mode] {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// SelfTest explores the reference gateway once per bug switch of a mode
// (only the named ones, when given) with cfg's seed and budget, stopping
// at the first finding and not shrinking it, and returns a row per switch.
// cfg is the template of every exploration; its target is the reference.
func SelfTest(ctx context.Context, cfg Config, mode string, only []string, progress func(Catch)) ([]Catch, error) {
	if !slices.Contains(Modes, mode) {
		return nil, fmt.Errorf("explore self-test: mode %q: want one of %v", mode, Modes)
	}
	var table []Catch
	for _, b := range SwitchesOf(mode) {
		if len(only) > 0 && !slices.Contains(only, b) {
			continue
		}
		row, err := catchOne(ctx, cfg, mode, b)
		if err != nil {
			return table, fmt.Errorf("explore self-test %s %s: %w", mode, b, err)
		}
		table = append(table, row)
		if progress != nil {
			progress(row)
		}
	}
	return table, nil
}

func catchOne(ctx context.Context, cfg Config, mode, bug string) (Catch, error) {
	c := cfg
	c.NoShrink = true
	c.Run.Target, c.Run.Profile = "reference", ""
	if c.Run.Out != "" {
		c.Run.Out = cfg.Run.Out + "/" + mode + "/" + bug
	}
	if mode == "full" {
		c.Run.Bugs = []string{bug}
		if b := bugs.Lookup(bug); b != nil && b.Store != "" {
			c.Run.Store = b.Store
		}
		if c.Run.Workers == 0 {
			c.Run.Workers = 2
		}
	} else {
		ext, stop, err := runner.ExternalTarget(ctx, c.Run, mode, bug)
		if err != nil {
			return Catch{}, err
		}
		defer stop()
		c.Run = ext
	}
	c.Command = fmt.Sprintf("mcpconform selftest --explore --mode %s --bug %s --seed %d", mode, bug, c.Seed)
	start := time.Now()
	res, err := Run(ctx, c)
	if err != nil {
		return Catch{}, err
	}
	row := Catch{Bug: bug, Mode: mode, Explored: res.Explored, Seconds: time.Since(start).Seconds()}
	f := res.Found
	if f == nil {
		row.Why = fmt.Sprintf("nothing found in %d scenario(s): %s", res.Explored, res.Outcome.Result)
		return row, nil
	}
	row.Run, row.Seconds = f.Run, f.After.Seconds()
	want := bugmap.Harms[bug]
	if ch, ok := harmful(f.Shrunk.Record, want); ok {
		row.Caught, row.Harm, row.Kind, row.Check = true, ch.Harm, ch.Kind, ch.Step
		return row, nil
	}
	row.Harm, row.Kind, row.Check = f.Target.Harm, f.Target.Kind, f.Check.Step
	row.Why = fmt.Sprintf("scenario %d violated %s (%s), not %v", f.Run, f.Target.Harm, f.Target.Kind, want)
	return row, nil
}

// harmful is the record's most harmful violated check of one of harms.
func harmful(s reports.Scenario, harms []judge.Harm) (judge.Check, bool) {
	var best *judge.Check
	for i, c := range s.Checks {
		if c.Status() == judge.Violated && slices.Contains(harms, c.Harm) && (best == nil || c.Harm.Rank() < best.Harm.Rank()) {
			best = &s.Checks[i]
		}
	}
	if best == nil {
		return judge.Check{}, false
	}
	return *best, true
}
