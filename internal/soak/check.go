package soak

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Kind classifies one call's answer.
type Kind string

// What a call can end with.
const (
	// KindResult is a tool result carrying a receipt.
	KindResult Kind = "result"
	// KindInProgress is the retryable idempotency_in_progress refusal.
	KindInProgress Kind = "in_progress"
	// KindAbandoned is a call the client gave up on before its answer (a
	// drop the workload planned): no answer, and none was expected.
	KindAbandoned Kind = "abandoned"
	// KindTransport is a call that got no answer although the client waited
	// for one: the connection broke or timed out.
	KindTransport Kind = "transport"
	// KindError is any other JSON-RPC error answer.
	KindError Kind = "error"
)

// Attempt is one call sent for an operation and what came back.
type Attempt struct {
	Proc    int    `json:"proc"` // gateway process it went to
	Kind    Kind   `json:"kind"`
	Receipt string `json:"receipt,omitempty"`
	Token   string `json:"token,omitempty"` // the probe token in the result
	IsError bool   `json:"is_error,omitempty"`
	Reason  string `json:"reason,omitempty"` // data.reason of an error
	// Retryable is the error's data.retryable: whether re-sending can help.
	Retryable bool          `json:"retryable,omitempty"`
	Detail    string        `json:"detail,omitempty"`
	Latency   time.Duration `json:"latency"` // 0 for an abandoned call
}

// Op is one logical operation and every call sent for it.
type Op struct {
	Index  int    `json:"index"`
	Token  string `json:"token"` // unique probe token in its arguments
	Key    string `json:"key,omitempty"`
	Wallet string `json:"wallet"`
	// Shape is how its first call went out. For ShapeGatewayDrop a
	// drop_response fault was armed for it, so that call's broken
	// connection is expected; for ShapeFailBefore a fail at
	// dispatch.before, so that call's dispatch_failed is. Either way Wallet
	// is the operation's own.
	Shape    Shape     `json:"shape"`
	Attempts []Attempt `json:"attempts"`
}

// Settled reports whether a call of the operation got a result.
func (o *Op) Settled() bool {
	for _, a := range o.Attempts {
		if a.Kind == KindResult {
			return true
		}
	}
	return false
}

// Wallet is a wallet's state read back after the workload.
type Wallet struct {
	ID      string              `json:"id"`
	Balance int64               `json:"balance"`
	Ledger  []judge.LedgerEntry `json:"ledger"`
}

// History is everything the checks need: the operations as the client saw
// them, the probe's own dispatch counts and the ledgers read back. It holds
// no gateway internals, so a fake one tests the checks.
type History struct {
	Tool    string         `json:"tool"`
	Price   int64          `json:"price"`
	Ops     []Op           `json:"ops"`
	Probe   map[string]int `json:"probe"` // dispatches per token, as the probe counted them
	Wallets []Wallet       `json:"wallets"`
	// GatewayDispatches is the length of the gateway's own dispatch log for
	// the tool over every wallet; -1 when it was not read.
	GatewayDispatches int `json:"gateway_dispatches"`
}

