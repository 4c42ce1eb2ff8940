package judge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kinds of the checks Then steps make, each with the arguments it names.
// Recompute redoes a check of each kind from the history alone.
const (
	KindGetsResult = "gets-result" // client
	// KindToolResult: the client's last answer is the tool's own result,
	// carrying the probe's answer to its call's token (made where the
	// target hands that answer on: Facts.ProbeAnswers).
	KindToolResult   = "tool-result"   // client
	KindNewReceipt   = "new-receipt"   // client
	KindRefused      = "refused"       // client, reason, retryable
	KindReplays      = "replays"       // client, of, nth (0-based)
	KindMarkedReplay = "marked-replay" // client
	// KindSettledReplay: the client's last answer is the result an operator
	// settled the operation completed with: under the debit's receipt,
	// not marked a first answer, the operator's content (the settlement's
	// digest).
	KindSettledReplay  = "settled-replay"  // client
	KindOwnOperation   = "own-operation"   // client, of, nth
	KindProbeCount     = "probe-count"     // token, n, at_most; late: scenario|run once recounted
	KindProbeTotal     = "probe-total"     // n
	KindAtMostOnce     = "at-most-once"    //
	KindLedgerHas      = "ledger-has"      // debits, refunds; late: run once reread
	KindBalance        = "balance"         // delta; late
	KindCarriesDebited = "carries-debited" // client
	KindLostConnection = "lost-connection" // client
	KindOneOperation   = "one-operation"   // reason
	KindAnswered       = "answered"        // process
	KindBank           = "bank"            //
	KindAsksForInput   = "asks-for-input"  // client
	KindFinalShape     = "final-shape"     // client, wire
	KindConcurrency    = "concurrency"     // n, max: fewer clients than the step asks for
	// KindRetried: every operation, retried until decided, ended in a
	// result or a refusal not to retry (explore's last step); the model's
	// KindDecided judges the same history.
	KindRetried = "retried" // ops
	// KindRetryAfter: every in-progress answer carried a Retry-After header,
	// as the profile's retry_after says the gateway sends one. Its answers
	// argument says which the step looked at: the client's last answer
	// (RetryAfterLast), the client's answers of the step itself
	// (RetryAfterStep), or the crowd's (RetryAfterCrowd).
	KindRetryAfter = "retry-after" // client, answers
)

// Which answers a retry-after check looked at (its answers argument).
const (
	RetryAfterLast  = "last"
	RetryAfterStep  = "step"
	RetryAfterCrowd = "crowd"
)

// Late marks a check made again once effects settled: "scenario" after the
// scenario's settle period, "run" after the last scenario.
const (
	LateScenario = "scenario"
	LateRun      = "run"
)

// Args builds a check's arguments from name, value pairs.
func Args(kv ...any) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	return m
}

func (c Check) intArg(name string) int {
	n, _ := strconv.Atoi(c.Args[name])
	return n
}

// Recomputed is a check redone from the history: OK says whether it holds;
// Complete says the history showed all the live check saw (a recomputation
// that sees less can confirm a violation, never clear one).
type Recomputed struct {
	OK                 bool
	Expected, Observed string
	Complete           bool
}

