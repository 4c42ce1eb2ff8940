package judge

import (
	"encoding/json"
	"testing"
)

func TestFingerprint(t *testing.T) {
	fp := func(s string) fingerprints { return fingerprint(json.RawMessage(s)) }
	for _, tc := range []struct {
		a, b           string
		literal, value bool // equal as written, equal by value
	}{
		{`{"a":1,"b":2}`, `{ "b": 2, "a": 1 }`, true, true},
		{`{"n":1}`, `{"n":1.0}`, false, true},
		{`{"n":1e2}`, `{"n":100}`, false, true},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`, false, false},
		{`{"x":{"y":[1,{"z":"a"}]}}`, `{"x":{"y":[1,{"z":"b"}]}}`, false, false},
		{`{"s":"1"}`, `{"s":1}`, false, false},
	} {
		a, b := fp(tc.a), fp(tc.b)
		if (a.literal == b.literal) != tc.literal || (a.value == b.value) != tc.value {
			t.Errorf("%s vs %s: literal %q/%q value %q/%q", tc.a, tc.b, a.literal, b.literal, a.value, b.value)
		}
	}
}

func TestDuplicateMembers(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"a":1,"b":2}`:             false,
		`{"a":1,"a":2}`:             true,
		`{"a":{"b":1,"b":2}}`:       true,
		`{"a":{"b":1},"b":{"b":1}}`: false,
		`[{"a":1},{"a":1}]`:         false,
		`{"a":[{"x":1,"x":1}]}`:     true,
		`{"a":"a","b":"a"}`:         false,
	} {
		if got := duplicateMembers(json.RawMessage(raw)); got != want {
			t.Errorf("duplicateMembers(%s) = %v, want %v", raw, got, want)
		}
	}
}