// Violation is one broken invariant.
type Violation struct {
	Check    string `json:"check"`
	Op       string `json:"op,omitempty"` // "#index token"
	Wallet   string `json:"wallet,omitempty"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

func (v Violation) String() string {
	s := v.Check
	if v.Op != "" {
		s += " op " + v.Op
	}
	if v.Wallet != "" {
		s += " wallet " + v.Wallet
	}
	return fmt.Sprintf("%s: expected %s, got %s", s, v.Expected, v.Actual)
}

// Check names.
const (
	CheckDispatch      = "one-dispatch"      // (a) probe count per settled operation
	CheckStrayDispatch = "stray-dispatch"    // a probe token no operation sent
	CheckDispatchLog   = "dispatch-log"      // the gateway's log against the probe
	CheckReceipt       = "same-receipt"      // (b) every result of an operation
	CheckForeign       = "own-result"        // a result that is another operation's
	CheckBalance       = "balance"           // (c) credits - debits + refunds
	CheckDebit         = "one-debit"         // (c) net debits per operation
	CheckStrayDebit    = "stray-debit"       // a debit no operation's receipt explains
	CheckRefund        = "refund"            // a planned failure's debit given back
	CheckDebitAmount   = "debit-amount"      // a debit other than the price
	CheckTotal         = "total-debited"     // (c) price × settled operations
	CheckAnswer        = "unexpected-answer" // (d) neither a result, in progress nor planned
	CheckSettled       = "settled"           // an operation that never got a result
)

// Check verifies the invariants over a finished history and returns every
// violation, in the report's order of checks, then by operation; none means
// the run was clean.
func Check(h History) []Violation {
	var vs []Violation
	add := func(v Violation) { vs = append(vs, v) }

	// receipt -> the operation whose results carry it, per wallet: a debit
	// booked on the wrong wallet is as wrong as a debit with no operation.
	type slot struct{ wallet, receipt string }
	owner := map[slot]int{}
	// wallet -> the operation with a planned pre-dispatch failure it
	// belongs to: its debits on receipts no result carries are that
	// operation's failed attempts, refunded or not.
	failing := map[string]int{}
	tokens := map[string]bool{}
	settled := 0
	for i := range h.Ops {
		o := &h.Ops[i]
		tokens[o.Token] = true
		if o.Shape == ShapeFailBefore {
			failing[o.Wallet] = i
		}
		checkAnswers(o, add)
		receipts := resultReceipts(o)
		for _, r := range receipts {
			owner[slot{o.Wallet, r}] = i
		}
		n := h.Probe[o.Token]
		if !o.Settled() {
			add(Violation{Check: CheckSettled, Op: opName(o), Wallet: o.Wallet,
				Expected: "a result within the retry bound", Actual: lastKind(o)})
			if n > 1 {
				add(Violation{Check: CheckDispatch, Op: opName(o), Wallet: o.Wallet,
					Expected: "at most 1 dispatch (unsettled)", Actual: fmt.Sprintf("%d dispatches", n)})
			}
			continue
		}
		settled++
		if n != 1 {
			add(Violation{Check: CheckDispatch, Op: opName(o), Wallet: o.Wallet,
				Expected: "1 dispatch", Actual: fmt.Sprintf("%d dispatches", n)})
		}
		if len(receipts) != 1 {
			add(Violation{Check: CheckReceipt, Op: opName(o), Wallet: o.Wallet,
				Expected: "one receipt on every result", Actual: fmt.Sprintf("%d receipts %v", len(receipts), receipts)})
		}
	}
	for _, tok := range sortedKeys(h.Probe) {
		if !tokens[tok] {
			add(Violation{Check: CheckStrayDispatch, Expected: "no dispatch of a token no operation sent",
				Actual: fmt.Sprintf("%d dispatches of %q", h.Probe[tok], tok)})
		}
	}
	if h.GatewayDispatches >= 0 {
		if total := sumCounts(h.Probe); h.GatewayDispatches != total {
			add(Violation{Check: CheckDispatchLog, Expected: fmt.Sprintf("%d entries (the probe's dispatches)", total),
				Actual: fmt.Sprintf("%d entries", h.GatewayDispatches)})
		}
	}

	// The bank: every wallet adds up, each operation is charged once. A
	// debit refunded on the same receipt nets to nothing (a failure before
	// dispatch), so only a receipt with a net charge needs an operation. In
	// the wallet of an operation with a planned failure, such a receipt is
	// that failure's attempt, whose debit must have been given back.
	net := map[int]int{} // operation -> debits - refunds
	// operation -> its unrefunded failed attempts, reported in operation
	// order as the other per-operation checks are, not in wallet order.
	unrefunded := map[int][]Violation{}
	var debited int64
	for _, w := range h.Wallets {
		var credits, debits, refunds int64
		stray := map[string]int{} // receipt -> debits - refunds no result carries
		for _, e := range w.Ledger {
			d := 0
			switch e.Kind {
			case "credit":
				credits += e.Amount
				continue
			case "debit":
				d, debits, debited = 1, debits+e.Amount, debited+e.Amount
				if e.Amount != h.Price {
					add(Violation{Check: CheckDebitAmount, Wallet: w.ID, Expected: fmt.Sprintf("debits of %d", h.Price),
						Actual: fmt.Sprintf("debit %s of %d", e.ID, e.Amount)})
				}
			case "refund":
				d, refunds, debited = -1, refunds+e.Amount, debited-e.Amount
			default:
				add(Violation{Check: CheckBalance, Wallet: w.ID, Expected: "credit, debit or refund entries",
					Actual: fmt.Sprintf("entry %s of kind %q", e.ID, e.Kind)})
				continue
			}
			if i, ok := owner[slot{w.ID, e.Receipt}]; ok {
				net[i] += d
			} else {
				stray[e.Receipt] += d
			}
		}
		for _, r := range sortedKeys(stray) {
			if stray[r] == 0 {
				continue
			}
			actual := fmt.Sprintf("%d net debits on receipt %q", stray[r], r)
			if i, ok := failing[w.ID]; ok {
				unrefunded[i] = append(unrefunded[i], Violation{Check: CheckRefund, Op: opName(&h.Ops[i]), Wallet: w.ID,
					Expected: "the failed attempt's debit refunded (net 0 on its receipt)", Actual: actual})
				continue
			}
			add(Violation{Check: CheckStrayDebit, Wallet: w.ID, Expected: "no net charge on a receipt no operation of this wallet got",
				Actual: actual})
		}
		if want := credits - debits + refunds; w.Balance != want {
			add(Violation{Check: CheckBalance, Wallet: w.ID,
				Expected: fmt.Sprintf("balance %d (credits %d - debits %d + refunds %d)", want, credits, debits, refunds),
				Actual:   fmt.Sprintf("balance %d", w.Balance)})
		}
	}
	for i := range h.Ops {
		vs = append(vs, unrefunded[i]...)
		o := &h.Ops[i]
		if o.Settled() && net[i] != 1 {
			add(Violation{Check: CheckDebit, Op: opName(o), Wallet: o.Wallet,
				Expected: "1 net debit", Actual: fmt.Sprintf("%d net debits", net[i])})
		}
	}
	if want := h.Price * int64(settled); debited != want {
		add(Violation{Check: CheckTotal, Expected: fmt.Sprintf("%d (price %d × %d settled operations)", want, h.Price, settled),
			Actual: fmt.Sprintf("%d debited net of refunds", debited)})
	}
	rank := map[string]int{}
	for i, c := range checks {
		rank[c.name] = i
	}
	sort.SliceStable(vs, func(i, j int) bool { return rank[vs[i].Check] < rank[vs[j].Check] })
	return vs
}

// checkAnswers flags every answer that is neither a result of this
// operation, an honest in-progress, nor the fault the workload planned.
func checkAnswers(o *Op, add func(Violation)) {
	for j, a := range o.Attempts {
		if planned(o, j) {
			continue
		}
		bad := ""
		switch a.Kind {
		case KindResult:
			if a.Token != o.Token {
				add(Violation{Check: CheckForeign, Op: opName(o), Wallet: o.Wallet,
					Expected: "a result of token " + o.Token, Actual: fmt.Sprintf("call %d: token %q, receipt %s", j, a.Token, a.Receipt)})
			}
			if a.Receipt == "" {
				bad = "a result without a receipt"
			} else if a.IsError {
				bad = "a tool error result (isError): " + a.Detail
			}
		case KindInProgress, KindAbandoned:
		case KindTransport:
			bad = "no answer: " + a.Detail
		default:
			bad = fmt.Sprintf("%s %s: %s", a.Kind, a.Reason, a.Detail)
		}
		if bad != "" {
			add(Violation{Check: CheckAnswer, Op: opName(o), Wallet: o.Wallet,
				Expected: "a result, a retryable in-progress or the planned fault", Actual: fmt.Sprintf("call %d (process %d): %s", j, a.Proc, bad)})
		}
	}
}

// planned reports whether attempt j's answer is the one the operation's
// fault was armed to give. The fault takes one hit and its wallet is the
// operation's, so only the first call can meet it: the same answer to any
// other call is the gateway's own doing.
func planned(o *Op, j int) bool {
	if j != 0 {
		return false
	}
	a := o.Attempts[j]
	switch o.Shape {
	case ShapeGatewayDrop:
		return a.Kind == KindTransport
	case ShapeFailBefore:
		return a.Kind == KindError && a.Reason == reasonDispatchFailed && a.Retryable
	}
	return false
}

// resultReceipts lists the distinct receipts of an operation's results, in
// the order they came.
func resultReceipts(o *Op) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range o.Attempts {
		if a.Kind == KindResult && a.Receipt != "" && !seen[a.Receipt] {
			seen[a.Receipt] = true
			out = append(out, a.Receipt)
		}
	}
	return out
}

func lastKind(o *Op) string {
	if len(o.Attempts) == 0 {
		return "no call sent"
	}
	a := o.Attempts[len(o.Attempts)-1]
	return fmt.Sprintf("%d calls, the last %s %s", len(o.Attempts), a.Kind, a.Reason)
}

func opName(o *Op) string { return "#" + strconv.Itoa(o.Index) + " " + o.Token }

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
