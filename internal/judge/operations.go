package judge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// operation is what the history shows of one operation token: its calls'
// outcomes and its effects.
type operation struct {
	token, key string
	reusedFrom string   // the token that first used the key, when this one reuses it
	receipts   []string // distinct receipts of its results, in order
	results    int
	refusals   []string // reasons of its definite refusals
	misrefused []string // those whose reason is not the one its kind of call may be refused with
	unknown    []string // outcomes that are neither
	foreign    []string // tokens of other operations its results carried
	dispatches int
}

// operations groups the history of process (every process when "") by
// operation token, in order of first invocation.
func operations(ops []Op, process string) ([]*operation, map[string]*operation) {
	var order []*operation
	byToken := map[string]*operation{}
	firstOfKey := map[string]string{}
	for _, op := range ops {
		if op.F != FCall || (process != "" && op.Process != process) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) != nil || v.Token == "" {
			continue
		}
		o := byToken[v.Token]
		if o == nil {
			o = &operation{token: v.Token, key: v.Key}
			if v.Key != "" {
				if first, ok := firstOfKey[v.Key]; ok {
					o.reusedFrom = first
				} else {
					firstOfKey[v.Key] = v.Token
				}
			}
			byToken[v.Token] = o
			order = append(order, o)
		}
		switch {
		case op.Type == "invoke":
		case v.Status >= 500:
			// A 5xx is never an answer the client can act on (docs/wire.md),
			// whatever its body says.
			o.unknown = append(o.unknown, fmt.Sprintf("%s%s (HTTP %d)", v.Reason, v.Error, v.Status))
		case op.Type == "ok":
			o.results++
			if !containsStr(o.receipts, v.Receipt) {
				o.receipts = append(o.receipts, v.Receipt)
			}
			if v.Served != "" && v.Served != v.Token && !containsStr(o.foreign, v.Served) {
				o.foreign = append(o.foreign, v.Served)
			}
		case op.Type == "fail":
			o.refusals = append(o.refusals, v.Reason)
			if want := o.refusalReason(); want != "" && !v.MeansReason(want) {
				o.misrefused = append(o.misrefused, v.Reason)
			}
		case op.Type == "info":
			if v.ReadRetryable() && (v.Reason != "" || v.HTTPOnly) {
				continue // an honest in-progress answer: the retry decides
			}
			o.unknown = append(o.unknown, v.Reason+v.Error)
		}
	}
	n := dispatchCounts(ops)
	for _, o := range order {
		o.dispatches = n[o.token]
	}
	return order, byToken
}

