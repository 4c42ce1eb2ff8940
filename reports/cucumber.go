package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
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
func Cucumber(run Run) ([]byte, error) {
	var features []*cucumberFeature
	byName := map[string]*cucumberFeature{}
	for _, s := range run.Scenarios {
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
		for i, st := range s.Steps {
			r := cucumberResult{Status: cucumberStatus(st.Status), Error: st.Error}
			for _, c := range s.Checks {
				if c.StepIndex != i {
					continue
				}
				switch c.Status() {
				case Violated:
					r.Status, r.Error = "failed", fmt.Sprintf("%s\nexpected: %s\nobserved: %s", c.Step, c.Expected, c.Actual)
				case NotObserved:
					if r.Status == "passed" {
						r.Status, r.Error = "skipped", fmt.Sprintf("not observed (needs %s): %s", c.Capability, c.Actual)
					}
				}
			}
			el.Steps = append(el.Steps, cucumberStep{Keyword: st.Keyword, Name: st.Text, Line: st.Line, Result: r})
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

func slug(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-")
}
