package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Usage errors of run are exit 2 with a message, before anything starts:
// a baseline that cannot be read too, rather than a summary.md without
// the comparison the operator asked for.
func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"dangling operator", []string{"--tags", "@must &&"}, `tag expression "@must &&": expression ends after "&&" at column 7`},
		{"unclosed group", []string{"--tags", "(@a or @b"}, `"(" at column 1 is never closed`},
		{"nothing selected", []string{"--tags", "@must and @should"}, `no scenario matched "@must and @should"`},
		{"unknown format", []string{"--format", "xml"}, `--format "xml": want one of text, jsonl, github`},
		{"missing baseline", []string{"--baseline", "no-such-report"}, "--baseline no-such-report: reports: stat no-such-report: no such file or directory"},
		{"baseline that is no report", []string{"--baseline", "."}, "--baseline .: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"run", "--out", t.TempDir()}, tc.args...)
			if code := dispatch(context.Background(), args, &out, &errs); code != 2 || !strings.Contains(errs.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs.String(), tc.want)
			}
			if strings.HasPrefix(tc.name, "missing baseline") && strings.Count(errs.String(), "\n") != 1 {
				t.Errorf("stderr %q: want one line", errs.String())
			}
		})
	}
}

// The target flags of run, explore and repro are checked before anything
// starts: an option the chosen target would ignore, or a value no run can
// use, is exit 2 with one line naming the flag and what to change.
func TestTargetFlagsValidated(t *testing.T) {
	url := "http://127.0.0.1:1/mcp"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown bug switch", []string{"--bug", "no-such-bug"}, `--bug "no-such-bug": no such bug switch (mcpconform bugs lists them)`},
		{"negative settle", []string{"--settle", "-1s"}, "--settle -1s: a duration of 0 or more"},
		{"negative final quiet", []string{"--final-quiet", "-2s"}, "--final-quiet -2s: a duration of 0 or more"},
		{"the removed --strict", []string{"--strict"}, "--strict is gone: every run is strict"},
		{"the removed -strict=true", []string{"-strict=true"}, "--strict is gone: every run is strict"},
		{"no workers", []string{"--workers", "0"}, "--workers 0: the reference target needs at least 1 gateway process"},
		{"unknown store", []string{"--store", "mysql"}, `--store "mysql": want sqlite or postgres`},
		{"a profile for the reference", []string{"--profile", "p.json"}, "--profile describes a URL target"},
		{"URL without a profile", []string{"--target", url}, "a URL target needs --profile"},
		{"bug switch on a URL target", []string{"--target", url, "--profile", "p.json", "--bug", "replay-debits"}, "--bug is for the reference target"},
		{"workers of a URL target", []string{"--target", url, "--profile", "p.json", "--workers", "3"}, "--workers is for the reference target"},
		{"store of a URL target", []string{"--target", url, "--profile", "p.json", "--store", "postgres"}, "--store is for the reference target"},
	} {
		for _, cmd := range []string{"run", "explore", "repro"} {
			if cmd == "repro" && (tc.args[0] == "--settle" || tc.args[0] == "--final-quiet") {
				continue // repro replays one scenario as it was run
			}
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				var out, errs bytes.Buffer
				args := []string{cmd}
				if cmd == "repro" {
					args = append(args, "retry-01")
				}
				args = append(append(args, "--out", t.TempDir()), tc.args...)
				code := dispatch(context.Background(), args, &out, &errs)
				if code != 2 || !strings.Contains(errs.String(), tc.want) || strings.Count(errs.String(), "\n") > 2 {
					t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, errs.String(), tc.want)
				}
			})
		}
	}
}

// help CMD prints the command's own help on stdout; -V and --version print
// the version, as common Go CLIs do.
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"help", "run"}, 0, "Usage: mcpconform run"},
		{[]string{"help", "explore"}, 0, "Usage: mcpconform explore"},
		{[]string{"help"}, 0, "mcpconform help [COMMAND]"},
		{[]string{"-V"}, 0, "mcpconform "},
		{[]string{"--version"}, 0, "mcpconform "},
	} {
		var out, errs bytes.Buffer
		if code := dispatch(context.Background(), tc.args, &out, &errs); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%v: exit %d, stdout %q; want %d and %q", tc.args, code, out.String(), tc.code, tc.out)
		}
	}
	var out, errs bytes.Buffer
	if code := dispatch(context.Background(), []string{"help", "nope"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `no command "nope"`) {
		t.Errorf("help nope: exit %d, %q", code, errs.String())
	}
}
