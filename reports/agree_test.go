package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"pgregory.net/rapid"
)

// The CI numbers every output gives for a run, read back from the bytes as
// its consumer reads them, never from the model.
type ciView struct {
	total, passed, failed, skipped int // passed is -1 when the output has no totals
	result                         string
	counts                         map[string]int // per verdict; nil when the output has none
	line                           string         // the verdict line, "" when the output has none
	// keeping is how many scenarios the output says keep the run from a
	// PASS (the verdict line's "N of M", or the scenarios marked as
	// failing the run); -1 when the output does not say.
	keeping int
}

// recorded is a scenario as steps/world.go records it: a passed Given step,
// one Then step per check in the given states (a violated check fails its
// step), then the steps after the checks, by godog status.
func recorded(id string, verdict judge.Verdict, states []string, tail ...string) Scenario {
	s := Scenario{ID: id, Title: "a " + string(verdict) + " scenario", Feature: "Mix", File: "mix.feature", Line: 3, Level: "must",
		Tags: []string{"@" + id, "@must"}, Verdict: verdict, Steps: []StepResult{{Keyword: "Given ", Text: "a wallet", Status: "passed"}}}
	if verdict != judge.Passed {
		s.Reason = "why " + id + "\nin detail"
	}
	for _, st := range states {
		step := StepResult{Keyword: "Then ", Text: fmt.Sprintf("the probe saw op%d dispatched 1 times", len(s.Checks)+1), Status: "passed"}
		c := judge.Check{Step: step.Text, State: st, Capability: judge.CapWire, StepIndex: len(s.Steps), Expected: "1 dispatch", Actual: "1 dispatch"}
		switch st {
		case judge.Violated:
			step.Status, c.Actual = "failed", "2 dispatches"
		case judge.NotObserved:
			c.Actual = "no probe"
		}
		s.Checks, s.Steps = append(s.Checks, c), append(s.Steps, step)
	}
	for _, st := range tail {
		step := StepResult{Keyword: "And ", Text: "B calls", Status: st}
		if st == "failed" {
			step.Error = "context canceled"
		}
		s.Steps = append(s.Steps, step)
	}
	return s
}

func runOf(level string, interrupted bool, scenarios ...Scenario) Run {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	return Run{Tool: "mcpconform", Version: "0.1.0", Level: level, Interrupted: interrupted, Started: at, Finished: at.Add(time.Second),
		Target:    Target{Kind: "url", URLs: []string{"http://gw.example/mcp"}, ServerName: "acme", ServerVersion: "1"},
		Scenarios: scenarios}
}

// What the generators draw from. "" is a level, verdict or capability an
// older or hand-written file leaves out: a run level "" is judged as full,
// a check that names no capability as needing everything.
var (
	runLevels = []string{LevelWire, LevelMetered, LevelFull, ""}
	capNames  = []string{"", judge.CapWire, judge.CapUpstream, judge.CapPrincipalTokens, judge.CapSecondKey, judge.CapToolApproval, judge.CapLedger,
		judge.CapFixtures, judge.CapClock, judge.CapFaults, judge.CapSettings, judge.CapPrincipals, judge.CapTwoURLs}
	// What an editor may claim: the field's contradictions (a passed or a
	// not-applicable scenario beside a violated check) come first, as
	// often as all the rest; then any verdict, or one the model does not know.
	claimedVerdicts = rapid.OneOf(rapid.Just(judge.Passed), rapid.Just(judge.NotApplicable),
		rapid.SampledFrom(append(slices.Clone(knownVerdicts), "", "PASSED")))
)