// Recompute redoes a step's check from a scenario's history; known is false
// for a check of no kind it knows (a model check, an unobservable one, a
// file older than check kinds).
func Recompute(c Check, ops []Op) (r Recomputed, known bool) {
	h := view{ops: ops}
	i := c.StepIndex
	who := c.Arg("client")
	switch c.Kind {
	case KindProbeCount:
		n, got := c.intArg("n"), h.dispatches()[c.Arg("token")]
		if c.Arg("at_most") == "true" {
			return Recomputed{OK: got <= n, Expected: fmt.Sprintf("at most %d dispatch(es) of %s", n, c.Arg("token")), Observed: fmt.Sprintf("%d dispatch(es)", got), Complete: true}, true
		}
		return Recomputed{OK: got == n, Expected: fmt.Sprintf("%d dispatch(es) of %s", n, c.Arg("token")), Observed: fmt.Sprintf("%d dispatch(es)", got), Complete: true}, true
	case KindProbeTotal:
		n, got := c.intArg("n"), 0
		for _, k := range h.dispatches() {
			got += k
		}
		return Recomputed{OK: got == n, Expected: fmt.Sprintf("%d dispatch(es) in all", n), Observed: fmt.Sprintf("%d dispatch(es)", got), Complete: true}, true
	case KindAtMostOnce:
		// The dispatches the check saw: those recorded by its step or
		// before. One the re-reads at the scenario's or the run's end
		// added came later: the model's to judge, as a late ledger entry
		// is the bank invariant's.
		ok, twice := AtMostOnce(seenBy(ops, i))
		return Recomputed{OK: ok, Expected: "every token dispatched at most once", Observed: "dispatched more than once: [" + strings.Join(twice, ", ") + "]", Complete: true}, true
	case KindLedgerHas, KindBalance:
		read, found := h.ledgerRead(i)
		if !found {
			return r, false
		}
		var ok bool
		var exp, act string
		if c.Kind == KindLedgerHas {
			ok, exp, act = LedgerHas(read, c.intArg("debits"), c.intArg("refunds"))
		} else {
			d, _ := strconv.ParseInt(c.Arg("delta"), 10, 64)
			ok, exp, act = BalanceChanged(read, d)
		}
		return Recomputed{OK: ok, Expected: exp, Observed: act, Complete: true}, true
	case KindBank:
		read, found := h.ledgerRead(i)
		ps := read.allowed("")
		if !found || len(ps) != 1 {
			return r, false
		}
		// The events the check saw: those recorded by its step or before
		// (an entry found at the end of the run is the model's to judge).
		var seen []Op
		for _, op := range ops {
			if atStep(op, i) {
				seen = append(seen, op)
			}
		}
		ok, exp, act := BankInvariant(seen, ps[0])
		return Recomputed{OK: ok, Expected: exp, Observed: act, Complete: true}, true
	case KindAnswered:
		ok, exp, act := EveryOperationAnswered(ops, c.Arg("process"))
		return Recomputed{OK: ok, Expected: exp, Observed: act, Complete: true}, true
	case KindGetsResult:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		return Recomputed{OK: last.isResult() && last.Receipt != "", Expected: "a result with a receipt", Observed: last.String(), Complete: true}, true
	case KindToolResult:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		return Recomputed{OK: last.isResult() && last.Token != "" && last.Served == last.Token,
			Expected: fmt.Sprintf("a result carrying the tool's answer to %s", last.Token), Observed: last.String(), Complete: true}, true
	case KindMarkedReplay:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		if !last.isResult() {
			return Recomputed{OK: false, Expected: "a result marked a replay", Observed: last.String(), Complete: true}, true
		}
		ok, exp, act := MarkedReplay(last.Replayed)
		return Recomputed{OK: ok, Expected: exp, Observed: act, Complete: true}, true
	case KindSettledReplay:
		return h.settledReplay(who, i)
	case KindNewReceipt:
		return h.newReceipt(who, i)
	case KindRefused:
		if final := c.Arg("or_final"); final != "" {
			return h.refusedEither(who, c.Arg("reason"), final, i)
		}
		return h.refused(who, c.Arg("reason"), c.Arg("retryable") == "true", i)
	case KindLostConnection:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		return Recomputed{OK: last.lostConnection(), Expected: "the connection closed with no answer (not a client timeout)", Observed: last.String(), Complete: true}, true
	case KindReplays:
		last, found := h.last(who, i)
		orig, ofound := h.nth(c.Arg("of"), c.intArg("nth"), i)
		if !found || !ofound {
			return r, false
		}
		ok := orig.isResult() && last.isResult() && last.Receipt == orig.Receipt
		complete := orig.Digest != "" && last.Digest != ""
		if complete {
			ok = ok && last.Digest == orig.Digest
		}
		return Recomputed{OK: ok, Expected: fmt.Sprintf("a result with receipt %q and the same content", orig.Receipt), Observed: last.String(), Complete: complete}, true
	case KindOwnOperation:
		last, found := h.last(who, i)
		orig, ofound := h.nth(c.Arg("of"), c.intArg("nth"), i)
		if !found || !ofound {
			return r, false
		}
		served := last.isResult() && (last.Receipt == orig.Receipt || (last.Digest != "" && last.Digest == orig.Digest))
		return Recomputed{OK: orig.isResult() && !served && last.Status < 500, Expected: fmt.Sprintf("a result of its own (not receipt %q, not its content), or a refusal", orig.Receipt), Observed: last.String()}, true
	case KindCarriesDebited:
		return h.carriesReceipt(who, i)
	case KindOneOperation:
		return h.oneOperation(c.Arg("reason"), i)
	case KindAsksForInput:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		return Recomputed{OK: last.isResult() && last.InputRequired, Expected: `a result with resultType "input_required"`, Observed: last.String(), Complete: true}, true
	case KindRetryAfter:
		return h.retryAfter(who, c.Arg("answers"), i)
	case KindFinalShape:
		last, found := h.last(who, i)
		if !found {
			return r, false
		}
		ok, exp := FinalShape(last.isResult(), last.CallValue, c.Arg("wire"))
		return Recomputed{OK: ok, Expected: exp, Observed: last.shape(), Complete: true}, true
	}
	return r, false
}

