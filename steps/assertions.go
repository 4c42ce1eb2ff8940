package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cucumber/godog"
	"github.com/mcpconform/mcpconform/internal/judge"
)

func registerAssertions(sc *godog.ScenarioContext) {
	sc.Step(`^"([^"]*)" gets a result$`, getsResult)
	sc.Step(`^"([^"]*)" gets the tool's own result$`, getsToolResult)
	sc.Step(`^"([^"]*)" gets a result with a new receipt$`, getsNewReceipt)
	sc.Step(`^"([^"]*)" is refused with "([^"]*)"$`, func(ctx context.Context, who, reason string) error {
		return isRefused(ctx, who, reason, false)
	})
	sc.Step(`^"([^"]*)" is refused with retryable "([^"]*)"$`, func(ctx context.Context, who, reason string) error {
		return isRefused(ctx, who, reason, true)
	})
	sc.Step(`^"([^"]*)" is refused with retryable "([^"]*)" or final "([^"]*)"$`, isRefusedEither)
	sc.Step(`^"([^"]*)" is refused as the age of the operation "([^"]*)" holds implies$`, isRefusedAsHeld)
	sc.Step(`^the last answer of "([^"]*)" replays its (first|second|third) answer$`, func(ctx context.Context, who, nth string) error {
		return replays(ctx, who, who, ordinal(nth))
	})
	sc.Step(`^the last answer of "([^"]*)" replays the (first|second|third) answer of "([^"]*)"$`, func(ctx context.Context, who, nth, other string) error {
		return replays(ctx, who, other, ordinal(nth))
	})
	sc.Step(`^the last answer of "([^"]*)" is marked a replay$`, markedReplay)
	sc.Step(`^the probe saw "([^"]*)" dispatched (\d+) times?$`, probeSaw)
	sc.Step(`^the probe saw "([^"]*)" dispatched at most (\d+) times?$`, probeSawAtMost)
	sc.Step(`^the probe saw (\d+) dispatch(?:es)? in all$`, probeSawAll)
	sc.Step(`^the last answer of "([^"]*)" is its own operation or a refusal, never the (first|second|third) answer of "([^"]*)"$`, func(ctx context.Context, who, nth, other string) error {
		return ownOperation(ctx, who, other, ordinal(nth))
	})
	sc.Step(`^the ledger has (\d+) debits? and (\d+) refunds?$`, ledgerHas)
	sc.Step(`^the last answer of "([^"]*)" carries the receipt the ledger debited$`, carriesDebitedReceipt)
	sc.Step(`^the wallet balance changed by (-?\d+)$`, balanceChanged)
	sc.Step(`^"([^"]*)" lost the connection without an answer$`, lostConnection)
}

func ordinal(s string) int {
	return map[string]int{"first": 0, "second": 1, "third": 2}[s]
}

// lastAnswer settles a background call, then returns the newest answer.
func (w *world) lastAnswer(who string) (*answer, error) {
	c := w.clientFor(who)
	if err := w.settle(c); err != nil {
		return nil, err
	}
	if len(c.answers) == 0 {
		return nil, fmt.Errorf("%s has no answer yet", who)
	}
	a := c.answers[len(c.answers)-1]
	w.noteAnswer(a)
	return a, nil
}

// describe summarises an answer for a failure message.
func (w *world) describe(a *answer) string {
	if a == nil {
		return "no answer"
	}
	switch {
	case a.TransportError != "":
		return "transport error: " + a.TransportError
	case a.IsResult():
		return fmt.Sprintf("a result with receipt %q (HTTP %d)", a.Receipt(), a.Status)
	case a.IsRefusal():
		return fmt.Sprintf("error %d reason %q retryable=%v message %q (HTTP %d)", a.ErrorCode(), a.ErrorReason(), a.Retryable(), a.ErrorMessage(), a.Status)
	}
	body := string(a.Body)
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("HTTP %d with no JSON-RPC response: %s", a.Status, body)
}

func getsResult(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	ok := a.IsResult() && a.Receipt() != ""
	if ok {
		w.noteReceipt(a.Receipt())
	}
	return w.check(checkOf(judge.KindGetsResult, judge.HarmLostOutcome, "client", who), fmt.Sprintf("%s gets a result", who), judge.CapWire, ok, "a tools/call result with a receipt", w.describe(a))
}

