package bugmap

import (
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