// FinalShape holds an answer to what its protocol version's schema says of
// a final tools/call result: on 2026-07-28 resultType "complete"; on
// 2025-11-25 (whose Result admits any member, so a resultType is allowed)
// a content list, which its CallToolResult requires. The expectation is
// returned for the message; result says v is a result at all.
func FinalShape(result bool, v CallValue, wire string) (ok bool, expected string) {
	if wire >= "2026-07-28" {
		return result && !v.InputRequired && v.ResultType == "complete" && !v.NoContent,
			`a final result with resultType "complete" and a content list`
	}
	return result && !v.InputRequired && !v.NoContent, "a final result with a content list (any other member, resultType too, is allowed by 2025-11-25's schema)"
}

// view answers the questions a recomputed check asks of one history.
type view struct{ ops []Op }

// seenBy are the ops recorded at or before step i; every op of a file
// written before steps were recorded, which cannot tell.
func seenBy(ops []Op, i int) []Op {
	if !slices.ContainsFunc(ops, func(op Op) bool { return op.Step != nil }) {
		return ops
	}
	var out []Op
	for _, op := range ops {
		if atStep(op, i) {
			out = append(out, op)
		}
	}
	return out
}

// atStep reports whether op was recorded at or before step i; an op of a
// file written before steps were recorded is never placed.
func atStep(op Op, i int) bool { return op.Step != nil && *op.Step <= i }

// answer is an outcome event's value with its type.
type answer struct {
	CallValue
	typ string
}

func (a answer) isResult() bool { return a.typ == OK }

func (a answer) lostConnection() bool {
	return a.typ == Info && a.Error != "" && !ClientTimedOut(a.Error)
}

// ClientTimedOut says a call's recorded transport error is the client's
// own timeout (a context deadline, net/http's Client.Timeout), not a
// connection the gateway closed. It reads the error's text because the
// history records only the text; the live step (steps' lostConnection)
// asks the same question through it, so the two always agree.
func ClientTimedOut(transportErr string) bool {
	return strings.Contains(transportErr, "deadline exceeded") || strings.Contains(transportErr, "Client.Timeout")
}

func (a answer) isRefusal() bool {
	return a.typ != OK && a.Error == "" && (a.Reason != "" || a.Status >= 400) && a.Status < 500
}

// String is an outcome as a recheck line shows it.
func (a answer) String() string {
	switch {
	case a.typ == OK:
		return fmt.Sprintf("a result with receipt %q", a.Receipt)
	case a.Reason != "":
		return fmt.Sprintf("refused %q retryable=%v (HTTP %d)", a.Reason, a.Retryable, a.Status)
	case a.Error != "":
		return "transport error: " + a.Error
	}
	return fmt.Sprintf("HTTP %d with no JSON-RPC answer", a.Status)
}

func (a answer) shape() string {
	if !a.isResult() {
		return a.String()
	}
	rt := a.ResultType
	if rt == "" {
		rt = "(absent)"
	}
	s := "a result with resultType " + rt
	if a.NoContent {
		s += " and no content list"
	}
	return s
}

// outcomes are the answers process got up to step i, in order.
func (h view) outcomes(process string, i int) []answer {
	var out []answer
	for _, op := range h.ops {
		if op.Process == process && atStep(op, i) {
			out = append(out, h.outcome(op)...)
		}
	}
	return out
}

func (h view) last(who string, i int) (answer, bool) {
	os := h.outcomes(who, i)
	if len(os) == 0 {
		return answer{}, false
	}
	return os[len(os)-1], true
}

// settledReplay redoes the settled-replay check: who's last answer
// against the last settlement as completed made by step i.
func (h view) settledReplay(who string, i int) (Recomputed, bool) {
	last, found := h.last(who, i)
	var s EnvValue
	settled := false
	for _, op := range h.ops {
		var e EnvValue
		if op.F == FEnv && atStep(op, i) && json.Unmarshal(op.Value, &e) == nil && e.Kind == EnvSettle {
			s, settled = e, e.Outcome == SettleCompleted
		}
	}
	if !found || !settled {
		return Recomputed{}, false
	}
	r := Recomputed{Expected: fmt.Sprintf("the settled result: receipt %q, marked a replay, the operator's content", s.Receipt), Complete: true}
	switch {
	case !last.isResult() || last.Receipt != s.Receipt:
		r.Observed = last.String()
	case last.Replayed != nil && !*last.Replayed:
		r.Observed = "a result not marked a replay"
	case s.Digest != "" && last.Digest != s.Digest:
		r.Observed = fmt.Sprintf("receipt %q with other content than the operator's (digest %s, settled %s)", last.Receipt, last.Digest, s.Digest)
	default:
		r.OK, r.Observed = true, fmt.Sprintf("receipt %q with the operator's content", last.Receipt)
	}
	return r, true
}