// drawRun draws a run of up to 12 scenarios at a random claimed level,
// interrupted (one in four) or not, with the scenarios of a few verdicts,
// so that a run without a failure (a PASS, an INCOMPLETE) is as common as
// one with. Half the runs hold hand-edited scenarios (drawScenario).
func drawRun(t *rapid.T) Run {
	level := rapid.SampledFrom(runLevels).Draw(t, "run level")
	// Small integers and false are what rapid shrinks to: a counterexample
	// is interrupted or edited only when it must be.
	interrupted := rapid.IntRange(0, 3).Draw(t, "interrupted") == 3
	edited := rapid.Bool().Draw(t, "edited")
	verdicts := rapid.SliceOfNDistinct(rapid.SampledFrom(knownVerdicts), 1, 4, rapid.ID[judge.Verdict]).Draw(t, "verdicts")
	// A slice, not a loop: rapid shrinks a slice by dropping elements.
	ss := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Scenario { return drawScenario(t, verdicts, edited) }), 0, 12).Draw(t, "scenarios")
	for i := range ss {
		id := fmt.Sprintf("s-%02d", i+1)
		ss[i].ID, ss[i].Tags[0] = id, "@"+id
	}
	return runOf(level, interrupted, ss...)
}

// drawScenario draws a scenario of one of verdicts as a run records it
// (drawRecord), at a random level, its checks of random capabilities, maybe
// needing one. When edited, one in three is then changed as a hand-edited
// or buggy file holds it: another verdict claimed over the same evidence,
// checks whose state changed or went missing (older files have only OK).
// That makes a not-applicable or a passed scenario beside a violated check,
// a pass with a check not observed or with none, a pass whose steps did not.
func drawScenario(t *rapid.T, verdicts []judge.Verdict, edited bool) Scenario {
	verdict := rapid.SampledFrom(verdicts).Draw(t, "verdict")
	states, tail := drawRecord(t, verdict)
	s := recorded("s", verdict, states, tail...) // drawRun numbers it
	s.Level = rapid.SampledFrom([]string{"must", "should", ""}).Draw(t, "level")
	s.Tags = []string{"@" + s.ID}
	if s.Level != "" {
		s.Tags = append(s.Tags, "@"+s.Level)
	}
	if need := rapid.SampledFrom(capNames).Draw(t, "needs"); need != "" {
		s.Missing, s.Tags = need, append(s.Tags, "@needs-"+need)
	}
	for i := range s.Checks {
		s.Checks[i].Capability = rapid.SampledFrom(capNames).Draw(t, "capability")
	}
	if !edited || rapid.IntRange(0, 2).Draw(t, "edit") < 2 {
		return s
	}
	s.Verdict = claimedVerdicts.Draw(t, "claimed verdict")
	for i := range s.Checks {
		c := &s.Checks[i]
		switch st := rapid.SampledFrom([]string{"kept", judge.Held, judge.Violated, judge.NotObserved, "no state"}).Draw(t, "check edit"); st {
		case "kept":
		case "no state":
			c.State = ""
		default:
			c.State = st
		}
	}
	return s
}

// drawRecord draws the check states and the steps after them that
// steps/world.go's decide gives the verdict.
func drawRecord(t *rapid.T, verdict judge.Verdict) (states, tail []string) {
	checks := func(min int, states ...string) []string {
		return rapid.SliceOfN(rapid.SampledFrom(states), min, 3).Draw(t, "check states")
	}
	switch verdict {
	case judge.Passed, judge.UnexpectedPass:
		return checks(1, judge.Held), nil
	case judge.Failed:
		// The first violated check fails its step, or a step fails on an
		// error of its own; godog skips the rest.
		if rapid.Bool().Draw(t, "a step error") {
			return checks(0, judge.Held, judge.NotObserved), []string{"failed", "skipped"}
		}
		return append(checks(0, judge.Held, judge.NotObserved), judge.Violated), []string{"skipped"}
	case judge.Incomplete:
		if rapid.Bool().Draw(t, "a later step skipped") {
			return checks(1, judge.Held, judge.NotObserved), []string{"skipped", "not run"}
		}
		return append(checks(0, judge.Held, judge.NotObserved), judge.NotObserved), nil
	case judge.Skipped:
		return nil, []string{"skipped", "not run"}
	case judge.Undefined:
		return checks(0, judge.Held), []string{"undefined", "skipped"}
	case judge.NotApplicable:
		// decide keeps not-applicable whatever the checks before the step
		// that found it saw, a violated one too (as seen in the field).
		return checks(0, judge.Held, judge.NotObserved, judge.Violated), []string{"skipped"}
	case judge.Interrupted:
		// decide puts the stop before whatever the steps saw; the stop
		// failed the step it cut short, or came between two steps.
		if rapid.Bool().Draw(t, "between steps") {
			return checks(0, judge.Held, judge.NotObserved, judge.Violated), nil
		}
		return checks(0, judge.Held, judge.NotObserved, judge.Violated), []string{"failed", "not run"}
	case judge.ExpectedFailure:
		// runner.applyExpected waives failed, skipped and incomplete ones.
		return drawRecord(t, rapid.SampledFrom([]judge.Verdict{judge.Failed, judge.Skipped, judge.Incomplete}).Draw(t, "waived"))
	}
	panic("no record for verdict " + verdict)
}

