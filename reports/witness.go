package reports

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// maxWitnessItems bounds each kind of item WitnessLines lists; the rest
// are counted, so a witness stays readable at 64 lanes.
const maxWitnessItems = 4

// WitnessLines describes a check's witness, one line per item:
//
//	request #3 "A: write" (JSON-RPC id 2, key "k1-x") → HTTP 200 · rcpt-1
//	dispatch of op1-x at 13:40:01.123456
//	ledger debit e-7: 3 credits, receipt rcpt-1
//
// At most maxWitnessItems of each kind are listed, then how many more.
func WitnessLines(s Scenario, c judge.Check) []string {
	w := c.Witness
	if w.IsEmpty() {
		return nil
	}
	var out []string
	for i, ix := range w.Exchanges {
		if i == maxWitnessItems {
			out = append(out, fmt.Sprintf("and %d more request(s)", len(w.Exchanges)-i))
			break
		}
		out = append(out, describeRequest(s, ix))
	}
	for i, ix := range w.Events {
		if i == maxWitnessItems {
			out = append(out, fmt.Sprintf("and %d more event(s)", len(w.Events)-i))
			break
		}
		out = append(out, describeEvent(s, ix))
	}
	for i, d := range w.Dispatches {
		if i == maxWitnessItems {
			out = append(out, fmt.Sprintf("and %d more dispatch(es)", len(w.Dispatches)-i))
			break
		}
		out = append(out, fmt.Sprintf("dispatch of %s at %s", d.Token, clock(d.At)))
	}
	for i, e := range w.Ledger {
		if i == maxWitnessItems {
			out = append(out, fmt.Sprintf("and %d more ledger entr(ies)", len(w.Ledger)-i))
			break
		}
		line := fmt.Sprintf("ledger %s %s: %d credits", e.Kind, e.ID, e.Amount)
		if e.Receipt != "" {
			line += ", receipt " + e.Receipt
		}
		out = append(out, line)
	}
	return out
}

// describeRequest names exchange ix of s by its number in the report, its
// label, JSON-RPC id and idempotency key, and how it ended.
func describeRequest(s Scenario, ix int) string {
	if ix < 0 || ix >= len(s.Exchanges) {
		return fmt.Sprintf("request #%d (not in the evidence)", ix+1)
	}
	e := s.Exchanges[ix]
	var ids []string
	if id := RequestID(e); id != "" {
		ids = append(ids, "JSON-RPC id "+id)
	}
	if k := headerValue(e.RequestHeaders, "Idempotency-Key"); k != "" {
		ids = append(ids, "key "+k)
	}
	line := fmt.Sprintf("request #%d %q", ix+1, e.Label)
	if len(ids) > 0 {
		line += " (" + strings.Join(ids, ", ") + ")"
	}
	out, _ := outcome(e)
	return line + " → " + out
}

// RequestID is the JSON-RPC id of an exchange's request, as sent; "" for a
// notification, a batch or a body that is not JSON.
func RequestID(e Exchange) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(e.RequestBody, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return ""
	}
	return string(m.ID)
}

func headerValue(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// clock is a time of day to the microsecond, UTC: dispatches are told apart
// by their order, which whole milliseconds would hide.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

// Tally counts equal values and lists them most frequent first (ties in
// first-seen order), with at most max groups named and the rest counted:
// "rcpt-a ×63, rcpt-b ×1", or "64 distinct: rcpt-a ×1, rcpt-b ×1, … 62 more".
// Sixty-four answers read as counts per value, never as sixty-four items.
func Tally(values []string, max int) string {
	if len(values) == 0 {
		return "none"
	}
	count := map[string]int{}
	var order []string
	for _, v := range values {
		if count[v] == 0 {
			order = append(order, v)
		}
		count[v]++
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	var parts []string
	for i, v := range order {
		if i == max {
			parts = append(parts, fmt.Sprintf("… %d more", len(order)-i))
			break
		}
		parts = append(parts, v+" ×"+strconv.Itoa(count[v]))
	}
	s := strings.Join(parts, ", ")
	if len(order) > max {
		s = fmt.Sprintf("%d distinct: %s", len(order), s)
	}
	return s
}

// Finding is a violated check in one line that leads with what was
// observed, never with the expectation restated.
func Finding(c judge.Check) string {
	return fmt.Sprintf("observed: %s; expected: %s", firstLine(c.Actual), firstLine(c.Expected))
}

// Offending gathers the witnesses of a scenario's violated checks: the
// items the report marks.
func Offending(s Scenario) (exchanges map[int]bool, dispatches map[string]bool, ledger map[string]bool) {
	exchanges, dispatches, ledger = map[int]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range s.Checks {
		if c.Status() != judge.Violated || c.Witness == nil {
			continue
		}
		for _, ix := range c.Witness.Exchanges {
			exchanges[ix] = true
		}
		for _, d := range c.Witness.Dispatches {
			dispatches[dispatchKey(d)] = true
		}
		for _, e := range c.Witness.Ledger {
			ledger[e.ID] = true
		}
	}
	return exchanges, dispatches, ledger
}

// dispatchKey tells one dispatch from another of the same token.
func dispatchKey(d judge.Dispatch) string { return d.Token + "@" + d.At.UTC().Format(time.RFC3339Nano) }

// describeEvent names history event ix of s as a witness line: its number
// in history/<id>.ndjson, who, what, and the values a reader looks for.
func describeEvent(s Scenario, ix int) string {
	if ix < 0 || ix >= len(s.History) {
		return fmt.Sprintf("event #%d (not in the history)", ix)
	}
	op := s.History[ix]
	line := fmt.Sprintf("event #%d %s %s %s at %s", ix, op.Process, op.F, op.Type, clock(op.Time))
	switch op.F {
	case judge.FCall:
		var v judge.CallValue
		if json.Unmarshal(op.Value, &v) != nil {
			return line
		}
		var parts []string
		for _, kv := range [][2]string{{"key", v.Key}, {"token", v.Token}, {"wire", v.Wire}, {"receipt", v.Receipt}, {"reason", v.Meaning()}, {"error", v.Error}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+" "+kv[1])
			}
		}
		if v.Served != "" && v.Served != v.Token {
			parts = append(parts, "carrying the probe's answer to "+v.Served)
		}
		if len(parts) > 0 {
			line += ": " + strings.Join(parts, ", ")
		}
	case judge.FDispatch:
		var v judge.EffectValue
		if json.Unmarshal(op.Value, &v) == nil {
			line += ": token " + v.Token
		}
	case judge.FLedgerRead:
		var r judge.LedgerRead
		if json.Unmarshal(op.Value, &r) == nil {
			var rows []string
			for _, e := range r.Entries {
				rows = append(rows, e.Row())
			}
			line += fmt.Sprintf(": balance %d (%+d), entries [%s]", r.Balance, r.Delta(), strings.Join(rows, "; "))
		}
	}
	return line
}
