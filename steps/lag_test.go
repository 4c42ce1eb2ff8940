package steps

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cucumber/godog"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// laggingEffects is a target's read tool that lags its writes (a replica,
// a queue): a token's effect shows `shows` after its write was answered,
// the read lagging by at most lag (drivers/effects.Reader's contract).
type laggingEffects struct {
	answered time.Time
	shows    time.Duration
	lag      time.Duration
	token    *string
}

func (f laggingEffects) Count(_ context.Context, token string) (int, error) {
	if token == *f.token && time.Since(f.answered) >= f.shows {
		return 1, nil
	}
	return 0, nil
}

func (f laggingEffects) Dispatches(ctx context.Context, tokens []string) ([]judge.Dispatch, error) {
	var out []judge.Dispatch
	for _, t := range tokens {
		if n, _ := f.Count(ctx, t); n > 0 {
			out = append(out, judge.Dispatch{Token: t, Tool: "write", At: time.Now()})
		}
	}
	return out, nil
}

func (laggingEffects) Quiet(ctx context.Context, quiet time.Duration) error {
	select {
	case <-time.After(quiet):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f laggingEffects) Lag() time.Duration { return f.lag }

func (f laggingEffects) CountAtLeast(ctx context.Context, token string, want int, since time.Time) (int, error) {
	for {
		n, err := f.Count(ctx, token)
		if err != nil || n >= want || time.Since(since) >= f.lag {
			return n, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLaggingCountIsNotLate: through a read tool that shows a write's
// effect a moment after its answer (within effects.read.lag_ms), a count
// check of an answered write waits for it (not a lost outcome), and a
// count check that saw none of a write whose outcome was unknown does not
// call the effect shown within the lag a late dispatch: neither at the
// scenario's end nor at the run's.
func TestLaggingCountIsNotLate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome string // the write's answer: judge.OK, or judge.Info (unknown)
		step    string
		n       int
		atMost  bool
	}{
		{"answered, dispatched 1 time", judge.OK, "the probe saw %s dispatched 1 times", 1, false},
		{"unknown, at most 1", judge.Info, "the probe saw %s dispatched at most 1 times", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var token string
			fx := laggingEffects{shows: 150 * time.Millisecond, lag: 400 * time.Millisecond, token: &token}
			env := &Env{Effects: nil, Caps: map[string]bool{judge.CapEffects: true}, Settle: 200 * time.Millisecond}
			w := newWorld(env, &godog.Scenario{Name: "a write", Tags: []*messages.PickleTag{{Name: "@retry-01"}}})
			w.record(judge.Op{Process: "harness", Type: judge.OK, F: judge.FTarget,
				Value: mustJSON(judge.Facts{Policy: judge.PolicyRefuse, Capabilities: []string{judge.CapWire, judge.CapEffects}})})
			w.noteTool("write", judge.RoleWrite, 0)
			token = w.expand("$op1")
			v := judge.CallValue{Tool: "write", Key: "k1", Token: token, Role: judge.RoleWrite}
			inv := w.record(judge.Op{Process: "A", Type: judge.Invoke, F: judge.FCall, Value: mustJSON(v)})
			v.Call = &inv
			if tc.outcome == judge.OK {
				v.Receipt, v.Digest = "r1", "d1"
			} else {
				v.Error = "connection reset"
			}
			fx.answered = time.Now()
			env.Effects = fx
			w.record(judge.Op{Process: "A", Type: tc.outcome, F: judge.FCall, Value: mustJSON(v), Time: fx.answered})
			step := fmt.Sprintf(tc.step, token)
			if err := w.countCheck(context.Background(), step, token, tc.n, tc.atMost, "1 dispatch(es)"); err != nil {
				t.Fatal(err)
			}
			w.finish(context.Background(), nil)
			time.Sleep(time.Until(fx.answered.Add(fx.shows))) // the run ends later
			if _, err := env.Recount(context.Background(), time.Millisecond); err != nil {
				t.Fatal(err)
			}
			for _, c := range env.Results()[0].Checks {
				if c.Status() == judge.Violated {
					t.Errorf("check %q violated: %s", c.Step, c.Actual)
				}
				if c.Step == step && c.Status() != judge.Held {
					t.Errorf("check %q %s, want held", c.Step, c.Status())
				}
			}
		})
	}
}