// judged is what every output must say of run: Judge's verdict, the
// scenarios Judge lists, one count per verdict, and the totals of Outcomes.
func judged(run Run) ciView {
	result, _ := Judge(run)
	v := ciView{total: len(run.Scenarios), result: result, counts: map[string]int{}, keeping: len(problems(run))}
	for _, k := range knownVerdicts {
		v.counts[string(k)] = 0
	}
	for _, s := range run.Scenarios {
		v.counts[verdictKey(s.Verdict)]++
	}
	n := map[Outcome]int{}
	for _, o := range Outcomes(run) {
		n[o]++
	}
	v.passed, v.failed = n[OutcomePassed], n[OutcomeFailed]+n[OutcomeError]
	v.skipped = v.total - v.passed - v.failed
	return v
}

// Console, summary.json, summary.md, JSON lines, GitHub annotations,
// JUnit, Cucumber JSON and HTML give the same verdict, counts and totals for any mix of
// verdicts, levels and check states, the contradictory ones included, and
// these agree with Judge and Outcomes and with each other: a FAIL has a
// failure in its totals, a PASS none and no scenario that keeps it from one.
func TestEveryOutputCountsTheSame(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run := drawRun(t)
		file := written(t, run)
		views := map[string]ciView{
			"console":       consoleView(t, run),
			"summary.json":  summaryView(t, file(SummaryFile)),
			"jsonl":         jsonlView(t, run),
			"github":        githubView(t, run),
			"junit.xml":     junitView(t, file(JUnitFile)),
			"cucumber.json": cucumberView(t, file(CucumberFile)),
			"report.html":   htmlPageView(t, file(ReportFile)),
			"summary.md":    markdownView(t, file(MarkdownFile)),
		}
		want := judged(run)
		for _, name := range slices.Sorted(maps.Keys(views)) {
			v := views[name]
			if v.total != want.total || v.result != want.result && v.result != "" {
				t.Errorf("%s: %d scenarios, verdict %q; want %d, %q", name, v.total, v.result, want.total, want.result)
			}
			if v.passed >= 0 && (v.passed != want.passed || v.failed != want.failed || v.skipped != want.skipped) {
				t.Errorf("%s: %d passed, %d failed, %d skipped; want %d, %d, %d", name, v.passed, v.failed, v.skipped, want.passed, want.failed, want.skipped)
			}
			if v.counts != nil && !equalCounts(v.counts, want.counts) {
				t.Errorf("%s: counts %v, want %v", name, v.counts, want.counts)
			}
			if v.keeping >= 0 && v.keeping != want.keeping {
				t.Errorf("%s: %d scenarios keep the run from a PASS, want %d", name, v.keeping, want.keeping)
			}
			if console := views["console"].line; v.line != "" && v.line != console {
				t.Errorf("%s: verdict line %q, the console's %q", name, v.line, console)
			}
		}
		// The verdict line and the totals line under it tell one story: a
		// run that was not stopped FAILs exactly when something failed, and
		// PASSes exactly when nothing keeps it from a PASS.
		switch {
		case (want.result == RunInterrupted) != run.Interrupted:
			t.Errorf("verdict %s of a run interrupted=%v", want.result, run.Interrupted)
		case !run.Interrupted && (want.result == RunFail) != (want.failed > 0):
			t.Errorf("verdict %s beside %d failed", want.result, want.failed)
		case !run.Interrupted && (want.result == RunPass) != (want.keeping == 0):
			t.Errorf("verdict %s with %d scenarios keeping the run from a PASS", want.result, want.keeping)
		}
		// Each failed scenario is one of those that keep the run from a
		// PASS, the rest of which are skipped; only a passed verdict
		// passes, and every failing verdict fails (a contradicted one may
		// fail beside them: failed counts at least those).
		failing := want.counts[string(judge.Failed)] + want.counts[string(judge.Undefined)] + want.counts[string(judge.UnexpectedPass)]
		for k, n := range want.counts {
			if !isKnownVerdict(k) {
				failing += n
			}
		}
		if want.failed > want.keeping || want.keeping-want.failed > want.skipped || want.passed > want.counts[string(judge.Passed)] || want.failed < failing {
			t.Errorf("%d passed, %d failed, %d skipped, with %d scenarios keeping the run from a PASS, %d passed and %d failing verdicts",
				want.passed, want.failed, want.skipped, want.keeping, want.counts[string(judge.Passed)], failing)
		}
		if t.Failed() {
			t.Logf("the run:\n%s", describe(run))
		}
	})
}

