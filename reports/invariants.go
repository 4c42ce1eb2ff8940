package reports

import (
	"encoding/json"
	"fmt"
	"sort"
)

// History events beside the client's invoke/ok/fail/info: the effects, each
// traced to the operation token it belongs to, so an invariant can be
// rechecked from history/<id>.ndjson alone.
const (
	FDispatch = "dispatch" // Value: EffectValue with Token
	FDebit    = "debit"    // Value: EffectValue with Amount and Receipt
	FRefund   = "refund"
	// FEntry is a ledger entry of another kind than debit or refund (a fee,
	// say): the history shows every entry the scenario made.
	FEntry = "ledger-entry"
)

// EffectValue is the value of a dispatch, debit or refund event, and of an
// entry in a ledger read.
type EffectValue struct {
	Token   string `json:"token,omitempty"`
	Amount  int64  `json:"amount,omitempty"`
	Receipt string `json:"receipt,omitempty"`
	Kind    string `json:"kind,omitempty"` // a ledger entry's kind, also one other than debit or refund
	Tool    string `json:"tool,omitempty"`
}

// AtMostOnce checks that no operation token was dispatched twice, and names
// the ones that were.
func AtMostOnce(ops []Op) (ok bool, twice []string) {
	for tok, k := range dispatchCounts(ops) {
		if k > 1 {
			twice = append(twice, fmt.Sprintf("%s x%d", tok, k))
		}
	}
	sort.Strings(twice)
	return len(twice) == 0, twice
}

// dispatchCounts counts the history's dispatches by operation token.
func dispatchCounts(ops []Op) map[string]int {
	n := map[string]int{}
	for _, op := range ops {
		var v EffectValue
		if op.F == FDispatch && json.Unmarshal(op.Value, &v) == nil {
			n[v.Token]++
		}
	}
	return n
}