// getsToolResult: who's last answer is the result the tool gave, carrying
// the probe's answer to the call's token: a gateway that cut its upstream
// call short and stored what it made of that (an isError "outcome
// unknown") answers a result the tool never produced, and charges for it.
// Where the run's wiring call showed this target does not hand the
// probe's answer on, what the tool answered cannot be seen.
func getsToolResult(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("%s gets the tool's own result", who)
	id := checkOf(judge.KindToolResult, judge.HarmLostOutcome, "client", who)
	if !w.env.ProbeAnswers {
		return w.unobservedBecause(id, step, judge.CapUpstream, "a result carrying the tool's answer",
			"the run's wiring call was not answered with the probe's answer to its token, so this target's results do not show what the tool answered")
	}
	token := ""
	if c := w.clientFor(who); c.last != nil {
		token = tokenOf(c.last)
	}
	ok := a.IsResult() && token != "" && a.ResultValue().Served == token
	return w.check(id, step, judge.CapUpstream, ok, fmt.Sprintf("a result carrying the tool's answer to %s", token), w.describe(a))
}

func (w *world) noteReceipt(r string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.receipts {
		if x == r {
			return
		}
	}
	w.receipts = append(w.receipts, r)
}

func getsNewReceipt(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	w.mu.Lock()
	seen := append([]string(nil), w.receipts...)
	// Every result the history holds, whichever step saw it (a holder's
	// answer a refusal step read, say), as the recomputation counts them:
	// this answer is one of them, so its receipt must be there once.
	results := 0
	for _, op := range w.history {
		var v judge.CallValue
		if op.F == judge.FCall && op.Type == judge.OK && json.Unmarshal(op.Value, &v) == nil && v.Receipt != "" && v.Receipt == a.Receipt() {
			results++
		}
	}
	w.mu.Unlock()
	fresh := a.IsResult() && a.Receipt() != "" && results <= 1
	for _, r := range seen {
		if r == a.Receipt() {
			fresh = false
		}
	}
	if fresh {
		w.noteReceipt(a.Receipt())
	}
	return w.check(checkOf(judge.KindNewReceipt, judge.HarmLostOutcome, "client", who), fmt.Sprintf("%s gets a result with a new receipt", who), judge.CapWire, fresh,
		fmt.Sprintf("a result whose receipt is none of %v (a new operation)", seen), w.describe(a))
}

// isReason says whether an answer is the refusal named by one of our reason
// names, through the profile's mapping for gateways that spell it otherwise
// (a data.reason, a JSON-RPC code, or an HTTP status for a refusal made
// before any JSON-RPC). A 5xx is never an acceptable refusal.
func (w *world) isReason(a *answer, reason string) bool {
	if a == nil || a.IsResult() || a.TransportError != "" || a.Status >= 500 {
		return false
	}
	if a.IsRefusal() {
		return w.env.Profile.MatchesBody(reason, a.ErrorReason(), int(a.ErrorCode()), a.Status, a.Body)
	}
	return a.Status >= 400 && w.env.Profile.MatchesBody(reason, "", 0, a.Status, a.Body)
}

// retryableIs says whether a refusal is read as retryable exactly when
// want, as the model reads it (judge.CallValue.ReadRetryable): its
// data.retryable; without one, a status the profile maps to in progress.
// A refusal made in HTTP alone has no flag to hold against it: its mapping
// names the refusal, whose retryability is the reason's own (as recheck
// reads it).
func (w *world) retryableIs(a *answer, want bool) bool {
	if a == nil || a.IsResult() || a.TransportError != "" {
		return true
	}
	var v judge.CallValue
	refusalValue(w.env.Profile, a, &v)
	return v.HTTPOnly || v.ReadRetryable() == want
}

