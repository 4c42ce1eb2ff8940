package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
)

func TestMachineFormatsGolden(t *testing.T) {
	run := loadFixture(t)
	var jl bytes.Buffer
	if err := PrintJSONL(&jl, run); err != nil {
		t.Fatal(err)
	}
	golden(t, "run.jsonl", jl.Bytes())
	var gh bytes.Buffer
	PrintGitHub(&gh, run, "features")
	golden(t, "github.txt", gh.Bytes())
}

// The JSON lines agree with summary.json: one line per scenario with its
// verdict, and a last line with the same result and counts.
func TestJSONLAgreesWithSummary(t *testing.T) {
	run := loadFixture(t)
	sum := buildSummary(run, fileNames(run.Scenarios))
	var buf bytes.Buffer
	if err := PrintJSONL(&buf, run); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(run.Scenarios)+1 {
		t.Fatalf("%d lines for %d scenarios, want one each and a summary", len(lines), len(run.Scenarios))
	}
	for i, s := range sum.Scenarios {
		if lines[i]["type"] != "scenario" || lines[i]["id"] != s.ID || lines[i]["verdict"] != string(s.Verdict) || lines[i]["fails_run"] != s.FailsRun {
			t.Errorf("line %d = %v, want scenario %s %s", i, lines[i], s.ID, s.Verdict)
		}
	}
	last := lines[len(lines)-1]
	if last["type"] != "summary" || last["result"] != sum.Result || int(last["total"].(float64)) != sum.Total || last["scenarios"] != nil {
		t.Errorf("summary line = %v, want result %s of %d scenarios and no scenario list", last, sum.Result, sum.Total)
	}
	tot := computeTotals(run)
	if int(last["failed"].(float64)) != tot.failed || int(last["passed"].(float64)) != tot.passed {
		t.Errorf("summary line counts %v/%v, want %d passed %d failed", last["passed"], last["failed"], tot.passed, tot.failed)
	}
}

func TestGitHubAnnotations(t *testing.T) {
	run := Run{Tool: "mcpconform", Level: LevelFull, Scenarios: []Scenario{
		{ID: "retry-01", Title: "A retry, dispatched once", File: "retry.feature", Line: 12, Level: "must", Verdict: judge.Failed,
			Reason: "the probe saw op1 dispatched 2 times\nsecond line, with: 100%"},
		{ID: "clock-01", Title: "Window", File: "clock.feature", Line: 3, Level: "must", Verdict: judge.Skipped, Missing: judge.CapClock, Reason: "no clock"},
		{ID: "ok-01", Title: "Fine", File: "ok.feature", Line: 5, Level: "must", Verdict: judge.Passed, Checks: []judge.Check{{Step: "s", State: judge.Held}}},
	}}
	var buf bytes.Buffer
	PrintGitHub(&buf, run, "features")
	out := buf.String()
	for _, want := range []string{
		"::error file=features/retry.feature,line=12,title=retry-01%3A A retry%2C dispatched once::retry-01 [must]: failed",
		"dispatched 2 times%0Asecond line, with: 100%25\n",
		"::warning file=features/clock.feature,line=3,title=clock-01%3A Window::clock-01 [must]: skipped, needs clock",
		"::error title=mcpconform FAIL::FAIL (level full)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ok.feature") {
		t.Errorf("a passed scenario was annotated:\n%s", out)
	}
	if !strings.HasSuffix(out, "1 passed, 1 failed, 1 skipped\n") {
		t.Errorf("output does not end with the text summary:\n%s", out)
	}
}

func TestMachineFormatsOfASetUpError(t *testing.T) {
	var jl, gh bytes.Buffer
	PrintJSONLError(&jl, "ERROR", "set-up: connection refused")
	PrintGitHubError(&gh, "ERROR", "set-up: connection refused\nmore")
	if got, want := jl.String(), `{"type":"error","result":"ERROR","error":"set-up: connection refused"}`+"\n"; got != want {
		t.Errorf("jsonl = %q, want %q", got, want)
	}
	if got, want := gh.String(), "::error title=mcpconform ERROR::set-up: connection refused%0Amore\n"; got != want {
		t.Errorf("github = %q, want %q", got, want)
	}
}