func (h view) nth(who string, n, i int) (answer, bool) {
	os := h.outcomes(who, i)
	if n >= len(os) {
		return answer{}, false
	}
	return os[n], true
}

func (h view) dispatches() map[string]int { return dispatchCounts(h.ops) }

// ledgerRead is the read the ledger check at step i recorded: the last
// one, which for a check read again at the end of the run (a late entry)
// is that reread.
func (h view) ledgerRead(i int) (LedgerRead, bool) {
	var r LedgerRead
	found := false
	for _, op := range h.ops {
		if op.F == FLedgerRead && op.Step != nil && *op.Step == i {
			var x LedgerRead
			if json.Unmarshal(op.Value, &x) == nil && !x.Final {
				r, found = x, true
			}
		}
	}
	return r, found
}

// refused: a refusal meaning reason (its data.reason, or what the profile
// maps it to, recorded as Means), not a 5xx, marked retryable exactly when
// asked.
func (h view) refused(who, reason string, retryable bool, i int) (Recomputed, bool) {
	last, found := h.last(who, i)
	if !found {
		return Recomputed{}, false
	}
	// A refusal in HTTP alone has no flag; the step does not hold one
	// against it either.
	return Recomputed{OK: last.isRefusal() && last.MeansReason(reason) && (last.HTTPOnly || last.ReadRetryable() == retryable),
		Expected: RefusalExpectation(reason, retryable), Observed: last.String(), Complete: true}, true
}

// refusedEither is refused for a step that admits two refusals: reason
// marked retryable, or final not marked so.
func (h view) refusedEither(who, reason, final string, i int) (Recomputed, bool) {
	last, found := h.last(who, i)
	if !found {
		return Recomputed{}, false
	}
	ok := last.isRefusal() && ((last.MeansReason(reason) && (last.HTTPOnly || last.ReadRetryable())) ||
		(last.MeansReason(final) && (last.HTTPOnly || !last.ReadRetryable())))
	return Recomputed{OK: ok, Expected: RefusalEitherExpectation(reason, final), Observed: last.String(), Complete: true}, true
}

// RefusalEitherExpectation is what a check admitting two refusals expects.
func RefusalEitherExpectation(reason, final string) string {
	return RefusalExpectation(reason, true) + "; or " + RefusalExpectation(final, false)
}

// RefusalExpectation is what a refusal check expects, in words.
func RefusalExpectation(reason string, retryable bool) string {
	want := fmt.Sprintf("a refusal meaning %q (its data.reason, or as the profile maps it), HTTP status below 500", reason)
	if retryable {
		return want + ", marked retryable"
	}
	return want + ", not marked retryable"
}

func (h view) newReceipt(who string, i int) (Recomputed, bool) {
	os := h.outcomes(who, i)
	if len(os) == 0 {
		return Recomputed{}, false
	}
	last := os[len(os)-1]
	count := 0
	for _, op := range h.ops {
		if op.F != FCall || op.Type != OK || !atStep(op, i) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) == nil && v.Receipt == last.Receipt {
			count++
		}
	}
	return Recomputed{OK: last.isResult() && last.Receipt != "" && count == 1,
		Expected: "a result whose receipt no earlier answer had", Observed: fmt.Sprintf("%s, in %d answer(s)", last.String(), count), Complete: true}, true
}

func (h view) carriesReceipt(who string, i int) (Recomputed, bool) {
	os := h.outcomes(who, i)
	if len(os) == 0 {
		return Recomputed{}, false
	}
	last := os[len(os)-1]
	for _, e := range os[:len(os)-1] {
		if e.isResult() && e.Receipt != "" {
			return Recomputed{OK: last.isResult() && last.Receipt == e.Receipt, Expected: fmt.Sprintf("receipt %q, the first answer's", e.Receipt), Observed: last.String(), Complete: true}, true
		}
	}
	r, found := h.ledgerRead(i)
	if !found {
		return Recomputed{}, false
	}
	receipt := ""
	if last.isResult() {
		receipt = last.Receipt
	}
	ok, exp, act := CarriesDebitedReceipt(r, receipt)
	return Recomputed{OK: ok && last.isResult(), Expected: exp, Observed: act, Complete: true}, true
}

