package vendorgw

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: `"k-1"`, want: "k-1"},
		{in: `k-1`, want: "k-1"},
		{in: "  k-1\t", want: "k-1"},
		{in: `"a b,c;d"`, want: "a b,c;d"},
		{in: `"say \"hi\" \\o/"`, want: `say "hi" \o/`},
		{in: `"` + strings.Repeat("x", 255) + `"`, want: strings.Repeat("x", 255)},
		{in: strings.Repeat("x", 256), err: "1 to 255"},
		{in: ``, err: "1 to 255"},
		{in: `""`, err: "1 to 255"},
		{in: `"open`, err: "unterminated"},
		{in: `"a\"`, err: "unterminated"},
		{in: `"a\n"`, err: "escapes only"},
		{in: `"a";p=1`, err: "after the closing quote"},
		{in: `"a", "b"`, err: "after the closing quote"},
		{in: `a,b`, err: "not allowed"},
		{in: `a;p`, err: "not allowed"},
		{in: `a b`, err: "not allowed"},
		{in: `a"b`, err: "not allowed"},
		{in: "k\u00e9", err: "not allowed"},
		{in: "\"k\u00e9\"", err: "printable ASCII"},
	}
	for _, tt := range tests {
		got, err := parseKey(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("parseKey(%q): %v", tt.in, err)
		case tt.err == "" && got != tt.want:
			t.Errorf("parseKey(%q) = %q, want %q", tt.in, got, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseKey(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
		}
	}
}

func TestCanonicalFingerprint(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":[1,{"y":2,"x":1}]}`, ` { "b" : [1, {"x":1, "y":2}], "a" : 1 } `},
		{``, `null`, `{}`, ` {} `},
		{`{"n":1e3,"s":"<&>"}`, `{"s":"\u003c&>","n":1e3}`},
	}
	var seen []string
	for _, group := range same {
		var fp0 string
		for i, raw := range group {
			_, fp, err := canonical([]byte(raw))
			if err != nil {
				t.Fatalf("canonical(%q): %v", raw, err)
			}
			if i == 0 {
				fp0 = fp
				for _, other := range seen {
					if other == fp {
						t.Errorf("%q shares a fingerprint with another group", raw)
					}
				}
				seen = append(seen, fp)
			} else if fp != fp0 {
				t.Errorf("%q and %q: fingerprints differ", group[0], raw)
			}
		}
	}
	// Numbers are compared as written: 1 and 1.0 are other arguments.
	_, a, _ := canonical([]byte(`{"n":1}`))
	_, b, _ := canonical([]byte(`{"n":1.0}`))
	if a == b {
		t.Error(`{"n":1} and {"n":1.0} share a fingerprint`)
	}
	for _, bad := range []string{`[]`, `"x"`, `42`, `{"a":`, `{} {}`} {
		if _, _, err := canonical([]byte(bad)); err == nil {
			t.Errorf("canonical(%q): no error", bad)
		}
	}
}
