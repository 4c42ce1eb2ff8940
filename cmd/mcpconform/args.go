package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet is a command's flag set whose -h prints usage, then the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses a command's flags, which may come before, between or
// after its positional arguments (`bundle DIR -o X` as well as `bundle -o X
// DIR`; flag.Parse alone stops at the first positional one), and returns
// the positional ones, of which there must be want (any number when want
// is negative). When ok is false the command ends with code: 0 after -h, 2
// on a bad flag or count (the usage has been printed).
func parseArgs(fs *flag.FlagSet, args []string, want int) (pos []string, code int, ok bool) {
	briefOnError(fs, args)
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, 0, false
			}
			return nil, 2, false
		}
		args = fs.Args()
		if len(args) > 0 && args[0] == "--" {
			pos, args = append(pos, args[1:]...), nil
		}
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if want >= 0 && len(pos) != want {
		fmt.Fprintf(fs.Output(), "mcpconform %s: want %d argument(s), got %d %q\n", fs.Name(), want, len(pos), pos)
		fs.Usage()
		return nil, 2, false
	}
	return pos, 0, true
}

// briefOnError makes a bad flag print its error and one line pointing at
// -h, while -h prints the whole usage: a typo is not answered with sixty
// lines of help.
func briefOnError(fs *flag.FlagSet, args []string) {
	full := fs.Usage
	asked := false
	for _, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "-h", "-help", "--h", "--help":
			asked = true
		}
	}
	fs.Usage = func() {
		if asked {
			full()
			return
		}
		fmt.Fprintf(fs.Output(), "Run 'mcpconform %s -h' for its flags.\n", fs.Name())
	}
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