// checkRetryAfter holds, when the profile says the gateway sends
// Retry-After on its in-progress answers (retry_after), that every one of
// answers meaning in progress carries a readable one. Without that
// promise there is no check: the IETF draft lets a gateway leave the
// header out, and the harness then retries at its own pace. which names the
// answers (judge.RetryAfterLast, Step or Crowd), so recheck looks at the
// same ones in the history.
func (w *world) checkRetryAfter(who, which string, answers []*answer) {
	if w.env.Profile == nil || !w.env.Profile.RetryAfter {
		return
	}
	inProgress, without := 0, 0
	var first *answer
	for _, a := range answers {
		if !w.isReason(a, judge.ReasonInProgress) {
			continue
		}
		inProgress++
		if _, ok := a.RetryAfter(); !ok {
			without++
			if first == nil {
				first = a
			}
		}
	}
	if inProgress == 0 {
		return
	}
	actual := fmt.Sprintf("%d in-progress answer(s), each with a Retry-After", inProgress)
	if first != nil {
		w.noteAnswer(first)
		actual = fmt.Sprintf("%d of %d in-progress answer(s) without a readable Retry-After: %s (Retry-After %q)",
			without, inProgress, w.describe(first), first.Header.Get("Retry-After"))
	}
	_ = w.check(checkOf(judge.KindRetryAfter, judge.HarmWrongRefusal, "client", who, "answers", which), fmt.Sprintf("%s's in-progress answers carry Retry-After", who),
		judge.CapWire, without == 0,
		"every in-progress answer with a Retry-After header, as the profile's retry_after says: a client told no time to wait retries at a guess, and one that gives up loses the outcome of an operation that runs", actual)
}

func isRefused(ctx context.Context, who, reason string, retryable bool) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	// A final refusal marked retryable is a defect too: a client that
	// trusts data.retryable sends the refused call again, forever.
	ok := w.isReason(a, reason) && w.retryableIs(a, retryable)
	err = w.check(checkOf(judge.KindRefused, judge.HarmWrongRefusal, "client", who, "reason", reason, "retryable", retryable),
		fmt.Sprintf("%s is refused with %s", who, reason), judge.CapWire, ok, judge.RefusalExpectation(reason, retryable), w.describe(a))
	if ok && reason == judge.ReasonInProgress {
		w.checkRetryAfter(who, judge.RetryAfterLast, []*answer{a})
	}
	return err
}

// isRefusedEither holds who's last answer to be one of two refusals the
// contract leaves to the gateway at that point: reason, marked retryable,
// or final, not marked so (a charged operation still in progress is one a
// gateway may call running or, past its stale-lock threshold, of unknown
// outcome; which one depends on a threshold the step does not know).
func isRefusedEither(ctx context.Context, who, reason, final string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	ok := (w.isReason(a, reason) && w.retryableIs(a, true)) || (w.isReason(a, final) && w.retryableIs(a, false))
	err = w.check(checkOf(judge.KindRefused, judge.HarmWrongRefusal, "client", who, "reason", reason, "retryable", true, "or_final", final),
		fmt.Sprintf("%s is refused with retryable %s or final %s", who, reason, final), judge.CapWire, ok,
		judge.RefusalEitherExpectation(reason, final), w.describe(a))
	if ok && reason == judge.ReasonInProgress && w.isReason(a, reason) {
		w.checkRetryAfter(who, judge.RetryAfterLast, []*answer{a})
	}
	return err
}

// answerPair is who's last answer and answer n of other, compared by the
// replay and key-scope checks.
func (w *world) answerPair(who, other string, n int) (last, earlier *answer, err error) {
	a, err := w.lastAnswer(who)
	if err != nil {
		return nil, nil, err
	}
	oc := w.clientFor(other)
	if n >= len(oc.answers) {
		return nil, nil, fmt.Errorf("%s has %d answers; no answer number %d", other, len(oc.answers), n+1)
	}
	w.noteAnswer(oc.answers[n])
	return a, oc.answers[n], nil
}

// replays checks that an answer is the stored outcome served again whole:
// the same receipt and the same content, structuredContent and isError.
func replays(ctx context.Context, who, other string, n int) error {
	w := getWorld(ctx)
	a, orig, err := w.answerPair(who, other, n)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("the last answer of %s replays answer %d of %s", who, n+1, other)
	id := checkOf(judge.KindReplays, judge.HarmLostOutcome, "client", who, "of", other, "nth", n)
	if !orig.IsResult() {
		return w.check(id, step, judge.CapWire, false, "the original answer to be a result", w.describe(orig))
	}
	if !a.IsResult() || a.Receipt() != orig.Receipt() {
		return w.check(id, step, judge.CapWire, false, fmt.Sprintf("a result with receipt %q", orig.Receipt()), w.describe(a))
	}
	for _, field := range []string{"content", "structuredContent", "isError"} {
		if orig.ResultMember(field) != a.ResultMember(field) {
			x, y := orig.ResultField(field), a.ResultField(field)
			return w.check(id, step, judge.CapWire, false, fmt.Sprintf("%s %s", field, orAbsent(x)), fmt.Sprintf("%s %s", field, orAbsent(y)))
		}
	}
	return w.check(id, step, judge.CapWire, true, fmt.Sprintf("receipt %q with the same content", orig.Receipt()), fmt.Sprintf("receipt %q with the same content", a.Receipt()))
}

