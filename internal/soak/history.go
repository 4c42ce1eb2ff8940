package soak

import (
	"fmt"
	"sort"
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
	Receipt string `json:"receipt,omitempty"` // a result's, or the charge an error names (data.receipt)
	Token   string `json:"token,omitempty"`   // the probe token in the result
	IsError bool   `json:"is_error,omitempty"`
	Reason  string `json:"reason,omitempty"` // data.reason of an error
	// Retryable is the error's data.retryable: whether re-sending can help.
	Retryable bool          `json:"retryable,omitempty"`
	Detail    string        `json:"detail,omitempty"`
	Latency   time.Duration `json:"latency"` // 0 for an abandoned call
	// Start and End are when the call was sent and when its answer came
	// (or the client gave up): the model judges overlapping calls by them.
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Status int       `json:"status,omitempty"` // HTTP status of an answer
	// Result is what the model keeps of a result: the digest of what a
	// replay must return whole, its resultType and whether it has content.
	Result judge.CallValue `json:"result,omitzero"`
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

// History is everything the model needs: the gateways' window and
// stale-lock threshold, the operations as the client saw them, the probe's
// own dispatch counts and the ledgers read back. It holds no gateway
// internals, so a fake one tests the judging.
type History struct {
	Tool             string         `json:"tool"`
	Price            int64          `json:"price"`
	WindowSeconds    int64          `json:"window_seconds"` // effective unkeyed window, 0 unknown
	StaleLockSeconds int64          `json:"stale_lock_seconds,omitempty"`
	Ops              []Op           `json:"ops"`
	Probe            map[string]int `json:"probe"` // dispatches per token, as the probe counted them
	Wallets          []Wallet       `json:"wallets"`
	// GatewayDispatches is the length of the gateway's own dispatch log for
	// the tool over every wallet (a figure beside the probe's count); -1
	// when it was not read.
	GatewayDispatches int `json:"gateway_dispatches"`
}

// Violation is a check of the model that the soak's history violated.
type Violation struct {
	Check    string `json:"check"` // the model's kind of check: answer, dispatches, ledger, decided, shape
	Harm     string `json:"harm"`
	Step     string `json:"step"`
	Op       string `json:"op,omitempty"` // the probe token of the operation, when the check names one
	Wallet   string `json:"wallet,omitempty"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s (%s, %s): expected %s, got %s", v.Step, v.Check, v.Harm, v.Expected, v.Actual)
}

// planned reports whether attempt j's answer is the one the operation's
// fault was armed to give (a figure: the model judges every answer). The
// fault takes one hit and its wallet is the operation's, so only the first
// call can meet it.
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
