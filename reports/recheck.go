package reports

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Recheck recomputes, from a scenario's history alone, every check it can:
// probe counts and at-most-once dispatch, the ledger checks (entries,
// amounts and the balance, from the ledger reads the history records), the
// per-operation bank invariant, receipts, replays, refusals and lost
// connections (from each client's outcomes up to the check's step). It
// also holds the verdict to the checks: a passed scenario needs at least
// one check, every one held. Each returned check carries the recomputed
// outcome; mismatch says the scenario's recorded word is contradicted.
func Recheck(s Scenario) (out []Check, mismatch bool) {
	h := history{s: s}
	superseded := map[string]bool{}
	for _, c := range s.Checks {
		for _, suffix := range LateSuffixes {
			if base, ok := strings.CutSuffix(c.Step, suffix); ok {
				superseded[base] = true
			}
		}
	}
	for _, c := range s.Checks {
		if superseded[c.Step] || c.Status() == NotObserved {
			continue
		}
		rc, complete, ok := h.recompute(c)
		if !ok {
			continue
		}
		rc.Step = c.Step + " (recomputed from history)"
		rc.State = Violated
		if rc.OK {
			rc.State = Held
		}
		rc.StepIndex = c.StepIndex
		out = append(out, rc)
		held := c.Status() == Held
		// A recomputation that sees only part of what the check saw (a
		// receipt, not the content) can confirm a violation, never clear one.
		if (held && !rc.OK) || (complete && !held && rc.OK) {
			mismatch = true
		}
	}
	if s.Verdict == Passed {
		why := ""
		for _, c := range s.Checks {
			if c.Status() != Held {
				why = fmt.Sprintf("the check %q is %s", c.Step, c.Status())
				break
			}
		}
		if why == "" {
			why = uncheckedThen(s)
		}
		if len(s.Checks) == 0 {
			why = "no check was recorded"
		}
		if why != "" {
			out = append(out, Check{Step: "the verdict passed (recomputed from the checks)", State: Violated,
				Expected: "at least one check, every check held", Actual: why})
			mismatch = true
		}
	}
	return out, mismatch
}

// uncheckedThen names the first Then step of a scenario that recorded no
// check: every Then step of the suite checks something, so a passed
// scenario without a check at one of them had a check removed (a report
// edited to say passed), or never observed it.
func uncheckedThen(s Scenario) string {
	checked := map[int]bool{}
	for _, c := range s.Checks {
		checked[c.StepIndex] = true
	}
	kind := ""
	for i, st := range s.Steps {
		switch kw := strings.TrimSpace(st.Keyword); kw {
		case "And", "But", "*", "":
		default:
			kind = kw
		}
		if kind == "Then" && !checked[i] {
			return fmt.Sprintf("the step %q recorded no check", st.Text)
		}
	}
	return ""
}

// LateSuffixes end the step of a check that recounted a probe count once
// the probe settled (the scenario's end, or the run's), or read a ledger
// again at the run's end.
var LateSuffixes = []string{" (still, once the probe settled)", " (still, at the end of the run)"}

func scan(s, format string, args ...any) bool {
	n, err := fmt.Sscanf(s, format, args...)
	return err == nil && n == len(args)
}

// history answers the questions a recomputed check asks of one scenario.
type history struct{ s Scenario }

// stepText is the Gherkin text of the step that made c, "" if unknown.
func (h history) stepText(c Check) string {
	if c.StepIndex >= 0 && c.StepIndex < len(h.s.Steps) {
		return h.s.Steps[c.StepIndex].Text
	}
	return ""
}

// at reports whether op was recorded at or before step i; an op of a file
// written before steps were recorded is never placed.
func at(op Op, i int) bool { return op.Step != nil && *op.Step <= i }

// outcomes are the answers process got up to step i, in order.
func (h history) outcomes(process string, i int) []CallValue {
	var out []CallValue
	for _, op := range h.s.History {
		if op.Process != process || op.Type == "invoke" || (op.F != FCall && op.F != FRaw) || !at(op, i) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) == nil {
			v.typ = op.Type
			out = append(out, v)
		}
	}
	return out
}

