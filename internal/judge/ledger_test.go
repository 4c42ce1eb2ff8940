package judge

import "testing"

func TestLedgerHasWeighsEveryEntry(t *testing.T) {
	debit := func(amount int64, rc string) EffectValue {
		return EffectValue{Kind: EntryDebit, Amount: amount, Receipt: rc, Tool: "write"}
	}
	refund := func(amount int64, rc string) EffectValue {
		return EffectValue{Kind: EntryRefund, Amount: amount, Receipt: rc, Tool: "write"}
	}
	prices := map[string]int64{"write": 3}
	for _, tc := range []struct {
		name            string
		read            LedgerRead
		debits, refunds int
		want            bool
	}{
		{"one debit at the price", LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{debit(3, "r1")}, Prices: prices}, 1, 0, true},
		{"refunded then charged", LedgerRead{Baseline: 100, Balance: 97, Entries: []EffectValue{debit(3, "r1"), refund(3, "r1"), debit(3, "r2")}, Prices: prices}, 2, 1, true},
		{"a debit at twice the price", LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{debit(6, "r1")}, Prices: prices}, 1, 0, false},
		{"a fee on a refusal", LedgerRead{Baseline: 100, Balance: 95, Entries: []EffectValue{{Kind: "fee", Amount: 5}}, Prices: prices}, 0, 0, false},
		{"a balance the entries do not explain", LedgerRead{Baseline: 100, Balance: 90, Entries: []EffectValue{debit(3, "r1")}, Prices: prices}, 1, 0, false},
		{"a refund short of its debit", LedgerRead{Baseline: 100, Balance: 98, Entries: []EffectValue{debit(3, "r1"), refund(1, "r1"), debit(3, "r2")}, Prices: prices}, 2, 1, false},
		{"two debits where one was due", LedgerRead{Baseline: 100, Balance: 94, Entries: []EffectValue{debit(3, "r1"), debit(3, "r1")}, Prices: prices}, 1, 0, false},
		{"nothing, no tool", LedgerRead{Baseline: 100, Balance: 100}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, exp, act := LedgerHas(tc.read, tc.debits, tc.refunds)
			if ok != tc.want {
				t.Errorf("LedgerHas = %v, want %v\n  expected: %s\n  observed: %s", ok, tc.want, exp, act)
			}
		})
	}
}

func TestCarriesDebitedReceipt(t *testing.T) {
	r := LedgerRead{Entries: []EffectValue{
		{Kind: EntryDebit, Amount: 3, Receipt: "r1"}, {Kind: EntryRefund, Amount: 3, Receipt: "r1"}, {Kind: EntryDebit, Amount: 3, Receipt: "r2"}}}
	for rc, want := range map[string]bool{"r2": true, "r1": false, "r-fresh": false, "": false} {
		if ok, _, act := CarriesDebitedReceipt(r, rc); ok != want {
			t.Errorf("receipt %q: ok = %v, want %v (%s)", rc, ok, want, act)
		}
	}
}