// written returns the files Write makes of run, by name, rendered as Write
// renders them but kept in memory: publishing them, with an fsync of every
// file, made each check 20 times slower.
func written(t rapid.TB, run Run) func(name string) []byte {
	t.Helper()
	run = prepare(run)
	files, summary, err := render(run, fileNames(run.Scenarios))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{SummaryFile: summary}
	for _, f := range files {
		byName[f.path] = f.data
	}
	return func(name string) []byte {
		b, ok := byName[name]
		if !ok {
			t.Fatalf("Write makes no %s", name)
		}
		return b
	}
}

// describe is a run in a few lines, for a counterexample.
func describe(run Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "level %q interrupted=%v\n", run.Level, run.Interrupted)
	for _, s := range run.Scenarios {
		fmt.Fprintf(&b, "  %s %q level %q missing %q checks", s.ID, s.Verdict, s.Level, s.Missing)
		for _, c := range s.Checks {
			fmt.Fprintf(&b, " %s/%s", c.Status(), c.Capability)
		}
		b.WriteString(" steps")
		for _, st := range s.Steps {
			fmt.Fprintf(&b, " %s", st.Status)
		}
		b.WriteString("\n")
	}
	return b.String()
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
	tableHeader  = regexp.MustCompile(`^ID +LEVEL +VERDICT +REASON$`)
)

// parseConsole reads PrintSummary's text as a CI log parser would.
func parseConsole(t rapid.TB, text string) ciView {
	t.Helper()
	v := ciView{passed: -1, counts: map[string]int{}}
	table := map[string]int{} // the VERDICT column of the table
	inTable := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch f := strings.Fields(line); {
		case tableHeader.MatchString(line):
			inTable = true
		case line == "":
			inTable = false
		case inTable && len(f) >= 3:
			table[f[2]]++
		}
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
	if v.passed < 0 || v.result == "" {
		t.Fatalf("no verdict or totals line in:\n%s", text)
	}
	for k, n := range v.counts {
		if table[k] != n {
			t.Errorf("console: the table shows %d %s, the counts line %d", table[k], k, n)
		}
	}
	v.keeping = lineKeeping(t, v.line, v.total)
	return v
}

var keepingPhrase = regexp.MustCompile(`: (\d+) of (\d+) scenarios keep the run from a PASS$`)

