// Package golden holds a test's output to a file under testdata: the file
// is what the output must be, and `go test -update` rewrites it with what
// the test produced, for a reader to review as a diff before committing.
// One flag, one message, in every package that has golden files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Updating says the test runs with -update: golden files are being
// rewritten, not compared.
func Updating() bool { return *update }

// Equal fails t unless got is the content of the file at path; with
// -update it writes got there (creating its directory) and passes.
func Equal(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update accepts the new output):\n%s", path, diff)
	}
}
