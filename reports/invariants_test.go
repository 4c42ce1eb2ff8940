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

func TestRecheckHoldsTheVerdictAndTheLedgerToTheHistory(t *testing.T) {
	step := func(i int) *int { return &i }
	read := func(r LedgerRead) Op {
		b, _ := json.Marshal(r)
		return Op{Process: "ledger", Type: "ok", F: FLedgerRead, Value: b, Step: step(2)}
	}
	twoDebits := read(LedgerRead{Baseline: 100, Balance: 94, Prices: map[string]int64{"write": 3},
		Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
	steps := []StepResult{{Text: "a wallet"}, {Text: "a call"}, {Text: "the ledger has 1 debit and 0 refunds"}}
	ledgerCheck := func(state string) []Check {
		return []Check{{Step: "the ledger has 1 debits and 0 refunds", State: state, OK: state == Held, StepIndex: 2}}
	}
	oneDebit := read(LedgerRead{Baseline: 100, Balance: 97, Prices: map[string]int64{"write": 3},
		Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
	// The end-of-run reread saw a second debit written after the check.
	late := append(ledgerCheck(Held), Check{Step: "the ledger has 1 debits and 0 refunds" + LateSuffixes[1], State: Violated, StepIndex: 2})
	for _, tc := range []struct {
		name     string
		s        Scenario
		mismatch bool
	}{
		{"a late debit the reread saw", Scenario{Verdict: Failed, Steps: steps, History: []Op{oneDebit, twoDebits}, Checks: late}, false},
		{"a late debit's check edited out", Scenario{Verdict: Passed, Steps: steps, History: []Op{oneDebit, twoDebits}, Checks: ledgerCheck(Held)}, true},
		{"a failed ledger check the history confirms", Scenario{Verdict: Failed, Steps: steps, History: []Op{twoDebits}, Checks: ledgerCheck(Violated)}, false},
		{"a held ledger check over two debits", Scenario{Verdict: Passed, Steps: steps, History: []Op{twoDebits}, Checks: ledgerCheck(Held)}, true},
		{"passed with no check", Scenario{Verdict: Passed, Steps: steps}, true},
		{"passed with a Then step's violated check removed", Scenario{Verdict: Passed, History: []Op{oneDebit},
			Steps:  []StepResult{{Keyword: "When ", Text: "a call"}, {Keyword: "Then ", Text: `"A" gets a result`}, {Keyword: "And ", Text: "the ledger has 1 debit and 0 refunds"}},
			Checks: []Check{{Step: "A gets a result", State: Held, OK: true, StepIndex: 1}}}, true},
		{"passed with a check not observed", Scenario{Verdict: Passed, Steps: steps, Checks: []Check{{Step: "x", State: NotObserved}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks, mismatch := Recheck(tc.s)
			if mismatch != tc.mismatch {
				t.Errorf("Recheck mismatch = %v, want %v: %+v", mismatch, tc.mismatch, checks)
			}
		})
	}
}

// A retry served with a fresh receipt is recomputed from its outcome and
// the ledger read of its step: a report that says it held is contradicted.
func TestRecheckTheDebitedReceipt(t *testing.T) {
	step := func(i int) *int { return &i }
	outcome := func(typ, receipt, errText string, at int) Op {
		b, _ := json.Marshal(CallValue{Token: "op1", Receipt: receipt, Error: errText})
		return Op{Process: "A", F: FCall, Type: typ, Value: b, Step: step(at)}
	}
	rd, _ := json.Marshal(LedgerRead{Baseline: 100, Balance: 97, Prices: map[string]int64{"write": 3},
		Entries: []EffectValue{{Kind: EntryDebit, Amount: 3, Receipt: "r1"}}})
	s := Scenario{Verdict: Passed,
		Steps: []StepResult{{Text: "a call"}, {Text: "a retry"}, {Text: `the last answer of "A" carries the receipt the ledger debited`}},
		History: []Op{outcome("info", "", "EOF", 0), outcome("ok", "r-fresh", "", 1),
			{Process: "ledger", Type: "ok", F: FLedgerRead, Value: rd, Step: step(2)}},
		Checks: []Check{{Step: "the last answer of A carries the receipt the ledger debited", State: Held, OK: true, StepIndex: 2}}}
	if checks, mismatch := Recheck(s); !mismatch || len(checks) == 0 || checks[0].OK {
		t.Errorf("Recheck = %+v, %v; want the receipt check recomputed violated", checks, mismatch)
	}
}

// A refusal check is recomputed with its reason: a report that says "refused
// with idempotency_key_reused" held over a refusal for another reason is
// contradicted, whether the reason is data.reason or the profile's meaning.
func TestRecheckTheRefusalReason(t *testing.T) {
	step := func(i int) *int { return &i }
	refusal := func(v CallValue) Scenario {
		b, _ := json.Marshal(v)
		return Scenario{Verdict: Passed,
			Steps:   []StepResult{{Text: "a call"}, {Keyword: "Then ", Text: `"B" is refused with idempotency_key_reused`}},
			History: []Op{{Process: "B", F: FCall, Type: "fail", Value: b, Step: step(0)}},
			Checks:  []Check{{Step: "B is refused with idempotency_key_reused", State: Held, OK: true, StepIndex: 1}}}
	}
	for _, tc := range []struct {
		name     string
		v        CallValue
		mismatch bool
	}{
		{"its data.reason", CallValue{Reason: ReasonKeyReused, Status: 200}, false},
		{"another data.reason", CallValue{Reason: "invalid_arguments", Status: 200}, true},
		{"the profile's meaning", CallValue{Reason: "E_REUSE", Status: 409, Means: []string{ReasonKeyReused}}, false},
		{"a meaning other than the check's", CallValue{Reason: ReasonKeyReused, Status: 409, Means: []string{ReasonKeyRequired}}, true},
		{"a 5xx", CallValue{Reason: ReasonKeyReused, Status: 500}, true},
		{"a final refusal marked retryable", CallValue{Reason: ReasonKeyReused, Status: 200, Retryable: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if checks, mismatch := Recheck(refusal(tc.v)); mismatch != tc.mismatch {
				t.Errorf("Recheck mismatch = %v, want %v: %+v", mismatch, tc.mismatch, checks)
			}
		})
	}
}
