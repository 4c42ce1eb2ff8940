package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// holderAge is how old, on the gateway clock, the operation holder's
// record is at least and at most when who's last call was made: at least
// since holder was seen waiting at its pause (it writes nothing there,
// unless it renews a lease), at most since holder's call began (nothing of
// the operation was written before). known is false when the history
// shows no such call or wait.
func (w *world) holderAge(holder, who string) (least, most time.Duration, known bool) {
	w.mu.Lock()
	ops := append([]judge.Op(nil), w.history...)
	w.mu.Unlock()
	var began, waited, asked, answered time.Time
	for _, op := range ops {
		switch {
		case op.F == judge.FCall && op.Type == judge.Invoke && op.Process == holder && began.IsZero():
			began = op.Time
		case op.F == judge.FCall && op.Type == judge.Invoke && op.Process == who:
			asked, answered = op.Time, time.Time{}
		case op.F == judge.FCall && op.Process == who && !asked.IsZero():
			answered = op.Time
		case op.F == judge.FEnv:
			var e judge.EnvValue
			// A holder seen waiting at a pause, or whose process was seen
			// killed (a crash), writes nothing from then on.
			if json.Unmarshal(op.Value, &e) == nil && (e.Kind == judge.EnvWaiting || e.Kind == judge.EnvCrash) && e.Client == holder {
				waited = op.Time
			}
		}
	}
	if began.IsZero() || waited.IsZero() || asked.IsZero() || answered.IsZero() {
		return 0, 0, false
	}
	gw := func(t time.Time) time.Time { return judge.GatewayTime(ops, t) }
	return gw(asked).Sub(gw(waited)), gw(answered).Sub(gw(began)), true
}

// staleLockNow is the stale-lock threshold in force, 0 when unknown.
func (w *world) staleLockNow() time.Duration {
	if w.staleLock > 0 {
		return w.staleLock
	}
	return seconds(w.env.Settings.StaleLockSeconds)
}

// isRefusedAsHeld holds who's last answer, a retry of the charged
// operation holder stalls on at a pause, to the one refusal docs/wire.md
// gives at the operation's age: retryable in progress while its record may
// have been written within the stale-lock threshold; final outcome_unknown
// once it cannot have been (the holder was seen waiting at least the
// threshold before); either where the threshold is unknown or the age
// straddles it. A gateway may renew a live holder's lease while it waits,
// and then rightly answers in progress past the threshold: an in-progress
// answer there is held to the gateway's own listing of uncertain operations
// (control API), which then must not list the operation. A target with no
// such listing cannot show its holder renewed, which is no failure of it.
func isRefusedAsHeld(ctx context.Context, who, holder string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	inProgress, unknown := judge.ReasonInProgress, judge.ReasonOutcomeUnknown
	least, most, known := w.holderAge(holder, who)
	switch heldRefusal(least, most, w.staleLockNow(), known) {
	case "":
		return isRefusedEither(ctx, who, inProgress, unknown)
	case inProgress:
		return isRefused(ctx, who, inProgress, true)
	}
	if w.isReason(a, inProgress) && w.retryableIs(a, true) && !w.crashed(holder) {
		// A holder that lives may have its lease renewed; a killed one
		// renews nothing, so its operation's in-progress answer is wrong.
		listed, err := w.listedUncertain(ctx)
		if err != nil {
			return err
		}
		if !listed {
			w.checkRetryAfter(who, judge.RetryAfterLast, []*answer{a})
			return w.check(checkOf(judge.KindRefused, judge.HarmWrongRefusal, "client", who, "reason", inProgress, "retryable", true, "renewed", true),
				fmt.Sprintf("%s is refused as the age of the operation %s holds implies", who, holder), judge.CapWire, true,
				judge.RefusalExpectation(inProgress, true)+": the gateway lists the operation as not uncertain, its holder's lease renewed", w.describe(a))
		}
	}
	return isRefused(ctx, who, unknown, false)
}

// crashed says holder's gateway process was killed under its call (an env
// crash event in the history).
func (w *world) crashed(holder string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, op := range w.history {
		var e judge.EnvValue
		if op.F == judge.FEnv && json.Unmarshal(op.Value, &e) == nil && e.Kind == judge.EnvCrash && e.Client == holder {
			return true
		}
	}
	return false
}

// heldRefusal is the one refusal a retry of a charged operation whose
// holder waits at a pause must get, given how old its record is at least
// and at most (holderAge) and the stale-lock threshold (0 unknown): in
// progress while it cannot be stale yet, outcome_unknown once it must be
// (a renewed lease aside), "" for either where the threshold or the age is
// unknown or the age straddles it.
func heldRefusal(least, most, stale time.Duration, known bool) string {
	switch {
	case !known || stale <= 0 || (least < stale && most >= stale):
		return ""
	case most < stale:
		return judge.ReasonInProgress
	}
	return judge.ReasonOutcomeUnknown
}

// listedUncertain says whether the gateway lists the scenario's operation
// (its wallet's only one) as uncertain: charged, in progress, its owner
// silent for the stale-lock threshold. A target whose control API lists
// none cannot show its holder renewed a lease, so the scenario cannot
// judge its in-progress answer: not applicable to it, not failed.
func (w *world) listedUncertain(ctx context.Context) (bool, error) {
	ops, err := w.uncertainListing(ctx, "whether the holder renewed its lease is read from the control API's uncertain operations")
	return len(ops) > 0, err
}

// uncertainListing is the gateway's listing of the scenario wallet's
// uncertain operations (control API), recorded in the history: an
// operation listed uncertain right after a retry was answered in progress
// was uncertain then, and the model holds that answer to outcome_unknown.
// A target that lists none is not one the step is for (why says what the
// listing was for): not applicable, naming the endpoint. A listing served
// and failing is the gateway's fault, not a missing feature: an error.
func (w *world) uncertainListing(ctx context.Context, why string) ([]control.Operation, error) {
	c := w.env.Control()
	if c == nil {
		return nil, w.notApplicable(why + " (GET /control/operations?state=uncertain), and the target has no control API")
	}
	ops, err := c.UncertainOperations(ctx)
	if st := control.StatusOf(err); st == http.StatusNotFound || st == http.StatusMethodNotAllowed {
		return nil, w.notApplicable(fmt.Sprintf("%s (GET /control/operations?state=uncertain), which the target does not serve (%v)", why, err))
	}
	if err != nil {
		return nil, fmt.Errorf("list uncertain operations: %w", err)
	}
	mine := ops[:0:0]
	listed := judge.EnvValue{Kind: judge.EnvListed, Receipts: []string{}}
	for _, op := range ops {
		if op.WalletID != w.walletID {
			continue
		}
		mine = append(mine, op)
		if op.Receipt != "" {
			listed.Receipts = append(listed.Receipts, op.Receipt)
		}
	}
	w.noteEnv(listed)
	return mine, nil
}
