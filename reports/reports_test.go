package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	goldenfile "github.com/mcpconform/mcpconform/internal/golden"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// loadFixture reads testdata/run.json. Its times are fixed, and Write adds
// no time of its own, so the outputs are byte-for-byte reproducible.
func loadFixture(t *testing.T) Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var run Run
	if err := dec.Decode(&run); err != nil {
		t.Fatalf("testdata/run.json: %v", err)
	}
	return run
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Equal(t, filepath.Join("testdata", "golden", name), got)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGolden(t *testing.T) {
	run := loadFixture(t)
	dir := t.TempDir()
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.json", readFile(t, filepath.Join(dir, SummaryFile)))
	golden(t, "report.html", readFile(t, filepath.Join(dir, ReportFile)))
	golden(t, "twins-03.evidence.json", readFile(t, filepath.Join(dir, EvidenceDir, "twins-03.json")))
	golden(t, "twins-03.history.ndjson", readFile(t, filepath.Join(dir, HistoryDir, "twins-03.ndjson")))
	var buf bytes.Buffer
	PrintSummary(&buf, run)
	golden(t, "summary.txt", buf.Bytes())
}

// TestFixtureShape keeps the fixture honest about what the goldens cover.
func TestFixtureShape(t *testing.T) {
	run := loadFixture(t)
	byID := map[string]Scenario{}
	for _, s := range run.Scenarios {
		byID[s.ID] = s
	}
	tw := byID["twins-03"]
	if tw.Verdict != judge.Failed || len(tw.Dispatches) < 2 || len(tw.Exchanges) < 2 || !wantsTimeline(tw) {
		t.Errorf("twins-03 should be a failed concurrent scenario with two lanes and dispatches")
	}
	for _, v := range []judge.Verdict{judge.Skipped, judge.ExpectedFailure, judge.Undefined, judge.Passed} {
		found := false
		for _, s := range run.Scenarios {
			found = found || s.Verdict == v
		}
		if !found {
			t.Errorf("fixture has no %s scenario", v)
		}
	}
	if len(run.CatchTable) == 0 {
		t.Error("fixture has no catch table")
	}
	html := string(renderOrFail(t, run))
	// retry-01 (dispatch) and twins-03 (two lanes): two pictures, not more.
	if n := strings.Count(html, "<svg"); n != 2 {
		t.Errorf("report has %d timelines, want 2", n)
	}
	for _, want := range []string{"<style>", "Catch table", "lookup-before-reserve", "<details>"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Self-contained: no external assets, no script.
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
}

func renderOrFail(t *testing.T, run Run) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	return readFile(t, filepath.Join(dir, ReportFile))
}

// rawJSONEqual compares JSON by content: Write compacts bodies and values.
var rawJSONEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
})

func TestLoadRoundTrip(t *testing.T) {
	want := loadFixture(t)
	dir := t.TempDir()
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, rawJSONEqual); diff != "" {
		t.Errorf("Load(Write(run)) mismatch (-want +got):\n%s", diff)
	}
	wantOK, wantWhy := Verdict(want)
	gotOK, gotWhy := Verdict(got)
	if gotOK != wantOK || !cmp.Equal(wantWhy, gotWhy) {
		t.Errorf("Verdict of loaded run = %v %q, want %v %q", gotOK, gotWhy, wantOK, wantWhy)
	}
	sum, err := LoadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.OK != wantOK || !cmp.Equal(sum.Why, wantWhy) {
		t.Errorf("summary.json says ok=%v %q, Verdict says %v %q", sum.OK, sum.Why, wantOK, wantWhy)
	}
	// One Op per line.
	for _, s := range want.Scenarios {
		b := readFile(t, filepath.Join(dir, HistoryDir, s.ID+".ndjson"))
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(s.History) == 0 {
			lines = nil
			if len(b) != 0 {
				t.Errorf("%s: empty history written as %q", s.ID, b)
			}
		}
		if len(lines) != len(s.History) {
			t.Errorf("%s: %d history lines, want %d", s.ID, len(lines), len(s.History))
		}
	}
}

