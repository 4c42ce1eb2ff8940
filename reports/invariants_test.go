package reports

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

func TestRecheckFindsAHistoryThatContradictsTheVerdict(t *testing.T) {
	hist := []Op{effect(FDispatch, EffectValue{Token: "op1-x"}), effect(FDispatch, EffectValue{Token: "op1-x"})}
	honest := Scenario{History: hist, Checks: []Check{{Step: "the probe saw op1-x dispatched 1 times", OK: false}}}
	if _, mismatch := Recheck(honest); mismatch {
		t.Error("a failed check that the history confirms was reported as a mismatch")
	}
	forged := Scenario{History: hist, Checks: []Check{{Step: "the probe saw op1-x dispatched 1 times", OK: true}}}
	checks, mismatch := Recheck(forged)
	if !mismatch || len(checks) != 1 || checks[0].OK {
		t.Errorf("Recheck(forged) = %+v, %v; want one failing recomputed check and a mismatch", checks, mismatch)
	}
}
