package bundle

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/buildinfo"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/reports"
)

// Suite is the scenario set of one harness build, to hold a report to: a
// certification covers the whole suite, not the scenarios a vendor chose.
type Suite struct {
	Version string
	Commit  string
	IDs     []string
	// Scenarios are what the suite says of each ID, which a run records as
	// is: its level and tags (which decide whether a skip counts) and its
	// steps (whose checks decide the verdict). An ID without an entry is
	// not compared.
	Scenarios map[string]SuiteScenario
}

// SuiteScenario is one scenario as its feature file writes it.
type SuiteScenario struct {
	Level string
	Tags  []string
	Steps []string // keyword and text, "Then the probe saw ..."
}

// CurrentSuite is this binary's suite.
func CurrentSuite() (*Suite, error) {
	entries, err := catalog.Load(features.FS)
	if err != nil {
		return nil, fmt.Errorf("bundle: load features: %w", err)
	}
	info := buildinfo.Read()
	s := &Suite{Version: info.Version, Commit: info.Commit, Scenarios: map[string]SuiteScenario{}}
	for _, e := range entries {
		s.IDs = append(s.IDs, e.ID)
		sc := SuiteScenario{Level: e.Level, Tags: e.Tags}
		for _, st := range e.Steps {
			sc.Steps = append(sc.Steps, st.Keyword+st.Text)
		}
		s.Scenarios[e.ID] = sc
	}
	return s, nil
}

// same reports whether the suite is the one the run's harness had: the same
// version and the same known, clean commit. Another build (or a dirty tree)
// may have other scenarios, so it cannot say which are missing.
func (s *Suite) same(sum reports.Summary) bool {
	return s != nil && s.Commit != "" && !strings.HasSuffix(s.Commit, "-dirty") && s.Version == sum.Version && s.Commit == sum.Commit
}

// clockSlack absorbs a step of the wall clock during a run; evidence from
// another run is minutes or days away, not a second.
const clockSlack = time.Second

// coherence lists what makes a report's parts disagree with each other
// beyond what recheck judges: a profile that is not the one the run used,
// a selection of scenarios instead of the suite, exchanges from another run.
// notes say what could not be checked. It is run by Create, which refuses
// such a report, and by Verify, which fails it.
func coherence(sum reports.Summary, run reports.Run, profile json.RawMessage, suite *Suite) (problems, notes []string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if profile != nil {
		var p target.Profile
		if err := json.Unmarshal(profile, &p); err != nil {
			bad("the manifest's profile does not read: %v", err)
		} else {
			if sum.Target.Kind != "url" {
				bad("the manifest carries profile %q, but the run tested a %q target, which has none", p.Name, sum.Target.Kind)
			} else if p.Name != sum.Target.Profile {
				bad("the manifest carries profile %q, the run used profile %q", p.Name, sum.Target.Profile)
			}
			for _, u := range p.URLs {
				if !slices.Contains(sum.Target.URLs, u) {
					bad("the manifest's profile names %s, which the run did not test (it tested %v)", u, sum.Target.URLs)
				}
			}
		}
	}
	if sum.Tags != "" {
		bad("the run selected scenarios (--tags/--id %q): a bundle certifies the whole suite, run it without a selection", sum.Tags)
	}
	switch {
	case suite.same(sum):
		have := map[string]bool{}
		for _, s := range run.Scenarios {
			have[s.ID] = true
		}
		var missing, extra []string
		for _, id := range suite.IDs {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		for _, s := range run.Scenarios {
			if !slices.Contains(suite.IDs, s.ID) {
				extra = append(extra, s.ID)
			}
		}
		harness := fmt.Sprintf("mcpconform %s commit %s", sum.Version, buildinfo.Short(sum.Commit))
		if len(missing) > 0 {
			bad("%d scenarios of the suite (%s) are not in the report: %s", len(missing), harness, someIDs(missing))
		}
		if len(extra) > 0 {
			bad("%d scenarios of the report are not in the suite of %s: %s", len(extra), harness, someIDs(extra))
		}
		for _, sc := range run.Scenarios {
			if want, ok := suite.Scenarios[sc.ID]; ok {
				if p := rewritten(sc, want); p != "" {
					bad("%s is not the suite's scenario: %s", sc.ID, p)
				}
			}
		}
	case suite != nil:
		notes = append(notes, fmt.Sprintf("the scenario set was not checked against the suite: the run's harness is %s commit %s, this one %s commit %s (check with that build)",
			sum.Version, orUnknownCommit(sum.Commit), suite.Version, orUnknownCommit(suite.Commit)))
	}
	from, to := sum.Started.Add(-clockSlack), sum.Finished.Add(clockSlack)
	for _, s := range run.Scenarios {
		if p := foreignExchange(s, sum.Target.URLs, from, to); p != "" {
			bad("%s: %s", s.ID, p)
		}
	}
	return problems, notes
}

// rewritten says how a recorded scenario differs from the suite's: a level
// or tag that changes how its gaps count, a step (and so its checks)
// edited, added or removed; "" when it does not.
func rewritten(s reports.Scenario, want SuiteScenario) string {
	if s.Level != want.Level {
		return fmt.Sprintf("level %q, the suite's is %q", s.Level, want.Level)
	}
	if !slices.Equal(s.Tags, want.Tags) {
		return fmt.Sprintf("tags %v, the suite's are %v", s.Tags, want.Tags)
	}
	if len(s.Steps) != len(want.Steps) {
		return fmt.Sprintf("%d steps, the suite's has %d", len(s.Steps), len(want.Steps))
	}
	for i, st := range s.Steps {
		if got := st.Keyword + st.Text; got != want.Steps[i] {
			return fmt.Sprintf("step %d is %q, the suite's is %q", i+1, got, want.Steps[i])
		}
	}
	return ""
}

// foreignExchange names the first exchange of s that the run could not have
// made: an MCP request to a URL it did not test, or a request (MCP or
// control) outside the run's time. History events are not held to the
// window: ledger entries carry the gateway's clock, which scenarios move.
func foreignExchange(s reports.Scenario, urls []string, from, to time.Time) string {
	outside := func(e reports.Exchange) bool {
		return !e.Started.IsZero() && (e.Started.Before(from) || e.Started.After(to)) ||
			!e.Finished.IsZero() && (e.Finished.Before(from) || e.Finished.After(to))
	}
	for _, e := range s.Exchanges {
		if !slices.Contains(urls, e.URL) {
			return fmt.Sprintf("exchange %q went to %s, which the run did not test (evidence from another run?)", e.Label, e.URL)
		}
		if outside(e) {
			return fmt.Sprintf("exchange %q at %s is outside the run (%s to %s; evidence from another run?)", e.Label, e.Started.Format(time.RFC3339Nano), from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
	}
	for _, e := range s.Control {
		if outside(e) {
			return fmt.Sprintf("control call %q at %s is outside the run (%s to %s; evidence from another run?)", e.Label, e.Started.Format(time.RFC3339Nano), from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
	}
	return ""
}

// someIDs lists up to ten IDs and how many more there are.
func someIDs(ids []string) string {
	if len(ids) <= 10 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:10], ", "), len(ids)-10)
}

func orUnknownCommit(c string) string {
	if c == "" {
		return "unknown"
	}
	return buildinfo.Short(c)
}

// redactedProfile is a profile file as a manifest carries it.
func redactedProfile(b []byte) (json.RawMessage, error) {
	p, err := target.ParseProfile(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p.Redacted())
}
