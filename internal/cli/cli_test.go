package cli

import (
	"bytes"
	"reflect"
	"testing"
)

func TestParseHelpAndBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		code               int
		wantHelp, wantErrs string
	}{
		{[]string{"-h"}, 0, "Usage: x\n  -n int\n    \ta number\n", ""},
		{[]string{"--help"}, 0, "Usage: x\n  -n int\n    \ta number\n", ""},
		{[]string{"-zz"}, 2, "", "flag provided but not defined: -zz\nRun 'prog x -h' for its flags.\n"},
	} {
		var help, errs bytes.Buffer
		fs := NewFlagSet("prog x", "Usage: x\n", &help, &errs)
		fs.Int("n", 0, "a number")
		code, ok := Parse(fs, tc.args)
		if ok || code != tc.code || help.String() != tc.wantHelp || errs.String() != tc.wantErrs {
			t.Errorf("%q: code %d ok %v help %q errs %q", tc.args, code, ok, help.String(), errs.String())
		}
	}
}

func TestParseArgsInterleaved(t *testing.T) {
	var errs bytes.Buffer
	fs := NewFlagSet("prog x", "Usage: x\n", &errs, &errs)
	n := fs.Int("n", 0, "a number")
	pos, code, ok := ParseArgs(fs, []string{"a", "-n", "3", "b", "--", "-c"}, 3)
	if !ok || code != 0 || *n != 3 || !reflect.DeepEqual(pos, []string{"a", "b", "-c"}) {
		t.Fatalf("pos %q code %d ok %v n %d", pos, code, ok, *n)
	}
	fs = NewFlagSet("prog x", "Usage: x\n", &errs, &errs)
	errs.Reset()
	if _, code, ok := ParseArgs(fs, []string{"a"}, 2); ok || code != 2 ||
		errs.String() != "prog x: want 2 argument(s), got 1 [\"a\"]\nRun 'prog x -h' for its flags.\n" {
		t.Fatalf("code %d ok %v: %q", code, ok, errs.String())
	}
}
