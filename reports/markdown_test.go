package reports

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// passingFixture is the fixture run with only the scenarios that do not
// keep it from a PASS.
func passingFixture(t *testing.T) Run {
	run := loadFixture(t)
	run.Scenarios = slices.DeleteFunc(run.Scenarios, func(s Scenario) bool {
		return s.Verdict != judge.Passed && s.Verdict != judge.ExpectedFailure
	})
	if result, _ := Judge(run); result != RunPass {
		t.Fatalf("the passing fixture is %s", result)
	}
	return run
}

// summary.md of a passing run, a failing one, and a failing one against a
// baseline in which everything passed, run from a URL target's recorded
// flags.
func TestMarkdownGolden(t *testing.T) {
	golden(t, "summary-pass.md", Markdown(passingFixture(t)))

	run := loadFixture(t)
	golden(t, "summary-fail.md", Markdown(run))

	run.Target = Target{Kind: "url", URLs: []string{"https://gw.example/mcp"}, Profile: "acme", ServerName: "acme-gateway", ServerVersion: "2.3.1",
		Args: []string{"--target", "https://gw.example/mcp", "--profile", "my gateway.json", "--probe-url", "http://127.0.0.1:8720"}}
	base := buildSummary(run, fileNames(run.Scenarios))
	base.Result, base.OK, base.Why = RunPass, true, nil
	for i := range base.Scenarios {
		base.Scenarios[i].Verdict, base.Scenarios[i].Reason = judge.Passed, ""
	}
	base.Scenarios = append(base.Scenarios, SummaryScenario{ID: "gone-01", Title: "left the suite", Level: "must", Verdict: judge.Passed})
	run.Baseline = &base
	golden(t, "summary-regressions.md", Markdown(run))
}

// A reason is the target's words: it must not become a table cell, a
// link, a heading or HTML in the step summary.
func TestMarkdownEscapesHostileText(t *testing.T) {
	s := recorded("evil|01", judge.Failed, []string{judge.Violated})
	s.Checks[0].Actual = "x | y <img src=x onerror=alert(1)> [link](http://e) `code` **bold**\n## heading"
	s.Checks[0].Harm = judge.HarmDoubleDispatch
	md := string(Markdown(runOf(LevelWire, false, s)))
	for _, bad := range []string{"<img", "[link](", "\n## heading", "**bold**"} {
		if strings.Contains(md, bad) {
			t.Errorf("summary.md carries %q unescaped:\n%s", bad, md)
		}
	}
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "| `evil") {
			if cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); cells != 5 {
				t.Errorf("the row has %d cell borders, want 5: %s", cells, line)
			}
		}
	}
}

// However many scenarios fail and however long their reasons, summary.md
// stays far below GitHub's 1 MiB for a step summary, and says how many it
// left out.
func TestMarkdownIsBounded(t *testing.T) {
	var ss, passed []Scenario
	for i := range 2000 {
		s := recorded(fmt.Sprintf("s-%04d", i), judge.Failed, []string{judge.Violated})
		s.Checks[0].Actual = strings.Repeat("long answer ", 5000)
		ss = append(ss, s)
		p := s
		p.Verdict = judge.Passed
		passed = append(passed, p)
	}
	run := runOf(LevelWire, false, ss...)
	base := buildSummary(runOf(LevelWire, false, passed...), fileNames(passed))
	run.Baseline = &base
	md := Markdown(run)
	if len(md) > 64<<10 {
		t.Errorf("summary.md of 2000 failures is %d bytes", len(md))
	}
	for _, want := range []string{"… 1950 more, see report.html", "… 1950 more, see `mcpconform diff`", "2000 regressions"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
}

func TestRerunCommand(t *testing.T) {
	for _, c := range []struct {
		target Target
		want   string
	}{
		{Target{Kind: "reference", Store: "sqlite"}, "mcpconform run --id retry-01"},
		{Target{Kind: "reference", Store: "postgres", Bugs: []string{"a", "b"}}, "mcpconform run --store postgres --bug a --bug b --id retry-01"},
		{Target{Kind: "url", URLs: []string{"https://gw/mcp"}}, "mcpconform run --target https://gw/mcp --profile PROFILE.json --id retry-01"},
		{Target{Kind: "url", Args: []string{"--target", "https://gw/mcp", "--profile", "it's.json"}}, `mcpconform run --target https://gw/mcp --profile 'it'\''s.json' --id retry-01`},
	} {
		if got := RerunCommand(Run{Target: c.target}, "retry-01"); got != c.want {
			t.Errorf("RerunCommand(%+v) = %q, want %q", c.target, got, c.want)
		}
	}
}
