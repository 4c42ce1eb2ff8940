package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/judge"
)

func registerControl(sc *godog.ScenarioContext) {
	sc.Step(`^the gateway clock is frozen (\S+) before a window boundary$`, func(ctx context.Context, d string) error {
		off, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("duration %q: %w", d, err)
		}
		return freezeNearBoundary(ctx, -off)
	})
	sc.Step(`^the gateway clock is frozen at a window boundary$`, func(ctx context.Context) error {
		return freezeNearBoundary(ctx, 0)
	})
	sc.Step(`^the gateway clock advances (\d\S*)$`, func(ctx context.Context, d string) error {
		by, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("duration %q: %w", d, err)
		}
		return advance(ctx, by)
	})
	sc.Step(`^the gateway clock advances past the effective window$`, func(ctx context.Context) error {
		w := getWorld(ctx)
		return advance(ctx, seconds(w.env.Settings.EffectiveWindowSeconds)+time.Second)
	})
	sc.Step(`^the gateway clock advances (\S+) short of the effective window$`, func(ctx context.Context, d string) error {
		w := getWorld(ctx)
		by, err := shortOfWindow(seconds(w.env.Settings.EffectiveWindowSeconds), d)
		if err != nil {
			return err
		}
		return advance(ctx, by)
	})
	sc.Step(`^the gateway clock advances (\S+) short of the retention$`, func(ctx context.Context, d string) error {
		keep, err := retention(getWorld(ctx))
		if err != nil {
			return err
		}
		by, err := shortOfWindow(keep, d)
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		return advance(ctx, by)
	})
	sc.Step(`^the gateway clock advances past the retention$`, func(ctx context.Context) error {
		keep, err := retention(getWorld(ctx))
		if err != nil {
			return err
		}
		return advance(ctx, keep+time.Second)
	})
	sc.Step(`^the gateway clock advances past the auto-permit life$`, func(ctx context.Context) error {
		w := getWorld(ctx)
		return advance(ctx, seconds(w.env.Settings.PermitTTLSeconds)+time.Second)
	})
	sc.Step(`^the gateway clock advances past the stale-lock threshold$`, func(ctx context.Context) error {
		w := getWorld(ctx)
		stale := seconds(w.env.Settings.StaleLockSeconds)
		if w.staleLock > 0 {
			stale = w.staleLock
		}
		return advance(ctx, stale+time.Second)
	})
	sc.Step(`^the unkeyed retry window is (\d+) seconds$`, func(ctx context.Context, secs int64) error {
		w := getWorld(ctx)
		if !w.has(judge.CapSettings) {
			return w.cannot(judge.CapSettings, "the window is changed through the control API")
		}
		w.settingsMoved = true
		for _, c := range w.env.Controls {
			set, err := c.PutSettings(ctx, control.SettingsPatch{WindowSeconds: control.Ptr(float64(secs))})
			if err != nil {
				return fmt.Errorf("set window to %ds: %w", secs, err)
			}
			eff := control.WholeSeconds(set.EffectiveWindowSeconds)
			w.noteEnv(judge.EnvValue{Kind: judge.EnvSetting, WindowSeconds: &eff})
			w.window = eff
		}
		return nil
	})
	sc.Step(`^the stale-lock threshold is (\d+) seconds$`, func(ctx context.Context, secs int64) error {
		w := getWorld(ctx)
		if !w.has(judge.CapSettings) {
			return w.cannot(judge.CapSettings, "the stale-lock threshold is changed through the control API")
		}
		w.settingsMoved = true
		for _, c := range w.env.Controls {
			if _, err := c.PutSettings(ctx, control.SettingsPatch{StaleLockSeconds: control.Ptr(float64(secs))}); err != nil {
				return fmt.Errorf("set stale-lock threshold to %ds: %w", secs, err)
			}
		}
		w.noteEnv(judge.EnvValue{Kind: judge.EnvSetting, StaleLockSeconds: &secs})
		w.staleLock = seconds(float64(secs))
		return nil
	})
	// Past the window, which a retention may not be shorter than: the
	// window the scenario set, else the target's.
	sc.Step(`^the retention is (\d+) seconds past the effective window$`, func(ctx context.Context, past int64) error {
		w := getWorld(ctx)
		if !w.has(judge.CapSettings) {
			return w.cannot(judge.CapSettings, "the retention is changed through the control API")
		}
		win := control.WholeSeconds(w.env.Settings.EffectiveWindowSeconds)
		if w.window > 0 {
			win = w.window
		}
		secs := win + past
		w.settingsMoved = true
		for _, c := range w.env.Controls {
			if _, err := c.PutSettings(ctx, control.SettingsPatch{RetentionSeconds: control.Ptr(float64(secs))}); err != nil {
				return fmt.Errorf("set retention to %ds: %w", secs, err)
			}
		}
		w.noteEnv(judge.EnvValue{Kind: judge.EnvSetting, RetentionSeconds: &secs})
		w.keep = seconds(float64(secs))
		return nil
	})
	sc.Step(`^a pause is armed at "([^"]*)" for "([^"]*)"$`, func(ctx context.Context, point, tool string) error {
		return arm(ctx, point, "pause", tool)
	})
	sc.Step(`^a failure is armed at "([^"]*)" for "([^"]*)"$`, func(ctx context.Context, point, tool string) error {
		return arm(ctx, point, "fail", tool)
	})
	sc.Step(`^the gateway will drop the response after dispatching "([^"]*)"$`, func(ctx context.Context, tool string) error {
		return arm(ctx, "dispatch.after", "drop_response", tool)
	})
	sc.Step(`^"([^"]*)" waits at "([^"]*)"$`, waitsAt)
	sc.Step(`^the pause at "([^"]*)" is released$`, release)
	sc.Step(`^principal "([^"]*)" is revoked$`, func(ctx context.Context, name string) error {
		w := getWorld(ctx)
		id, ok := w.principal[name]
		if !ok || !w.has(judge.CapPrincipals) {
			return w.cannot(judge.CapPrincipals, "principals are revoked through the control API")
		}
		if err := w.env.Control().Revoke(ctx, id); err != nil {
			return err
		}
		w.noteEnv(judge.EnvValue{Kind: judge.EnvRevoke, Principal: name})
		return nil
	})
	sc.Step(`^the tool "([^"]*)" is removed$`, func(ctx context.Context, alias string) error {
		w := getWorld(ctx)
		if !w.env.fixtures() {
			return w.cannot(judge.CapFixtures, "tools are removed through the control API")
		}
		if err := w.env.Control().DeleteTool(ctx, w.toolName(alias)); err != nil {
			return err
		}
		w.noteEnv(judge.EnvValue{Kind: judge.EnvRemoveTool, Tool: w.toolName(alias)})
		return nil
	})
	sc.Step(`^the probe stalls "([^"]*)"$`, func(ctx context.Context, tok string) error {
		w := getWorld(ctx)
		if !w.has(judge.CapUpstream) {
			return w.cannot(judge.CapUpstream, "only calls that reach the probe can be stalled")
		}
		return w.probeStall(ctx, w.expand(tok))
	})
	sc.Step(`^the probe answers the next dispatch of "([^"]*)" with a tool error$`, func(ctx context.Context, tok string) error {
		return getWorld(ctx).probeFail(ctx, tok, probe.FailToolError)
	})
	sc.Step(`^the probe refuses the next dispatch of "([^"]*)"$`, func(ctx context.Context, tok string) error {
		return getWorld(ctx).probeFail(ctx, tok, probe.FailRefuse)
	})
	sc.Step(`^the probe releases "([^"]*)"$`, func(ctx context.Context, tok string) error {
		w := getWorld(ctx)
		return w.probeUnstall(ctx, w.expand(tok))
	})
	sc.Step(`^the probe sees "([^"]*)" dispatched$`, func(ctx context.Context, tok string) error {
		w := getWorld(ctx)
		if !w.has(judge.CapUpstream) {
			return w.cannot(judge.CapUpstream, "the step waits until the probe sees the tool run")
		}
		wctx, cancel := context.WithTimeout(ctx, w.env.CallTimeout)
		defer cancel()
		if err := w.probeWait(wctx, w.expand(tok), 1); err != nil {
			return fmt.Errorf("the tool never ran: %w", err)
		}
		return nil
	})
}

