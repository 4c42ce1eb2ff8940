package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/buildinfo"
)

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print version, commit, commit time and Go version as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: mcpconform version [--json]\n\nPrints the harness version and the VCS commit it was built from (\"commit unknown\"\nfor builds without VCS stamping; see buildinfo for the linker flags).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpconform version: unexpected arguments %q\n", fs.Args())
		return 2
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
