package explore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	goldenfile "github.com/mcpconform/mcpconform/internal/golden"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/steps"
)

// dims are targets explore draws for: the reference with its control API,
// the reference as a vendor's gateway, and the refuse policy.
var dims = map[string]Dims{
	"full": {Caps: caps(judge.CapWire, judge.CapUpstream, judge.CapLedger, judge.CapFixtures, judge.CapClock, judge.CapFaults,
		judge.CapSettings, judge.CapPrincipals, judge.CapPrincipalTokens, judge.CapSecondKey, judge.CapOtherWallet,
		judge.CapToolWriteOther, judge.CapToolReadOnly, judge.CapToolApproval, judge.CapTwoURLs),
		Policy: judge.PolicyDerived, Wires: []string{wireSession, wireStateless}, Default: wireSession},
	"wire": {Caps: caps(judge.CapWire, judge.CapUpstream, judge.CapSecondKey, judge.CapOtherWallet, judge.CapToolWriteOther,
		judge.CapToolReadOnly, judge.CapToolApproval),
		Policy: judge.PolicyDerived, Wires: []string{wireSession, wireStateless}, Default: wireSession},
	"refuse": {Caps: caps(judge.CapWire, judge.CapUpstream, judge.CapSecondKey, judge.CapToolWriteOther),
		Policy: judge.PolicyRefuse, Wires: []string{wireSession}, Default: wireSession},
}

func caps(cs ...string) map[string]bool {
	m := map[string]bool{}
	for _, c := range cs {
		m[c] = true
	}
	return m
}

// The same seed, scenario number, target and bound draw the same scenario.
func TestGenerateIsDeterministic(t *testing.T) {
	for name, d := range dims {
		a, b := Generate(7, 3, d, DefaultSteps).Render(), Generate(7, 3, d, DefaultSteps).Render()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: seed 7 scenario 3 drawn twice differs", name)
		}
		if bytes.Equal(a, Generate(7, 4, d, DefaultSteps).Render()) {
			t.Errorf("%s: scenarios 3 and 4 of seed 7 are the same", name)
		}
	}
}

// stepExprs are the step definitions the steps package registers, read
// from godog itself (nothing runs).
func stepExprs(t *testing.T) []*regexp.Regexp {
	t.Helper()
	var out bytes.Buffer
	godog.TestSuite{
		ScenarioInitializer: func(sc *godog.ScenarioContext) { steps.Register(sc, &steps.Env{}) },
		Options:             &godog.Options{ShowStepDefinitions: true, Format: "pretty", Output: &out, NoColors: true, FS: fstest.MapFS{}},
	}.Run()
	ansi := regexp.MustCompile(`\x1b\[[0-9;]*m`)
	var exprs []*regexp.Regexp
	for _, line := range strings.Split(ansi.ReplaceAllString(out.String(), ""), "\n") {
		expr, _, ok := strings.Cut(line, " # ")
		if !ok {
			continue
		}
		re, err := regexp.Compile(strings.TrimSpace(expr))
		if err != nil {
			t.Fatalf("step definition %q: %v", expr, err)
		}
		exprs = append(exprs, re)
	}
	if len(exprs) < 40 {
		t.Fatalf("read %d step definitions from godog:\n%s", len(exprs), out.String())
	}
	return exprs
}

// Every scenario drawn, and every one its shrinking can make, is a
// scenario of the catalog whose every step is a step the harness defines,
// and one the steps can run (valid).
func TestGeneratedScenariosAreTheSuitesSteps(t *testing.T) {
	exprs := stepExprs(t)
	rng := rand.New(rand.NewSource(1))
	for name, d := range dims {
		for seed := int64(1); seed <= 20; seed++ {
			for n := 1; n <= 3; n++ {
				s := Generate(seed, n, d, DefaultSteps)
				cands := []Scenario{s}
				for i := 0; i < 5; i++ { // random subsets, as ddmin removes
					drop := map[int]bool{}
					for _, a := range s.Actions {
						if rng.Intn(3) == 0 {
							drop[a.ID] = true
						}
					}
					cands = append(cands, s.Without(drop))
				}
				for _, c := range cands {
					where := fmt.Sprintf("%s seed %d scenario %d", name, seed, n)
					if why := invalid(c); why != "" {
						t.Fatalf("%s: %s\n%s", where, why, c.Render())
					}
					es, err := catalog.Load(fstest.MapFS{"x.feature": {Data: c.Render()}})
					if err != nil || len(es) != 1 || es[0].ID != c.ID() {
						t.Fatalf("%s: the catalog reads %v, %v", where, es, err)
					}
					for _, st := range es[0].Steps {
						if !slices.ContainsFunc(exprs, func(re *regexp.Regexp) bool { return re.MatchString(st.Text) }) {
							t.Fatalf("%s: no step definition matches %q", where, st.Text)
						}
					}
				}
			}
		}
	}
}

