package tagexpr

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	scenarios := map[string][]string{
		"a":     {"@must", "@a", "@c"},
		"b":     {"@must", "@b", "@slow"},
		"c":     {"@should", "@c"},
		"paren": {"@should", "@x(1)"},
	}
	for _, tc := range []struct {
		expr string
		want string // matching scenario names, sorted, comma-separated
	}{
		{"", "a,b,c,paren"},
		{"  ", "a,b,c,paren"},
		{"@must", "a,b"},
		{"must", "a,b"},
		{"not @must", "c,paren"},
		{"@must and not @slow", "a"},
		{"@must && ~@slow", "a"},
		{"@must&&~@slow", "a"},
		{"(@a or @b) and @c", "a"},
		{"@a or @b and @c", "a"},
		{"@a,@b", "a,b"},
		{"@a || @c", "a,c"},
		{"@must and @should", ""},
		{"not (@must or @c)", "paren"},
		{"not not @c", "a,c"},
		{"~@must,@slow", "b,c,paren"},
		{`@x\(1\)`, "paren"},
		{"@must and not @slow or @should and not @c", "a,paren"},
	} {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		var got []string
		for _, name := range []string{"a", "b", "c", "paren"} {
			if e.Match(scenarios[name]) {
				got = append(got, name)
			}
		}
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("%q matches %q, want %q", tc.expr, g, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, msg string }{
		{"@must &&", `ends after "&&" at column 7`},
		{"@must and", `ends after "and" at column 7`},
		{"not", `ends after "not"`},
		{"@a @b", `unexpected tag "@b" at column 4`},
		{"(@a or @b", `"(" at column 1 is never closed`},
		{"@a)", `unexpected ")" at column 3`},
		{"() and @a", `expected a tag, found ")"`},
		{"@a & @b", `"&" at column 4: write &&`},
		{"@a | @b", `"|" at column 4: write ||`},
		{"@ and @b", `"@" at column 1 is not a tag`},
		{`@a\`, "escapes nothing"},
		{"and @a", `expected a tag, found "and"`},
		{",", `expected a tag, found ","`},
		{"(@a @b)", `expected ")" to close "(" at column 1, found tag "@b"`},
	} {
		_, err := Parse(tc.expr)
		if err == nil {
			t.Errorf("Parse(%q) = nil error, want %q", tc.expr, tc.msg)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.expr) {
			t.Errorf("Parse(%q) = %q, want it to quote the expression and say %q", tc.expr, err, tc.msg)
		}
	}
}