// ledgerRead is the read the ledger check at step i recorded: the last
// one, which for a check read again at the end of the run (a late entry)
// is that reread.
func (h history) ledgerRead(i int) (LedgerRead, bool) {
	var r LedgerRead
	found := false
	for _, op := range h.s.History {
		if op.F == FLedgerRead && op.Step != nil && *op.Step == i {
			var x LedgerRead
			if json.Unmarshal(op.Value, &x) == nil {
				r, found = x, true
			}
		}
	}
	return r, found
}

func (h history) dispatches() map[string]int { return dispatchCounts(h.s.History) }

func unquote(s string) string { return strings.Trim(s, `"`) }

// recompute redoes one check from the history. ok is false when the check
// is of no kind recheck knows or its history is missing; complete says the
// recomputation sees all the check saw.
func (h history) recompute(c Check) (rc Check, complete, ok bool) {
	var tok, who, other, nth, reason string
	var n, m int
	var d int64
	text := h.stepText(c)
	switch {
	case scan(c.Step, "the probe saw %s dispatched at most %d times", &tok, &n):
		got := h.dispatches()[tok]
		return Check{OK: got <= n, Expected: fmt.Sprintf("at most %d dispatch(es) of %s", n, tok), Actual: fmt.Sprintf("%d dispatch(es)", got)}, true, true
	case scan(c.Step, "the probe saw %s dispatched %d times", &tok, &n):
		got := h.dispatches()[tok]
		return Check{OK: got == n, Expected: fmt.Sprintf("%d dispatch(es) of %s", n, tok), Actual: fmt.Sprintf("%d dispatch(es)", got)}, true, true
	case scan(c.Step, "the probe saw %d dispatches in all", &n):
		got := 0
		for _, k := range h.dispatches() {
			got += k
		}
		return Check{OK: got == n, Expected: fmt.Sprintf("%d dispatch(es) in all", n), Actual: fmt.Sprintf("%d dispatch(es)", got)}, true, true
	case c.Step == "no operation was dispatched twice":
		ok, twice := AtMostOnce(h.s.History)
		return Check{OK: ok, Expected: "every token dispatched at most once", Actual: "dispatched more than once: [" + strings.Join(twice, ", ") + "]"}, true, true
	case scan(c.Step, "the ledger has %d debits and %d refunds", &n, &m) || scan(c.Step, "the wallet balance changed by %d", &d):
		r, found := h.ledgerRead(c.StepIndex)
		if !found {
			return rc, false, false
		}
		ok, exp, act, _ := JudgeLedgerStep(c.Step, r)
		return Check{OK: ok, Expected: exp, Actual: act}, true, true
	case c.Step == "every dispatched operation was charged exactly once":
		r, found := h.ledgerRead(c.StepIndex)
		ps := r.allowed("")
		if !found || len(ps) != 1 {
			return rc, false, false
		}
		ok, exp, act := BankInvariant(h.s.History, ps[0])
		return Check{OK: ok, Expected: exp, Actual: act}, true, true
	case c.Step == "every operation of the workload got one outcome":
		ok, exp, act := EveryOperationAnswered(h.s.History, "workload")
		return Check{OK: ok, Expected: exp, Actual: act}, true, true
	case strings.HasPrefix(text, "the last answer of ") && strings.HasSuffix(text, " carries the receipt the ledger debited"):
		return h.carriesReceipt(c, unquote(strings.TrimPrefix(strings.TrimSuffix(text, " carries the receipt the ledger debited"), "the last answer of ")))
	case scan(text, "%s gets a result with a new receipt", &who):
		return h.newReceipt(c, unquote(who))
	case scan(text, "%s gets a result", &who) && strings.HasSuffix(text, " gets a result"):
		last, found := h.last(unquote(who), c.StepIndex)
		if !found {
			return rc, false, false
		}
		return Check{OK: last.typ == "ok" && last.Receipt != "", Expected: "a result with a receipt", Actual: last.String()}, true, true
	case scan(text, "%s is refused with retryable %s", &who, &reason):
		return h.refused(c, unquote(who), unquote(reason), true)
	case scan(text, "%s is refused with %s", &who, &reason):
		return h.refused(c, unquote(who), unquote(reason), false)
	case scan(text, "%s lost the connection without an answer", &who):
		last, found := h.last(unquote(who), c.StepIndex)
		if !found {
			return rc, false, false
		}
		timedOut := strings.Contains(last.Error, "deadline exceeded") || strings.Contains(last.Error, "Client.Timeout")
		return Check{OK: last.typ == "info" && last.Error != "" && !timedOut, Expected: "the connection closed with no answer (not a client timeout)", Actual: last.String()}, true, true
	case strings.HasPrefix(text, "the last answer of ") && strings.Contains(text, " replays "):
		return h.replays(c, text)
	case strings.HasPrefix(text, "the last answer of ") && strings.Contains(text, " is its own operation or a refusal, never the "):
		if strings.HasPrefix(c.Step, "the probe saw ") {
			return rc, false, false // its count was matched above
		}
		rest := strings.TrimPrefix(text, "the last answer of ")
		if !scan(strings.ReplaceAll(rest, " is its own operation or a refusal, never the ", " | "), "%s | %s answer of %s", &who, &nth, &other) {
			return rc, false, false
		}
		last, found := h.last(unquote(who), c.StepIndex)
		orig, ofound := h.nth(unquote(other), ordinal(nth), c.StepIndex)
		if !found || !ofound {
			return rc, false, false
		}
		served := last.typ == "ok" && last.Receipt == orig.Receipt
		return Check{OK: !served && last.Status < 500, Expected: fmt.Sprintf("a result with a receipt other than %q, or a refusal", orig.Receipt), Actual: last.String()}, false, true
	case c.Step == "exactly one operation ran":
		return h.oneOperation(c)
	}
	return rc, false, false
}

