package reports

import (
	"encoding/json"
	"testing"
)

func effect(f string, v EffectValue) Op {
	b, _ := json.Marshal(v)
	return Op{F: f, Type: "ok", Value: b}
}

func TestBankInvariantAndAtMostOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ops      []Op
		price    int64
		bank, am bool
	}{
		{"one op charged once", []Op{effect(FDispatch, EffectValue{Token: "a"}), effect(FDebit, EffectValue{Amount: 3})}, 3, true, true},
		{"refunded failure then retry", []Op{
			effect(FDebit, EffectValue{Amount: 3}), effect(FRefund, EffectValue{Amount: 3}),
			effect(FDispatch, EffectValue{Token: "a"}), effect(FDebit, EffectValue{Amount: 3})}, 3, true, true},
		{"replay debited again", []Op{effect(FDispatch, EffectValue{Token: "a"}), effect(FDebit, EffectValue{Amount: 3}), effect(FDebit, EffectValue{Amount: 3})}, 3, false, true},
		{"dispatched twice, charged twice", []Op{
			effect(FDispatch, EffectValue{Token: "a"}), effect(FDispatch, EffectValue{Token: "a"}),
			effect(FDebit, EffectValue{Amount: 3}), effect(FDebit, EffectValue{Amount: 3})}, 3, false, false},
		{"kept the charge of a failure", []Op{effect(FDebit, EffectValue{Amount: 3})}, 3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, exp, act := BankInvariant(tc.ops, tc.price); ok != tc.bank {
				t.Errorf("BankInvariant = %v (%s vs %s), want %v", ok, exp, act, tc.bank)
			}
			if ok, twice := AtMostOnce(tc.ops); ok != tc.am {
				t.Errorf("AtMostOnce = %v %v, want %v", ok, twice, tc.am)
			}
		})
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
