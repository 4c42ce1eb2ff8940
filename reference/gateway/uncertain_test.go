package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
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
		for _, b := range backends(t) {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				b.check(t)
				err := runScenario(t, b, func(e *env) error {
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
}

// TestSettle: an operator lists the uncertain operation and settles it.
// Completed: every retry replays the settled result under the debit's
// receipt, nothing runs again. Refunded: the debit is given back and the
// next retry runs the operation afresh. Either way the stalled owner, when
// it resumes, finds its operation settled and does not dispatch.
func TestSettle(t *testing.T) {
	for _, outcome := range []string{gateway.SettleCompleted, gateway.SettleRefunded} {
		for _, lowered := range []bool{false, true} {
			for _, b := range backends(t) {
				name := b.name + "/" + outcome
				if lowered {
					name += "/threshold-lowered"
				}
				t.Run(name, func(t *testing.T) {
					b.check(t)
					if err := runScenario(t, b, func(e *env) error { return e.settles(outcome, lowered) }); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// settles: an operation charged and stalled before its dispatch past the
// stale-lock threshold is answered outcome_unknown, listed uncertain and
// settled as outcome (once: a second settlement is refused); its owner,
// resumed after the settlement, runs nothing, and a retry is answered as the
// settlement says (completed: the settled result replayed, no dispatch, the
// debit kept; refunded: the debit given back, the retry run afresh).
// lowered halves the stale-lock threshold while the owner stalls, and moves
// the clock past the new one only: the operator settles by the threshold of
// now, so the owner must fence by it too, not by the one it began under.
func (e *env) settles(outcome string, lowered bool) error {
	settled := json.RawMessage(`{"content":[{"type":"text","text":"settled by an operator"}]}`)
	// after the retry that follows the settlement
	dispatches, debits, refunds := 0, 1, 0
	if outcome == gateway.SettleRefunded {
		dispatches, debits, refunds = 1, 2, 1
	}
	r := req{key: "k-" + uuid.NewString()}
	f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
	a := e.async(r)
	e.await(f, a)
	if lowered {
		set := e.g.Settings()
		set.StaleLock /= 2
		if err := e.g.SetSettings(set); err != nil {
			return err
		}
	}
	e.clk.Advance(e.g.Settings().StaleLock + time.Second)
	_, errB := e.call(r)
	us, err := e.g.Uncertain(e.ctx)
	if err != nil {
		return err
	}
	if len(us) != 1 {
		return fmt.Errorf("uncertain operations: %d, want 1", len(us))
	}
	u, rec, err := e.g.Settle(e.ctx, us[0].Record.Key, gateway.Settlement{Outcome: outcome, Result: settled})
	if err != nil {
		return err
	}
	_, _, errAgain := e.g.Settle(e.ctx, us[0].Record.Key, gateway.Settlement{Outcome: outcome, Result: settled})
	left, err := e.g.Uncertain(e.ctx)
	if err != nil {
		return err
	}
	e.release(f)
	oa := e.wait(a) // the stalled owner resumes after the settlement
	respC, errCall := e.call(r)
	rc, errC := ok(run(respC, errCall))
	n, err := e.dispatches(e.write)
	l := e.ledger()
	checks := []error{errC, err, want("B's reason", reason(errB), gateway.ReasonOutcomeUnknown),
		want("settled receipt", u.Receipt, us[0].Receipt), want("uncertain after settling", len(left), 0),
		want("settling twice", errors.Is(errAgain, store.ErrNotUncertain), true),
		want("dispatches", n, dispatches), want("debits", l.debits, debits), want("refunds", l.refunds, refunds)}
	switch outcome {
	case gateway.SettleCompleted:
		ra, errA := ok(oa)
		checks = append(checks, errA, want("state", rec.State, store.StateCompleted),
			want("owner's receipt", ra.ID, u.Receipt), want("retry's receipt", rc.ID, u.Receipt), want("retry replayed", rc.Replayed, true),
			want("retry's content", strings.Contains(string(respC.Result), "settled by an operator"), true))
	case gateway.SettleRefunded:
		checks = append(checks, want("state", rec.State, store.StateFailedRefunded),
			want("owner's reason", reason(oa.err), gateway.ReasonInProgress),
			want("retry ran afresh", rc.ID != u.Receipt && !rc.Replayed, true))
	}
	return first(checks...)
}
