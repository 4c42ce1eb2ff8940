package reports

import (
	"bytes"
	"strings"
	"testing"
)

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
