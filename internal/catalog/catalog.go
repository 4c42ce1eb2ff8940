// Package catalog reads the Gherkin features into scenario entries: the
// stable ID, level, capability needs and the requirement each one enforces.
// `mcpconform list`, the runner and the reports all read scenarios from here,
// so an ID means the same thing everywhere.
package catalog

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

// Entry is one runnable scenario (one pickle: an outline row is its own entry).
type Entry struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Feature     string   `json:"feature"`
	File        string   `json:"file"`
	Line        int64    `json:"line"`
	Level       string   `json:"level"` // must | should
	Tags        []string `json:"tags"`
	Needs       []string `json:"needs"` // capabilities, without the @needs- prefix
	Requirement string   `json:"requirement"`
	Source      string   `json:"source"`
	// Steps are the scenario's steps as run, Background first, outline
	// values filled in.
	Steps []Step `json:"steps,omitempty"`
}

// Step is one step of a scenario.
type Step struct {
	Keyword string `json:"keyword"` // "Given ", "When ", "Then ", "And "...
	Text    string `json:"text"`
	Line    int64  `json:"line"`
}

// idTag is a scenario ID: an area and a number (retry-01); for a
// combination of another scenario with a dimension it does not vary, that
// scenario's ID and the dimension (iga-01-stateless, twins-04-keyed); and
// for a scenario explore wrote, its seed and number (explore-<seed>-<n>).
var idTag = regexp.MustCompile(`^@([a-z]+(?:-\d+)+[a-z]?(?:-[a-z]+)*)$`)

// Load parses every *.feature file of fsys and checks the catalog's own rules:
// each scenario has exactly one ID tag, unique across the suite, one level tag,
// and Requirement: and Source: lines in its description.
func Load(fsys fs.FS) ([]Entry, error) {
	names, err := fs.Glob(fsys, "*.feature")
	if err != nil {
		return nil, fmt.Errorf("list features: %w", err)
	}
	sort.Strings(names)
	var out []Entry
	seen := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		entries, err := parse(name, data)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if prev, dup := seen[e.ID]; dup {
				return nil, fmt.Errorf("%s:%d: scenario ID %s already used at %s", e.File, e.Line, e.ID, prev)
			}
			seen[e.ID] = fmt.Sprintf("%s:%d", e.File, e.Line)
			out = append(out, e)
		}
	}
	return out, nil
}

func parse(name string, data []byte) ([]Entry, error) {
	var n int
	newID := func() string { n++; return fmt.Sprint(n) }
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), newID)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	if doc.Feature == nil {
		return nil, nil
	}
	scenarios := map[string]*messages.Scenario{}
	astSteps := map[string]*messages.Step{}
	addSteps := func(ss []*messages.Step) {
		for _, st := range ss {
			astSteps[st.Id] = st
		}
	}
	collect := func(children []*messages.FeatureChild) {
		for _, c := range children {
			if c.Scenario != nil {
				scenarios[c.Scenario.Id] = c.Scenario
				addSteps(c.Scenario.Steps)
			}
			if c.Background != nil {
				addSteps(c.Background.Steps)
			}
		}
	}
	collect(doc.Feature.Children)
	for _, c := range doc.Feature.Children {
		if c.Rule != nil {
			for _, rc := range c.Rule.Children {
				if rc.Scenario != nil {
					scenarios[rc.Scenario.Id] = rc.Scenario
					addSteps(rc.Scenario.Steps)
				}
				if rc.Background != nil {
					addSteps(rc.Background.Steps)
				}
			}
		}
	}
	doc.Uri = path.Base(name)
	var out []Entry
	for _, p := range gherkin.Pickles(*doc, doc.Uri, newID) {
		sc := scenarios[p.AstNodeIds[0]]
		e := Entry{Title: p.Name, Feature: doc.Feature.Name, File: doc.Uri}
		if sc != nil {
			e.Line = sc.Location.Line
			e.Requirement, e.Source = describe(sc.Description)
		}
		for _, ps := range p.Steps {
			st := Step{Text: ps.Text}
			if len(ps.AstNodeIds) > 0 {
				if a := astSteps[ps.AstNodeIds[0]]; a != nil {
					st.Keyword, st.Line = a.Keyword, a.Location.Line
				}
			}
			e.Steps = append(e.Steps, st)
		}
		for _, t := range p.Tags {
			e.Tags = append(e.Tags, t.Name)
			switch {
			case idTag.MatchString(t.Name):
				if e.ID != "" {
					return nil, fmt.Errorf("%s:%d: scenario %q has two ID tags (%s, %s)", e.File, e.Line, p.Name, e.ID, t.Name)
				}
				e.ID = strings.TrimPrefix(t.Name, "@")
			case t.Name == "@must" || t.Name == "@should":
				e.Level = strings.TrimPrefix(t.Name, "@")
			case strings.HasPrefix(t.Name, "@needs-"):
				e.Needs = append(e.Needs, strings.TrimPrefix(t.Name, "@needs-"))
			}
		}
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("%s:%d: scenario %q has no ID tag like @retry-01", e.File, e.Line, p.Name)
		case e.Level == "":
			return nil, fmt.Errorf("%s:%d: scenario %s has no level tag (@must or @should)", e.File, e.Line, e.ID)
		case e.Requirement == "" || e.Source == "":
			return nil, fmt.Errorf("%s:%d: scenario %s needs Requirement: and Source: lines in its description", e.File, e.Line, e.ID)
		}
		out = append(out, e)
	}
	return out, nil
}

// describe pulls the Requirement: and Source: lines out of a description.
func describe(desc string) (req, src string) {
	for _, line := range strings.Split(desc, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "Requirement:"); ok {
			req = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Source:"); ok {
			src = strings.TrimSpace(v)
		}
	}
	return req, src
}

// IDOf returns the scenario ID among a pickle's tags, or "".
func IDOf(tags []string) string {
	for _, t := range tags {
		if idTag.MatchString(t) {
			return strings.TrimPrefix(t, "@")
		}
	}
	return ""
}

// ByID indexes entries.
func ByID(es []Entry) map[string]Entry {
	m := make(map[string]Entry, len(es))
	for _, e := range es {
		m[e.ID] = e
	}
	return m
}
