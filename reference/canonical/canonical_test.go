package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
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
		{"numbers exact", `{"a":1.0,"b":1,"c":1e0,"d":-0,"e":12345678901234567890123}`, `{"a":1.0,"b":1,"c":1e0,"d":-0,"e":12345678901234567890123}`},
		{"exponent forms", `[1E+2,1e-2,0.5]`, `[1E+2,1e-2,0.5]`},
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
	if a == c {
		t.Fatalf("1 and 1.0 share a fingerprint")
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
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}