// markedReplay holds a retry whose first answer was lost after the tool
// ran (the harness saw it run) to saying it is a replay, where the target
// marks replays at all: the model's rule, at the step of the scenarios
// made to show it. The receipt alone cannot tell the client whether this
// call ran the tool again.
func markedReplay(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("the last answer of %s is marked a replay", who)
	id := checkOf(judge.KindMarkedReplay, judge.HarmLostOutcome, "client", who)
	if !a.IsResult() {
		return w.check(id, step, judge.CapWire, false, "a result marked a replay", w.describe(a))
	}
	ok, expected, actual := judge.MarkedReplay(a.ResultValue().Replayed)
	return w.check(id, step, judge.CapWire, ok, expected, actual)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return fmt.Sprint(x) == fmt.Sprint(y) && string(mustJSON(x)) == string(mustJSON(y))
}

func probeSaw(ctx context.Context, tok string, n int) error {
	w := getWorld(ctx)
	token := w.expand(tok)
	return w.countCheck(ctx, fmt.Sprintf("the probe saw %s dispatched %d times", token, n), token, n, false,
		fmt.Sprintf("%d dispatch(es) of token %s at the upstream probe", n, token))
}

func probeSawAtMost(ctx context.Context, tok string, n int) error {
	w := getWorld(ctx)
	token := w.expand(tok)
	return w.countCheck(ctx, fmt.Sprintf("the probe saw %s dispatched at most %d times", token, n), token, n, true,
		fmt.Sprintf("at most %d dispatch(es) of token %s at the upstream probe", n, token))
}

// countCheck records a check of the probe's count of one token (exactly n,
// or at most n), once every background call has ended; the count is read
// again when the scenario ends, so a late dispatch fails it too.
func (w *world) countCheck(ctx context.Context, step, token string, n int, atMost bool, expected string) error {
	if err := w.settleAll(); err != nil {
		return err
	}
	id := checkOf(judge.KindProbeCount, "", "token", token, "n", n, "at_most", atMost)
	obs, observer := w.env.observer()
	if obs == nil {
		return w.unobserved(id, step, observer, expected)
	}
	got, err := countFor(ctx, w, obs, token, n)
	switch {
	case err != nil && observer == judge.CapEffects:
		// The read tool is the target's: one that fails, or whose count
		// never settles, leaves the count unknown. Neither a violation
		// nor a harness failure: the check is not observed, its
		// capability named.
		return w.unobservedBecause(id, step, observer, expected, "the target's read tool gave no count: "+err.Error())
	case err != nil:
		return fmt.Errorf("read the %s: %w", observerName(observer), err)
	}
	if observer == judge.CapEffects {
		// Say who counted: the target, of itself.
		expected = strings.Replace(expected, "at the upstream probe", "by the target's read tool", 1)
	}
	w.mu.Lock()
	w.counted = append(w.counted, countedCheck{step: step, token: token, seen: got, stepIdx: w.stepIdx, n: n, atMost: atMost})
	w.mu.Unlock()
	ok := got == n || (atMost && got <= n)
	id.harm = dispatchHarm(got, n)
	return w.check(id, step, observer, ok, expected, fmt.Sprintf("dispatched %d time(s)%s", got, observedTimes(observer, w.dispatchWitness(ctx, obs, token))))
}

// dispatchHarm is what a dispatch count other than the one allowed means:
// more than one dispatch where fewer were allowed is a double dispatch; a
// dispatch where none was allowed is work done for a call the client was
// told did nothing; fewer than required is an outcome the tool never made.
func dispatchHarm(got, allowed int) judge.Harm {
	switch {
	case got > allowed && got > 1:
		return judge.HarmDoubleDispatch
	case got > allowed, got < allowed:
		return judge.HarmLostOutcome
	}
	return ""
}

// dispatchWitness lists the times the observer saw a token, for a failure.
func (w *world) dispatchWitness(ctx context.Context, obs Observer, token string) string {
	ds, err := tokenDispatches(ctx, obs, token)
	if err != nil {
		return ""
	}
	w.noteDispatches(ds)
	return dispatchTimes(ds)
}

