package gateway_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
)

// TestOutcomeUnknown: a charged operation whose owner has written nothing for
// the stale-lock threshold is answered outcome_unknown, not retryable, with
// the receipt of its debit, and never run again; before the threshold it is
// in progress. Keyed and unkeyed alike: both reach the same record.
func TestOutcomeUnknown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   bool
		after time.Duration // on top of the stale-lock threshold
		want  string
	}{
		{"keyed, before the threshold", true, -2 * time.Second, gateway.ReasonInProgress},
		{"keyed, past the threshold", true, time.Second, gateway.ReasonOutcomeUnknown},
		{"keyed, at the threshold", true, 0, gateway.ReasonOutcomeUnknown},
		{"unkeyed, past the threshold", false, time.Second, gateway.ReasonOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runScenario(t, sqliteBackend(), func(e *env) error {
				r := req{}
				if tc.key {
					r.key = "k-" + uuid.NewString()
				}
				f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
				a := e.async(r)
				e.await(f, a) // charged, not dispatched
				e.clk.Advance(e.g.Settings().StaleLock + tc.after)
				_, errB := e.call(r)
				var ref *gateway.Refusal
				if !errors.As(errB, &ref) {
					return errors.New("B: want a refusal, got " + reason(errB))
				}
				receipt, _ := ref.Data["receipt"].(string)
				e.release(f)
				ra, errA := ok(e.wait(a))
				n, err := e.dispatches(e.write)
				l := e.ledger()
				checks := []error{errA, err, want("B's reason", ref.Reason, tc.want),
					want("B retryable", ref.Retryable, tc.want == gateway.ReasonInProgress),
					want("dispatches", n, 1), want("debits", l.debits, 1)}
				if tc.want == gateway.ReasonOutcomeUnknown {
					checks = append(checks, want("B's data.receipt", receipt, ra.ID))
				}
				return first(checks...)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
