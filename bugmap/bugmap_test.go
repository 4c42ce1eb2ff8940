package bugmap

import (
	"slices"
	"testing"

	"github.com/mcpconform/mcpconform/catalog"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/reference/bugs"
)

// Every switch has catchers, and every catcher is a real scenario.
func TestEveryBugIsCaughtByRealScenarios(t *testing.T) {
	es, err := catalog.Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	known := catalog.ByID(es)
	for _, b := range bugs.All {
		ids := Catchers[b.Name]
		if len(ids) == 0 {
			t.Errorf("bug %s: no scenario is listed to catch it", b.Name)
		}
		for _, id := range ids {
			if _, ok := known[id]; !ok {
				t.Errorf("bug %s: catcher %q is not a scenario", b.Name, id)
			}
		}
	}
	for name := range Catchers {
		if bugs.Lookup(name) == nil {
			t.Errorf("catchers listed for unknown bug %q", name)
		}
	}
}

func TestCollateralIsNeverACatcher(t *testing.T) {
	for bug, ids := range Collateral {
		for _, id := range ids {
			for _, c := range Catchers[bug] {
				if c == id {
					t.Errorf("bug %s: %s is both a catcher and collateral", bug, id)
				}
			}
		}
	}
}

// uncaught are scenarios no bug switch puts at fault yet: their bugs (a
// gateway that accepts a batch, a parse error answered 500, ...) have no
// switch. Listed so that a new scenario without a catcher fails the test.
var uncaught = []string{"iga-05", "refuse-06", "refuse-07", "refuse-08", "refuse-09"}

// Every scenario is shown to fail against a gateway with the bug it names,
// in the full self-test or the external one, unless listed above.
func TestEveryScenarioHasACatcher(t *testing.T) {
	es, err := catalog.Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	caught := map[string]bool{}
	for _, ids := range Catchers {
		for _, id := range ids {
			caught[id] = true
		}
	}
	for mode, bugsOf := range External {
		for bug, ids := range bugsOf {
			if bugs.Lookup(bug) == nil {
				t.Errorf("external %s: unknown bug %q", mode, bug)
			}
			for _, id := range ids {
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