func TestDurationRoundTrip(t *testing.T) {
	for _, d := range []Duration{0, 1, 999, Duration(1234567891), Duration(90 * time.Minute), -5} {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var got Duration
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got != d {
			t.Errorf("Duration %d -> %s -> %d", d, b, got)
		}
	}
}

func TestJudge(t *testing.T) {
	sc := func(id, level string, verdict judge.Verdict) Scenario {
		return Scenario{ID: id, Level: level, Verdict: verdict, Reason: "why " + id}
	}
	held := func(step, capability string) judge.Check {
		return judge.Check{Step: step, State: judge.Held, Capability: capability}
	}
	unobserved := func(step, capability string) judge.Check {
		return judge.Check{Step: step, State: judge.NotObserved, Capability: capability}
	}
	passed := func(id string) Scenario {
		s := sc(id, "must", judge.Passed)
		s.Checks = []judge.Check{held("gets a result", judge.CapWire)}
		return s
	}
	incomplete := func(id, capability string) Scenario {
		s := sc(id, "must", judge.Incomplete)
		s.Checks = []judge.Check{held("gets a result", judge.CapWire), unobserved("the ledger has 1 debit", capability)}
		return s
	}
	skipped := func(id, level, missing string) Scenario {
		s := sc(id, level, judge.Skipped)
		s.Missing = missing
		return s
	}
	tests := []struct {
		name        string
		level       string
		interrupted bool
		scenarios   []Scenario
		want        string
		wantWhy     []string
	}{
		{name: "empty run", want: RunPass},
		{name: "all passed", scenarios: []Scenario{passed("a"), passed("b")}, want: RunPass},
		{name: "failed must", scenarios: []Scenario{passed("a"), sc("b", "must", judge.Failed)}, want: RunFail,
			wantWhy: []string{"b [must]: failed: why b"}},
		{name: "failed should fails too", scenarios: []Scenario{sc("a", "should", judge.Failed)}, want: RunFail,
			wantWhy: []string{"a [should]: failed: why a"}},
		{name: "unexpected pass fails", scenarios: []Scenario{sc("a", "must", judge.UnexpectedPass)}, want: RunFail,
			wantWhy: []string{"a [must]: unexpected pass (listed as an expected failure, but passed): why a"}},
		{name: "expected failure is waived", scenarios: []Scenario{sc("a", "must", judge.ExpectedFailure)}, want: RunPass},
		{name: "undefined is a failure", scenarios: []Scenario{sc("a", "should", judge.Undefined)}, want: RunFail,
			wantWhy: []string{"a [should]: undefined step: why a"}},
		{name: "skipped must within the level is incomplete", level: LevelFull,
			scenarios: []Scenario{skipped("a", "must", judge.CapClock)}, want: RunIncomplete,
			wantWhy: []string{"a [must]: skipped, needs clock (level full): why a"}},
		{name: "skipped must beyond the level does not count", level: LevelWire,
			scenarios: []Scenario{skipped("a", "must", judge.CapClock), passed("b")}, want: RunPass},
		{name: "skipped must on a wire capability at level wire", level: LevelWire,
			scenarios: []Scenario{skipped("a", "must", judge.CapSecondKey)}, want: RunIncomplete,
			wantWhy: []string{"a [must]: skipped, needs second-key (level wire): why a"}},
		{name: "skipped should never counts", level: LevelFull, scenarios: []Scenario{skipped("a", "should", judge.CapClock)}, want: RunPass},
		{name: "skip naming nothing counts at full", scenarios: []Scenario{sc("a", "must", judge.Skipped)}, want: RunIncomplete,
			wantWhy: []string{"a [must]: skipped, needs fixtures (level full): why a"}},
		{name: "skipped without level counts as must", scenarios: []Scenario{skipped("a", "", judge.CapClock)}, want: RunIncomplete,
			wantWhy: []string{"a [no level]: skipped, needs clock (level full): why a"}},
		{name: "ledger not observed at metered is incomplete", level: LevelMetered,
			scenarios: []Scenario{incomplete("a", judge.CapLedger)}, want: RunIncomplete,
			wantWhy: []string{`a [must]: incomplete at level metered, not observed: "the ledger has 1 debit" (needs ledger)`}},
		{name: "ledger not observed at wire is beyond the level", level: LevelWire,
			scenarios: []Scenario{incomplete("a", judge.CapLedger)}, want: RunPass},
		{name: "probe not observed at wire is incomplete", level: LevelWire,
			scenarios: []Scenario{incomplete("a", judge.CapUpstream)}, want: RunIncomplete,
			wantWhy: []string{`a [must]: incomplete at level wire, not observed: "the ledger has 1 debit" (needs upstream)`}},
		{name: "a violated check beyond the level still fails", level: LevelWire,
			scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Failed, Reason: "why a",
				Checks: []judge.Check{{Step: "the ledger has 1 debit", State: judge.Violated, Capability: judge.CapLedger}}}},
			want: RunFail, wantWhy: []string{"a [must]: failed: why a"}},
		{name: "passed with a violated check", scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Passed,
			Checks: []judge.Check{held("one", judge.CapWire), {Step: "two dispatches\nmore", State: judge.Violated}}}}, want: RunFail,
			wantWhy: []string{`a [must]: verdict "passed" but check "two dispatches" was violated`}},
		{name: "passed with a check not observed", scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Passed,
			Checks: []judge.Check{unobserved("one", judge.CapLedger)}}}, want: RunFail,
			wantWhy: []string{`a [must]: verdict "passed" but check "one" was not-observed`}},
		{name: "passed with no check", scenarios: []Scenario{sc("a", "must", judge.Passed)}, want: RunFail,
			wantWhy: []string{`a [must]: verdict "passed" but no check was recorded`}},
		{name: "passed with a step that did not pass", scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Passed,
			Checks: []judge.Check{held("one", judge.CapWire)}, Steps: []StepResult{{Text: "one", Status: "passed"}, {Text: "B does a thing", Status: "undefined"}}}},
			want: RunFail, wantWhy: []string{`a [must]: verdict "passed" but step "B does a thing" was undefined`}},
		{name: "interrupted with a violated check", scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Interrupted, Reason: "why a",
			Checks: []judge.Check{{Step: "two dispatches", State: judge.Violated}}}}, want: RunIncomplete,
			wantWhy: []string{"a [must]: interrupted: why a"}},
		{name: "incomplete: a later step skipped for a capability of the level", scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Incomplete, Missing: judge.CapFaults,
			Checks: []judge.Check{{Step: "one", State: judge.Held, Capability: judge.CapWire}}}}, want: RunIncomplete,
			wantWhy: []string{"a [must]: incomplete at level full, not observed: the steps after one that needs faults"}},
		{name: "incomplete: a later step skipped for a capability beyond the level", level: LevelWire, scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Incomplete, Missing: judge.CapFaults,
			Checks: []judge.Check{{Step: "one", State: judge.Held, Capability: judge.CapWire}}}}, want: RunPass},
		{name: "not applicable does not count", scenarios: []Scenario{sc("a", "must", judge.NotApplicable)}, want: RunPass},
		{name: "interrupted", interrupted: true, scenarios: []Scenario{passed("a"), sc("b", "must", judge.Interrupted)}, want: RunInterrupted,
			wantWhy: []string{"b [must]: interrupted: why b", "the run was interrupted before every scenario finished"}},
		{name: "unknown verdict", scenarios: []Scenario{sc("a", "must", "pending")}, want: RunFail,
			wantWhy: []string{`a [must]: unknown verdict "pending": why a`}},
		{name: "several, in order", scenarios: []Scenario{
			skipped("a", "must", judge.CapClock), skipped("b", "should", judge.CapClock), sc("c", "must", judge.Failed), passed("d")}, want: RunFail,
			wantWhy: []string{"a [must]: skipped, needs clock (level full): why a", "c [must]: failed: why c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := Run{Level: tt.level, Interrupted: tt.interrupted, Scenarios: tt.scenarios}
			got, why := Judge(run)
			if got != tt.want {
				t.Errorf("result = %s, want %s (why %q)", got, tt.want, why)
			}
			if diff := cmp.Diff(tt.wantWhy, why); diff != "" {
				t.Errorf("why mismatch (-want +got):\n%s", diff)
			}
			ok, _ := Verdict(run)
			// The totals line agrees: 0 failed exactly when the run is not
			// a FAIL (an INCOMPLETE run's gaps count as skipped, as in JUnit).
			tot := computeTotals(run)
			if (tot.failed == 0) != (got != RunFail) {
				t.Errorf("totals %+v disagree with %s (ok=%v)", tot, got, ok)
			}
			if tot.passed+tot.failed+tot.skipped != len(tt.scenarios) {
				t.Errorf("totals %+v do not add up to %d", tot, len(tt.scenarios))
			}
		})
	}
}

