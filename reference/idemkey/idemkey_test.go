package idemkey

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"abc"`, "abc"},
		{`abc`, "abc"},
		{`  "k-1"  `, "k-1"},
		{"\tk-1 ", "k-1"},
		{`"with space"`, "with space"},
		{`"q\"uote"`, `q"uote`},
		{`"back\\slash"`, `back\slash`},
		{`550e8400-e29b-41d4-a716-446655440000`, "550e8400-e29b-41d4-a716-446655440000"},
		{`*tok:en/x`, "*tok:en/x"},
		{`"` + strings.Repeat("a", MaxLen) + `"`, strings.Repeat("a", MaxLen)},
		{strings.Repeat("b", MaxLen), strings.Repeat("b", MaxLen)},
		{`" "`, " "},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "empty value"},
		{`   `, "empty value"},
		{`""`, "empty key"},
		{`"abc`, "unterminated string"},
		{`"ab\`, "unterminated string"},
		{`"a\nb"`, `escape \n`},
		{`"abc";p=1`, "parameters"},
		{`"a", "b"`, "list of values"},
		{`"abc"x`, "after the closing quote"},
		{`a,b`, "list of values"},
		{`a;b=1`, "parameters"},
		{`a b`, "no spaces"},
		{`a"b`, "quote the key"},
		{"a\tb", "no spaces"},
		{"\"a\tb\"", "not printable ASCII"},
		{`"`, "unterminated string"},
		{`a;p`, "parameters"},
		{`"a" x`, "after the closing quote"},
		{`a\b`, "quote the key"},
		{"\"caf\xc3\xa9\"", "not printable ASCII"},
		{"caf\xc3\xa9", "not printable ASCII"},
		{"\"a\x7fb\"", "not printable ASCII"},
		{"a\x00", "not printable ASCII"},
		{`"` + strings.Repeat("a", MaxLen+1) + `"`, "longer than 255"},
		{strings.Repeat("b", MaxLen+1), "longer than 255"},
	} {
		got, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error containing %q", tc.in, got, tc.want)
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error %q, want ErrInvalid containing %q", tc.in, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Validate("ok key~"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", strings.Repeat("x", 256), "tab\there", "é"} {
		if err := Validate(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzParse: an accepted key is valid, quoting it as an sf-string parses
// back to the same key, and a bare value is the key itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `"a\"b\\c"`, `  x  `, `"a";p`, `a,b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := Parse(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		if err := Validate(key); err != nil {
			t.Fatalf("Parse(%q) = %q, which fails Validate: %v", in, key, err)
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		back, err := Parse(quoted)
		if err != nil || back != key {
			t.Fatalf("round trip of %q via %q = %q, %v", key, quoted, back, err)
		}
		if v := strings.Trim(in, " \t"); v[0] != '"' && key != v {
			t.Fatalf("bare %q parsed to %q", v, key)
		}
	})
}