func ordinal(s string) int { return map[string]int{"first": 0, "second": 1, "third": 2}[s] }

func (h history) last(who string, i int) (CallValue, bool) {
	os := h.outcomes(who, i)
	if len(os) == 0 {
		return CallValue{}, false
	}
	return os[len(os)-1], true
}

func (h history) nth(who string, n, i int) (CallValue, bool) {
	os := h.outcomes(who, i)
	if n >= len(os) {
		return CallValue{}, false
	}
	return os[n], true
}

// String is an outcome as a recheck line shows it.
func (v CallValue) String() string {
	switch {
	case v.typ == "ok":
		return fmt.Sprintf("a result with receipt %q", v.Receipt)
	case v.Reason != "":
		return fmt.Sprintf("refused %q retryable=%v (HTTP %d)", v.Reason, v.Retryable, v.Status)
	case v.Error != "":
		return "transport error: " + v.Error
	}
	return fmt.Sprintf("HTTP %d with no JSON-RPC answer", v.Status)
}

// refused: a refusal meaning reason (its data.reason, or what the profile
// maps it to, recorded as Means), not a 5xx, marked retryable exactly when
// asked.
func (h history) refused(c Check, who, reason string, retryable bool) (Check, bool, bool) {
	last, found := h.last(who, c.StepIndex)
	if !found {
		return Check{}, false, false
	}
	isRefusal := last.typ != "ok" && last.Error == "" && (last.Reason != "" || last.Status >= 400) && last.Status < 500
	ok := isRefusal && last.means(reason) && last.Retryable == retryable
	want := fmt.Sprintf("a refusal meaning %q (its data.reason, or as the profile maps it), HTTP status below 500", reason)
	if retryable {
		want += ", marked retryable"
	} else {
		want += ", not marked retryable"
	}
	return Check{OK: ok, Expected: want, Actual: last.String()}, false, true
}

func (h history) newReceipt(c Check, who string) (Check, bool, bool) {
	os := h.outcomes(who, c.StepIndex)
	if len(os) == 0 {
		return Check{}, false, false
	}
	last := os[len(os)-1]
	count := 0
	for _, op := range h.s.History {
		if op.F != FCall || op.Type != "ok" || !at(op, c.StepIndex) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) == nil && v.Receipt == last.Receipt {
			count++
		}
	}
	return Check{OK: last.typ == "ok" && last.Receipt != "" && count == 1,
		Expected: "a result whose receipt no earlier answer had", Actual: fmt.Sprintf("%s, in %d answer(s)", last.String(), count)}, false, true
}

