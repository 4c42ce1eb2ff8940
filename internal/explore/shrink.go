package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// Batch runs scenarios, all in one go, and returns each one's record by
// ID; a scenario it could not run has none. explore's runs them through
// one godog run of the session; the tests', through a fake judge.
type Batch func(ctx context.Context, ss []Scenario) (map[string]reports.Scenario, error)

// Target is what a shrunk scenario must still show: a violated check of
// this kind and harm.
type Target struct {
	Kind string
	Harm judge.Harm
}

// TargetOf is the finding a failed scenario leads with: its most harmful
// violated check (the verdict rule's finding); ok is false when no
// violated check names a harm (a failure to drive the scenario, not a
// harm the gateway did).
func TargetOf(s reports.Scenario) (Target, judge.Check, bool) {
	i := judge.Finding(s.Checks)
	if i < 0 || s.Checks[i].Harm == "" {
		return Target{}, judge.Check{}, false
	}
	c := s.Checks[i]
	return Target{Kind: c.Kind, Harm: c.Harm}, c, true
}

// Shows says whether a record violates a check of the target's kind and
// harm, and returns the first such check.
func (t Target) Shows(s reports.Scenario) (judge.Check, bool) {
	for _, c := range s.Checks {
		if c.Status() == judge.Violated && c.Kind == t.Kind && c.Harm == t.Harm {
			return c, true
		}
	}
	return judge.Check{}, false
}

// Shrunk is what shrinking found: the smallest scenario that still showed
// the target, the record of its run, and how far it went.
type Shrunk struct {
	Scenario Scenario
	Record   reports.Scenario
	Rounds   int
	Runs     int // candidates run
	// Incomplete says the deadline came first: the scenario is smaller, not
	// minimal.
	Incomplete bool
}

// ShrinkOptions bound shrinking.
type ShrinkOptions struct {
	Deadline time.Time // zero: none
	// MaxBatch caps the candidates of one round (one godog run).
	MaxBatch int
	Progress func(format string, args ...any)
}

// Shrink makes a failing scenario as small as it can while it still shows
// the target, by delta debugging over its actions: each round removes
// chunks of actions (with what needs them: a pause's release, a
// cancellation's call), all candidates of a round run in one batch, and
// the smallest that still shows the target is kept, with finer chunks when
// none does, down to single actions; then waits are merged and shortened
// and crowds made smaller. A candidate that fails any other way is not
// kept: the finding must stay the same kind of harm. record is the
// original's record, which showed the target.
func Shrink(ctx context.Context, sc Scenario, record reports.Scenario, t Target, run Batch, o ShrinkOptions) (Shrunk, error) {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 32
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	best := Shrunk{Scenario: sc, Record: record}
	late := func() bool {
		return ctx.Err() != nil || (!o.Deadline.IsZero() && time.Now().After(o.Deadline))
	}
	try := func(cands []Scenario) (bool, error) {
		cands = distinct(best.Scenario, cands, o.MaxBatch)
		if len(cands) == 0 {
			return false, nil
		}
		best.Rounds++
		for i := range cands {
			cands[i].Name = fmt.Sprintf("shrink-%d-%d", best.Rounds, i+1)
		}
		o.Progress("shrink round %d: %d candidate(s), %d step(s) now", best.Rounds, len(cands), best.Scenario.Size().Steps)
		recs, err := run(ctx, cands)
		if err != nil {
			return false, err
		}
		best.Runs += len(cands)
		found := -1
		for i, c := range cands {
			r, ok := recs[c.ID()]
			if !ok {
				continue
			}
			if _, shows := t.Shows(r); shows && (found < 0 || c.Size().Less(cands[found].Size())) {
				found = i
			}
		}
		if found < 0 {
			return false, nil
		}
		kept := cands[found]
		kept.Name = ""
		best.Scenario, best.Record = kept, recs[cands[found].ID()]
		return true, nil
	}
	// Delta debugging over the actions.
	n := 2
	for len(best.Scenario.Actions) > 0 && !late() {
		ids := actionIDs(best.Scenario)
		if n > len(ids) {
			n = len(ids)
		}
		var cands []Scenario
		for _, chunk := range chunks(ids, n) {
			cands = append(cands, best.Scenario.Without(set(chunk)))
		}
		ok, err := try(cands)
		if err != nil {
			return best, err
		}
		switch {
		case ok:
			n = max(n-1, 2)
		case n >= len(ids):
			n = 0
		default:
			n = min(2*n, len(ids))
		}
		if n == 0 {
			break
		}
	}
	// Then the same steps, simpler: waits merged and shorter, smaller crowds.
	for !late() {
		ok, err := try(simpler(best.Scenario))
		if err != nil {
			return best, err
		}
		if !ok {
			break
		}
	}
	best.Incomplete = late()
	return best, nil
}

func actionIDs(s Scenario) []int {
	ids := make([]int, len(s.Actions))
	for i, a := range s.Actions {
		ids[i] = a.ID
	}
	return ids
}

func set(ids []int) map[int]bool {
	m := make(map[int]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// chunks splits ids into n runs of nearly equal length, in order.
func chunks(ids []int, n int) [][]int {
	var out [][]int
	for i := 0; i < n; i++ {
		lo, hi := i*len(ids)/n, (i+1)*len(ids)/n
		if hi > lo {
			out = append(out, ids[lo:hi])
		}
	}
	return out
}

// distinct keeps the candidates smaller than cur, each once (as rendered),
// at most limit of them, smallest first among equals in order.
func distinct(cur Scenario, cands []Scenario, limit int) []Scenario {
	seen := map[string]bool{string(cur.Render()): true}
	var out []Scenario
	for _, c := range cands {
		if !c.Size().Less(cur.Size()) {
			continue
		}
		key := string(c.Render())
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, c)
		if len(out) == limit {
			break
		}
	}
	return out
}

// simpler are the scenario with one thing made simpler each: two waits in
// a row merged, a wait halved, a crowd of two.
func simpler(s Scenario) []Scenario {
	var out []Scenario
	edit := func(f func(acts []Action) []Action) {
		c := s.clone()
		c.Actions = f(c.Actions)
		out = append(out, c.Normalize())
	}
	for i, a := range s.Actions {
		switch a.Kind {
		case KWait:
			if i+1 < len(s.Actions) && s.Actions[i+1].Kind == KWait {
				edit(func(acts []Action) []Action {
					acts[i].Dur += acts[i+1].Dur
					return append(acts[:i+1], acts[i+2:]...)
				})
			}
			if a.Dur > 100*time.Millisecond {
				edit(func(acts []Action) []Action {
					acts[i].Dur = (acts[i].Dur / 2).Round(50 * time.Millisecond)
					return acts
				})
			}
		case KTwins:
			if a.N > 2 {
				edit(func(acts []Action) []Action {
					acts[i].N = 2
					return acts
				})
			}
		}
	}
	return out
}