// oneOperation: the twins' answers share one receipt, every other answer
// a retryable refusal meaning reason.
func (h view) oneOperation(reason string, i int) (Recomputed, bool) {
	receipts := map[string]bool{}
	others, twins := 0, 0
	for _, op := range h.ops {
		if op.F != FCall || op.Type == Invoke || !strings.HasPrefix(op.Process, "twin-") || !atStep(op, i) {
			continue
		}
		var v CallValue
		if json.Unmarshal(op.Value, &v) != nil {
			continue
		}
		twins++
		switch {
		case op.Type == OK && v.Receipt != "":
			receipts[v.Receipt] = true
		case v.ReadRetryable() && v.Status < 500 && (reason == "" || v.MeansReason(reason)):
		default:
			others++
		}
	}
	if twins == 0 {
		return Recomputed{}, false
	}
	return Recomputed{OK: len(receipts) == 1 && others == 0, Expected: "one receipt shared by every result, every other answer retryable",
		Observed: fmt.Sprintf("%d receipt(s), %d other answer(s) of %d", len(receipts), others, twins)}, true
}

// retryAfter: every in-progress answer of those the step looked at carries
// a readable Retry-After. Unknown for a check written before its answers
// were named, or answers recorded without their header.
func (h view) retryAfter(who, which string, i int) (Recomputed, bool) {
	var answers []answer
	switch which {
	case RetryAfterLast:
		last, found := h.last(who, i)
		if !found {
			return Recomputed{}, false
		}
		answers = []answer{last}
	case RetryAfterStep:
		for _, op := range h.ops {
			if op.Process == who && op.Step != nil && *op.Step == i {
				answers = append(answers, h.outcome(op)...)
			}
		}
	case RetryAfterCrowd:
		for _, op := range h.ops {
			if strings.HasPrefix(op.Process, "twin-") && atStep(op, i) {
				answers = append(answers, h.outcome(op)...)
			}
		}
	default:
		return Recomputed{}, false
	}
	inProgress, without := 0, 0
	observed := ""
	for _, a := range answers {
		if !a.isRefusal() || !a.MeansReason(ReasonInProgress) {
			continue
		}
		if a.RetryAfter == nil {
			return Recomputed{}, false
		}
		inProgress++
		if _, ok := RetryAfterDelay(*a.RetryAfter, time.Time{}); !ok {
			without++
			if observed == "" {
				observed = fmt.Sprintf("%s (Retry-After %q)", a.String(), *a.RetryAfter)
			}
		}
	}
	if inProgress == 0 {
		return Recomputed{}, false
	}
	if without == 0 {
		observed = fmt.Sprintf("%d in-progress answer(s), each with a Retry-After", inProgress)
	} else {
		observed = fmt.Sprintf("%d of %d in-progress answer(s) without a readable Retry-After: %s", without, inProgress, observed)
	}
	return Recomputed{OK: without == 0, Expected: "every in-progress answer with a readable Retry-After header, as the profile's retry_after says",
		Observed: observed, Complete: true}, true
}

// outcome is op as an answer, none for an invoke or another event.
func (h view) outcome(op Op) []answer {
	var v CallValue
	if op.Type == Invoke || (op.F != FCall && op.F != FRaw) || json.Unmarshal(op.Value, &v) != nil {
		return nil
	}
	return []answer{{v, op.Type}}
}

// RetryAfterDelay reads a Retry-After value (RFC 9110 10.2.3:
// delay-seconds or an HTTP-date) as a wait from now; a date in the past is
// no wait at all, a negative or fractional number unreadable. Whether a
// value is readable does not depend on now.
func RetryAfterDelay(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// MarkedReplay judges the replay marker of a result that can only be a
// replay (the harness saw its operation's one dispatch before the call
// began): replayed is what the result says, from its receipt's replayed
// member or the profile's replay_marker, nil when the target says neither.
// A target that marks no result is not judged on it, as the model does not
// judge it (docs/judge.md).
func MarkedReplay(replayed *bool) (ok bool, expected, actual string) {
	expected = "a result marked a replay (replayed: true, or the profile's replay_marker): the tool ran before this call, once"
	switch {
	case replayed == nil:
		return true, expected, "no replay marker: the target marks neither replays nor first answers, so there is none to hold"
	case *replayed:
		return true, expected, "marked a replay"
	}
	return false, expected, "marked a first answer (replayed: false, or no replay_marker): the client cannot tell the tool ran before its retry"
}