func TestHighestLevel(t *testing.T) {
	full := map[string]bool{judge.CapUpstream: true, judge.CapLedger: true, judge.CapFixtures: true, judge.CapClock: true, judge.CapFaults: true,
		judge.CapSettings: true, judge.CapPrincipals: true, judge.CapTwoURLs: true}
	tests := []struct {
		name string
		drop string
		want string
	}{
		{"everything", "", LevelFull},
		{"one process", judge.CapTwoURLs, LevelMetered},
		{"no ledger", judge.CapLedger, LevelWire},
		{"no clock", judge.CapClock, LevelMetered},
	}
	for _, tt := range tests {
		caps := map[string]bool{}
		for k, v := range full {
			caps[k] = v && k != tt.drop
		}
		if got := HighestLevel(caps); got != tt.want {
			t.Errorf("%s: HighestLevel = %s, want %s", tt.name, got, tt.want)
		}
	}
}

var totalsLine = regexp.MustCompile(`^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$`)

func TestPrintSummaryLastLine(t *testing.T) {
	runs := map[string]Run{
		"fixture": loadFixture(t),
		"empty":   {},
		"ok":      {Scenarios: []Scenario{{ID: "a", Level: "must", Verdict: judge.Passed}}},
		"hostile": {Scenarios: []Scenario{{ID: "a\x1b[2J\nb", Level: "must", Verdict: judge.Failed,
			Reason: "boom\x1b]0;owned\x07 \u202egnp.exe\r\n0 passed, 0 failed, 0 skipped\n"}}},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			PrintSummary(&buf, run)
			out := buf.String()
			if !strings.HasSuffix(out, "\n") {
				t.Fatalf("output does not end with a newline: %q", out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			last := lines[len(lines)-1]
			if !totalsLine.MatchString(last) {
				t.Errorf("last line %q is not `N passed, N failed, N skipped`", last)
			}
			tot := computeTotals(run)
			want := []string{
				fmt.Sprintf("%d passed, %d failed, %d skipped", tot.passed, tot.failed, tot.skipped),
			}
			if diff := cmp.Diff(want, []string{last}); diff != "" {
				t.Errorf("totals line (-want +got):\n%s", diff)
			}
			if strings.ContainsAny(out, "\x1b\x07\r\u202e") {
				t.Errorf("control characters reached the terminal: %q", out)
			}
			// Exactly one line looks like a totals line: a reason cannot forge one.
			n := 0
			for _, l := range lines {
				if totalsLine.MatchString(strings.TrimSpace(l)) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d lines look like a totals line:\n%s", n, out)
			}
		})
	}
}