// invalid says why the steps could not run a scenario: a client acting
// while its own call is in flight (other than retrying or cancelling it),
// a release with no pause or hold, a pause or hold never released.
func invalid(s Scenario) string {
	pending := map[string]int{}
	held := map[string]bool{} // a call sent while the probe held its operation is in flight
	open := map[int]bool{}
	for _, a := range s.Actions {
		if p := pending[a.Client]; p != 0 && a.Client != "" {
			switch {
			case a.Kind == KCancel && held[a.Client]:
				return fmt.Sprintf("%s cancels a call sent while the probe held it, which may have been answered", a.Client)
			case a.Kind == KCall && p == a.Op+1, a.Kind == KCancel:
				delete(pending, a.Client)
				if a.Kind == KCall && a.Variant == VariantWhileHeld {
					pending[a.Client] = a.Op + 1
				}
			default:
				return fmt.Sprintf("%s acts (%s) while its call is in flight", a.Client, a.Kind)
			}
			continue
		}
		held[a.Client] = a.Kind == KCall && a.Variant == VariantWhileHeld
		switch a.Kind {
		case KCall:
			if held[a.Client] {
				pending[a.Client] = a.Op + 1
			}
		case KPause, KHold:
			pending[a.Client] = a.Op + 1
			open[a.Group] = true
		case KRelease, KUnhold:
			if !open[a.Group] {
				return fmt.Sprintf("a %s of group %d with nothing to release", a.Kind, a.Group)
			}
			delete(open, a.Group)
		case KCancel:
			return fmt.Sprintf("%s cancels with no call in flight", a.Client)
		}
	}
	if len(open) > 0 {
		return fmt.Sprintf("groups %v never released", open)
	}
	return ""
}

// fakeBatch judges scenarios without a target: a scenario "violates"
// double-dispatch when it still holds every action of need (by ID), and
// wrong-refusal when it holds only some. It counts the batches.
type fakeBatch struct {
	mu      sync.Mutex
	need    []int
	batches [][]string
}

func (f *fakeBatch) run(_ context.Context, ss []Scenario) (map[string]reports.Scenario, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]reports.Scenario{}
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID())
		have := 0
		for _, a := range s.Actions {
			if slices.Contains(f.need, a.ID) {
				have++
			}
		}
		r := reports.Scenario{ID: s.ID(), Verdict: judge.Passed}
		switch {
		case have == len(f.need):
			r.Verdict = judge.Failed
			r.Checks = []judge.Check{{State: judge.Violated, Kind: judge.KindDispatches, Harm: judge.HarmDoubleDispatch}}
		case have > 0:
			r.Verdict = judge.Failed
			r.Checks = []judge.Check{{State: judge.Violated, Kind: judge.KindAnswer, Harm: judge.HarmWrongRefusal}}
		}
		out[s.ID()] = r
	}
	f.batches = append(f.batches, ids)
	return out, nil
}

