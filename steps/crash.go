package steps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// crashAction is the fault action that kills the gateway process at its
// point (docs/control-api.md, Faults).
const crashAction = control.FaultCrash

// restartBudget bounds how long a step waits for a crashed gateway process
// to serve again: the reference's supervisor restarts it at once; a
// vendor's has this long.
const restartBudget = 60 * time.Second

// registerCrash: a gateway process killed at a fault point, as kill -9
// kills it, and served again by whatever restarts it.
func registerCrash(sc *godog.ScenarioContext) {
	sc.Step(`^a crash is armed at "([^"]*)" for "([^"]*)"$`, func(ctx context.Context, point, tool string) error {
		w := getWorld(ctx)
		if w.has(judge.CapFaults) && w.env.HasFaultPoint(point) && !w.env.HasFaultAction(crashAction) {
			return w.cannot(judge.CapFaults, fmt.Sprintf("the control API lists no fault action %q", crashAction))
		}
		return arm(ctx, point, crashAction, tool)
	})
	sc.Step(`^the gateway process serving "([^"]*)" crashes at "([^"]*)"$`, crashesAt)
	sc.Step(`^the gateway process serving "([^"]*)" serves again$`, servesAgain)
}

// HasFaultAction: the target's control API lists action among its fault
// actions, or lists none (then the control API refuses an action it does
// not have when it is armed).
func (e *Env) HasFaultAction(action string) bool {
	return len(e.FaultActions) == 0 || slices.Contains(e.FaultActions, action)
}

// crashesAt collects the call in flight of who, whose gateway process was
// armed to crash at point: a crash ends it with no answer (the connection
// closed under it). The history records the crash, and the crash fault as
// gone with its process: the crashed holder never wakes, and the model
// holds nothing later to it. A call answered instead fails the check: the
// process did not crash there.
func crashesAt(ctx context.Context, who, point string) error {
	w := getWorld(ctx)
	if _, ok := w.faults[point]; !ok || w.faultArmed[point].Action != crashAction {
		return fmt.Errorf("no crash armed at %q", point)
	}
	c := w.clientFor(who)
	if c.pending == nil {
		return fmt.Errorf("%s has no call in flight to crash at %s", who, point)
	}
	var out callOutcome
	select {
	case out = <-c.pending:
		c.pending = nil
	case <-time.After(w.env.CallTimeout + time.Second):
		return fmt.Errorf("%s's call neither crashed nor was answered within %v", who, w.env.CallTimeout)
	}
	a := out.answer
	if a != nil {
		c.answers = append(c.answers, a)
	}
	crashed := a != nil && a.TransportError != "" && !a.IsResult() && !a.IsRefusal()
	w.noteAnswer(a)
	if err := w.check(checkOf("crashes-at-point", "", "client", who, "point", point), fmt.Sprintf("the gateway process serving %s crashes at %s", who, point), judge.CapFaults, crashed,
		fmt.Sprintf("the process killed at fault point %s: the call ends with no answer", point),
		w.describe(a)); err != nil || !crashed {
		return err
	}
	armed := w.faultArmed[point]
	w.noteEnv(judge.EnvValue{Kind: judge.EnvCrash, Point: point, Client: who, Tool: armed.Tool})
	w.noteEnv(judge.EnvValue{Kind: judge.EnvRelease, Point: point, Tool: armed.Tool, Action: armed.Action})
	delete(w.faults, point)
	return nil
}

// servesAgain waits, bounded, until the gateway process who talks to
// answers its control API again: restarted, on the same URL, over the same
// store. A process that never comes back is the step's error.
func servesAgain(ctx context.Context, who string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	if len(w.env.Controls) == 0 {
		return w.cannot(judge.CapFaults, "a crashed gateway process is seen serving again through its control API")
	}
	cc := w.env.Controls[c.url%len(w.env.Controls)]
	probe := &control.Client{BaseURL: cc.BaseURL, Token: cc.Token}
	deadline := time.Now().Add(restartBudget)
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = probe.Capabilities(pctx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway process of %s did not serve again within %v: %w", who, restartBudget, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