// freezeNearBoundary freezes every process's clock at off from a boundary of
// the effective window a little in the future, so the scenario's buckets are
// known and no real time passes between steps.
func freezeNearBoundary(ctx context.Context, off time.Duration) error {
	w := getWorld(ctx)
	if !w.has(judge.CapClock) {
		return w.cannot(judge.CapClock, "the gateway clock is moved through the control API")
	}
	win := seconds(w.env.Settings.EffectiveWindowSeconds)
	if win <= 0 {
		return fmt.Errorf("target advertises no positive effective window (%v)", win)
	}
	now := time.Now().UTC()
	boundary := now.Truncate(win).Add(2 * win)
	w.clockMoved = true
	for _, c := range w.env.Controls {
		clock, err := c.SetClock(ctx, boundary.Add(off))
		if err != nil {
			return fmt.Errorf("freeze clock: %w", err)
		}
		w.noteClock(clock)
	}
	return nil
}

// retention is how long the target keeps a finished operation's record, as
// its settings say. A target that does not say cannot be held to its
// edges: the scenario is skipped, never passed.
func retention(w *world) (time.Duration, error) {
	if w.keep > 0 {
		return w.keep, nil
	}
	keep := seconds(w.env.Settings.RetentionSeconds)
	if keep <= 0 {
		return 0, w.cannot(judge.CapSettings, "the retention of finished operations is read from the control API's settings (retention_seconds)")
	}
	return keep, nil
}

