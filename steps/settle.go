package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// kindListedUncertain is the listing step's check, not recomputed from
// the history: the listing is the control API's, which the history does
// not hold. (The settled result's replay is: judge.KindSettledReplay.)
const kindListedUncertain = "listed-uncertain" // client

// settlement is the operator's decision a scenario made, for the steps
// after it.
type settlement struct {
	outcome string
	receipt string
	result  json.RawMessage // the settled CallToolResult, for completed
}

func registerSettle(sc *godog.ScenarioContext) {
	sc.Step(`^the operator lists the operation of "([^"]*)" as uncertain$`, listsUncertain)
	sc.Step(`^the operator settles the operation of "([^"]*)" as refunded$`, func(ctx context.Context, who string) error {
		return settleOperation(ctx, who, control.SettleRequest{Outcome: judge.SettleRefunded})
	})
	sc.Step(`^the operator settles the operation of "([^"]*)" as completed with (\{.*\})$`, func(ctx context.Context, who, result string) error {
		in, err := settledCompleted(ctx, result)
		if err != nil {
			return err
		}
		return settleOperation(ctx, who, in)
	})
	sc.Step(`^the last answer of "([^"]*)" replays the settled result$`, replaysSettled)
	// explore's forms: the operation may not be uncertain (a gateway that
	// renews its holder's lease answers in progress instead), nor the
	// target one that settles operations; then there is nothing to settle
	// and nothing happens.
	sc.Step(`^the operator settles the operation of "([^"]*)" as refunded, if it is listed uncertain$`, func(ctx context.Context, who string) error {
		return settleIfUncertain(ctx, who, control.SettleRequest{Outcome: judge.SettleRefunded})
	})
	sc.Step(`^the operator settles the operation of "([^"]*)" as completed with (\{.*\}), if it is listed uncertain$`, func(ctx context.Context, who, result string) error {
		in, err := settledCompleted(ctx, result)
		if err != nil {
			return err
		}
		return settleIfUncertain(ctx, who, in)
	})
}

// settledCompleted is the settlement of an operation as completed with the
// step's result, its placeholders filled in.
func settledCompleted(ctx context.Context, result string) (control.SettleRequest, error) {
	raw := json.RawMessage(getWorld(ctx).expand(result))
	if !json.Valid(raw) {
		return control.SettleRequest{}, fmt.Errorf("settled result %s: not JSON", result)
	}
	return control.SettleRequest{Outcome: judge.SettleCompleted, Result: raw}, nil
}

// settleIfUncertain settles who's operation when the target lists it
// uncertain, and does nothing when it does not, or lists none.
func settleIfUncertain(ctx context.Context, who string, in control.SettleRequest) error {
	w := getWorld(ctx)
	w.mu.Lock()
	why := w.notApplicableWhy
	w.mu.Unlock()
	op, receipt, err := w.uncertainOf(ctx, who)
	if errors.Is(err, godog.ErrSkip) {
		// No listing to settle from is no reason to stop the scenario.
		w.mu.Lock()
		w.notApplicableWhy = why
		w.mu.Unlock()
		return nil
	}
	if err == nil && op == nil {
		return nil
	}
	if err != nil {
		return err
	}
	return w.settleListed(ctx, who, op, receipt, in)
}

// lastOperation is who's last call as the history holds it (its token and
// wallet name the operation for the model) and the receipt its last answer
// named (a result's, or an outcome_unknown refusal's data.receipt).
func (w *world) lastOperation(who string) (call judge.CallValue, receipt string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	found := false
	for _, op := range w.history {
		if op.F != judge.FCall || op.Process != who {
			continue
		}
		var v judge.CallValue
		if json.Unmarshal(op.Value, &v) != nil {
			continue
		}
		if op.Type == judge.Invoke {
			call, receipt, found = v, "", true
		} else {
			receipt = v.Receipt
		}
	}
	if !found {
		return call, "", fmt.Errorf("%s has made no call", who)
	}
	return call, receipt, nil
}

// uncertainOf finds who's operation in the gateway's uncertain listing:
// the scenario wallet's operation whose debit is the receipt who's last
// answer named. A target whose control API lists none is not one the
// scenario is for: not applicable, naming the endpoint.
func (w *world) uncertainOf(ctx context.Context, who string) (*control.Operation, string, error) {
	if w.env.Control() == nil {
		// Said before who's answers are looked at: a target with no
		// control API is not one the step is for, whatever who got.
		return nil, "", w.notApplicable("uncertain operations are listed and settled through the control API (GET /control/operations?state=uncertain), and the target has none")
	}
	if _, err := w.lastAnswer(who); err != nil {
		return nil, "", err
	}
	_, receipt, err := w.lastOperation(who)
	if err != nil {
		return nil, "", err
	}
	ops, err := w.uncertainListing(ctx, "uncertain operations are listed through the control API")
	if err != nil {
		return nil, "", err
	}
	if receipt == "" {
		// Nothing names which of the wallet's uncertain operations is
		// who's: settling one would settle another client's.
		return nil, "", nil
	}
	for i, op := range ops {
		if op.Receipt == receipt {
			return &ops[i], receipt, nil
		}
	}
	return nil, receipt, nil
}

