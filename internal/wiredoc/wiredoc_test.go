package wiredoc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReasons(t *testing.T) {
	cases := []struct {
		name string
		md   string
		want []Reason
		err  string
	}{
		{"rows of two tables", strings.Join([]string{
			"| reason | code | retryable | when |",
			"|---|---|---|---|",
			"| `a_b` | -32003 | no | x |",
			"| `c` / `d` | -32006 | yes | y |",
			"text between the tables",
			"| `e` | 0 | no | z |",
		}, "\n"), []Reason{{"a_b", -32003, false}, {"c", -32006, true}, {"d", -32006, true}, {"e", 0, false}}, ""},
		{"other tables are not reasons", "| `Mcp-Name` | header |\n| `a` | -1 | maybe |", nil, "no reason table"},
		{"a reason twice", "| `a` | -1 | no |\n| `b` / `a` | -2 | no |", nil, "line 2: a has a second row"},
		{"a code out of range", "| `a` | -99999999999999999999 | no |", nil, "line 1: code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Reasons(c.md)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}