const hostile = `</script><script>alert(1)</script> "dq" 'sq' ]]> <![CDATA[ x ]]> " onmouseover="alert(2) <svg onload=alert(3)> &amp; ` + "\x01\x00"

// hostileRun puts hostile text everywhere a target or a scenario author can
// reach: IDs, titles, lanes, labels, headers, bodies, tokens, the catch table.
func hostileRun() Run {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	body, _ := json.Marshal(map[string]string{"text": hostile})
	ex := func(lane string, off time.Duration) Exchange {
		return Exchange{
			Label: "label " + hostile, Lane: lane, Method: "POST", URL: "http://x/mcp?q=" + hostile,
			RequestHeaders: map[string]string{"X-Evil " + hostile: hostile},
			RequestBody:    body, Status: 500,
			ResponseHeaders: map[string]string{"Content-Type": hostile},
			ResponseBody:    hostile,
			Error:           "",
			Started:         at.Add(off), Finished: at.Add(off + 30*time.Millisecond),
		}
	}
	return Run{
		Tool: "mcpconform " + hostile, Version: hostile,
		Target:     Target{Kind: hostile, URLs: []string{hostile}, Store: hostile, Bugs: []string{hostile}},
		Tags:       hostile,
		CatchTable: []Catch{{Bug: hostile, Expected: []string{hostile}, CaughtBy: []string{hostile}}},
		Scenarios: []Scenario{{
			ID: "evil-" + hostile, Title: hostile, Level: "must", Tags: []string{hostile},
			Requirement: hostile, Source: hostile, Verdict: judge.Failed, Reason: hostile,
			Expected: hostile, Actual: hostile,
			Exchanges: []Exchange{
				ex("lane "+hostile, 0), ex("B"+hostile, 5*time.Millisecond),
				{Label: hostile, Lane: "C", RequestBody: json.RawMessage(`{"broken": ` + hostile), Error: hostile, Started: at.Add(40 * time.Millisecond)},
			},
			Dispatches:   []judge.Dispatch{{Token: hostile, Tool: hostile, At: at.Add(10 * time.Millisecond)}},
			LedgerBefore: &Ledger{WalletID: hostile, Entries: []judge.LedgerEntry{{ID: hostile, Kind: hostile, Receipt: hostile, Tool: hostile}}},
			Checks:       []judge.Check{{Step: hostile, Expected: hostile, Actual: hostile}},
			History:      []judge.Op{{Process: hostile, Type: "invoke", F: hostile, Value: body}},
		}},
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg class="timeline".*?</svg>`)

func TestHostileStringsAreEscaped(t *testing.T) {
	html := string(renderOrFail(t, hostileRun()))
	for _, bad := range []string{"</script>", "<script", "]]>", "<![CDATA[", `" onmouseover="`, "<svg onload", "\x00", "\x01"} {
		if strings.Contains(html, bad) {
			i := strings.Index(html, bad)
			t.Errorf("report.html contains %q unescaped: …%s…", bad, html[max(0, i-80):min(len(html), i+80)])
		}
	}
	if !strings.Contains(html, "&lt;/script&gt;") || !strings.Contains(html, "]]&gt;") || !strings.Contains(html, "&#34;dq&#34;") {
		t.Error("hostile text was dropped instead of escaped")
	}

	svgs := svgRE.FindAllString(html, -1)
	if len(svgs) != 1 {
		t.Fatalf("found %d timelines, want 1", len(svgs))
	}
	// The inline SVG is well-formed XML and its text, decoded, is the
	// hostile text: escaped, not lost.
	dec := xml.NewDecoder(strings.NewReader(svgs[0]))
	dec.Strict = true
	var texts []string
	attrs := map[string]bool{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("timeline SVG is not well-formed XML: %v\n%s", err, svgs[0])
		}
		switch tok := tok.(type) {
		case xml.CharData:
			texts = append(texts, string(tok))
		case xml.StartElement:
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = true
			}
			if tok.Name.Local == "script" || tok.Name.Local == "foreignObject" {
				t.Errorf("SVG has a <%s> element", tok.Name.Local)
			}
		}
	}
	for a := range attrs {
		if strings.HasPrefix(strings.ToLower(a), "on") || a == "href" || a == "style" {
			t.Errorf("SVG has attribute %q", a)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"lane </script><script>al", "dispatch </script><script>alert(1)</script> \"dq\" 'sq' ]]>"} {
		if !strings.Contains(all, want) {
			t.Errorf("SVG text lacks %q; texts:\n%s", want, all)
		}
	}
}

func TestFileNames(t *testing.T) {
	ids := []string{
		"retry-01", "retry-01", "RETRY-01", "a/b", "a_b", "a\\b", "", "", ".", "..", "../../etc/passwd",
		".hidden", "CON", "con.json", "nul", "COM1", "lpt9", "trailing.", "é", "x\x00y", "tab\tid",
		strings.Repeat("long", 100), strings.Repeat("long", 100) + "!", "retry-01-2", "ok.id_1",
	}
	var ss []Scenario
	for _, id := range ids {
		ss = append(ss, Scenario{ID: id, Level: "must", Verdict: judge.Passed})
	}
	names := fileNames(ss)
	safe := regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._~-]*$`)
	seen := map[string]string{}
	for i, n := range names {
		if !safe.MatchString(n) || len(n) > maxNameLen+20 || isWindowsDevice(n) || strings.HasSuffix(n, ".") {
			t.Errorf("ID %q -> unsafe name %q", ids[i], n)
		}
		if prev, dup := seen[strings.ToLower(n)]; dup {
			t.Errorf("IDs %q and %q share the name %q", prev, ids[i], n)
		}
		seen[strings.ToLower(n)] = ids[i]
	}
	// Write's names are SafeName's, but for the later of two colliding IDs.
	for i, id := range ids {
		if i != 1 && i != 2 && i != 7 && names[i] != SafeName(id) {
			t.Errorf("ID %q: Write uses %q, SafeName says %q", id, names[i], SafeName(id))
		}
	}
	for i, want := range map[int]string{0: "retry-01", 1: "retry-01~2", 2: "RETRY-01~3", 23: "retry-01-2", 24: "ok.id_1"} {
		if names[i] != want {
			t.Errorf("ID %q -> %q, want %q", ids[i], names[i], want)
		}
	}

	// Write puts every file inside dir, and Load gives the IDs back.
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	if err := Write(dir, Run{Scenarios: ss}); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if !filepath.IsLocal(rel) {
				t.Errorf("file outside the output directory: %s", p)
			}
			if strings.HasPrefix(d.Name(), ".") {
				t.Errorf("temporary file left behind: %s", p)
			}
			files = append(files, rel)
		}
		return nil
	})
	if want := 2*len(ids) + 5; len(files) != want { // + summary.json, summary.md, report.html, junit.xml, cucumber.json
		t.Errorf("%d files written, want %d: %q", len(files), want, files)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, s := range got.Scenarios {
		gotIDs = append(gotIDs, s.ID)
	}
	if diff := cmp.Diff(ids, gotIDs); diff != "" {
		t.Errorf("IDs after Load (-want +got):\n%s", diff)
	}
}

