package bugmap

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/bugs"
)

// docTables reads the catch tables of docs/catches.md: per section heading,
// the bug switches its rows name in their first column.
func docTables(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/catches.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if m := tableRow.FindStringSubmatch(line); m != nil && section != "" {
			out[section] = append(out[section], m[1])
		}
	}
	return out
}

var tableRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// switchLike is a backquoted word that can only be a bug switch's name in
// the self-test documents: lower-case words joined by dashes, no digits
// (scenario IDs have them) and no spaces (commands and flags have them).
var switchLike = regexp.MustCompile("`([a-z]+(?:-[a-z]+)+)`")

// sectionOf finds the one section whose heading starts with prefix.
func sectionOf(t *testing.T, tables map[string][]string, prefix string) []string {
	t.Helper()
	var found []string
	n := 0
	for h, names := range tables {
		if strings.HasPrefix(h, prefix) {
			found, n = names, n+1
		}
	}
	if n != 1 {
		t.Fatalf("docs/catches.md: %d sections start with %q, want 1", n, prefix)
	}
	return found
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedSet(names []string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}

// docs/catches.md is written by hand from `selftest --markdown`: each
// table must name exactly the switches bugmap holds the self-test to in its
// mode, so a switch added, renamed or dropped shows here without running
// the self-test itself.
func TestCatchTablesNameEveryBugSwitch(t *testing.T) {
	tables := docTables(t)
	check := func(where string, doc, want []string, rowsPerSwitch bool) {
		t.Helper()
		if got := sortedSet(doc); !slices.Equal(got, want) {
			var missing, stale []string
			for _, w := range want {
				if !slices.Contains(got, w) {
					missing = append(missing, w)
				}
			}
			for _, g := range got {
				if !slices.Contains(want, g) {
					stale = append(stale, g)
				}
			}
			t.Errorf("docs/catches.md, %s: missing %v, names switches bugmap does not hold it to %v", where, missing, stale)
		}
		if !rowsPerSwitch && len(doc) != len(sortedSet(doc)) {
			t.Errorf("docs/catches.md, %s: a switch has two rows", where)
		}
	}
	check("the full-mode table", sectionOf(t, tables, "The suite, full mode"), sortedKeys(Catchers), false)
	for _, mode := range sortedKeys(External) {
		check("the "+mode+" table", sectionOf(t, tables, "The suite, mode "+mode+" "), sortedKeys(External[mode]), false)
	}
	// Explore is held to every switch (TestExploreCatchesEveryBug), with a
	// row for each mode the switch is explored in.
	check("the explore table", sectionOf(t, tables, "Explore"), sortedKeys(Harms), true)
}

// No switch that no longer exists is named anywhere in the self-test
// documents, in a table or in the prose around them.
func TestSelfTestDocsNameOnlyRealSwitches(t *testing.T) {
	for _, doc := range []string{"../../docs/catches.md", "../../docs/selftest.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range switchLike.FindAllStringSubmatch(string(b), -1) {
			if bugs.Lookup(m[1]) == nil {
				t.Errorf("%s names %q, which is no bug switch (mcpconform bugs)", strings.TrimPrefix(doc, "../../"), m[1])
			}
		}
	}
	if len(Harms) != len(bugs.All) {
		t.Errorf("bugmap.Harms has %d switches, reference/bugs %d", len(Harms), len(bugs.All))
	}
}
