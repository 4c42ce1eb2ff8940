package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// The CI numbers every output gives for a run, read back from the bytes as
// its consumer reads them, never from the model.
type ciView struct {
	total, passed, failed, skipped int
	result                         string
	counts                         map[string]int // per verdict; nil when the output has none
	line                           string         // the verdict line, "" when the output has none
}

// Scenarios of every kind, as a run records them.
func mixScenario(id, kind string) Scenario {
	held := judge.Check{Step: "A gets a result", State: judge.Held, Capability: judge.CapWire, StepIndex: 0, Expected: "a result", Actual: "a result"}
	violated := judge.Check{Step: "the probe saw op1 dispatched 1 times", State: judge.Violated, Capability: judge.CapUpstream, StepIndex: 1, Expected: "1 dispatch", Actual: "2 dispatches"}
	steps := func(second string) []StepResult {
		return []StepResult{{Keyword: "Then ", Text: "A gets a result", Status: "passed"}, {Keyword: "And ", Text: "the probe saw op1 dispatched 1 times", Status: second}}
	}
	s := Scenario{ID: id, Title: kind, Feature: "Mix", File: "mix.feature", Line: 3, Level: "must", Tags: []string{"@" + id, "@must"}}
	switch kind {
	case "passed":
		s.Verdict, s.Checks, s.Steps = judge.Passed, []judge.Check{held, {Step: violated.Step, State: judge.Held, Capability: judge.CapUpstream, StepIndex: 1}}, steps("passed")
	case "failed":
		s.Verdict, s.Reason, s.Checks, s.Steps = judge.Failed, "the probe saw op1 dispatched 2 times", []judge.Check{held, violated}, steps("failed")
	case "incomplete":
		s.Verdict, s.Reason = judge.Incomplete, "ledger not observed"
		s.Checks = []judge.Check{held, {Step: "the ledger has 1 debits and 0 refunds", State: judge.NotObserved, Capability: judge.CapLedger, StepIndex: 1, Actual: "no ledger"}}
		s.Steps = steps("passed")
	case "skipped":
		s.Verdict, s.Missing, s.Reason, s.Steps = judge.Skipped, judge.CapClock, "no clock", []StepResult{{Keyword: "Given ", Text: "the clock is frozen", Status: "skipped"}, {Text: "A calls", Status: "not run"}}
		s.Tags = append(s.Tags, "@needs-clock")
	case "interrupted":
		// godog fails the step the stop cut short.
		s.Verdict, s.Reason = judge.Interrupted, "the run was interrupted"
		s.Checks, s.Steps = []judge.Check{held}, []StepResult{{Keyword: "Then ", Text: "A gets a result", Status: "passed"}, {Text: "B calls", Status: "failed", Error: "context canceled"}}
	case "waived":
		s.Verdict, s.Reason, s.Checks, s.Steps = judge.ExpectedFailure, "known: no body limit", []judge.Check{held, violated}, steps("failed")
	case "unexpected-pass":
		s.Verdict, s.Reason, s.Checks, s.Steps = judge.UnexpectedPass, "listed as an expected failure", []judge.Check{held}, steps("passed")[:1]
	case "undefined":
		s.Verdict, s.Reason, s.Steps = judge.Undefined, "undefined step: B does a thing", []StepResult{{Text: "B does a thing", Status: "undefined"}}
	case "contradicted":
		// A report edited to say passed: the violated check is still there.
		s.Verdict, s.Checks, s.Steps = judge.Passed, []judge.Check{held, violated}, steps("passed")
	case "no-check-pass":
		s.Verdict, s.Steps = judge.Passed, []StepResult{{Keyword: "Given ", Text: "a wallet", Status: "passed"}}
	case "not-applicable":
		s.Verdict, s.Reason, s.Steps = judge.NotApplicable, "written for the refuse policy", []StepResult{{Text: "A calls", Status: "skipped"}}
	default:
		panic(kind)
	}
	return s
}

func mixRun(level string, interrupted bool, kinds ...string) Run {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	run := Run{Tool: "mcpconform", Version: "0.1.0", Level: level, Interrupted: interrupted, Started: at, Finished: at.Add(time.Second),
		Target: Target{Kind: "url", URLs: []string{"http://gw.example/mcp"}, ServerName: "acme", ServerVersion: "1"}}
	for i, k := range kinds {
		run.Scenarios = append(run.Scenarios, mixScenario(fmt.Sprintf("mix-%02d", i+1), k))
	}
	return run
}