func TestWriteMovesInvalidRequestBody(t *testing.T) {
	bad := json.RawMessage(`{"jsonrpc":"2.0",`)
	run := Run{Scenarios: []Scenario{{ID: "refuse-01", Level: "must", Verdict: judge.Passed,
		Exchanges: []Exchange{{Label: "malformed", RequestBody: bad}}}}}
	dir := t.TempDir()
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	if string(run.Scenarios[0].Exchanges[0].RequestBody) != string(bad) {
		t.Error("Write modified the caller's run")
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Exchange{Label: "malformed", RequestBodyText: string(bad)}
	if diff := cmp.Diff(want, got.Scenarios[0].Exchanges[0]); diff != "" {
		t.Errorf("loaded exchange (-want +got):\n%s", diff)
	}
}

func TestWriteInvalidHistoryWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	run := Run{Scenarios: []Scenario{{ID: "a", Verdict: judge.Passed, History: []judge.Op{{Index: 3, Value: json.RawMessage(`{nope`)}}}}}
	err := Write(dir, run)
	if err == nil || !strings.Contains(err.Error(), `scenario "a"`) || !strings.Contains(err.Error(), "op 3") {
		t.Fatalf("Write = %v, want an error naming the scenario and op", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write created %s despite invalid data", dir)
	}
}

func TestRewriteSameDir(t *testing.T) {
	dir := t.TempDir()
	first := loadFixture(t)
	if err := Write(dir, first); err != nil {
		t.Fatal(err)
	}
	second := Run{Tool: "mcpconform", Scenarios: []Scenario{{ID: "retry-01", Level: "must", Verdict: judge.Failed, Reason: "second run"}}}
	if err := Write(dir, second); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Scenarios) != 1 || got.Scenarios[0].Reason != "second run" {
		t.Errorf("Load after rewrite = %+v, want only the second run", got.Scenarios)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestLoadRefusesInconsistentFiles(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   string
	}{
		{"evidence verdict changed", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, EvidenceDir, "twins-03.json"), `"verdict": "failed"`, `"verdict": "passed"`)
		}, `verdict "passed", summary says "failed"`},
		{"history changed", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, HistoryDir, "twins-03.ndjson"), `"rcpt-8"`, `"rcpt-7"`)
		}, "op 2 differs"},
		{"history line dropped", func(t *testing.T, dir string) {
			p := filepath.Join(dir, HistoryDir, "retry-01.ndjson")
			b := readFile(t, p)
			os.WriteFile(p, b[bytes.IndexByte(b, '\n')+1:], 0o644)
		}, "3 ops, evidence has 4"},
		{"evidence path escapes", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, SummaryFile), `"evidence/retry-01.json"`, `"evidence/../../retry-01.json"`)
		}, "is not evidence/<name>.json"},
		{"evidence missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, EvidenceDir, "clock-02.json"))
		}, "clock-02"},
		{"no summary", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, SummaryFile))
		}, "no summary.json"},
		{"unknown format", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, SummaryFile), SummaryFormat, "mcpconform.summary/v9")
		}, "format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(dir, loadFixture(t)); err != nil {
				t.Fatal(err)
			}
			tt.tamper(t, dir)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b := readFile(t, path)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		e         Exchange
		text, cls string
	}{
		{Exchange{Error: "connection reset\nmore"}, "error: connection reset", "o-err"},
		{Exchange{}, "no response", "o-err"},
		{Exchange{Status: 204}, "HTTP 204", "o-ok"},
		{Exchange{Status: 502, ResponseBody: "bad gateway"}, "HTTP 502", "o-bad"},
		{Exchange{Status: 409, ResponseBody: `{"error":{"code":-32005,"data":{"reason":"idempotency_in_progress"}}}`}, "HTTP 409 · idempotency_in_progress", "o-rpcerr"},
		{Exchange{Status: 400, ResponseBody: `{"error":{"code":-32600,"data":"text"}}`}, "HTTP 400 · rpc error -32600", "o-rpcerr"},
		{Exchange{Status: 200, ResponseBody: "event: message\r\ndata: {\"result\":{\"_meta\":{\"io.mcpconform/receipt\":{\"id\":\"r1\",\"replayed\":true}}}}\r\n\r\n"}, "HTTP 200 · r1 (replay)", "o-replay"},
		{Exchange{Status: 200, ResponseBody: `{"result":{}}`}, "HTTP 200", "o-ok"},
	}
	for _, tt := range tests {
		text, cls := outcome(tt.e)
		if text != tt.text || cls != tt.cls {
			t.Errorf("outcome(%+v) = %q %q, want %q %q", tt.e, text, cls, tt.text, tt.cls)
		}
	}
}

