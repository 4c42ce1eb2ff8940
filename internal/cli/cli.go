// Package cli is the one way the commands (mcpconform's subcommands,
// mcpbench, mcpsoak, mcpofficial) build and parse their flags: -h prints
// the command's usage then its flags and ends with 0; a bad flag prints its
// error and one line pointing at -h and ends with 2.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// NewFlagSet is a command's flag set. name is the command as typed
// ("mcpconform run", "mcpbench"): the messages quote it. On -h its usage,
// then the flags, go to help; errors go to stderr. Most commands pass
// stderr for both; one whose -h text is its answer (profile check) passes
// stdout as help.
func NewFlagSet(name, usage string, help, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(help, usage)
		fs.SetOutput(help)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	return fs
}

// Parse parses args with fs, stopping at the first positional argument
// (fs.Args() holds the rest) as flag.Parse does. When ok is false the
// command ends with code: 0 after -h (the usage has been printed), 2 on a
// bad flag (its error and the line pointing at -h have been).
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	briefOnError(fs, args)
	return parse(fs, args)
}

func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// ParseArgs parses a command's flags, which may come before, between or
// after its positional arguments (`bundle DIR -o X` as well as `bundle -o X
// DIR`; flag.Parse alone stops at the first positional one), and returns
// the positional ones, of which there must be want (any number when want
// is negative). When ok is false the command ends with code: 0 after -h, 2
// on a bad flag or count (what was wrong has been printed).
func ParseArgs(fs *flag.FlagSet, args []string, want int) (pos []string, code int, ok bool) {
	briefOnError(fs, args)
	for {
		if code, ok := parse(fs, args); !ok {
			return nil, code, false
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
		fmt.Fprintf(fs.Output(), "%s: want %d argument(s), got %d %q\n", fs.Name(), want, len(pos), pos)
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
		fmt.Fprintf(fs.Output(), "Run '%s -h' for its flags.\n", fs.Name())
	}
}
