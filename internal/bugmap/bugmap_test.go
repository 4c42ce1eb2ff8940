package bugmap

import (
	"slices"
	"testing"

	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reference/bugs"
)

// Every switch has catchers, and every catcher names a real scenario and a
// step of it, as the feature file writes it.
func TestEveryBugIsCaughtByRealChecks(t *testing.T) {
	es, err := catalog.Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	known := catalog.ByID(es)
	realCheck := func(where string, c Check) {
		e, ok := known[c.Scenario]
		if !ok {
			t.Errorf("%s: catcher %q is not a scenario", where, c.Scenario)
			return
		}
		for _, st := range e.Steps {
			if st.Text == c.Step {
				return
			}
		}
		t.Errorf("%s: %s has no step %q", where, c.Scenario, c.Step)
	}
	for _, b := range bugs.All {
		cs := Catchers[b.Name]
		if len(cs) == 0 {
			t.Errorf("bug %s: no check is named to catch it", b.Name)
		}
		if len(Scenarios(cs)) != len(cs) {
			t.Errorf("bug %s: a scenario is named twice", b.Name)
		}
		for _, c := range cs {
			realCheck("bug "+b.Name, c)
		}
	}
	for name := range Catchers {
		if bugs.Lookup(name) == nil {
			t.Errorf("catchers listed for unknown bug %q", name)
		}
	}
	for mode, bugsOf := range External {
		for bug, cs := range bugsOf {
			for _, c := range cs {
				realCheck("external "+mode+" "+bug, c)
			}
		}
	}
}

func TestCollateralIsNeverACatcher(t *testing.T) {
	for bug, ids := range Collateral {
		for _, id := range ids {
			for _, c := range Catchers[bug] {
				if c.Scenario == id {
					t.Errorf("bug %s: %s is both a catcher and collateral", bug, id)
				}
			}
		}
	}
}

// uncaught are scenarios no bug switch puts at fault yet: their bugs (a
// gateway that accepts a batch, a parse error answered 500, ...) have no
// switch. Listed so that a new scenario without a catcher fails the test.
var uncaught = []string{"iga-05-session", "refuse-06", "refuse-08", "refuse-09"}

// Every scenario is shown to fail against a gateway with the bug it names,
// in the full self-test or the external one, unless listed above.
func TestEveryScenarioHasACatcher(t *testing.T) {
	es, err := catalog.Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	caught := map[string]bool{}
	for _, cs := range Catchers {
		for _, id := range Scenarios(cs) {
			caught[id] = true
		}
	}
	for mode, bugsOf := range External {
		for bug, cs := range bugsOf {
			if bugs.Lookup(bug) == nil {
				t.Errorf("external %s: unknown bug %q", mode, bug)
			}
			for _, id := range Scenarios(cs) {
				caught[id] = true
			}
		}
	}
	known := catalog.ByID(es)
	for _, e := range es {
		listed := slices.Contains(uncaught, e.ID)
		switch {
		case !caught[e.ID] && !listed:
			t.Errorf("%s: no bug switch is listed to catch it", e.ID)
		case caught[e.ID] && listed:
			t.Errorf("%s: caught now; take it off the uncaught list", e.ID)
		}
	}
	for id := range caught {
		if _, ok := known[id]; !ok {
			t.Errorf("catcher %q is not a scenario", id)
		}
	}
}

// Every switch names the harm explore must catch it by, and only switches
// that exist are named.
func TestEveryBugHasAHarm(t *testing.T) {
	for _, b := range bugs.All {
		if len(Harms[b.Name]) == 0 {
			t.Errorf("bug %s: no harm named for explore to catch it by", b.Name)
		}
	}
	for name, hs := range Harms {
		if bugs.Lookup(name) == nil {
			t.Errorf("harms listed for unknown bug %q", name)
		}
		for _, h := range hs {
			if h.Rank() == len(judge.Harms) {
				t.Errorf("bug %s: %q is not a harm the model names", name, h)
			}
		}
	}
}
