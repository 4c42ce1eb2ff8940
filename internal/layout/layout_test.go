package layout

import (
	"os/exec"
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
