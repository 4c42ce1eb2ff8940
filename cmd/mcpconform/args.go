package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mcpconform/mcpconform/internal/cli"
)

// newFlagSet is the flag set of the subcommand name ("run", "idp token"):
// cli.NewFlagSet with the messages naming it "mcpconform NAME" and its -h
// usage on stderr.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("mcpconform "+name, usage, stderr, stderr)
}

// removedStrict refuses --strict, which older scripts of run, explore and
// repro pass: it never changed anything and is gone, and saying so helps
// more than "flag provided but not defined".
func removedStrict(cmd string, args []string, stderr io.Writer) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "strict" {
			fmt.Fprintf(stderr, "mcpconform %s: --strict is gone: every run is strict (a @must check of its level not observed never exits 0); drop the flag\n", cmd)
			return true
		}
	}
	return false
}
