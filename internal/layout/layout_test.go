package layout

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The harness tests the reference gateway as it tests a vendor's: over the
// wire, through the drivers. So nothing the steps or the drivers build on
// may be the reference gateway's code.
func TestStepsAndDriversNeverImportReference(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list packages with")
	}
	for _, pattern := range []string{"../../steps/...", "../../drivers/..."} {
		out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}`, pattern).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pattern, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "github.com/mcpconform/mcpconform/reference") {
				t.Errorf("%s depends on %s: steps and drivers reach a target only over the wire", pattern, p)
			}
		}
	}
}

// The shipped binary is a conformance tool: it starts no containers and
// carries no test helpers. godog itself imports "testing" (its TestSuite
// can report to a *testing.T), so the rule is held on this module's own
// packages and on the container client, wherever it would come from.
func TestShippedBinaryLinksNoTestOrContainerCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list packages with")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../cmd/mcpconform").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if strings.HasPrefix(pkg, "github.com/ory/dockertest") || strings.HasSuffix(pkg, "test") && strings.HasPrefix(pkg, "github.com/mcpconform/") {
			t.Errorf("cmd/mcpconform links %s: test and container code stay in the tests", pkg)
		}
		if strings.HasPrefix(pkg, "github.com/mcpconform/") && slices.Contains(imports, "testing") {
			t.Errorf("%s imports testing, and cmd/mcpconform links it", pkg)
		}
	}
}

// The README's layout table is how a newcomer finds their way: every
// package folder under internal/ is named in it.
func TestReadmeNamesEveryInternalPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.Contains(string(readme), "`internal/"+e.Name()+"`") {
			t.Errorf("README.md's layout table does not name internal/%s", e.Name())
		}
	}
}
