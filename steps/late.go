package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// tokenDispatches are the observer's dispatches of token itself.
func tokenDispatches(ctx context.Context, obs Observer, token string) ([]judge.Dispatch, error) {
	return obs.Dispatches(ctx, []string{token})
}

// observerName says who counted, for a finding: the harness's probe, or
// the target reporting its own effects.
func observerName(capability string) string {
	if capability == judge.CapEffects {
		return "target's read tool"
	}
	return "probe"
}

// observedTimes is a dispatchTimes text as the observer knows it: a read
// tool says how many, not when, so its times are those of the read.
func observedTimes(observer, times string) string {
	if observer == judge.CapEffects && times != "" {
		return " (read" + times + "; the read tool does not say when)"
	}
	return times
}

// dispatchTimes is " at t1, t2" for a finding, "" when there are none.
func dispatchTimes(ds []judge.Dispatch) string {
	if len(ds) == 0 {
		return ""
	}
	at := make([]string, len(ds))
	for i, d := range ds {
		at[i] = d.At.UTC().Format("15:04:05.000000")
	}
	return " at " + strings.Join(at, ", ")
}

// lateDispatch reads the observer's count of a counted check's token again.
// When it is not what the check saw, a dispatch came after the check (a
// gateway re-sending a finished call): the result is a violated check of
// its own, made by the step that made c, its step ending in suffix (one of
// reports.LateSuffixes) and its late argument when (judge.LateScenario or
// judge.LateRun), witnessed by the token's dispatches; after says when the
// count was read. late is false when the count still holds.
func lateDispatch(ctx context.Context, obs Observer, observer string, c countedCheck, suffix, when, after string) (check judge.Check, late bool, err error) {
	n, err := obs.Count(ctx, c.token)
	if err != nil {
		return judge.Check{}, false, fmt.Errorf("read the %s: %w", observerName(observer), err)
	}
	if n == c.seen {
		return judge.Check{}, false, nil
	}
	// Without the list, the count alone still says the check is broken.
	ds, _ := tokenDispatches(ctx, obs, c.token)
	check = judge.Check{
		Step: c.step + suffix, State: judge.Violated, Capability: observer, StepIndex: c.stepIdx,
		Kind: judge.KindProbeCount, Args: judge.Args("token", c.token, "n", c.seen, "late", when), Harm: dispatchHarm(n, c.seen),
		Expected: fmt.Sprintf("%d dispatch(es) of %s, as the check saw", c.seen, c.token),
		Actual:   fmt.Sprintf("%d dispatch(es)%s, %s: a late dispatch", n, observedTimes(observer, dispatchTimes(ds)), after),
	}
	if len(ds) > 0 {
		check.Witness = &judge.Witness{Dispatches: ds}
	}
	return check, true, nil
}

// laggingObserver is an observer whose counts lag the writes (the target's
// read tool, drivers/effects): a write's effect may show up to Lag after
// its answer.
type laggingObserver interface {
	Lag() time.Duration
	// CountAtLeast reads token's count again while it is below want, until
	// Lag has passed since the last write answer.
	CountAtLeast(ctx context.Context, token string, want int, since time.Time) (int, error)
}

// countFor is the observer's count of token for a check of n: through a
// lagging read tool, at least the results the scenario saw of the token's
// writes, or what the read shows once the lag since the last write answer
// has passed (a write seen answered is not lost while it may still show).
//
// At least n, the check's own number, at most: a retry's replay is a
// result of the same write, and a correct target shows it once.
func countFor(ctx context.Context, w *world, obs Observer, token string, n int) (int, error) {
	l, ok := obs.(laggingObserver)
	if !ok {
		return obs.Count(ctx, token)
	}
	results, last := w.writeAnswers(token)
	return l.CountAtLeast(ctx, token, min(results, n), last)
}

// writeAnswers are the results (no tool error) the history holds for
// token's calls, and when the scenario's last call with a token was
// answered: a lagging read tool may show its effect until the lag after it.
func (w *world) writeAnswers(token string) (results int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, op := range w.history {
		if op.F != judge.FCall || op.Type == judge.Invoke {
			continue
		}
		var v judge.CallValue
		if json.Unmarshal(op.Value, &v) != nil || v.Token == "" {
			continue
		}
		if op.Time.After(last) {
			last = op.Time
		}
		if v.Token == token && op.Type == judge.OK && !v.IsError {
			results++
		}
	}
	return results, last
}

// lagQuiet is how long the scenario's end waits before its recount: the
// settle period, and under a lagging observer at least what is left of
// the lag since the scenario's last write answer, so a write's effect that
// shows late is in the count before a rise is called a late dispatch.
func (w *world) lagQuiet(obs Observer) time.Duration {
	l, ok := obs.(laggingObserver)
	if !ok {
		return w.env.Settle
	}
	_, last := w.writeAnswers("")
	if last.IsZero() {
		return w.env.Settle
	}
	return max(w.env.Settle, l.Lag()-time.Since(last))
}

// lagged reports a recount n of c as the lag's, not a late dispatch: under
// a lagging observer, a rise to a count the check allows (exactly its n,
// or at most it) is a write's effect shown within the lag, which the
// scenario's end waited for.
func lagged(obs Observer, c countedCheck, n int) bool {
	if _, ok := obs.(laggingObserver); !ok {
		return false
	}
	return n > c.seen && (n == c.n || (c.atMost && n <= c.n))
}