// lineKeeping reads how many scenarios a verdict line says keep the run
// from a PASS ("N of M scenarios ..."); a PASS has none.
func lineKeeping(t rapid.TB, line string, total int) int {
	t.Helper()
	if strings.HasPrefix(line, RunPass+" ") {
		return 0
	}
	m := keepingPhrase.FindStringSubmatch(line)
	if m == nil {
		t.Errorf("verdict line %q does not say how many scenarios keep the run from a PASS", line)
		return -1
	}
	if atoi(m[2]) != total {
		t.Errorf("verdict line %q: the run has %d scenarios", line, total)
	}
	return atoi(m[1])
}

func consoleView(t rapid.TB, run Run) ciView {
	var buf bytes.Buffer
	PrintSummary(&buf, run)
	return parseConsole(t, buf.String())
}

func summaryView(t rapid.TB, b []byte) ciView {
	var sum Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	// summary.json has no passed/failed/skipped of its own: its verdicts'
	// fails_run say which scenarios fail the run or leave it incomplete.
	v := ciView{total: sum.Total, passed: -1, result: sum.Result, counts: sum.Counts}
	v.keeping = tallyScenarios(t, "summary.json", sum.Scenarios, sum.Counts)
	// by_level splits the counts: each verdict's levels add up to it.
	for verdict, n := range sum.Counts {
		sumLevels := 0
		for _, counts := range sum.ByLevel {
			sumLevels += counts[verdict]
		}
		if sumLevels != n {
			t.Errorf("summary.json: %d %s, by_level gives %d", n, verdict, sumLevels)
		}
	}
	return v
}

// tallyScenarios checks the scenarios' own lines against the counts and
// returns how many are marked fails_run.
func tallyScenarios(t rapid.TB, name string, ss []SummaryScenario, counts map[string]int) int {
	t.Helper()
	tally := map[string]int{}
	failsRun := 0
	for _, s := range ss {
		tally[verdictKey(s.Verdict)]++
		if s.FailsRun {
			failsRun++
		}
	}
	for k, n := range counts {
		if tally[k] != n {
			t.Errorf("%s: %d scenarios say %s, the counts %d", name, tally[k], k, n)
		}
	}
	return failsRun
}

func jsonlView(t rapid.TB, run Run) ciView {
	var buf bytes.Buffer
	if err := PrintJSONL(&buf, run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var scenarios []SummaryScenario
	for _, line := range lines[:len(lines)-1] {
		var s SummaryScenario
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("JSON line %q: %v", line, err)
		}
		scenarios = append(scenarios, s)
	}
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
	return ciView{total: last.Total, passed: last.Passed, failed: last.Failed, skipped: last.Skipped, result: last.Result,
		counts: last.Counts, keeping: tallyScenarios(t, "jsonl", scenarios, last.Counts)}
}

