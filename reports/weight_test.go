package reports

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// maxReportBytes is what report.html of the largest run may weigh and still
// open and scroll in a browser.
const maxReportBytes = 400_000

// heavy gives s the weight of a 64-twin scenario on a buggy gateway: 64
// debits, 64 exchanges, one of them answered with 200 KB when big.
func heavy(s Scenario, big bool) Scenario {
	base := s.Exchanges[0]
	s.Exchanges = nil
	for i := range 64 {
		e := base
		e.Lane = fmt.Sprintf("twin-%02d", i)
		e.Started = base.Started.Add(time.Duration(i) * time.Millisecond)
		e.Finished = e.Started.Add(3 * time.Millisecond)
		if big && i == 2 {
			e.ResponseBody = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 200<<10) + `"}]}}`
		}
		s.Exchanges = append(s.Exchanges, e)
	}
	l := *s.LedgerAfter
	l.Entries = nil
	for i := range 64 {
		l.Entries = append(l.Entries, judge.LedgerEntry{ID: fmt.Sprintf("le-%d", i), Kind: "debit", Amount: -3,
			Receipt: fmt.Sprintf("rcpt-%d", i), Tool: "probe.echo", At: base.Started.Add(time.Duration(i) * time.Millisecond)})
	}
	s.LedgerAfter = &l
	return s
}

func scenarioByID(t *testing.T, run Run, id string) int {
	t.Helper()
	for i, s := range run.Scenarios {
		if s.ID == id {
			return i
		}
	}
	t.Fatalf("fixture has no %s", id)
	return -1
}

// One heavy scenario keeps its details, cut where they are long, each cut
// naming the evidence file that has it whole.
func TestReportCutsLongExchangesAndLists(t *testing.T) {
	run := loadFixture(t)
	i := scenarioByID(t, run, "twins-03")
	run.Scenarios[i] = heavy(run.Scenarios[i], true)
	html := string(renderOrFail(t, run))
	if len(html) >= maxReportBytes {
		t.Errorf("report.html weighs %d bytes, want under %d", len(html), maxReportBytes)
	}
	for _, want := range []string{
		"more bytes not shown; evidence/twins-03.json has the whole body",
		"58 more entries not shown (64 debit in all)",
		`(4 of 64: those a violated check names, then the first; <a href="evidence/twins-03.json">`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// The largest run: a hundred failing heavy scenarios. The report stays
// light, and every one of them still has its section and its FAIL line.
func TestReportWeightIsBounded(t *testing.T) {
	run := loadFixture(t)
	tw := run.Scenarios[scenarioByID(t, run, "twins-03")]
	for n := range 100 {
		s := heavy(tw, n%10 == 0)
		s.ID = fmt.Sprintf("twins-%03d", 100+n)
		run.Scenarios = append(run.Scenarios, s)
	}
	html := string(renderOrFail(t, run))
	if len(html) >= maxReportBytes {
		t.Errorf("report.html weighs %d bytes, want under %d", len(html), maxReportBytes)
	}
	for n := range 100 {
		id := fmt.Sprintf("twins-%03d", 100+n)
		for _, want := range []string{`id="s-` + id + `"`, `<li><a class="id" href="#s-` + id + `">`} {
			if !strings.Contains(html, want) {
				t.Errorf("report.html lacks %q", want)
			}
		}
	}
	if !strings.Contains(html, "left out to keep this report light") {
		t.Error("a hundred heavy scenarios fit whole: the test no longer weighs the budget")
	}
}

// A step godog passed but whose check was not observed, or was violated,
// did not pass.
func TestStepStatusFollowsItsChecks(t *testing.T) {
	for _, tc := range []struct {
		states     []string
		status     string
		wantStatus string
		wantClass  string
	}{
		{nil, "passed", "passed", "v-pass"},
		{[]string{judge.Held}, "passed", "passed", "v-pass"},
		{[]string{judge.Held, judge.NotObserved}, "passed", "not observed", "v-skip"},
		{[]string{judge.NotObserved, judge.Violated}, "passed", "failed", "v-fail"},
		{[]string{judge.Held}, "skipped", "skipped", "v-skip"},
	} {
		var checks []judge.Check
		for _, st := range tc.states {
			checks = append(checks, judge.Check{State: st})
		}
		if s, c := stepStatus(tc.status, checks); s != tc.wantStatus || c != tc.wantClass {
			t.Errorf("stepStatus(%q, %v) = %q %q, want %q %q", tc.status, tc.states, s, c, tc.wantStatus, tc.wantClass)
		}
	}
}