// shortOfWindow is the advance that leaves a call made at the frozen clock
// the given time short of its window's end. It is read off the target's
// window, not written in the scenario, so the edge stays the edge whatever
// window the target runs with.
func shortOfWindow(win time.Duration, short string) (time.Duration, error) {
	d, err := time.ParseDuration(short)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", short, err)
	}
	if d <= 0 || d >= win {
		return 0, fmt.Errorf("%v short of a window of %v is not inside it", d, win)
	}
	return win - d, nil
}

// noteClock puts the gateway clock as a control API reported it in the
// history (once: every process's clock is set alike).
func (w *world) noteClock(c *control.Clock) {
	if c == nil {
		return
	}
	now := c.Now
	w.noteEnv(judge.EnvValue{Kind: judge.EnvClock, Now: &now, Frozen: c.Frozen})
}

func advance(ctx context.Context, by time.Duration) error {
	w := getWorld(ctx)
	if !w.has(judge.CapClock) {
		return w.cannot(judge.CapClock, "the gateway clock is moved through the control API")
	}
	w.clockMoved = true
	for _, c := range w.env.Controls {
		clock, err := c.AdvanceClock(ctx, by)
		if err != nil {
			return fmt.Errorf("advance clock by %v: %w", by, err)
		}
		w.noteClock(clock)
	}
	return nil
}

func arm(ctx context.Context, point, action, alias string) error {
	w := getWorld(ctx)
	if !w.has(judge.CapFaults) {
		return w.cannot(judge.CapFaults, "fault points are armed through the control API")
	}
	if !w.env.HasFaultPoint(point) {
		return w.cannot(judge.CapFaults, fmt.Sprintf("the control API lists no fault point %q", point))
	}
	w.faultsArmed = true
	id, err := w.env.Control().ArmFault(ctx, control.Fault{
		Point: point, Action: action, Count: 1,
		Match: control.FaultMatch{Tool: w.toolName(alias), WalletID: w.walletID},
	})
	if err != nil {
		return fmt.Errorf("arm %s at %s: %w", action, point, err)
	}
	armed := judge.EnvValue{Kind: judge.EnvFault, Point: point, Action: action, Tool: w.toolName(alias)}
	w.faults[point], w.faultArmed[point] = id, armed
	w.noteEnv(armed)
	return nil
}

// waitsAt blocks until the named client's call waits at the fault point. A
// call that answers instead (a gateway without that step in its path) ends
// the wait at once with the answer as evidence.
func waitsAt(ctx context.Context, who, point string) error {
	w := getWorld(ctx)
	id, ok := w.faults[point]
	if !ok {
		return fmt.Errorf("no pause armed at %q", point)
	}
	c := w.clientFor(who)
	if c.pending == nil {
		return fmt.Errorf("%s has no call in flight to wait at %s", who, point)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	awaited := make(chan error, 1)
	go func() {
		_, err := w.env.Control().AwaitFault(actx, id, 1, w.env.CallTimeout)
		awaited <- err
	}()
	select {
	case err := <-awaited:
		if err != nil {
			return fmt.Errorf("%s never reached %s: %w", who, point, err)
		}
		// The model knows the call is held here until the release: a
		// retry meanwhile cannot come after its outcome.
		w.noteEnv(judge.EnvValue{Kind: judge.EnvWaiting, Point: point, Client: who})
		return nil
	case out := <-c.pending:
		c.pending = nil
		var a *answer
		if out.answer != nil {
			a = out.answer
			c.answers = append(c.answers, a)
			w.noteAnswer(a)
		}
		return w.check(checkOf("reaches-point", "", "client", who, "point", point), fmt.Sprintf("%s reaches %s", who, point), judge.CapFaults, false,
			fmt.Sprintf("the call waits at fault point %s", point),
			"it answered without reaching the point: "+w.describe(a))
	}
}

func release(ctx context.Context, point string) error {
	w := getWorld(ctx)
	id, ok := w.faults[point]
	if !ok {
		return fmt.Errorf("no pause armed at %q", point)
	}
	if _, err := w.env.Control().ReleaseFault(ctx, id); err != nil {
		return fmt.Errorf("release %s: %w", point, err)
	}
	// The release names the pause it let go: another fault armed at the
	// point (a failure for another tool) stays armed.
	armed := w.faultArmed[point]
	w.noteEnv(judge.EnvValue{Kind: judge.EnvRelease, Point: point, Tool: armed.Tool, Action: armed.Action})
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
