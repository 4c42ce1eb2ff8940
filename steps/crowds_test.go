package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func resultAnswer(receipt string) *answer {
	msg := json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"_meta":{"io.mcpconform/receipt":{"id":%q}}}}`, receipt))
	var r wire.Response
	if err := json.Unmarshal(msg, &r); err != nil {
		panic(err)
	}
	return &answer{Answer: &wire.Answer{Status: 200, Message: msg, Response: &r}}
}

func refusalAnswer(reason string) *answer {
	msg := json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"busy","data":{"reason":%q}}}`, reason))
	var r wire.Response
	if err := json.Unmarshal(msg, &r); err != nil {
		panic(err)
	}
	return &answer{Answer: &wire.Answer{Status: 200, Message: msg, Response: &r}}
}

// TestCrowdAt64LanesIsSummarised: 64 twins that each ran their own operation
// fail the crowd check with one line that counts receipts instead of listing
// 64 of them, and a witness of two answers (two receipts prove two
// operations) plus one of each other kind of answer.
func TestCrowdAt64LanesIsSummarised(t *testing.T) {
	w := &world{}
	notRetryable := func(*answer) bool { return false }
	cases := []struct {
		name        string
		answers     []*answer
		ok          bool
		wantActual  string
		wantWitness int
	}{
		{"one operation", func() []*answer {
			var as []*answer
			for range 64 {
				as = append(as, resultAnswer("rcpt-one"))
			}
			return as
		}(), true, "64 answers: receipts rcpt-one ×64; other answers none", 0},
		{"sixty-four operations", func() []*answer {
			var as []*answer
			for i := range 64 {
				as = append(as, resultAnswer(fmt.Sprintf("rcpt-%02d", i)))
			}
			return as
		}(), false, "64 answers: receipts 64 distinct: rcpt-00 ×1, rcpt-01 ×1, rcpt-02 ×1, … 61 more; other answers none", 2},
		{"one operation and refusals for good", func() []*answer {
			as := []*answer{resultAnswer("rcpt-one")}
			for range 63 {
				as = append(as, refusalAnswer("busy"))
			}
			return as
		}(), false, `64 answers: receipts rcpt-one ×1; other answers error -32001 reason "busy" retryable=false message "busy" (HTTP 200) ×63`, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, actual, witness := judgeCrowd(c.answers, w.describe, notRetryable)
			if ok != c.ok || actual != c.wantActual || len(witness) != c.wantWitness {
				t.Fatalf("judgeCrowd = %v, %q, %d witnesses; want %v, %q, %d", ok, actual, len(witness), c.ok, c.wantActual, c.wantWitness)
			}
			if ok {
				return
			}
			// The console shows the finding once, on one line of a bounded
			// width, the observation first and no receipt list.
			chk := judge.Check{Step: "exactly one operation ran", State: judge.Violated, Expected: "one receipt shared by every result", Actual: actual}
			s := reports.Scenario{ID: "twins-01", Level: "must", Verdict: judge.Failed, Reason: reports.Finding(chk) + "\n  check: " + chk.Step}
			var out bytes.Buffer
			reports.PrintLine(&out, s)
			reports.PrintSummary(&out, reports.Run{Scenarios: []reports.Scenario{s}})
			var lines []string
			for l := range strings.Lines(out.String()) {
				if strings.Contains(l, "observed: 64 answers") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("the finding is on %d console lines, want 1:\n%s", len(lines), out.String())
			}
			if line := lines[0]; utf8.RuneCountInString(line) > 240 || strings.Count(line, "rcpt-") > 3 {
				t.Errorf("the console's line is not summarised:\n%s", line)
			}
		})
	}
}
