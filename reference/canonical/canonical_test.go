package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"sorted keys", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"nested sorted", `{"z":{"y":1,"x":[{"d":1,"c":2}]},"a":null}`, `{"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}}`},
		{"whitespace", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\":true } ", `{"a":[1,2],"b":true}`},
		{"numbers by value", `{"a":1.0,"b":1,"c":1e0,"d":-0,"e":12345678901234567890123}`, `{"a":1,"b":1,"c":1,"d":0,"e":1.2345678901234567890123e+22}`},
		{"exponent forms", `[1E+2,1e-2,0.5]`, `[100,0.01,0.5]`},
		{"escapes minimal", `"\u00e9\/\"\\\n\u0001"`, `"é/\"\\\n\u0001"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"html not escaped", `"<a>&"`, `"<a>&"`},
		{"empty object", `{ }`, `{}`},
		{"empty array", `[ ]`, `[]`},
		{"scalar", `  true `, `true`},
		{"utf8 key order", `{"é":1,"z":2,"a":3}`, `{"a":3,"z":2,"é":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JSON(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("JSON(%s): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			again, err := JSON(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %s -> %s (%v)", got, again, err)
			}
		})
	}
}

func TestJSONRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", ``, "empty input"},
		{"spaces only", "  ", "empty input"},
		{"trailing", `{} {}`, "trailing data"},
		{"duplicate key", `{"a":1,"a":1}`, "duplicate object key"},
		{"duplicate after escape", `{"a":1,"\u0061":2}`, "duplicate object key"},
		{"lone high surrogate", `"\ud800"`, "lone surrogate"},
		{"lone low surrogate", `"\udc00x"`, "lone surrogate"},
		{"bad pair", `"\ud800\u0041"`, "invalid surrogate pair"},
		{"invalid utf8", "\"\xff\"", "invalid UTF-8"},
		{"control char", "\"a\nb\"", "control character"},
		{"leading zero", `01`, "invalid character"},
		{"bare dot", `1.`, "digit expected"},
		{"plus sign", `+1`, "unexpected character"},
		{"bad literal", `tru`, "invalid literal"},
		{"single quotes", `{'a':1}`, "object key must be a string"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"unterminated", `{"a":1`, "unterminated object"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"bad hex", `"\u12G4"`, "invalid \\u escape"},
		{"too deep", strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2), "nesting deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JSON(json.RawMessage(tc.in))
			if err == nil {
				t.Fatalf("JSON(%q) = %s, want error containing %q", tc.in, got, tc.want)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("JSON(%q) error %q, want ErrInvalid containing %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	a, err := Fingerprint(json.RawMessage(`{"text":"hi","n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Fingerprint(json.RawMessage(` { "n" : 1, "text" : "h\u0069" } `))
	c, _ := Fingerprint(json.RawMessage(`{"text":"hi","n":1.0}`))
	if a != b {
		t.Fatalf("same arguments, different fingerprints: %s %s", a, b)
	}
	if a != c {
		t.Fatalf("1 and 1.0 have different fingerprints")
	}
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not 64 hex digits", a)
	}
	if _, err := Fingerprint(json.RawMessage(`{`)); err == nil {
		t.Fatal("fingerprint of invalid JSON succeeded")
	}
}

// FuzzJSON: whatever is accepted is valid JSON meaning the same as the input,
// its canonical form is a fixed point, and re-ordering cannot change it.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\ud83d\ude00"`, `1e5`, `[]`, `{"a":{"b":{"c":-0.5}}}`, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := JSON(in)
		if err != nil {
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		if !json.Valid(out) {
			t.Fatalf("produced invalid JSON %q from %q", out, in)
		}
		again, err := JSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", in, out, again, err)
		}
		var a, b any
		da := json.NewDecoder(bytes.NewReader(in))
		da.UseNumber()
		db := json.NewDecoder(bytes.NewReader(out))
		db.UseNumber()
		if err := da.Decode(&a); err != nil {
			t.Fatalf("decode input: %v", err)
		}
		if err := db.Decode(&b); err != nil {
			t.Fatalf("decode output: %v", err)
		}
		if !sameValue(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}

// sameValue compares decoded JSON, numbers by their decimal value (to 4096
// bits of precision, far beyond the digits the fuzzer writes).
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, _, errA := big.ParseFloat(string(a), 10, 4096, big.ToNearestEven)
		y, _, errB := big.ParseFloat(string(bn), 10, 4096, big.ToNearestEven)
		if errA != nil || errB != nil {
			return true // an exponent past big.Float's range (0e99999999999): TestNumbers has those
		}
		return x.Cmp(y) == 0
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestNumbers: numbers that are equal fingerprint equal, whatever their
// spelling; numbers that differ never do, also past 2^53, where a float64
// would round two integers to one.
func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"0.1e1", "1"},
		{"1e2", "100"}, {"100", "100"}, {"1E+2", "100"}, {"100.00", "100"},
		{"-0", "0"}, {"0", "0"}, {"-0.0e5", "0"}, {"0e-7", "0"},
		{"-1.50", "-1.5"}, {"2e-3", "0.002"}, {"0.000001", "0.000001"}, {"1e-7", "1e-7"}, {"123e-9", "1.23e-7"},
		{"1e20", "100000000000000000000"}, {"1e21", "1e+21"}, {"12.5e20", "1.25e+21"},
		{"5e-324", "5e-324"}, {"1.7976931348623157e308", "1.7976931348623157e+308"},
		// Past 2^53: kept, not rounded to the nearest float64.
		{"9007199254740992", "9007199254740992"}, {"9007199254740993", "9007199254740993"},
		{"9007199254740993.0", "9007199254740993"}, {"90071992547409930e-1", "9007199254740993"},
		{"123456789012345678901234567890", "1.2345678901234567890123456789e+29"},
		{"1e400", "1e+400"}, {"1e99999999999999999999", "1e+99999999999999999999"},
		{"-1e-99999999999999999999", "-1e-99999999999999999999"},
	} {
		got, err := JSON(json.RawMessage(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("JSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	fp := func(s string) string {
		t.Helper()
		f, err := Fingerprint(json.RawMessage(`{"n":` + s + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		a, b  string
		equal bool
	}{
		{"1", "1.0", true}, {"1e2", "100", true}, {"-0", "0", true}, {"0.5", "5e-1", true},
		{"9007199254740993", "9007199254740993.00", true},
		{"9007199254740993", "9007199254740992", false}, // one float64, two integers
		{"1", "1.0000000000000000000001", false},        // one float64, two decimals
		{"1", "2", false}, {"-1", "1", false}, {"1e21", "1e20", false},
	} {
		if got := fp(c.a) == fp(c.b); got != c.equal {
			t.Errorf("%s and %s: equal fingerprints %v, want %v", c.a, c.b, got, c.equal)
		}
	}
}

// TestNumbersAsRFC8785: a float64's shortest spelling, in any exponent form,
// is written as RFC 8785 writes that float64, which is how encoding/json
// (ECMAScript's layout) prints it.
func TestNumbersAsRFC8785(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range []string{strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'f', -1, 64), strconv.FormatFloat(f, 'E', -1, 64)} {
			got, err := JSON(json.RawMessage(lit))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("JSON(%s) = %s, %v; want %s", lit, got, err, want)
			}
		}
	}
}