func (h history) replays(c Check, text string) (Check, bool, bool) {
	var who, nth, other string
	rest := strings.TrimPrefix(text, "the last answer of ")
	switch {
	case scan(strings.Replace(rest, " replays its ", " | ", 1), "%s | %s answer", &who, &nth):
		other = who
	case scan(strings.Replace(rest, " replays the ", " | ", 1), "%s | %s answer of %s", &who, &nth, &other):
	default:
		return Check{}, false, false
	}
	who, other = unquote(who), unquote(other)
	last, found := h.last(who, c.StepIndex)
	orig, ofound := h.nth(other, ordinal(nth), c.StepIndex)
	if !found || !ofound {
		return Check{}, false, false
	}
	ok := orig.typ == "ok" && last.typ == "ok" && last.Receipt == orig.Receipt
	return Check{OK: ok, Expected: fmt.Sprintf("a result with receipt %q", orig.Receipt), Actual: last.String()}, false, true
}

func (h history) carriesReceipt(c Check, who string) (Check, bool, bool) {
	os := h.outcomes(who, c.StepIndex)
	if len(os) == 0 {
		return Check{}, false, false
	}
	last := os[len(os)-1]
	for _, e := range os[:len(os)-1] {
		if e.typ == "ok" && e.Receipt != "" {
			return Check{OK: last.typ == "ok" && last.Receipt == e.Receipt, Expected: fmt.Sprintf("receipt %q, the first answer's", e.Receipt), Actual: last.String()}, true, true
		}
	}
	r, found := h.ledgerRead(c.StepIndex)
	if !found {
		return Check{}, false, false
	}
	receipt := ""
	if last.typ == "ok" {
		receipt = last.Receipt
	}
	ok, exp, act := CarriesDebitedReceipt(r, receipt)
	return Check{OK: ok, Expected: exp, Actual: act}, true, true
}

// oneOperation: the twins' answers share one receipt, every other answer
// a retryable refusal.
func (h history) oneOperation(c Check) (Check, bool, bool) {
	receipts := map[string]bool{}
	others, twins := 0, 0
	for _, op := range h.s.History {
		if op.F != FCall || op.Type == "invoke" || !strings.HasPrefix(op.Process, "twin-") || !at(op, c.StepIndex) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) != nil {
			continue
		}
		twins++
		switch {
		case op.Type == "ok" && v.Receipt != "":
			receipts[v.Receipt] = true
		case v.Retryable && v.Reason != "":
		default:
			others++
		}
	}
	if twins == 0 {
		return Check{}, false, false
	}
	return Check{OK: len(receipts) == 1 && others == 0, Expected: "one receipt shared by every result, every other answer retryable",
		Actual: fmt.Sprintf("%d receipt(s), %d other answer(s) of %d", len(receipts), others, twins)}, false, true
}

// Rechecked is what a run's files say once recomputed: the run verdict
// judged afresh from the scenarios, and every check recomputed from its
// scenario's history.
type Rechecked struct {
	Result string
	Why    []string
	// Checks is how many checks were recomputed from histories.
	Checks int
	// Contradicted names, one a line, each recomputed check of a scenario
	// whose history contradicts what the run recorded.
	Contradicted []string
	// Scenarios is how many scenarios are contradicted by their history.
	Scenarios int
}

// OK reports whether the run is a PASS and no history contradicts it.
func (r Rechecked) OK() bool { return r.Result == RunPass && r.Scenarios == 0 }

// RecheckRun recomputes a loaded run (see Load): what `mcpconform recheck`
// prints and `mcpconform verify` compares with what a bundle claims.
func RecheckRun(run Run) Rechecked {
	var r Rechecked
	for _, s := range run.Scenarios {
		checks, mismatch := Recheck(s)
		r.Checks += len(checks)
		if !mismatch {
			continue
		}
		r.Scenarios++
		for _, c := range checks {
			r.Contradicted = append(r.Contradicted, fmt.Sprintf("%s (%s): %s: ok=%v, expected %s, history shows %s", s.ID, s.Verdict, c.Step, c.OK, c.Expected, c.Actual))
		}
	}
	r.Result, r.Why = Judge(run)
	return r
}
