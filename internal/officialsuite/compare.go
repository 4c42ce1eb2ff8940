package officialsuite

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Comparison is the gateway's run judged against the everything-server's.
type Comparison struct {
	Scenarios     int // scenarios of the run alone
	AlonePassed   int
	GatewayPassed int
	// Regressions are scenarios passed alone and failed through the gateway
	// with a failing check the baseline does not excuse: scenario -> checks.
	Regressions map[string][]string
	// Expected are baseline entries whose failure happened as listed.
	Expected []string
	// Stale are baseline entries that no longer fail through the gateway (or
	// name a scenario the run does not have): the baseline must drop them.
	Stale []string
	// AloneFailed are scenarios the everything-server fails itself: not
	// the gateway's to pass.
	AloneFailed []string
}

// OK reports whether the gateway passed everything it must.
func (c Comparison) OK() bool { return len(c.Regressions) == 0 && len(c.Stale) == 0 }

// Compare judges the gateway's results against the everything-server's.
func Compare(alone, gateway map[string]Scenario, b Baseline) Comparison {
	c := Comparison{Scenarios: len(alone), Regressions: map[string][]string{}}
	used := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(alone)) {
		a := alone[name]
		g, ran := gateway[name]
		if !ran {
			g = Scenario{Failed: []string{"(no result through the gateway)"}}
		}
		if a.Passed() {
			c.AlonePassed++
		} else {
			c.AloneFailed = append(c.AloneFailed, name)
		}
		if g.Passed() && ran {
			c.GatewayPassed++
		}
		whole, checks := b.excuses(name)
		if whole {
			used[name] = true
		}
		for ch := range checks {
			used[name+":"+ch] = true
		}
		if !a.Passed() {
			continue
		}
		if g.Passed() && ran {
			if whole {
				c.Stale = append(c.Stale, name)
			}
			for ch := range checks {
				c.Stale = append(c.Stale, name+":"+ch)
			}
			continue
		}
		if whole {
			c.Expected = append(c.Expected, name)
			continue
		}
		var unexcused []string
		for _, f := range g.Failed {
			if checks[f] {
				c.Expected = append(c.Expected, name+":"+f)
			} else {
				unexcused = append(unexcused, f)
			}
		}
		for ch := range checks {
			if !slices.Contains(g.Failed, ch) {
				c.Stale = append(c.Stale, name+":"+ch)
			}
		}
		if len(unexcused) > 0 {
			c.Regressions[name] = unexcused
		}
	}
	for _, e := range b.Order {
		if !used[e] {
			c.Stale = append(c.Stale, e)
		}
	}
	slices.Sort(c.Stale)
	slices.Sort(c.Expected)
	return c
}

// Write prints the comparison for one protocol version.
func (c Comparison) Write(w io.Writer, version string, b Baseline) {
	fmt.Fprintf(w, "%s: everything-server alone passes %d of %d scenarios; through the gateway %d of %d\n",
		version, c.AlonePassed, c.Scenarios, c.GatewayPassed, c.Scenarios)
	for _, s := range c.AloneFailed {
		fmt.Fprintf(w, "  fails alone too (not counted): %s\n", s)
	}
	for _, e := range c.Expected {
		fmt.Fprintf(w, "  expected failure: %s: %s\n", e, b.Reasons[baselineEntry(e, b)])
	}
	for _, s := range slices.Sorted(maps.Keys(c.Regressions)) {
		fmt.Fprintf(w, "  FAIL: %s passes alone, fails through the gateway: %s\n", s, strings.Join(c.Regressions[s], ", "))
	}
	for _, s := range c.Stale {
		fmt.Fprintf(w, "  FAIL: stale expected failure %s: it does not fail through the gateway (or no such scenario); remove it\n", s)
	}
}

// baselineEntry is the entry that excused e: e itself or its scenario.
func baselineEntry(e string, b Baseline) string {
	if _, ok := b.Reasons[e]; ok {
		return e
	}
	s, _, _ := strings.Cut(e, ":")
	return s
}
