package main

import (
	"bytes"
	"strings"
	"testing"
)

// A report edited to say passed, its history untouched (one keyed
// operation, a replay, and two debits of 3 in the ledger reads), is
// contradicted by recheck: the ledger check recomputed from the history's
// reads finds 2 debits where the report says 1 held.
func TestRecheckRefusesAForgedPass(t *testing.T) {
	var out, errb bytes.Buffer
	code := recheckCmd([]string{"testdata/recheck/forged-passed"}, &out, &errb)
	if code != 1 {
		t.Fatalf("recheck exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"retry-01 (passed): the ledger has 1 debits and 0 refunds (recomputed from history): violated",
		"retry-01 (passed): the wallet's ledger holds one debit of its price for each operation that ran, and nothing else (recomputed from history): violated",
		"2 debit(s), 0 refund(s)",
		"1 scenarios contradicted by their history",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("recheck output lacks %q:\n%s", want, out.String())
		}
	}
}
