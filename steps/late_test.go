package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// fakeProbe is an upstream probe whose dispatches a test sets.
type fakeProbe struct{ ds []judge.Dispatch }

func (p *fakeProbe) URL() string { return "http://probe.invalid" }

func (p *fakeProbe) Count(_ context.Context, token string) (int, error) {
	n := 0
	for _, d := range p.ds {
		if d.Token == token {
			n++
		}
	}
	return n, nil
}

func (p *fakeProbe) Dispatches(_ context.Context, prefix string) ([]judge.Dispatch, error) {
	var out []judge.Dispatch
	for _, d := range p.ds {
		if strings.HasPrefix(d.Token, prefix) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (p *fakeProbe) WaitFor(context.Context, string, int) error         { return nil }
func (p *fakeProbe) Stall(context.Context, string) error                { return nil }
func (p *fakeProbe) Unstall(context.Context, string) error              { return nil }
func (p *fakeProbe) Fail(context.Context, string, string) error         { return nil }
func (p *fakeProbe) Quiet(context.Context, string, time.Duration) error { return nil }

// fakeEffects is a target's read tool whose effects a test sets: an
// Observer by token, as drivers/effects is.
type fakeEffects struct{ probe *fakeProbe }

func (f fakeEffects) Count(ctx context.Context, token string) (int, error) {
	return f.probe.Count(ctx, token)
}

func (f fakeEffects) Dispatches(_ context.Context, tokens []string) ([]judge.Dispatch, error) {
	var out []judge.Dispatch
	for _, d := range f.probe.ds {
		if slices.Contains(tokens, d.Token) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (fakeEffects) Quiet(context.Context, time.Duration) error { return nil }

// TestLateDispatchIsOneCheck: a dispatch after a dispatch-count check fails
// the check's own step, once the scenario settled and again at the end of
// the run, with the same check (only the suffix and when differ), the
// token's dispatches as its witness and nothing of a longer token; seen by
// the probe or by the target's read tool (effects) alike, each check naming
// the capability that saw it.
func TestLateDispatchIsOneCheck(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, capability, who, times string
		env                          func(p *fakeProbe) *Env
	}{
		{"probe", judge.CapUpstream, "probe", "2 dispatch(es) at 12:00:00.000000, 12:00:01.000000, ", func(p *fakeProbe) *Env {
			return &Env{Probe: p, Caps: map[string]bool{judge.CapUpstream: true}, Settle: time.Second}
		}},
		// A read tool says how many, not when: the times are the reads'.
		{"effects", judge.CapEffects, "target's read tool", "2 dispatch(es) (read at 12:00:00.000000, 12:00:01.000000; the read tool does not say when), ", func(p *fakeProbe) *Env {
			return &Env{Probe: p, Effects: fakeEffects{p}, Caps: map[string]bool{judge.CapEffects: true}, Settle: time.Second}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := &fakeProbe{ds: []judge.Dispatch{{Token: "op1-x", At: t0}, {Token: "op1-x2", At: t0}, {Token: "op1-x", At: t0.Add(time.Second)}}}
			counted := countedCheck{step: "the probe saw op1-x dispatched 1 times", token: "op1-x", seen: 1, stepIdx: 2}
			env := tc.env(probe)
			w := &world{env: env, entry: catalog.Entry{ID: "retry-01"}, counted: []countedCheck{counted}, stepIdx: 5}

			obs, observer := env.observer()
			if observer != tc.capability {
				t.Fatalf("observer %s, want %s", observer, tc.capability)
			}
			w.recount(context.Background(), obs, observer)
			env.addResult(reports.Scenario{ID: "retry-01", Verdict: judge.Passed}, []countedCheck{counted}, []string{counted.token}, nil, nil)
			failed, err := env.Recount(context.Background(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(failed) != 1 || failed[0] != "retry-01" {
				t.Errorf("the end-of-run recount failed %v, want retry-01", failed)
			}
			if w.stepIdx != 5 {
				t.Errorf("the recount left the running step at %d, want 5", w.stepIdx)
			}
			scenario := env.Results()[0]
			for i, rc := range []struct {
				checks []judge.Check
				suffix string
				when   string
			}{
				{w.evidence.Checks, reports.LateSuffixes[0], "the " + tc.who + " was quiet for 1s: a late dispatch"},
				{scenario.Checks, reports.LateSuffixes[1], "quiet for 1s after the last scenario: a late dispatch"},
			} {
				if len(rc.checks) != 1 {
					t.Fatalf("recount %d recorded %d checks, want 1", i, len(rc.checks))
				}
				c := rc.checks[0]
				if c.Step != counted.step+rc.suffix || c.Status() != judge.Violated || c.StepIndex != 2 || c.Capability != tc.capability {
					t.Errorf("recount %d: check %q %s at step %d (%s), want %q violated at step 2 (%s)", i, c.Step, c.Status(), c.StepIndex, c.Capability, counted.step+rc.suffix, tc.capability)
				}
				if !strings.HasPrefix(c.Actual, tc.times) || !strings.HasSuffix(c.Actual, rc.when) {
					t.Errorf("recount %d: actual %q", i, c.Actual)
				}
				if c.Witness == nil || len(c.Witness.Dispatches) != 2 || c.Witness.Dispatches[1].At != t0.Add(time.Second) {
					t.Errorf("recount %d: witness %+v, want op1-x's two dispatches", i, c.Witness)
				}
			}
			if got := len(scenario.Dispatches); got != 2 {
				t.Errorf("the end-of-run recount added %d dispatches to the history's scenario, want both of op1-x", got)
			}
		})
	}
}

// TestObserverChoice: the probe observes where the target's tools reach
// it, the read tool where the profile declares effects instead, and
// neither leaves dispatch checks unobserved (never passed).
func TestObserverChoice(t *testing.T) {
	p := &fakeProbe{}
	for _, tc := range []struct {
		name string
		env  *Env
		want string
		has  bool
	}{
		{"probe", &Env{Probe: p, Effects: fakeEffects{p}, Caps: map[string]bool{judge.CapUpstream: true}}, judge.CapUpstream, true},
		{"effects", &Env{Probe: p, Effects: fakeEffects{p}, Caps: map[string]bool{judge.CapEffects: true}}, judge.CapEffects, true},
		{"effects without a reader", &Env{Probe: p, Caps: map[string]bool{judge.CapEffects: true}}, judge.CapUpstream, false},
		{"neither", &Env{Probe: p, Effects: fakeEffects{p}, Caps: map[string]bool{}}, judge.CapUpstream, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, got := tc.env.observer()
			if got != tc.want || (obs != nil) != tc.has || tc.env.observes(judge.CapUpstream) != tc.has {
				t.Errorf("observer %s (present %v), want %s (present %v)", got, obs != nil, tc.want, tc.has)
			}
		})
	}
}

// TestNoLateDispatchNoCheck: a count that still holds records nothing.
func TestNoLateDispatchNoCheck(t *testing.T) {
	probe := &fakeProbe{ds: []judge.Dispatch{{Token: "op1-x"}}}
	w := &world{env: &Env{Probe: probe}, counted: []countedCheck{{step: "s", token: "op1-x", seen: 1}}}
	w.recount(context.Background(), probeObserver{probe: probe}, judge.CapUpstream)
	if len(w.evidence.Checks) != 0 {
		t.Errorf("a count that held made checks: %+v", w.evidence.Checks)
	}
}

// TestLateDuplicateIsJudged: a scenario that read its dispatches for the
// history at a step (ledger-02's bank invariant) still has the model judge
// a duplicate that came after that read: at its end, once the observer was
// quiet, and at the end of the run, for every token it used, checked by a
// step or not; seen by the probe or by the target's read tool alike.
func TestLateDuplicateIsJudged(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		capability string
		// when the duplicate comes: before the scenario's end ("scenario")
		// or after it ("run"); "" for none.
		late string
		want []judge.Verdict // the verdicts at the scenario's end and at the run's
	}{
		{"probe, no duplicate", judge.CapUpstream, "", []judge.Verdict{judge.Passed, judge.Passed}},
		{"probe, before the end", judge.CapUpstream, "scenario", []judge.Verdict{judge.Failed, judge.Failed}},
		{"probe, after the end", judge.CapUpstream, "run", []judge.Verdict{judge.Passed, judge.Failed}},
		{"effects, before the end", judge.CapEffects, "scenario", []judge.Verdict{judge.Failed, judge.Failed}},
		{"effects, after the end", judge.CapEffects, "run", []judge.Verdict{judge.Passed, judge.Failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := &fakeProbe{ds: []judge.Dispatch{{Token: "op1-x", At: t0}}}
			env := &Env{Probe: probe, Caps: map[string]bool{tc.capability: true}}
			if tc.capability == judge.CapEffects {
				env.Effects = fakeEffects{probe}
			}
			w := newWorld(env, &godog.Scenario{Name: "a crowd", Tags: []*messages.PickleTag{{Name: "@twins-01"}}})
			w.record(judge.Op{Process: "harness", Type: judge.OK, F: judge.FTarget,
				Value: mustJSON(judge.Facts{Policy: judge.PolicyRefuse, Capabilities: []string{judge.CapWire, tc.capability}})})
			w.noteTool("write", judge.RoleWrite, 0)
			token := w.expand("$op1")
			probe.ds[0].Token = token
			v := judge.CallValue{Tool: "write", Key: "k1", Token: token, Role: judge.RoleWrite}
			inv := w.record(judge.Op{Process: "A", Type: judge.Invoke, F: judge.FCall, Value: mustJSON(v)})
			v.Call, v.Receipt, v.Digest = &inv, "r1", "d1"
			if tc.capability == judge.CapUpstream {
				v.Served = token
			}
			w.record(judge.Op{Process: "A", Type: judge.OK, F: judge.FCall, Value: mustJSON(v)})
			// A step reads the dispatches for the history, as the bank
			// invariant does.
			if err := w.recordEffects(context.Background()); err != nil {
				t.Fatal(err)
			}
			duplicate := judge.Dispatch{Token: token, At: t0.Add(time.Second)}
			if tc.late == "scenario" {
				probe.ds = append(probe.ds, duplicate)
			}
			w.finish(context.Background(), nil)
			if tc.late == "run" {
				probe.ds = append(probe.ds, duplicate)
			}
			if _, err := env.Recount(context.Background(), time.Millisecond); err != nil {
				t.Fatal(err)
			}
			got := []judge.Verdict{w.evidence.Verdict, env.Results()[0].Verdict}
			if !slices.Equal(got, tc.want) {
				t.Errorf("verdicts %v, want %v\n%s", got, tc.want, env.Results()[0].Reason)
			}
			// A duplicate found once the steps were over is placed past
			// every step (or at none, at the run's end): no step's check,
			// recomputed, sees it.
			if h := env.Results()[0].History; tc.late != "" {
				last := h[len(h)-1]
				if last.F != judge.FDispatch || (last.Step != nil && *last.Step <= w.stepIdx) {
					at := "none"
					if last.Step != nil {
						at = fmt.Sprint(*last.Step)
					}
					t.Errorf("the last event (%s) is recorded at step %s, the last step being %d", last.F, at, w.stepIdx)
				}
			}
		})
	}
}

// failingEffects is a read tool whose every read fails.
type failingEffects struct{ err error }

func (f failingEffects) Count(context.Context, string) (int, error) { return 0, f.err }
func (f failingEffects) Dispatches(context.Context, []string) ([]judge.Dispatch, error) {
	return nil, f.err
}
func (failingEffects) Quiet(context.Context, time.Duration) error { return nil }

// TestCountCheckReadFails: a count the target's read tool cannot give (it
// fails, or never settles) is a check not observed under effects, never a
// violation or a harness error; the probe is the harness's own, so its
// failure stays the harness's error.
func TestCountCheckReadFails(t *testing.T) {
	boom := errors.New("read tool list_messages for op1-x: the read tool's count never settled")
	for _, tc := range []struct {
		name    string
		env     *Env
		wantErr bool
	}{
		{"effects", &Env{Effects: failingEffects{boom}, Caps: map[string]bool{judge.CapEffects: true}}, false},
		{"probe", &Env{Probe: &failingProbe{err: boom}, Caps: map[string]bool{judge.CapUpstream: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{env: tc.env, entry: catalog.Entry{ID: "retry-01"}}
			err := w.countCheck(context.Background(), "the probe saw op1-x dispatched 1 times", "op1-x", 1, false, "1 dispatch(es)")
			if tc.wantErr {
				if !errors.Is(err, boom) {
					t.Errorf("err %v, want the probe's", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want the check not observed", err)
			}
			if len(w.evidence.Checks) != 1 {
				t.Fatalf("%d checks, want 1", len(w.evidence.Checks))
			}
			c := w.evidence.Checks[0]
			if c.Status() != judge.NotObserved || c.Capability != judge.CapEffects || !strings.Contains(c.Actual, boom.Error()) {
				t.Errorf("check %s (%s): %q; want not observed under %s, saying why", c.Status(), c.Capability, c.Actual, judge.CapEffects)
			}
		})
	}
}

// failingProbe is the harness's probe, its counts failing.
type failingProbe struct {
	fakeProbe
	err error
}

func (p *failingProbe) Count(context.Context, string) (int, error) { return 0, p.err }

// TestRecordEffectsUnread: a read tool that fails when the scenario ends
// leaves each token's count unread in the history (the model's dispatch
// check not observed), neither an error nor a silent gap; the probe's
// failure stays the harness's error.
func TestRecordEffectsUnread(t *testing.T) {
	boom := errors.New("read tool list_messages: the read tool's count never settled")
	for _, tc := range []struct {
		name    string
		env     *Env
		wantErr bool
	}{
		{"effects", &Env{Effects: failingEffects{boom}, Caps: map[string]bool{judge.CapEffects: true}}, false},
		{"probe", &Env{Probe: failingDispatches{fakeProbe: &fakeProbe{}, err: boom}, Caps: map[string]bool{judge.CapUpstream: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{env: tc.env, tokens: []string{"op1-x", "op2-x"}}
			err := w.recordEffects(context.Background())
			if tc.wantErr {
				if !errors.Is(err, boom) {
					t.Errorf("err %v, want the probe's", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want the tokens recorded unread", err)
			}
			var unread []string
			for _, op := range w.history {
				var v judge.EnvValue
				if op.F == judge.FEnv && json.Unmarshal(op.Value, &v) == nil && v.Kind == judge.EnvUnread {
					unread = append(unread, v.Token)
				}
			}
			if !slices.Equal(unread, []string{"op1-x", "op2-x"}) {
				t.Errorf("unread tokens %v, want both", unread)
			}
		})
	}
}

// failingDispatches is the harness's probe, its dispatch reads failing.
type failingDispatches struct {
	*fakeProbe
	err error
}

func (p failingDispatches) Dispatches(context.Context, string) ([]judge.Dispatch, error) {
	return nil, p.err
}
