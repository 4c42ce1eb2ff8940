package reports

import (
	"encoding/json"
	"encoding/xml"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// The outputs are views of one model: JUnit's counts and Cucumber's step
// results agree with the verdicts, and nothing not observed reads as passed.
func TestOutputsAgreeWithTheModel(t *testing.T) {
	held := judge.Check{Step: "A gets a result", State: judge.Held, Capability: judge.CapWire, StepIndex: 0}
	run := Run{Level: LevelWire, Scenarios: []Scenario{
		{ID: "a-01", Title: "passes", Feature: "F", Level: "must", Verdict: judge.Passed, Checks: []judge.Check{held},
			Steps: []StepResult{{Keyword: "Then ", Text: "A gets a result", Status: "passed"}}},
		{ID: "a-02", Title: "fails", Feature: "F", Level: "must", Verdict: judge.Failed, Reason: "probe saw 2",
			Checks: []judge.Check{held, {Step: "the probe saw op1 dispatched 1 times", State: judge.Violated, Capability: judge.CapUpstream, StepIndex: 1,
				Expected: "1", Actual: "2"}},
			Steps: []StepResult{{Text: "A gets a result", Status: "passed"}, {Text: "the probe saw", Status: "failed"}}},
		{ID: "a-03", Title: "incomplete", Feature: "G", Level: "must", Verdict: judge.Incomplete, Reason: "ledger",
			Checks: []judge.Check{held, {Step: "the ledger has 1 debit", State: judge.NotObserved, Capability: judge.CapLedger, StepIndex: 1}},
			Steps:  []StepResult{{Text: "A gets a result", Status: "passed"}, {Text: "the ledger has 1 debit", Status: "passed"}}},
		{ID: "a-04", Title: "skipped", Feature: "G", Level: "must", Verdict: judge.Skipped, Missing: judge.CapClock, Reason: "no clock",
			Steps: []StepResult{{Text: "the clock is frozen", Status: "skipped"}, {Text: "A calls", Status: "not run"}}},
	}}
	b, err := JUnit(run)
	if err != nil {
		t.Fatal(err)
	}
	var ju junitSuites
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if ju.Tests != 4 || ju.Failures != 1 || ju.Skipped != 2 || ju.Errors != 0 || len(ju.Suites) != 1 || len(ju.Suites[0].Cases) != 4 {
		t.Errorf("junit counts tests=%d failures=%d skipped=%d errors=%d, want 4 1 2 0", ju.Tests, ju.Failures, ju.Skipped, ju.Errors)
	}
	for _, c := range ju.Suites[0].Cases {
		switch c.Name {
		case "a-01: passes":
			if c.Failure != nil || c.Skipped != nil {
				t.Errorf("%s: not a clean pass in junit", c.Name)
			}
		case "a-02: fails":
			if c.Failure == nil {
				t.Errorf("%s: no <failure>", c.Name)
			}
		case "a-03: incomplete", "a-04: skipped":
			if c.Skipped == nil || c.Skipped.Message == "" {
				t.Errorf("%s: no <skipped message>", c.Name)
			}
		default:
			t.Errorf("unexpected test case %q", c.Name)
		}
	}
	cb, err := Cucumber(run)
	if err != nil {
		t.Fatal(err)
	}
	var feats []cucumberFeature
	if err := json.Unmarshal(cb, &feats); err != nil {
		t.Fatal(err)
	}
	status := map[string][]string{}
	for _, f := range feats {
		for _, el := range f.Elements {
			for _, st := range el.Steps {
				status[el.Name] = append(status[el.Name], st.Result.Status)
			}
		}
	}
	want := map[string][]string{
		"a-01: passes":     {"passed"},
		"a-02: fails":      {"passed", "failed"},
		"a-03: incomplete": {"passed", "skipped"},
		"a-04: skipped":    {"skipped", "skipped"},
	}
	for name, w := range want {
		if got := status[name]; len(got) != len(w) || (len(got) > 0 && got[len(got)-1] != w[len(w)-1]) {
			t.Errorf("cucumber %s: steps %v, want %v", name, got, w)
		}
	}
}
