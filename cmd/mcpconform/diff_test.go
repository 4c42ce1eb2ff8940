package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

func TestDiffCmdExitCodes(t *testing.T) {
	fix := func(name string) string {
		return filepath.Join("..", "..", "reports", "testdata", "diff", name+".summary.json")
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"no change", []string{fix("base"), fix("base")}, 0},
		{"regression", []string{fix("base"), fix("next")}, 1},
		{"interrupted", []string{fix("base"), fix("interrupted")}, 3},
		{"one argument", []string{fix("base")}, 2},
		{"missing report", []string{fix("base"), filepath.Join(t.TempDir(), "nope")}, 2},
		{"help", []string{"-h"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if got := dispatch(context.Background(), append([]string{"diff"}, tc.args...), &out, &errs); got != tc.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.want, out.String(), errs.String())
			}
		})
	}
}