func listsUncertain(ctx context.Context, who string) error {
	w := getWorld(ctx)
	op, receipt, err := w.uncertainOf(ctx, who)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("the operator lists the operation of %s as uncertain", who)
	want := fmt.Sprintf("the wallet's operation listed uncertain, its receipt %q (the one outcome_unknown named)", receipt)
	if op == nil {
		if a, err := w.lastAnswer(who); err == nil && w.isReason(a, judge.ReasonInProgress) && w.retryableIs(a, true) {
			// who was answered in progress past the threshold, which the
			// age step admits only while the gateway does not list the
			// operation uncertain: its holder's lease was renewed, so
			// there is nothing to settle, and no fault in that.
			return w.notApplicable(fmt.Sprintf("%s was answered in progress and the gateway does not list its operation uncertain: the holder's lease was renewed, so there is nothing to settle", who))
		}
		return w.check(checkOf(kindListedUncertain, judge.HarmLostOutcome, "client", who), step, judge.CapWire, false, want, "not listed")
	}
	return w.check(checkOf(kindListedUncertain, judge.HarmLostOutcome, "client", who), step, judge.CapWire, true, want,
		fmt.Sprintf("listed: key %s, receipt %q, charged %d", op.Key, op.Receipt, op.Charged))
}

// settleOperation settles who's uncertain operation and records it, so the
// model holds every later call of it to the settlement.
func settleOperation(ctx context.Context, who string, in control.SettleRequest) error {
	w := getWorld(ctx)
	op, receipt, err := w.uncertainOf(ctx, who)
	if err != nil {
		return err
	}
	if op == nil {
		return fmt.Errorf("settle the operation of %s: the gateway does not list it as uncertain", who)
	}
	return w.settleListed(ctx, who, op, receipt, in)
}

// settleListed settles op, the uncertain operation the gateway listed for
// who's last call (receipt: the one its answer named), and records the
// settlement for the model.
func (w *world) settleListed(ctx context.Context, who string, op *control.Operation, receipt string, in control.SettleRequest) error {
	got, err := w.env.Control().SettleOperation(ctx, op.Key, in)
	if err != nil {
		return fmt.Errorf("settle the operation of %s (%s) %s: %w", who, op.Key, in.Outcome, err)
	}
	call, _, err := w.lastOperation(who)
	if err != nil {
		return err
	}
	if receipt == "" {
		receipt = got.Receipt
	}
	var digest string
	if in.Outcome == judge.SettleCompleted {
		digest = (&wire.Answer{Response: &wire.Response{Result: in.Result}}).ResultValue().Digest
	}
	w.noteEnv(judge.EnvValue{Kind: judge.EnvSettle, Outcome: in.Outcome, Token: call.Token, Wallet: call.Wallet, Tool: call.Tool, Receipt: receipt, Digest: digest, Client: who})
	w.mu.Lock()
	w.settled = &settlement{outcome: in.Outcome, receipt: receipt, result: in.Result}
	w.mu.Unlock()
	return nil
}

// memberText is a result member as ResultMember reads it, "(absent)" for
// none.
func memberText(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}

// replaysSettled holds who's last answer to the settled result: a result
// under the debit's receipt, marked a replay where the gateway marks
// replays, its content, structuredContent and isError the operator's.
func replaysSettled(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	w.mu.Lock()
	s := w.settled
	w.mu.Unlock()
	if s == nil || s.outcome != judge.SettleCompleted {
		return fmt.Errorf("the last answer of %s: no operation was settled completed", who)
	}
	step := fmt.Sprintf("the last answer of %s replays the settled result", who)
	id := checkOf(judge.KindSettledReplay, judge.HarmLostOutcome, "client", who)
	want := fmt.Sprintf("the settled result: receipt %q, marked a replay, the operator's content", s.receipt)
	if !a.IsResult() || a.Receipt() != s.receipt {
		return w.check(id, step, judge.CapWire, false, want, w.describe(a))
	}
	if replayed, _ := a.ReceiptFacts(); replayed != nil && !*replayed {
		return w.check(id, step, judge.CapWire, false, want, "a result not marked a replay")
	}
	// Each member as the history's digest reads it (wire.ResultMember: an
	// absent isError is false, a null structuredContent none), so the live
	// check and its recomputation from the history agree.
	settled := &wire.Answer{Response: &wire.Response{Result: s.result}}
	for _, field := range []string{"isError", "content", "structuredContent"} {
		if want, got := settled.ResultMember(field), a.ResultMember(field); want != got {
			return w.check(id, step, judge.CapWire, false, field+" "+memberText(want), field+" "+memberText(got))
		}
	}
	return w.check(id, step, judge.CapWire, true, want, fmt.Sprintf("receipt %q with the operator's content", a.Receipt()))
}
