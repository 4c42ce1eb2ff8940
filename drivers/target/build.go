package target

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ReferencePackage is the import path of the mcpconform command, which
// serves the reference gateway (`mcpconform gateway`).
const ReferencePackage = "github.com/mcpconform/mcpconform/cmd/mcpconform"

// Build compiles the mcpconform command into dir and returns its path, for
// Options.Binary: a test or a tool outside cmd/mcpconform has no binary of
// its own that could serve the gateway. goCmd "" is "go" from PATH (under
// `go test` the toolchain that runs the test). The compiler's output goes
// to stderr.
func Build(ctx context.Context, goCmd, dir string) (string, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	out := filepath.Join(dir, "mcpconform")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, ReferencePackage)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build mcpconform: %w", err)
	}
	return out, nil
}
