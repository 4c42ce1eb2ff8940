package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docCommands are the mcpconform command lines a document shows: every
// line of its ```sh blocks (a trailing backslash joins the next) and every
// backquoted span, that starts with "mcpconform ".
func docCommands(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inSh, joined := false, ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "```sh"):
			inSh = true
			continue
		case strings.HasPrefix(line, "```"):
			inSh = false
			continue
		}
		if inSh {
			cmd, _, _ := strings.Cut(line, "#")
			joined += strings.TrimSpace(cmd)
			if rest, ok := strings.CutSuffix(joined, "\\"); ok {
				joined = rest + " "
				continue
			}
			if strings.HasPrefix(joined, "mcpconform ") {
				out = append(out, joined)
			}
			joined = ""
			continue
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

var (
	inlineCommand = regexp.MustCompile("`(mcpconform [^`]+)`")
	docFlag       = regexp.MustCompile(`(?:^|\s)(--?[a-z][a-z0-9-]*)`)
	helpFlag      = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)\b`)
)

// withSubcommands are the commands whose second word may be a subcommand
// with flags of its own (idp token, bundle keygen); any other command
// given a second word and -h could start working.
var withSubcommands = map[string]bool{"idp": true, "profile": true, "bundle": true}

// flagsOf are the flags a command's -h lists, with those of its
// subcommand when the line names one (idp token).
func flagsOf(t *testing.T, words []string) map[string]bool {
	t.Helper()
	flags := map[string]bool{"h": true, "help": true}
	helps := [][]string{{words[0], "-h"}}
	if len(words) > 1 && withSubcommands[words[0]] && !strings.HasPrefix(words[1], "-") {
		helps = append(helps, []string{words[0], words[1], "-h"})
	}
	for _, args := range helps {
		var out, errs bytes.Buffer
		dispatch(context.Background(), args, &out, &errs)
		for _, m := range helpFlag.FindAllStringSubmatch(out.String()+errs.String(), -1) {
			flags[m[1]] = true
		}
	}
	return flags
}

// Every flag docs/profile.md and README.md give a command exists in that
// command's flag set: a flag renamed or dropped shows here, not in a
// vendor's first hour.
func TestDocCommandsUseRealFlags(t *testing.T) {
	for _, doc := range []string{"../../docs/profile.md", "../../README.md"} {
		cmds := docCommands(t, doc)
		if len(cmds) == 0 {
			t.Errorf("%s: no mcpconform command found", doc)
		}
		for _, line := range cmds {
			words := strings.Fields(strings.TrimPrefix(line, "mcpconform "))
			if len(words) > 0 && words[0] == "help" {
				continue
			}
			if len(words) == 0 || !commands[words[0]] {
				t.Errorf("%s: %q: no command %q", doc, line, strings.Join(words[:min(1, len(words))], ""))
				continue
			}
			known := flagsOf(t, words)
			for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
				if name := strings.TrimLeft(m[1], "-"); !known[name] {
					t.Errorf("%s: %q: %s has no flag %s", doc, line, words[0], m[1])
				}
			}
		}
	}
}