// refusalReason is the one reason an operation may be refused with, ""
// when no refusal is right (a key's first use must run): a reused key is
// idempotency_key_reused; an unkeyed call, which either runs or gets no
// key at all, idempotency_key_required. Any other refusal (insufficient
// funds on a full wallet, unknown_tool for a listed tool) is the gateway
// turning away work it should have done.
func (o *operation) refusalReason() string {
	switch {
	case o.reusedFrom != "":
		return ReasonKeyReused
	case o.key == "":
		return ReasonKeyRequired
	}
	return ""
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// EveryOperationAnswered holds that each operation a client made got one
// outcome: a key's first operation ran (results, all with one receipt); an
// operation reusing another's key with other arguments was refused with
// idempotency_key_reused; an unkeyed one either ran once or was refused
// every time with idempotency_key_required. A gateway that
// refuses every call, or serves one operation's result for another, fails.
func EveryOperationAnswered(ops []Op, process string) (ok bool, expected, actual string) {
	order, _ := operations(ops, process)
	var bad []string
	for _, o := range order {
		if why := o.answerFault(); why != "" {
			bad = append(bad, fmt.Sprintf("%s: %s", o.token, why))
		}
	}
	expected = "each keyed operation answered with results sharing one receipt and its own content, each reuse of a key with other arguments refused with " + ReasonKeyReused + ", each unkeyed operation run once or refused every time with " + ReasonKeyRequired + ", never an HTTP 5xx"
	actual = fmt.Sprintf("%d operation(s), %d answered wrongly", len(order), len(bad))
	if len(bad) > 0 {
		actual += ": [" + strings.Join(bad, "; ") + "]"
	}
	return len(order) > 0 && len(bad) == 0, expected, actual
}

func (o *operation) answerFault() string {
	switch {
	case len(o.unknown) > 0:
		return fmt.Sprintf("answers with no outcome %q", o.unknown)
	case len(o.foreign) > 0:
		return fmt.Sprintf("result(s) %q carry the content of operation(s) %q", o.receipts, o.foreign)
	case o.reusedFrom != "":
		if o.results > 0 {
			return fmt.Sprintf("key %s (first used by %s) reused with other arguments got result(s) %q, want a refusal", o.key, o.reusedFrom, o.receipts)
		}
		if len(o.misrefused) > 0 {
			return fmt.Sprintf("key %s (first used by %s) reused with other arguments refused %q, want %s", o.key, o.reusedFrom, o.misrefused, ReasonKeyReused)
		}
	case len(o.receipts) > 1:
		return fmt.Sprintf("%d results with %d receipts %q, want one", o.results, len(o.receipts), o.receipts)
	case o.key != "" && len(o.refusals) > 0:
		return fmt.Sprintf("key %s refused %q, want it to run", o.key, o.refusals)
	case o.results > 0 && len(o.refusals) > 0:
		return fmt.Sprintf("unkeyed: results %q and refusals %q, want one or the other", o.receipts, o.refusals)
	case len(o.misrefused) > 0:
		return fmt.Sprintf("unkeyed: refused %q, want a result or %s", o.misrefused, ReasonKeyRequired)
	case o.results == 0 && len(o.refusals) == 0:
		return "never answered"
	}
	return ""
}

// BankInvariant holds per operation: each operation that ran was
// dispatched once and charged once at price (one debit under its receipt,
// net of refunds), each refused one neither, no receipt answers two
// operations, and no debit belongs to no operation. A total alone would let
// one operation be charged twice and another never.
func BankInvariant(ops []Op, price int64) (ok bool, expected, actual string) {
	order, _ := operations(ops, "")
	netOf := map[string]int64{}
	debitsOf := map[string]int{}
	var net int64
	unreceipted := 0
	var bad []string
	for _, op := range ops {
		var v EffectValue
		if (op.F != FDebit && op.F != FRefund && op.F != FEntry) || json.Unmarshal(op.Value, &v) != nil {
			continue
		}
		if op.F == FEntry {
			// A fee, a hold, a charge of any other name is still money the
			// wallet shows moving for no dispatch's price.
			bad = append(bad, fmt.Sprintf("a %q entry of %d credits", v.Kind, v.Amount))
			continue
		}
		if v.Receipt == "" {
			unreceipted++
		}
		if op.F == FDebit {
			net += v.Amount
			netOf[v.Receipt] += v.Amount
			debitsOf[v.Receipt]++
		} else {
			net -= v.Amount
			netOf[v.Receipt] -= v.Amount
			debitsOf[v.Receipt]--
		}
	}
	owner := map[string]string{}
	ran := 0
	for _, o := range order {
		for _, r := range o.receipts {
			if prev, dup := owner[r]; dup {
				bad = append(bad, fmt.Sprintf("receipt %s answers both %s and %s", r, prev, o.token))
			}
			owner[r] = o.token
		}
		switch {
		case o.results > 0:
			ran++
			if o.dispatches != 1 {
				bad = append(bad, fmt.Sprintf("%s ran (receipt %s) with %d dispatch(es)", o.token, strings.Join(o.receipts, ","), o.dispatches))
			}
			if unreceipted == 0 {
				var n int
				var amount int64
				for _, r := range o.receipts {
					n += debitsOf[r]
					amount += netOf[r]
				}
				if n != 1 || amount != price {
					bad = append(bad, fmt.Sprintf("%s charged %d time(s), %d credits in all, want once at %d", o.token, n, amount, price))
				}
			}
		case o.dispatches > 0:
			bad = append(bad, fmt.Sprintf("%s dispatched %d time(s) but never answered with a result", o.token, o.dispatches))
		}
	}
	if unreceipted == 0 {
		var orphans []string
		for r, amount := range netOf {
			if _, ok := owner[r]; !ok && amount != 0 {
				orphans = append(orphans, fmt.Sprintf("%s %d", r, amount))
			}
		}
		sort.Strings(orphans)
		if len(orphans) > 0 {
			bad = append(bad, "charges of no operation's receipt: "+strings.Join(orphans, ", "))
		}
	}
	want := price * int64(ran)
	if net != want {
		bad = append(bad, fmt.Sprintf("net debits %d, want %d x %d", net, price, ran))
	}
	expected = fmt.Sprintf("each of the %d operation(s) that ran dispatched once and charged once at %d (net %d), nothing else charged", ran, price, want)
	actual = fmt.Sprintf("net debits %d", net)
	if unreceipted > 0 {
		actual += fmt.Sprintf(" (%d ledger entries without a receipt: per-operation charges not traced)", unreceipted)
	}
	if len(bad) > 0 {
		actual += "; " + strings.Join(bad, "; ")
	}
	return len(bad) == 0, expected, actual
}