// Console, summary.json, JSON lines, GitHub annotations, JUnit, Cucumber
// JSON and HTML give the same counts and verdict for every mix of verdicts.
func TestEveryOutputCountsTheSame(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  Run
		want ciView // total, passed, failed, skipped, result
	}{
		{"all passed", mixRun(LevelWire, false, "passed", "passed"), ciView{2, 2, 0, 0, RunPass, nil, ""}},
		{"a failure", mixRun(LevelWire, false, "passed", "failed"), ciView{2, 1, 1, 0, RunFail, nil, ""}},
		{"a skipped must", mixRun(LevelFull, false, "passed", "skipped"), ciView{2, 1, 0, 1, RunIncomplete, nil, ""}},
		{"a check not observed", mixRun(LevelMetered, false, "passed", "incomplete"), ciView{2, 1, 0, 1, RunIncomplete, nil, ""}},
		{"skips beyond the level", mixRun(LevelWire, false, "passed", "skipped", "not-applicable"), ciView{3, 1, 0, 2, RunPass, nil, ""}},
		{"interrupted", mixRun(LevelWire, true, "passed", "failed", "interrupted"), ciView{3, 1, 1, 1, RunInterrupted, nil, ""}},
		{"waivers", mixRun(LevelWire, false, "passed", "waived", "unexpected-pass"), ciView{3, 1, 1, 1, RunFail, nil, ""}},
		{"an undefined step", mixRun(LevelWire, false, "passed", "undefined"), ciView{2, 1, 1, 0, RunFail, nil, ""}},
		{"a contradicted pass", mixRun(LevelWire, false, "passed", "contradicted", "no-check-pass"), ciView{3, 1, 2, 0, RunFail, nil, ""}},
		{"everything", mixRun(LevelMetered, false, "passed", "failed", "incomplete", "skipped", "waived", "unexpected-pass",
			"undefined", "contradicted", "not-applicable"), ciView{9, 1, 4, 4, RunFail, nil, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if err := Write(dir, tc.run); err != nil {
				t.Fatal(err)
			}
			views := map[string]ciView{
				"console":       consoleView(t, tc.run),
				"summary.json":  summaryView(t, readFile(t, filepath.Join(dir, SummaryFile))),
				"jsonl":         jsonlView(t, tc.run),
				"github":        githubView(t, tc.run),
				"junit.xml":     junitView(t, readFile(t, filepath.Join(dir, JUnitFile))),
				"cucumber.json": cucumberView(t, readFile(t, filepath.Join(dir, CucumberFile))),
				"report.html":   htmlPageView(t, readFile(t, filepath.Join(dir, ReportFile))),
			}
			want := tc.want
			want.counts = countVerdicts(tc.run.Scenarios)
			for name, v := range views {
				if v.total != want.total || v.result != want.result && v.result != "" {
					t.Errorf("%s: %d scenarios, verdict %q; want %d, %q", name, v.total, v.result, want.total, want.result)
				}
				if v.passed >= 0 && (v.passed != want.passed || v.failed != want.failed || v.skipped != want.skipped) {
					t.Errorf("%s: %d passed, %d failed, %d skipped; want %d, %d, %d", name, v.passed, v.failed, v.skipped, want.passed, want.failed, want.skipped)
				}
				if v.counts != nil && !equalCounts(v.counts, want.counts) {
					t.Errorf("%s: counts %v, want %v", name, v.counts, want.counts)
				}
				if console := views["console"].line; v.line != "" && v.line != console {
					t.Errorf("%s: verdict line %q, the console's %q", name, v.line, console)
				}
			}
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	for k := range a {
		if a[k] != b[k] {
			return false
		}
	}
	for k := range b {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

var (
	countsLine   = regexp.MustCompile(`^(\d+) scenarios: (.*)$`)
	ciTotalsLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed, (\d+) skipped$`)
	resultWord   = regexp.MustCompile(`^(PASS|FAIL|INCOMPLETE|INTERRUPTED) \(level `)
)

// parseConsole reads PrintSummary's text as a CI log parser would.
func parseConsole(t *testing.T, text string) ciView {
	t.Helper()
	v := ciView{passed: -1, counts: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := countsLine.FindStringSubmatch(line); m != nil {
			v.total, _ = strconv.Atoi(m[1])
			for _, part := range strings.Split(m[2], ", ") {
				var n int
				var verdict string
				fmt.Sscanf(part, "%d %s", &n, &verdict)
				v.counts[verdict] = n
			}
		}
		if m := resultWord.FindStringSubmatch(line); m != nil && v.result == "" {
			v.result, v.line = m[1], strings.TrimSuffix(line, ":")
		}
		if m := ciTotalsLine.FindStringSubmatch(line); m != nil {
			v.passed, _ = strconv.Atoi(m[1])
			v.failed, _ = strconv.Atoi(m[2])
			v.skipped, _ = strconv.Atoi(m[3])
		}
	}
	if v.passed < 0 {
		t.Fatalf("no totals line in:\n%s", text)
	}
	return v
}

func consoleView(t *testing.T, run Run) ciView {
	var buf bytes.Buffer
	PrintSummary(&buf, run)
	return parseConsole(t, buf.String())
}

func summaryView(t *testing.T, b []byte) ciView {
	var sum Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	// summary.json has no passed/failed/skipped of its own: its verdicts'
	// fails_run say which scenarios fail the run or leave it incomplete.
	return ciView{total: sum.Total, passed: -1, result: sum.Result, counts: sum.Counts}
}

func jsonlView(t *testing.T, run Run) ciView {
	var buf bytes.Buffer
	if err := PrintJSONL(&buf, run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var last struct {
		Type                    string
		Total                   int
		Result                  string
		Counts                  map[string]int
		Passed, Failed, Skipped int
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "summary" {
		t.Fatalf("last JSON line %q: %v", lines[len(lines)-1], err)
	}
	if len(lines)-1 != last.Total {
		t.Errorf("jsonl: %d scenario lines, summary says %d", len(lines)-1, last.Total)
	}
	return ciView{last.Total, last.Passed, last.Failed, last.Skipped, last.Result, last.Counts, ""}
}

// githubView: the text after the annotations, and one ::error annotation
// per scenario that fails the run.
func githubView(t *testing.T, run Run) ciView {
	var buf bytes.Buffer
	PrintGitHub(&buf, run, "features")
	v := parseConsole(t, buf.String())
	errors := 0
	for line := range strings.Lines(buf.String()) {
		if strings.HasPrefix(line, "::error ") && !strings.HasPrefix(line, "::error title=mcpconform ") {
			errors++
		}
	}
	if errors != v.failed {
		t.Errorf("github: %d ::error annotations at scenarios, %d failed", errors, v.failed)
	}
	return v
}

// xmlNode is any XML element, for checking a document against a schema.
type xmlNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xmlNode  `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n xmlNode) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (n xmlNode) all(name string) []xmlNode {
	var out []xmlNode
	for _, c := range n.Children {
		if c.XMLName.Local == name {
			out = append(out, c)
		}
	}
	return out
}

// junitSchema is the JUnit XML that Jenkins' junit plugin, GitLab's test
// reports and gotestsum read (the Ant schema, with skipped): for each
// element, the children and attributes it may have, and the attributes it
// must have.
var junitSchema = map[string]struct{ children, attrs, required []string }{
	"testsuites": {[]string{"testsuite"}, []string{"name", "tests", "failures", "errors", "skipped", "disabled", "time"}, nil},
	"testsuite": {[]string{"properties", "testcase", "system-out", "system-err"},
		[]string{"name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp", "hostname", "id", "package"},
		[]string{"name", "tests", "failures", "errors"}},
	"properties": {[]string{"property"}, nil, nil},
	"property":   {nil, []string{"name", "value"}, []string{"name", "value"}},
	"testcase":   {[]string{"skipped", "failure", "error", "system-out", "system-err"}, []string{"name", "classname", "time", "assertions", "status"}, []string{"name", "classname"}},
	"skipped":    {nil, []string{"message"}, nil},
	"failure":    {nil, []string{"message", "type"}, nil},
	"error":      {nil, []string{"message", "type"}, nil},
	"system-out": {nil, nil, nil},
	"system-err": {nil, nil, nil},
}

func checkSchema(t *testing.T, n xmlNode, path string) {
	t.Helper()
	rule, ok := junitSchema[n.XMLName.Local]
	if !ok {
		t.Errorf("junit: element %s/%s is not in the schema", path, n.XMLName.Local)
		return
	}
	path += "/" + n.XMLName.Local
	for _, a := range n.Attrs {
		if !slices.Contains(rule.attrs, a.Name.Local) {
			t.Errorf("junit: %s has attribute %q, not in the schema", path, a.Name.Local)
		}
		switch a.Name.Local {
		case "tests", "failures", "errors", "skipped":
			if _, err := strconv.Atoi(a.Value); err != nil {
				t.Errorf("junit: %s@%s = %q, not an integer", path, a.Name.Local, a.Value)
			}
		case "time":
			if _, err := strconv.ParseFloat(a.Value, 64); err != nil {
				t.Errorf("junit: %s@time = %q, not seconds", path, a.Value)
			}
		case "timestamp":
			// xs:dateTime without a zone, as the Ant schema wants it.
			if _, err := time.Parse("2006-01-02T15:04:05", a.Value); err != nil {
				t.Errorf("junit: %s@timestamp = %q: %v", path, a.Value, err)
			}
		}
	}
	for _, r := range rule.required {
		if _, ok := n.attr(r); !ok {
			t.Errorf("junit: %s lacks attribute %q", path, r)
		}
	}
	for _, c := range n.Children {
		if !slices.Contains(rule.children, c.XMLName.Local) {
			t.Errorf("junit: %s may not hold %s", path, c.XMLName.Local)
			continue
		}
		checkSchema(t, c, path)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// junitView checks junit.xml against the schema and reads its counts: each
// suite's attributes must be its test cases' outcomes, the root's their sum.
func junitView(t *testing.T, b []byte) ciView {
	t.Helper()
	var root xmlNode
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if root.XMLName.Local != "testsuites" {
		t.Fatalf("junit: root is %s, want testsuites", root.XMLName.Local)
	}
	checkSchema(t, root, "")
	v := ciView{}
	names := map[string]bool{}
	for _, suite := range root.all("testsuite") {
		var tests, failures, errors, skipped int
		for _, tc := range suite.all("testcase") {
			tests++
			name, _ := tc.attr("name")
			class, _ := tc.attr("classname")
			if names[class+"."+name] {
				t.Errorf("junit: two test cases named %s.%s (Jenkins merges them)", class, name)
			}
			names[class+"."+name] = true
			marks := len(tc.all("failure")) + len(tc.all("error")) + len(tc.all("skipped"))
			if marks > 1 {
				t.Errorf("junit: %s is marked %d ways", name, marks)
			}
			for _, kind := range []string{"failure", "error", "skipped"} {
				for _, m := range tc.all(kind) {
					if msg, _ := m.attr("message"); msg == "" {
						t.Errorf("junit: %s: <%s> without a message", name, kind)
					}
				}
			}
			failures += len(tc.all("failure"))
			errors += len(tc.all("error"))
			skipped += len(tc.all("skipped"))
		}
		for attr, n := range map[string]int{"tests": tests, "failures": failures, "errors": errors, "skipped": skipped} {
			if got, _ := suite.attr(attr); atoi(got) != n {
				t.Errorf("junit: testsuite %s=%s, its test cases give %d", attr, got, n)
			}
		}
		for _, p := range suite.all("properties") {
			for _, prop := range p.all("property") {
				if name, _ := prop.attr("name"); name == "verdict" {
					value, _ := prop.attr("value")
					v.result, _, _ = strings.Cut(value, " ")
					v.line = value
				}
			}
		}
		v.total += tests
		v.failed += failures + errors
		v.skipped += skipped
	}
	for attr, n := range map[string]int{"tests": v.total, "skipped": v.skipped} {
		if got, _ := root.attr(attr); atoi(got) != n {
			t.Errorf("junit: testsuites %s=%s, the suites give %d", attr, got, n)
		}
	}
	f, _ := root.attr("failures")
	e, _ := root.attr("errors")
	if atoi(f)+atoi(e) != v.failed {
		t.Errorf("junit: testsuites failures+errors=%d, the suites give %d", atoi(f)+atoi(e), v.failed)
	}
	v.passed = v.total - v.failed - v.skipped
	return v
}

// cucumberView counts scenarios as Cucumber reporters do: failed when a
// step or hook failed (or is undefined), passed when every step passed,
// skipped otherwise.
func cucumberView(t *testing.T, b []byte) ciView {
	var feats []struct {
		Elements []struct {
			Steps []struct {
				Result struct{ Status string }
			}
			After []struct {
				Result struct{ Status string }
			}
		}
	}
	if err := json.Unmarshal(b, &feats); err != nil {
		t.Fatal(err)
	}
	v := ciView{}
	for _, f := range feats {
		for _, el := range f.Elements {
			v.total++
			var statuses []string
			for _, st := range el.Steps {
				statuses = append(statuses, st.Result.Status)
			}
			for _, h := range el.After {
				statuses = append(statuses, h.Result.Status)
			}
			switch {
			case slices.ContainsFunc(statuses, func(s string) bool { return s == "failed" || s == "undefined" || s == "ambiguous" }):
				v.failed++
			case len(el.Steps) > 0 && !slices.ContainsFunc(statuses, func(s string) bool { return s != "passed" }):
				v.passed++
			default:
				v.skipped++
			}
		}
	}
	return v
}

var (
	htmlTotals  = regexp.MustCompile(`<p class="totals"><strong>(\d+) passed, (\d+) failed, (\d+) skipped</strong> <span class="muted">of (\d+) scenarios`)
	htmlOverall = regexp.MustCompile(`<div class="overall (?:ok|bad)">([A-Z]+) \(level`)
	htmlCounts  = regexp.MustCompile(`(?s)<table class="counts">\s*<tr><th>level</th>(.*?)</tr>\s*<tr><th>all</th>(.*?)</tr>`)
	htmlBadge   = regexp.MustCompile(`<span class="badge [^"]*">([^<]*)</span>`)
	htmlNum     = regexp.MustCompile(`<td class="num">(\d+)</td>`)
)

func htmlPageView(t *testing.T, b []byte) ciView {
	t.Helper()
	page := string(b)
	m := htmlTotals.FindStringSubmatch(page)
	o := htmlOverall.FindStringSubmatch(page)
	c := htmlCounts.FindStringSubmatch(page)
	if m == nil || o == nil || c == nil {
		t.Fatalf("report.html: no totals, verdict or counts table")
	}
	v := ciView{passed: atoi(m[1]), failed: atoi(m[2]), skipped: atoi(m[3]), total: atoi(m[4]), result: o[1], counts: map[string]int{}}
	verdicts, nums := htmlBadge.FindAllStringSubmatch(c[1], -1), htmlNum.FindAllStringSubmatch(c[2], -1)
	if len(verdicts) != len(nums) {
		t.Fatalf("report.html: %d verdict columns, %d counts", len(verdicts), len(nums))
	}
	for i := range verdicts {
		v.counts[verdicts[i][1]] = atoi(nums[i][1])
	}
	return v
}

// The JUnit and Cucumber files of the fixture run, byte for byte.
func TestJUnitAndCucumberGolden(t *testing.T) {
	run := loadFixture(t)
	b, err := JUnit(run)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "junit.xml", b)
	junitView(t, b)
	c, err := Cucumber(run)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "cucumber.json", c)
}

// A PASS resting on waivers says so in its verdict line, which the console,
// the JUnit verdict property and the GitHub notice all carry.
func TestRunLineNamesWaivers(t *testing.T) {
	run := mixRun(LevelWire, false, "passed", "waived")
	result, why := Judge(run)
	if got := RunLine(run, result, len(why)); got != "PASS (level wire; 1 waived as expected failures)" {
		t.Errorf("RunLine = %q", got)
	}
}

// A target's answers end up in reasons; whatever they hold, junit.xml stays
// a document the consumers parse, with the counts the run has.
func TestJUnitSurvivesHostileReasons(t *testing.T) {
	run := mixRun(LevelWire, false, "passed", "failed", "skipped")
	run.Scenarios[1].Reason = "got \x00\x1b[2J</failure>]]><!-- \xff\ufffe"
	run.Scenarios[1].Checks[1].Actual = "</testcase><testcase name=\"forged\"/>"
	run.Scenarios[2].Reason = "\x07 & <skipped/>"
	b, err := JUnit(run)
	if err != nil {
		t.Fatal(err)
	}
	v := junitView(t, b)
	if v.total != 3 || v.failed != 1 || v.skipped != 1 {
		t.Errorf("junit counts %+v, want 3 tests, 1 failure, 1 skipped", v)
	}
}
