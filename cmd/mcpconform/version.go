package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/internal/buildinfo"
	"github.com/mcpconform/mcpconform/internal/cli"
)

const versionUsage = `Usage: mcpconform version [--json]

Prints the harness version and the VCS commit it was built from ("commit
unknown" for a build without VCS stamping: make build passes the commit to
the linker, see buildinfo).

Flags:
`

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", versionUsage, stderr)
	asJSON := fs.Bool("json", false, "print version, commit, commit time and Go version as JSON")
	_, code, ok := cli.ParseArgs(fs, args, 0)
	if !ok {
		return code
	}
	info := buildinfo.Read()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(info); err != nil {
			return 2
		}
		return 0
	}
	fmt.Fprintf(stdout, "mcpconform %s\n", info)
	return 0
}
