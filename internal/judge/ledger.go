package judge

import (
	"fmt"
	"sort"
	"strings"
)

// allowed is the amounts a debit of tool may have: its price (or one it had
// before the scenario re-priced it), or, when the ledger does not name the
// tool, any price of the scenario.
func (r LedgerRead) allowed(tool string) []int64 {
	var out []int64
	add := func(p int64) {
		if !containsInt(out, p) {
			out = append(out, p)
		}
	}
	if p, ok := r.Prices[tool]; ok {
		add(p)
		for _, e := range r.EarlierPrices[tool] {
			add(e)
		}
	} else {
		for t, p := range r.Prices {
			add(p)
			for _, e := range r.EarlierPrices[t] {
				add(e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func containsInt(xs []int64, x int64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// LedgerHas judges "the ledger has N debits and M refunds" from what a
// ledger read saw: exactly those entries and no entry of any other kind,
// every debit at its tool's price, every refund giving back its debit, and
// the balance moved by exactly the entries' net. Counting rows alone would
// pass a debit at twice the price or a fee on a refusal.
func LedgerHas(r LedgerRead, debits, refunds int) (ok bool, expected, actual string) {
	var d, rf int
	var net int64
	var wrong []string
	debitOf := map[string]int64{}
	for _, e := range r.Entries {
		if e.Kind == EntryDebit && e.Receipt != "" {
			debitOf[e.Receipt] = e.Amount
		}
	}
	for _, e := range r.Entries {
		switch e.Kind {
		case EntryDebit:
			d++
			net -= e.Amount
			if want := r.allowed(e.Tool); !containsInt(want, e.Amount) {
				wrong = append(wrong, fmt.Sprintf("debit %s of %d credits, price %s", e.Receipt, e.Amount, amounts(want)))
			}
		case EntryRefund:
			rf++
			net += e.Amount
			want, found := debitOf[e.Receipt]
			if !found && e.Receipt == "" {
				if ws := r.allowed(e.Tool); len(ws) == 1 {
					want, found = ws[0], true
				}
			}
			if !found || e.Amount != want {
				wrong = append(wrong, fmt.Sprintf("refund %s of %d credits, its debit %s", e.Receipt, e.Amount, orNone(want, found)))
			}
		default:
			wrong = append(wrong, fmt.Sprintf("a %q entry of %d credits", e.Kind, e.Amount))
		}
	}
	expected = fmt.Sprintf("%d debit(s) and %d refund(s) and no other entry", debits, refunds)
	wantDelta, single := int64(0), false
	if ps := r.allowed(""); len(ps) == 1 {
		single = true
		wantDelta = -ps[0] * int64(debits-refunds)
		expected += fmt.Sprintf(", each debit %d credits, each refund its debit's amount; balance %d (%+d from %d)", ps[0], r.Baseline+wantDelta, wantDelta, r.Baseline)
	} else {
		expected += fmt.Sprintf(", each debit its tool's price %s, each refund its debit's amount; the balance moved by the entries' net", prices(r.Prices))
	}
	ok = d == debits && rf == refunds && len(wrong) == 0 && r.Delta() == net && (!single || r.Delta() == wantDelta)
	var rows []string
	for _, e := range r.Entries {
		rows = append(rows, e.Row())
	}
	actual = fmt.Sprintf("%d debit(s), %d refund(s), %d other: [%s]; balance %d (%+d), entries net %+d",
		d, rf, len(r.Entries)-d-rf, strings.Join(rows, "; "), r.Balance, r.Delta(), net)
	if len(wrong) > 0 {
		actual += "; wrong: " + strings.Join(wrong, "; ")
	}
	return ok, expected, actual
}

// BalanceChanged judges "the wallet balance changed by delta".
func BalanceChanged(r LedgerRead, delta int64) (ok bool, expected, actual string) {
	return r.Delta() == delta,
		fmt.Sprintf("balance %d (%+d from %d)", r.Baseline+delta, delta, r.Baseline),
		fmt.Sprintf("balance %d (%+d)", r.Balance, r.Delta())
}

// Row is an entry as a failure message shows it.
func (e EffectValue) Row() string {
	s := fmt.Sprintf("%s %d", e.Kind, e.Amount)
	if e.Receipt != "" {
		s += " " + e.Receipt
	}
	if e.Tool != "" {
		s += " (" + e.Tool + ")"
	}
	return s
}

func amounts(xs []int64) string {
	if len(xs) == 0 {
		return "unknown"
	}
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, " or ")
}

func orNone(x int64, ok bool) string {
	if !ok {
		return "not in the ledger"
	}
	return fmt.Sprintf("%d credits", x)
}

func prices(m map[string]int64) string {
	var s []string
	for t, p := range m {
		s = append(s, fmt.Sprintf("%s=%d", t, p))
	}
	sort.Strings(s)
	return "(" + strings.Join(s, ", ") + ")"
}

// CarriesDebitedReceipt judges a retry's receipt against the debits a
// ledger read saw: it must be the receipt of a debit that was not refunded.
func CarriesDebitedReceipt(r LedgerRead, receipt string) (ok bool, expected, actual string) {
	refunded := map[string]bool{}
	for _, e := range r.Entries {
		if e.Kind == EntryRefund {
			refunded[e.Receipt] = true
		}
	}
	var paid []string
	for _, e := range r.Entries {
		if e.Kind == EntryDebit && !refunded[e.Receipt] {
			paid = append(paid, e.Receipt)
			ok = ok || (receipt != "" && e.Receipt == receipt)
		}
	}
	return ok, fmt.Sprintf("a result whose receipt is the one the ledger debited: %q", paid),
		fmt.Sprintf("a result with receipt %q", receipt)
}
