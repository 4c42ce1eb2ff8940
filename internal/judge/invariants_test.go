package judge

import (
	"encoding/json"
	"testing"
)

func effect(f string, v EffectValue) Op {
	b, _ := json.Marshal(v)
	return Op{F: f, Type: "ok", Value: b}
}

func TestAtMostOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []Op
		want bool
	}{
		{"once", []Op{effect(FDispatch, EffectValue{Token: "a"}), effect(FDispatch, EffectValue{Token: "b"})}, true},
		{"twice", []Op{effect(FDispatch, EffectValue{Token: "a"}), effect(FDispatch, EffectValue{Token: "a"})}, false},
	} {
		if ok, twice := AtMostOnce(tc.ops); ok != tc.want {
			t.Errorf("%s: AtMostOnce = %v %v, want %v", tc.name, ok, twice, tc.want)
		}
	}
}
