package reports

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	n := map[string]int{}
	for _, op := range ops {
		var v EffectValue
		if op.F == FDispatch && json.Unmarshal(op.Value, &v) == nil {
			n[v.Token]++
		}
	}
	for tok, k := range n {
		if k > 1 {
			twice = append(twice, fmt.Sprintf("%s x%d", tok, k))
		}
	}
	sort.Strings(twice)
	return len(twice) == 0, twice
}

// Recheck recomputes, from a scenario's history alone, every check the
// scenario made about dispatches: the probe counts per operation token and
// at-most-once dispatch. Each returned check carries the recomputed outcome;
// Mismatch says whether it disagrees with what the run recorded.
func Recheck(s Scenario) (out []Check, mismatch bool) {
	count := map[string]int{}
	for _, op := range s.History {
		var v EffectValue
		if op.F == FDispatch && json.Unmarshal(op.Value, &v) == nil {
			count[v.Token]++
		}
	}
	// A count recorded when its step ran and found different at the end (a
	// late dispatch) has a companion check; the companion is the final word.
	superseded := map[string]bool{}
	for _, c := range s.Checks {
		for _, suffix := range LateSuffixes {
			if base, ok := strings.CutSuffix(c.Step, suffix); ok {
				superseded[base] = true
			}
		}
	}
	for _, c := range s.Checks {
		var tok string
		var n int
		if superseded[c.Step] {
			continue
		}
		switch {
		case scan(c.Step, "the probe saw %s dispatched %d times", &tok, &n):
			got := count[tok]
			rc := Check{Step: c.Step + " (recomputed from history)", OK: got == n,
				Expected: fmt.Sprintf("%d dispatch(es) of %s", n, tok), Actual: fmt.Sprintf("%d dispatch(es)", got)}
			out = append(out, rc)
			mismatch = mismatch || rc.OK != c.OK
		case c.Step == "no operation was dispatched twice":
			ok, twice := AtMostOnce(s.History)
			out = append(out, Check{Step: c.Step + " (recomputed from history)", OK: ok,
				Expected: "every token dispatched at most once", Actual: "dispatched more than once: [" + strings.Join(twice, ", ") + "]"})
			mismatch = mismatch || ok != c.OK
		}
	}
	return out, mismatch
}

// LateSuffixes end the step of a check that recounted a probe count once
// the probe settled (the scenario's end, or the run's).
var LateSuffixes = []string{" (still, once the probe settled)", " (still, at the end of the run)"}

func scan(s, format string, args ...any) bool {
	n, err := fmt.Sscanf(s, format, args...)
	return err == nil && n == len(args)
}
