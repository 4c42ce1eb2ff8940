package reports

import (
	"encoding/json"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
)

func dispatchOf(token string) judge.Op {
	b, _ := json.Marshal(judge.EffectValue{Token: token})
	return judge.Op{F: judge.FDispatch, Type: judge.OK, Value: b}
}

func TestRecheckFindsAHistoryThatContradictsTheVerdict(t *testing.T) {
	hist := []judge.Op{dispatchOf("op1-x"), dispatchOf("op1-x")}
	honest := Scenario{History: hist, Checks: []judge.Check{{Step: "the probe saw op1-x dispatched 1 times", State: judge.Violated, Kind: judge.KindProbeCount, Args: judge.Args("token", "op1-x", "n", 1)}}}
	if _, mismatch := Recheck(honest); mismatch {
		t.Error("a failed check that the history confirms was reported as a mismatch")
	}
	forged := Scenario{History: hist, Checks: []judge.Check{{Step: "the probe saw op1-x dispatched 1 times", State: judge.Held, Kind: judge.KindProbeCount, Args: judge.Args("token", "op1-x", "n", 1)}}}
	checks, mismatch := Recheck(forged)
	if !mismatch || len(checks) != 1 || checks[0].State == judge.Held {
		t.Errorf("Recheck(forged) = %+v, %v; want one failing recomputed check and a mismatch", checks, mismatch)
	}
}

