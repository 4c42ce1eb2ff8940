package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// twins64 is a failed twins scenario at 64 lanes: every twin opened its
// session and got a receipt of its own (64 operations), the probe saw 64
// dispatches, and the crowd check names two answers as its witness.
func twins64() Scenario {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	s := Scenario{ID: "twins-01", Title: "64 twins", Verdict: judge.Failed, Level: "must"}
	calls := map[int]int{}
	for i := range 64 {
		lane := fmt.Sprintf("twin-%02d", i)
		s.Exchanges = append(s.Exchanges,
			Exchange{Label: "initialize", Lane: lane, Method: "POST", Status: 200, Started: ms(i % 5), Finished: ms(i%5 + 3),
				RequestBody:  json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`),
				ResponseBody: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`},
			Exchange{Label: lane + ": write", Lane: lane, Method: "POST", Status: 200, Started: ms(10), Finished: ms(20 + i%7),
				RequestHeaders: map[string]string{"Idempotency-Key": `"k1-x"`},
				RequestBody:    json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe.write","arguments":{"token":"op1-x"}}}`),
				ResponseBody:   fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"_meta":{"io.mcpconform/receipt":{"id":"rcpt-%02d"}}}}`, i)})
		calls[i] = len(s.Exchanges) - 1
		s.Dispatches = append(s.Dispatches, judge.Dispatch{Token: "op1-x", Tool: "probe.write", At: ms(12).Add(time.Duration(i) * 100 * time.Microsecond)})
	}
	s.Checks = []judge.Check{{
		Step: "exactly one operation ran", State: judge.Violated, Capability: judge.CapWire,
		Expected: "one receipt shared by every result",
		Actual:   "64 answers: receipts 64 distinct: rcpt-00 ×1, rcpt-01 ×1, rcpt-02 ×1, … 61 more; other answers none",
		Witness:  &judge.Witness{Exchanges: []int{calls[0], calls[1]}, Dispatches: s.Dispatches[:2]},
	}}
	return s
}

// TestTimelineAt64Lanes: the 62 twins that answered alike share one row
// with their receipts counted, the two twins of the witness keep theirs and
// are marked, only the witness's dispatches are labelled, and a legend
// explains it all.
func TestTimelineAt64Lanes(t *testing.T) {
	s := twins64()
	v := buildTimeline(s)
	if v == nil {
		t.Fatal("no timeline")
	}
	var names []string
	for _, l := range v.Lanes {
		names = append(names, l.Name)
	}
	if want := []string{"twin-00", "twin-01", "62 lanes (twin-02…)", "upstream"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("lanes %q, want %q", names, want)
	}
	var buf bytes.Buffer
	for _, name := range []string{"timeline", "legend"} {
		if err := reportTemplate.ExecuteTemplate(&buf, name, v); err != nil {
			t.Fatal(err)
		}
	}
	svg := buf.String()
	for _, want := range []string{"62× write · HTTP 200 · 62 receipts", `class="bar o-ok witness"`, `class="dispatch offending"`, "witness of a violated check", "lanes whose exchanges ended alike"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if n := strings.Count(svg, ">probe.write op1-x<"); n != 2 {
		t.Errorf("%d dispatch labels, want only the witness's 2", n)
	}
	golden(t, "timeline-64.svg", buf.Bytes())
}

func TestWitnessLines(t *testing.T) {
	s := twins64()
	got := WitnessLines(s, s.Checks[0])
	want := []string{
		`request #2 "twin-00: write" (JSON-RPC id 2, key "k1-x") → HTTP 200 · rcpt-00`,
		`request #4 "twin-01: write" (JSON-RPC id 2, key "k1-x") → HTTP 200 · rcpt-01`,
		"dispatch of op1-x at 12:00:00.012000",
		"dispatch of op1-x at 12:00:00.012100",
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("WitnessLines =\n%q\nwant\n%q", got, want)
	}
	many := judge.Check{State: judge.Violated, Witness: &judge.Witness{Dispatches: s.Dispatches}}
	if got := WitnessLines(s, many); len(got) != maxWitnessItems+1 || got[maxWitnessItems] != "and 60 more dispatch(es)" {
		t.Errorf("a long witness is not cut: %q", got)
	}
}

func TestTally(t *testing.T) {
	for _, c := range []struct {
		in   []string
		max  int
		want string
	}{
		{nil, 3, "none"},
		{[]string{"a", "b", "a"}, 3, "a ×2, b ×1"},
		{[]string{"a", "b", "c", "d", "d"}, 2, "4 distinct: d ×2, a ×1, … 2 more"},
	} {
		if got := Tally(c.in, c.max); got != c.want {
			t.Errorf("Tally(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// TestFindingLeadsWithTheObservation: a violated check's line says what was
// seen, so a count of 2 never reads as the expectation of 1.
func TestFindingLeadsWithTheObservation(t *testing.T) {
	c := judge.Check{Step: "the probe saw op1 dispatched 1 times", State: judge.Violated, Expected: "1 dispatch(es) of token op1", Actual: "2 dispatch(es) at 12:00:00.012000, 12:00:00.013000"}
	if got, want := Finding(c), "observed: 2 dispatch(es) at 12:00:00.012000, 12:00:00.013000; expected: 1 dispatch(es) of token op1"; got != want {
		t.Errorf("Finding = %q, want %q", got, want)
	}
}
