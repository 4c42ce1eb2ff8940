package steps

import (
	"context"
	"fmt"
	"strings"

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