func TestRecheckHoldsTheVerdictAndTheLedgerToTheHistory(t *testing.T) {
	step := func(i int) *int { return &i }
	read := func(r judge.LedgerRead) judge.Op {
		b, _ := json.Marshal(r)
		return judge.Op{Process: "ledger", Type: "ok", F: judge.FLedgerRead, Value: b, Step: step(2)}
	}
	twoDebits := read(judge.LedgerRead{Baseline: 100, Balance: 94, Prices: map[string]int64{"write": 3},
		Entries: []judge.EffectValue{{Kind: judge.EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: judge.EntryDebit, Amount: 3, Receipt: "r1"}}})
	steps := []StepResult{{Text: "a wallet"}, {Text: "a call"}, {Text: "the ledger has 1 debit and 0 refunds"}}
	ledgerCheck := func(state string) []judge.Check {
		return []judge.Check{{Step: "the ledger has 1 debits and 0 refunds", State: state, StepIndex: 2, Kind: judge.KindLedgerHas, Args: judge.Args("debits", 1, "refunds", 0)}}
	}
	oneDebit := read(judge.LedgerRead{Baseline: 100, Balance: 97, Prices: map[string]int64{"write": 3},
		Entries: []judge.EffectValue{{Kind: judge.EntryDebit, Amount: 3, Receipt: "r1"}}})
	// The end-of-run reread saw a second debit written after the check.
	late := append(ledgerCheck(judge.Held), judge.Check{Step: "the ledger has 1 debits and 0 refunds" + LateSuffixes[1], State: judge.Violated, StepIndex: 2, Kind: judge.KindLedgerHas, Args: judge.Args("debits", 1, "refunds", 0, "late", judge.LateRun)})
	for _, tc := range []struct {
		name     string
		s        Scenario
		mismatch bool
	}{
		{"a late debit the reread saw", Scenario{Verdict: judge.Failed, Steps: steps, History: []judge.Op{oneDebit, twoDebits}, Checks: late}, false},
		{"a late debit's check edited out", Scenario{Verdict: judge.Passed, Steps: steps, History: []judge.Op{oneDebit, twoDebits}, Checks: ledgerCheck(judge.Held)}, true},
		{"a failed ledger check the history confirms", Scenario{Verdict: judge.Failed, Steps: steps, History: []judge.Op{twoDebits}, Checks: ledgerCheck(judge.Violated)}, false},
		{"a held ledger check over two debits", Scenario{Verdict: judge.Passed, Steps: steps, History: []judge.Op{twoDebits}, Checks: ledgerCheck(judge.Held)}, true},
		{"passed with no check", Scenario{Verdict: judge.Passed, Steps: steps}, true},
		{"passed with a Then step's violated check removed", Scenario{Verdict: judge.Passed, History: []judge.Op{oneDebit},
			Steps:  []StepResult{{Keyword: "When ", Text: "a call"}, {Keyword: "Then ", Text: `"A" gets a result`}, {Keyword: "And ", Text: "the ledger has 1 debit and 0 refunds"}},
			Checks: []judge.Check{{Step: "A gets a result", State: judge.Held, StepIndex: 1, Kind: judge.KindGetsResult, Args: judge.Args("client", "A")}}}, true},
		{"passed with a check not observed", Scenario{Verdict: judge.Passed, Steps: steps, Checks: []judge.Check{{Step: "x", State: judge.NotObserved}}}, true},
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
	outcome := func(typ, receipt, errText string, at int) judge.Op {
		b, _ := json.Marshal(judge.CallValue{Token: "op1", Receipt: receipt, Error: errText})
		return judge.Op{Process: "A", F: judge.FCall, Type: typ, Value: b, Step: step(at)}
	}
	rd, _ := json.Marshal(judge.LedgerRead{Baseline: 100, Balance: 97, Prices: map[string]int64{"write": 3},
		Entries: []judge.EffectValue{{Kind: judge.EntryDebit, Amount: 3, Receipt: "r1"}}})
	s := Scenario{Verdict: judge.Passed,
		Steps: []StepResult{{Text: "a call"}, {Text: "a retry"}, {Text: `the last answer of "A" carries the receipt the ledger debited`}},
		History: []judge.Op{outcome("info", "", "EOF", 0), outcome("ok", "r-fresh", "", 1),
			{Process: "ledger", Type: "ok", F: judge.FLedgerRead, Value: rd, Step: step(2)}},
		Checks: []judge.Check{{Step: "the last answer of A carries the receipt the ledger debited", State: judge.Held, StepIndex: 2, Kind: judge.KindCarriesDebited, Args: judge.Args("client", "A")}}}
	if checks, mismatch := Recheck(s); !mismatch || len(checks) == 0 || checks[0].State == judge.Held {
		t.Errorf("Recheck = %+v, %v; want the receipt check recomputed violated", checks, mismatch)
	}
}

// A refusal check is recomputed with its reason: a report that says "refused
// with idempotency_key_reused" held over a refusal for another reason is
// contradicted, whether the reason is data.reason or the profile's meaning.
func TestRecheckTheRefusalReason(t *testing.T) {
	step := func(i int) *int { return &i }
	refusal := func(v judge.CallValue) Scenario {
		b, _ := json.Marshal(v)
		return Scenario{Verdict: judge.Passed,
			Steps:   []StepResult{{Text: "a call"}, {Keyword: "Then ", Text: `"B" is refused with idempotency_key_reused`}},
			History: []judge.Op{{Process: "B", F: judge.FCall, Type: "fail", Value: b, Step: step(0)}},
			Checks:  []judge.Check{{Step: "B is refused with idempotency_key_reused", State: judge.Held, StepIndex: 1, Kind: judge.KindRefused, Args: judge.Args("client", "B", "reason", judge.ReasonKeyReused, "retryable", false)}}}
	}
	for _, tc := range []struct {
		name     string
		v        judge.CallValue
		mismatch bool
	}{
		{"its data.reason", judge.CallValue{Reason: judge.ReasonKeyReused, Status: 200}, false},
		{"another data.reason", judge.CallValue{Reason: "invalid_arguments", Status: 200}, true},
		{"the profile's meaning", judge.CallValue{Reason: "E_REUSE", Status: 409, Means: []string{judge.ReasonKeyReused}}, false},
		{"a meaning other than the check's", judge.CallValue{Reason: judge.ReasonKeyReused, Status: 409, Means: []string{judge.ReasonKeyRequired}}, true},
		{"a 5xx", judge.CallValue{Reason: judge.ReasonKeyReused, Status: 500}, true},
		{"a final refusal marked retryable", judge.CallValue{Reason: judge.ReasonKeyReused, Status: 200, Retryable: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if checks, mismatch := Recheck(refusal(tc.v)); mismatch != tc.mismatch {
				t.Errorf("Recheck mismatch = %v, want %v: %+v", mismatch, tc.mismatch, checks)
			}
		})
	}
}