// TestInterruptedIsNoFailureInTheTotals: an interrupted run's last line
// never counts the scenarios the signal stopped as failed.
func TestInterruptedIsNoFailureInTheTotals(t *testing.T) {
	run := Run{Interrupted: true, Scenarios: []Scenario{
		{ID: "a", Level: "must", Verdict: judge.Passed, Checks: []judge.Check{{Step: "held", State: judge.Held, Capability: judge.CapWire}}},
		{ID: "b", Level: "must", Verdict: judge.Interrupted},
		{ID: "c", Level: "must", Verdict: judge.Failed, Reason: "x"},
	}}
	got := computeTotals(run)
	if got.passed != 1 || got.failed != 1 || got.skipped != 1 {
		t.Errorf("totals %+v, want 1 passed, 1 failed (c), 1 skipped (b, interrupted)", got)
	}
}

// TestPrintShowsEachFindingOnce: a scenario's reason reaches the console
// once, in the summary: in the verdict's list when the scenario keeps the
// run from a PASS, else in the table; the line printed as the scenario
// finishes carries none.
func TestPrintShowsEachFindingOnce(t *testing.T) {
	run := loadFixture(t)
	var out bytes.Buffer
	for _, s := range run.Scenarios {
		PrintLine(&out, s)
	}
	PrintSummary(&out, run)
	text := out.String()
	for _, s := range run.Scenarios {
		r := firstLine(s.Reason)
		if r == "" {
			continue
		}
		if n := strings.Count(text, r); n != 1 {
			t.Errorf("%s: its reason %q is on the console %d times, want once:\n%s", s.ID, r, n, text)
		}
	}
}
