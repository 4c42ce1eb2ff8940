package judge

import (
	"encoding/json"
	"fmt"
	"sort"
)

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