// ownOperation holds that a call reusing another call's key (on another
// tool, or from another caller) was not served that call's stored result:
// it is a result with a receipt of its own whose token the probe saw
// dispatched once more, or a refusal that dispatched nothing. The earlier
// call is the token's only dispatch before it.
func ownOperation(ctx context.Context, who, other string, n int) error {
	w := getWorld(ctx)
	a, orig, err := w.answerPair(who, other, n)
	if err != nil {
		return err
	}
	step := fmt.Sprintf("the last answer of %s is not answer %d of %s", who, n+1, other)
	id := checkOf(judge.KindOwnOperation, judge.HarmCrossScope, "client", who, "of", other, "nth", n)
	if !orig.IsResult() {
		return w.check(id, step, judge.CapWire, false, "the earlier answer to be a result", w.describe(orig))
	}
	result := a.IsResult()
	refused := !result && a.TransportError == "" && (a.IsRefusal() || a.Status >= 400) && a.Status < 500
	switch {
	case result && a.Receipt() == orig.Receipt():
		return w.check(id, step, judge.CapWire, false,
			fmt.Sprintf("a result with a receipt other than %q, or a refusal", orig.Receipt()),
			"the earlier call's stored result: "+w.describe(a))
	case !result && !refused:
		return w.check(id, step, judge.CapWire, false, "a result of its own or a refusal", w.describe(a))
	case result && jsonEqual(a.ResultField("content"), orig.ResultField("content")) &&
		jsonEqual(a.ResultField("structuredContent"), orig.ResultField("structuredContent")):
		// The probe answers each dispatch differently (its count and sequence
		// number are in the result): the same content under a new receipt is
		// the earlier caller's stored result passed off as a new one.
		return w.check(id, step, judge.CapWire, false,
			"a result of its own (the probe's answer to a dispatch of its own), or a refusal",
			fmt.Sprintf("the earlier call's content %s under a new receipt %q", a.ResultField("structuredContent"), a.Receipt()))
	}
	if err := w.check(id, step, judge.CapWire, true, "a result of its own or a refusal", w.describe(a)); err != nil {
		return err
	}
	token := tokenOf(w.clientFor(who).last)
	want, what := 2, "a result of its own: the token dispatched again"
	if refused {
		want, what = 1, "a refusal: nothing dispatched for it"
	}
	return w.countCheck(ctx, fmt.Sprintf("the probe saw %s dispatched %d times after %s", token, want, what), token, want, false,
		fmt.Sprintf("%d dispatch(es) of token %s (%s)", want, token, what))
}

func probeSawAll(ctx context.Context, n int) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	step := fmt.Sprintf("the probe saw %d dispatches in all", n)
	expected := fmt.Sprintf("%d dispatch(es) of this scenario's tokens", n)
	id := checkOf(judge.KindProbeTotal, "", "n", n)
	obs, observer := w.env.observer()
	if obs == nil {
		return w.unobserved(id, step, observer, expected)
	}
	got := 0
	var per []string
	for _, tok := range w.tokens {
		c, err := obs.Count(ctx, tok)
		if err != nil {
			return fmt.Errorf("read the %s: %w", observerName(observer), err)
		}
		got += c
		per = append(per, fmt.Sprintf("%s=%d", tok, c))
		w.mu.Lock()
		w.counted = append(w.counted, countedCheck{step: fmt.Sprintf("the probe saw %s dispatched %d times", tok, c), token: tok, seen: c, stepIdx: w.stepIdx})
		w.mu.Unlock()
	}
	if got != n {
		for _, tok := range w.tokens {
			w.dispatchWitness(ctx, obs, tok)
		}
	}
	id.harm = dispatchHarm(got, n)
	return w.check(id, step, observer, got == n, expected, fmt.Sprintf("%d (%s)", got, strings.Join(per, ", ")))
}

// settleAll lets every background call finish before effects are counted.
func (w *world) settleAll() error {
	for _, c := range w.clients {
		if err := w.settle(c); err != nil {
			return err
		}
	}
	return nil
}

// lostConnection holds that the connection really closed without an answer:
// a client that gave up waiting (a gateway that hangs) is not a drop.
func lostConnection(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	timedOut := a != nil && judge.ClientTimedOut(a.TransportError)
	ok := a != nil && (a.TransportError != "" || a.Status == 0) && !a.IsResult() && !a.IsRefusal() && !timedOut
	return w.check(checkOf(judge.KindLostConnection, "", "client", who), fmt.Sprintf("%s lost the connection", who), judge.CapWire, ok, "the connection closed by the gateway with no answer (not a client timeout)", w.describe(a))
}