// githubView: the text after the annotations, and one ::error annotation
// per scenario that fails the run.
func githubView(t rapid.TB, run Run) ciView {
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

func checkSchema(t rapid.TB, n xmlNode, path string) {
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
func junitView(t rapid.TB, b []byte) ciView {
	t.Helper()
	var root xmlNode
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if root.XMLName.Local != "testsuites" {
		t.Fatalf("junit: root is %s, want testsuites", root.XMLName.Local)
	}
	checkSchema(t, root, "")
	v := ciView{keeping: -1}
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
	if v.line != "" {
		v.keeping = lineKeeping(t, v.line, v.total)
	}
	return v
}

// cucumberView counts scenarios as Cucumber reporters do: failed when a
// step or hook failed (or is undefined), passed when every step passed,
// skipped otherwise.
func cucumberView(t rapid.TB, b []byte) ciView {
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
	v := ciView{keeping: -1}
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
	htmlOverall = regexp.MustCompile(`<div class="overall (?:ok|bad)"[^>]*>([A-Z]+) \(level`)
	htmlCounts  = regexp.MustCompile(`(?s)<table class="counts">\s*<tr><th>level</th>(.*?)</tr>\s*<tr><th>all</th>(.*?)</tr>`)
	htmlBadge   = regexp.MustCompile(`<span class="badge [^"]*">([^<]*)</span>`)
	htmlNum     = regexp.MustCompile(`<td class="num">(\d+)</td>`)
)

func htmlPageView(t rapid.TB, b []byte) ciView {
	t.Helper()
	page := string(b)
	m := htmlTotals.FindStringSubmatch(page)
	o := htmlOverall.FindStringSubmatch(page)
	c := htmlCounts.FindStringSubmatch(page)
	if m == nil || o == nil || c == nil {
		t.Fatalf("report.html: no totals, verdict or counts table")
	}
	v := ciView{passed: atoi(m[1]), failed: atoi(m[2]), skipped: atoi(m[3]), total: atoi(m[4]), result: o[1], counts: map[string]int{},
		keeping: strings.Count(page, `<span class="fails-run">fails the run</span></td>`)}
	verdicts, nums := htmlBadge.FindAllStringSubmatch(c[1], -1), htmlNum.FindAllStringSubmatch(c[2], -1)
	if len(verdicts) != len(nums) {
		t.Fatalf("report.html: %d verdict columns, %d counts", len(verdicts), len(nums))
	}
	for i := range verdicts {
		v.counts[verdicts[i][1]] = atoi(nums[i][1])
	}
	return v
}

var (
	mdHeading  = regexp.MustCompile(`^## mcpconform: (.*)$`)
	mdTotals   = regexp.MustCompile(`^\*\*(\d+ passed, \d+ failed, \d+ skipped)\*\*$`)
	mdRow      = regexp.MustCompile("^\\| `[^`]*` \\|")
	mdMore     = regexp.MustCompile(`^… (\d+) more, see report\.html$`)
	mdUnescape = regexp.MustCompile(`\\(.)`)
)

// markdownView reads summary.md as a reader of the step summary does: the
// heading's verdict line, the totals in bold under it, the counts line,
// and the rows (and the "… N more") of the table of scenarios that keep
// the run from a PASS.
func markdownView(t rapid.TB, b []byte) ciView {
	t.Helper()
	v := ciView{passed: -1, keeping: 0}
	inTable := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			v.line = mdUnescape.ReplaceAllString(m[1], "$1")
			if r := resultWord.FindStringSubmatch(v.line); r != nil {
				v.result = r[1]
			}
		}
		if m := mdTotals.FindStringSubmatch(line); m != nil {
			fmt.Sscanf(m[1], "%d passed, %d failed, %d skipped", &v.passed, &v.failed, &v.skipped)
		}
		if m := countsLine.FindStringSubmatch(line); m != nil && v.counts == nil {
			v.total, v.counts = atoi(m[1]), map[string]int{}
			for _, part := range strings.Split(m[2], ", ") {
				var n int
				var verdict string
				fmt.Sscanf(part, "%d %s", &n, &verdict)
				v.counts[verdict] = n
			}
		}
		if strings.HasPrefix(line, "### ") {
			inTable = strings.HasPrefix(line, "### Keeping the run from a PASS")
		}
		if inTable && mdRow.MatchString(line) {
			v.keeping++
		}
		if m := mdMore.FindStringSubmatch(line); m != nil && inTable {
			v.keeping += atoi(m[1])
		}
	}
	if v.passed < 0 || v.result == "" || v.counts == nil {
		t.Fatalf("summary.md: no verdict, totals or counts in:\n%s", b)
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
	run := runOf(LevelWire, false, recorded("a", judge.Passed, []string{judge.Held}), recorded("b", judge.ExpectedFailure, []string{judge.Held, judge.Violated}, "skipped"))
	result, _ := Judge(run)
	if got := RunLine(run, result); got != "PASS (level wire; 1 waived as expected failures)" {
		t.Errorf("RunLine = %q", got)
	}
}

// A target's answers end up in reasons; whatever they hold, junit.xml stays
// a document the consumers parse, with the counts the run has.
func TestJUnitSurvivesHostileReasons(t *testing.T) {
	run := runOf(LevelWire, false, recorded("a", judge.Passed, []string{judge.Held}), recorded("b", judge.Failed, []string{judge.Held, judge.Violated}, "skipped"),
		recorded("c", judge.Skipped, nil, "skipped", "not run"))
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