// Shrinking keeps exactly what the violation needs, with what those
// actions need themselves, and never a candidate that fails another way.
func TestShrink(t *testing.T) {
	// The violation needs a pause (which keeps its release) and the last
	// call of the scenario: the first of seed 5's scenarios that has both.
	var s Scenario
	var pause, release, last Action
	for n := 1; pause.ID == 0 || last.ID == 0; n++ {
		s, pause, last = Generate(5, n, dims["full"], 30), Action{}, Action{}
		for _, a := range s.Actions {
			switch {
			case a.Kind == KPause && pause.ID == 0:
				pause = a
			case a.Kind == KCall && pause.ID != 0:
				last = a
			}
		}
	}
	for _, a := range s.Actions {
		if a.Kind == KRelease && a.Group == pause.Group {
			release = a
		}
	}
	f := &fakeBatch{need: []int{pause.ID, last.ID}}
	rec, _ := f.run(context.Background(), []Scenario{s})
	target, _, ok := TargetOf(rec[s.ID()])
	if !ok || target.Harm != judge.HarmDoubleDispatch {
		t.Fatalf("the fake does not fail the scenario: %+v", rec)
	}
	got, err := Shrink(context.Background(), s, rec[s.ID()], target, f.run, ShrinkOptions{MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	for _, a := range got.Scenario.Actions {
		kept = append(kept, a.ID)
	}
	want := []int{pause.ID, release.ID, last.ID}
	slices.Sort(want)
	slices.Sort(kept)
	if !slices.Equal(kept, want) && !(slices.Contains(kept, pause.ID) && slices.Contains(kept, last.ID) && len(kept) <= len(want)+1) {
		t.Errorf("kept actions %v, want %v (the pause, its release and the call)\n%s", kept, want, got.Scenario.Render())
	}
	if _, shows := target.Shows(got.Record); !shows {
		t.Errorf("the shrunk record does not show the target: %+v", got.Record)
	}
	for _, b := range f.batches[1:] {
		if len(b) > 8 {
			t.Errorf("a batch of %d candidates, more than MaxBatch", len(b))
		}
		for _, id := range b {
			if !regexp.MustCompile(`^shrink-\d+-\d+$`).MatchString(id) {
				t.Errorf("candidate ID %q", id)
			}
		}
	}
	if got.Rounds != len(f.batches)-1 || got.Runs == 0 {
		t.Errorf("rounds %d runs %d, batches %d", got.Rounds, got.Runs, len(f.batches))
	}
	// A deadline already past leaves the scenario as it was.
	late, err := Shrink(context.Background(), s, rec[s.ID()], target, f.run, ShrinkOptions{Deadline: time.Now().Add(-time.Second)})
	if err != nil || !late.Incomplete || len(late.Scenario.Actions) != len(s.Actions) {
		t.Errorf("shrink past its deadline: incomplete %v, %d actions of %d, %v", late.Incomplete, len(late.Scenario.Actions), len(s.Actions), err)
	}
}

// Waits merge and shorten, crowds shrink to two, once the actions are
// as few as they go.
func TestShrinkSimplifies(t *testing.T) {
	s := Scenario{Seed: 1, N: 1, Wallet: 1000, Prices: map[string]int64{ToolWrite: 3}, Clients: map[string]Client{"A": {}},
		Ops: []Op{{Tool: ToolWrite, Token: 1, Key: 1}},
		Actions: []Action{
			{ID: 1, Kind: KTwins, Op: 0, N: 16},
			{ID: 2, Kind: KWait, Dur: 2 * time.Second},
			{ID: 3, Kind: KWait, Dur: 1500 * time.Millisecond},
			{ID: 4, Kind: KCall, Client: "A", Op: 0},
		}}
	f := &fakeBatch{need: []int{1, 2, 4}}
	rec, _ := f.run(context.Background(), []Scenario{s})
	target, _, _ := TargetOf(rec[s.ID()])
	got, err := Shrink(context.Background(), s, rec[s.ID()], target, f.run, ShrinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var acts []string
	for _, a := range got.Scenario.Actions {
		acts = append(acts, fmt.Sprintf("%d:%s:%v:%d", a.ID, a.Kind, a.Dur, a.N))
	}
	if want := []string{"1:twins:0s:2", "2:wait:100ms:0", "4:call:0s:0"}; !slices.Equal(acts, want) {
		t.Errorf("shrunk to %v, want %v", acts, want)
	}
}

// A found scenario, as written: a scenario of the catalog, with its ID,
// level, needs, requirement and source, parsed back to the same steps.
func TestFoundFeatureGolden(t *testing.T) {
	s := foundScenario()
	s.Title = "Explored: double-dispatch (the probe saw op dispatched as its operations allow)"
	s.Requirement = "No double-dispatch: the probe saw op dispatched as its operations allow. The model saw dispatched 2 times (expected at most 1 dispatch(es))."
	s.Source = "found by `mcpconform explore --bug no-idempotency --seed 20261204` as scenario 7 of seed 20261204 (30 steps, shrunk to 21) against reference"
	got := s.Render()
	goldenfile.Equal(t, filepath.Join("testdata", "found.feature"), got)
	es, err := catalog.Load(fstest.MapFS{"found.feature": {Data: got}})
	if err != nil || len(es) != 1 {
		t.Fatalf("the catalog reads %v, %v", es, err)
	}
	e := es[0]
	if e.ID != "explore-20261204-7" || e.Level != "must" || e.Requirement != s.Requirement || e.Source != s.Source || len(e.Steps) != len(s.steps()) {
		t.Errorf("parsed back as %+v", e)
	}
	if !slices.Contains(e.Needs, "upstream") {
		t.Errorf("needs %v, want upstream among them", e.Needs)
	}
}

// foundScenario is a scenario of every kind of action, as a shrinker
// leaves one (the golden file shows each rendered).
func foundScenario() Scenario {
	return Scenario{Seed: 20261204, N: 7, Wallet: 300,
		Prices:  map[string]int64{ToolWrite: 3, ToolWrite2: 1, ToolRead: 0, ToolAsk: 5, ToolPricey: 500},
		Permits: map[string]Permit{"P1": {Tool: ToolWrite, Budget: 9, TTL: time.Minute}},
		Clients: map[string]Client{"A": {Version: wireSession}, "B": {URL: 2}, "K": {Cred: CredSecond}, "W": {Cred: CredOther},
			"alice": {Principal: "alice", Version: wireStateless}},
		Ops: []Op{
			{Tool: ToolWrite, Token: 1, Key: 1},
			{Tool: ToolWrite, Token: 2},
			{Tool: ToolWrite2, Token: 1, Key: 1},
			{Tool: ToolRead, Token: 3},
			{Tool: ToolAsk, Token: 4, Key: 2},
			{Tool: ToolWrite, Token: 5, Permit: "P1", Note: "x"},
			{Tool: ToolPricey, Token: 6, Key: 3},
		},
		Actions: []Action{
			{ID: 1, Kind: KClock, Variant: ClockFreezeBefore, Dur: time.Millisecond},
			{ID: 2, Kind: KPause, Client: "A", Op: 1, Point: "fence.read", Group: 1},
			{ID: 3, Kind: KClock, Variant: ClockPastStale},
			{ID: 4, Kind: KCall, Client: "B", Op: 1},
			{ID: 5, Kind: KRelease, Group: 1},
			{ID: 6, Kind: KWait, Dur: 300 * time.Millisecond},
			{ID: 7, Kind: KCall, Client: "A", Op: 1},
			{ID: 8, Kind: KHold, Client: "K", Op: 0, Group: 2},
			{ID: 9, Kind: KCancel, Client: "K", Op: 0, Variant: "close", Needs: []int{8}},
			{ID: 10, Kind: KUnhold, Op: 0, Group: 2},
			{ID: 11, Kind: KCall, Client: "W", Op: 0},
			{ID: 12, Kind: KCall, Client: "A", Op: 2},
			{ID: 13, Kind: KTwins, Op: 1, N: 4, Variant: "split"},
			{ID: 14, Kind: KFault, Client: "A", Op: 5, Variant: "drop"},
			{ID: 15, Kind: KClock, Variant: ClockAdvance, Dur: 61 * time.Second},
			{ID: 16, Kind: KCall, Client: "A", Op: 5},
			{ID: 17, Kind: KCall, Client: "alice", Op: 4},
			{ID: 18, Kind: KAnswer, Client: "alice", Op: 4, Needs: []int{17}},
			{ID: 19, Kind: KCall, Client: "alice", Op: 4, Variant: "again"},
			{ID: 20, Kind: KRevoke, Who: "alice"},
			{ID: 21, Kind: KCall, Client: "B", Op: 3},
			{ID: 22, Kind: KSetting, Variant: SetWindow, Value: 0},
			{ID: 23, Kind: KRemove, Tool: ToolWrite2},
			{ID: 24, Kind: KRaw, Client: "K"},
			{ID: 25, Kind: KCall, Client: "K", Op: 6},
		},
	}
}

// Every pause variant has its weight, and the seed's turn of every kind
// reaches every kind within the default scenarios.
func TestEveryKindComesUp(t *testing.T) {
	g := &gen{d: dims["full"], rng: rand.New(rand.NewSource(1))}
	kinds := len(g.episodes())
	seen := map[int]bool{}
	for n := 1; n <= DefaultRuns; n++ {
		for _, k := range forced(1, n, kinds, forcedEach) {
			seen[k] = true
		}
	}
	if len(seen) != kinds {
		t.Errorf("the first %d scenarios' turns reach %d of %d kinds", DefaultRuns, len(seen), kinds)
	}
}
