package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// CucumberFile is written beside summary.json.
const CucumberFile = "cucumber.json"

type cucumberFeature struct {
	URI      string            `json:"uri"`
	ID       string            `json:"id"`
	Keyword  string            `json:"keyword"`
	Name     string            `json:"name"`
	Line     int64             `json:"line"`
	Elements []cucumberElement `json:"elements"`
}

type cucumberElement struct {
	ID      string         `json:"id"`
	Keyword string         `json:"keyword"`
	Name    string         `json:"name"`
	Line    int64          `json:"line"`
	Type    string         `json:"type"`
	Tags    []cucumberTag  `json:"tags"`
	Steps   []cucumberStep `json:"steps"`
	// After carries the run's judgment when no step shows it: a scenario
	// that fails the run with every step passed (an unexpected pass).
	After []cucumberHook `json:"after,omitempty"`
}

type cucumberHook struct {
	Match  cucumberMatch  `json:"match"`
	Result cucumberResult `json:"result"`
}

type cucumberMatch struct {
	Location string `json:"location"`
}

type cucumberTag struct {
	Name string `json:"name"`
	Line int64  `json:"line"`
}

type cucumberStep struct {
	Keyword string         `json:"keyword"`
	Name    string         `json:"name"`
	Line    int64          `json:"line"`
	Result  cucumberResult `json:"result"`
}

type cucumberResult struct {
	Status   string `json:"status"`
	Duration int64  `json:"duration,omitempty"`
	Error    string `json:"error_message,omitempty"`
}

// Cucumber renders the run as Cucumber JSON from the same model as every
// other output. A step whose check was not observed is "skipped" with the
// reason, and one whose check was violated "failed", whatever godog made of
// the step: a report reader must never see an unobserved check as passed.
// A scenario counts as its Outcome, as in JUnit: one that does not fail
// the run (waived, interrupted) shows no failed step, and one that fails
// it with none gets a failed after hook saying why.
func Cucumber(run Run) ([]byte, error) {
	var features []*cucumberFeature
	byName := map[string]*cucumberFeature{}
	outcomes := Outcomes(run)
	why := map[int]string{}
	for _, p := range problems(run) {
		why[p.index] = p.why
	}
	for i, s := range run.Scenarios {
		f := byName[s.Feature]
		if f == nil {
			f = &cucumberFeature{URI: s.File, ID: slug(s.Feature), Keyword: "Feature", Name: s.Feature}
			byName[s.Feature] = f
			features = append(features, f)
		}
		el := cucumberElement{ID: slug(s.Feature) + ";" + displayID(s.ID), Keyword: "Scenario", Name: displayID(s.ID) + ": " + s.Title,
			Line: s.Line, Type: "scenario", Tags: []cucumberTag{}, Steps: []cucumberStep{}}
		for _, t := range s.Tags {
			el.Tags = append(el.Tags, cucumberTag{Name: t, Line: s.Line - 1})
		}
		for j, st := range s.Steps {
			r := cucumberResult{Status: cucumberStatus(st.Status), Error: st.Error}
			for _, c := range s.Checks {
				if c.StepIndex != j {
					continue
				}
				switch c.Status() {
				case judge.Violated:
					r.Status, r.Error = "failed", fmt.Sprintf("%s\nexpected: %s\nobserved: %s", c.Step, c.Expected, c.Actual)
				case judge.NotObserved:
					if r.Status == "passed" {
						r.Status, r.Error = "skipped", fmt.Sprintf("not observed (needs %s): %s", c.Capability, c.Actual)
					}
				}
			}
			if outcomes[i] == OutcomePassed || outcomes[i] == OutcomeSkipped {
				if failing(r.Status) {
					r.Status, r.Error = "skipped", fmt.Sprintf("not counted (%s): %s", s.Verdict, r.Error)
				}
			}
			el.Steps = append(el.Steps, cucumberStep{Keyword: st.Keyword, Name: st.Text, Line: st.Line, Result: r})
		}
		if o := outcomes[i]; o == OutcomeFailed || o == OutcomeError {
			shown := false
			for _, st := range el.Steps {
				shown = shown || failing(st.Result.Status)
			}
			if !shown {
				el.After = []cucumberHook{{Match: cucumberMatch{Location: "mcpconform verdict"}, Result: cucumberResult{Status: "failed", Error: why[i]}}}
			}
		}
		if len(el.Steps) > 0 && s.Duration > 0 {
			el.Steps[0].Result.Duration = int64(time.Duration(s.Duration))
		}
		f.Elements = append(f.Elements, el)
	}
	if features == nil {
		features = []*cucumberFeature{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(features); err != nil {
		return nil, fmt.Errorf("cucumber: %w", err)
	}
	return buf.Bytes(), nil
}

// cucumberStatus maps godog's step statuses onto Cucumber's.
func cucumberStatus(s string) string {
	switch s {
	case "passed", "failed", "skipped", "undefined", "pending", "ambiguous":
		return s
	}
	return "skipped" // "not run": godog never reached it
}

// failing reports whether a Cucumber status makes its scenario fail.
func failing(status string) bool {
	return status == "failed" || status == "undefined" || status == "ambiguous"
}

func slug(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}
