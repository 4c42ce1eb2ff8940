package steps

import (
	"strings"
	"testing"
)

// A reference is one value for the scenario wherever it appears; $K1 is
// $k1 in capitals (another key), $pad N x's; text around a reference stays.
func TestExpand(t *testing.T) {
	w := &world{vars: map[string]string{}, env: &Env{RunID: "r1"}}
	k1 := w.expand("$k1")
	for _, tc := range []struct{ in, want string }{
		{"$k1", k1},
		{"$K1", strings.ToUpper(k1)},
		{"prefix-$k1", "prefix-" + k1},
		{`{"pad":"$pad5"}`, `{"pad":"xxxxx"}`},
		{"$pad0", ""},
		{"$Kx", "$Kx"},
		{"$L1", longKeyPrefix + k1},
	} {
		if got := w.expand(tc.in); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !strings.HasPrefix(k1, "k1-") || strings.ToUpper(k1) == k1 {
		t.Errorf("$k1 = %q: a key with letters of its own", k1)
	}
	if op := w.expand("$op1"); !strings.HasPrefix(op, "r1-op1-") || len(w.tokens) != 1 {
		t.Errorf("$op1 = %q, tokens %v: the run's prefix, and a token to forget", op, w.tokens)
	}
	if l2 := w.expand("$L2"); len(l2) > 255 || l2[:240] != w.expand("$L1")[:240] {
		t.Errorf("$L2 = %q: at most 255 characters, alike to $L1 for 240", l2)
	}
	if n := len(w.expand("$pad99999999")); n != maxPad {
		t.Errorf("$pad99999999 is %d characters, want at most %d", n, maxPad)
	}
}
