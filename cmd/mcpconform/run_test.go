package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Usage errors of run are exit 2 with a message, before anything starts.
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"run", "--out", t.TempDir()}, tc.args...)
			if code := dispatch(context.Background(), args, &out, &errs); code != 2 || !strings.Contains(errs.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs.String(), tc.want)
			}
		})
	}
}
