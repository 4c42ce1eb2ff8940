package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cucumber/godog"
)

func registerAssertions(sc *godog.ScenarioContext) {
	sc.Step(`^"([^"]*)" gets a result$`, getsResult)
	sc.Step(`^"([^"]*)" gets a result with a new receipt$`, getsNewReceipt)
	sc.Step(`^"([^"]*)" is refused with "([^"]*)"$`, func(ctx context.Context, who, reason string) error {
		return isRefused(ctx, who, reason, false)
	})
	sc.Step(`^"([^"]*)" is refused with retryable "([^"]*)"$`, func(ctx context.Context, who, reason string) error {
		return isRefused(ctx, who, reason, true)
	})
	sc.Step(`^the last answer of "([^"]*)" replays its (first|second|third) answer$`, func(ctx context.Context, who, nth string) error {
		return replays(ctx, who, who, ordinal(nth))
	})
	sc.Step(`^the last answer of "([^"]*)" replays the (first|second|third) answer of "([^"]*)"$`, func(ctx context.Context, who, nth, other string) error {
		return replays(ctx, who, other, ordinal(nth))
	})
	sc.Step(`^the probe saw "([^"]*)" dispatched (\d+) times?$`, probeSaw)
	sc.Step(`^the probe saw (\d+) dispatch(?:es)? in all$`, probeSawAll)
	sc.Step(`^the ledger has (\d+) debits? and (\d+) refunds?$`, ledgerHas)
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
	return c.answers[len(c.answers)-1], nil
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
	return w.check(fmt.Sprintf("%s gets a result", who), ok, "a tools/call result with a receipt", w.describe(a))
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
	w.mu.Unlock()
	fresh := a.IsResult() && a.Receipt() != ""
	for _, r := range seen {
		if r == a.Receipt() {
			fresh = false
		}
	}
	if fresh {
		w.noteReceipt(a.Receipt())
	}
	return w.check(fmt.Sprintf("%s gets a result with a new receipt", who), fresh,
		fmt.Sprintf("a result whose receipt is none of %v (a new operation)", seen), w.describe(a))
}

// isReason says whether an answer is the refusal named by one of our reason
// names, through the profile's mapping for gateways that name it otherwise.
func (w *world) isReason(a *answer, reason string) bool {
	if a == nil || !a.IsRefusal() {
		return false
	}
	for _, want := range w.env.Profile.ReasonsFor(reason) {
		if a.ErrorReason() == want || fmt.Sprint(a.ErrorCode()) == want {
			return true
		}
	}
	return false
}

func isRefused(ctx context.Context, who, reason string, retryable bool) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	ok := w.isReason(a, reason) && (!retryable || a.Retryable())
	want := fmt.Sprintf("a JSON-RPC error with data.reason %q", reason)
	if retryable {
		want += " marked retryable"
	}
	return w.check(fmt.Sprintf("%s is refused with %s", who, reason), ok, want, w.describe(a))
}

// replays checks that an answer is the stored outcome served again whole:
// the same receipt and the same content, structuredContent and isError.
func replays(ctx context.Context, who, other string, n int) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	oc := w.clientFor(other)
	if n >= len(oc.answers) {
		return fmt.Errorf("%s has %d answers; no answer number %d", other, len(oc.answers), n+1)
	}
	orig := oc.answers[n]
	step := fmt.Sprintf("the last answer of %s replays answer %d of %s", who, n+1, other)
	if !orig.IsResult() {
		return w.check(step, false, "the original answer to be a result", w.describe(orig))
	}
	if !a.IsResult() || a.Receipt() != orig.Receipt() {
		return w.check(step, false, fmt.Sprintf("a result with receipt %q", orig.Receipt()), w.describe(a))
	}
	for _, field := range []string{"content", "structuredContent", "isError"} {
		x, y := orig.ResultField(field), a.ResultField(field)
		if !jsonEqual(x, y) {
			return w.check(step, false, fmt.Sprintf("%s %s", field, x), fmt.Sprintf("%s %s", field, y))
		}
	}
	return w.check(step, true, fmt.Sprintf("receipt %q with the same content", orig.Receipt()), fmt.Sprintf("receipt %q with the same content", a.Receipt()))
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
	if err := w.settleAll(); err != nil {
		return err
	}
	token := w.expand(tok)
	got := w.env.Probe.Count(token)
	return w.check(fmt.Sprintf("the probe saw %s dispatched %d times", token, n), got == n,
		fmt.Sprintf("%d dispatch(es) of token %s at the upstream probe", n, token),
		fmt.Sprintf("%d dispatch(es)", got))
}

func probeSawAll(ctx context.Context, n int) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	got := 0
	var per []string
	for _, tok := range w.tokens {
		c := w.env.Probe.Count(tok)
		got += c
		per = append(per, fmt.Sprintf("%s=%d", tok, c))
	}
	return w.check(fmt.Sprintf("the probe saw %d dispatches in all", n), got == n,
		fmt.Sprintf("%d dispatch(es) of this scenario's tokens", n),
		fmt.Sprintf("%d (%s)", got, strings.Join(per, ", ")))
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

func ledgerHas(ctx context.Context, debits, refunds int) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	l, err := w.ledger(ctx)
	if err != nil {
		return err
	}
	var d, r int
	var rows []string
	for _, e := range l.Entries {
		switch e.Kind {
		case "debit":
			d++
		case "refund":
			r++
		default:
			continue
		}
		rows = append(rows, fmt.Sprintf("%s %d %s", e.Kind, e.Amount, e.Receipt))
	}
	return w.check(fmt.Sprintf("the ledger has %d debits and %d refunds", debits, refunds), d == debits && r == refunds,
		fmt.Sprintf("%d debit(s) and %d refund(s)", debits, refunds),
		fmt.Sprintf("%d debit(s) and %d refund(s): [%s]", d, r, strings.Join(rows, "; ")))
}

func balanceChanged(ctx context.Context, delta int64) error {
	w := getWorld(ctx)
	if err := w.settleAll(); err != nil {
		return err
	}
	wallet, err := w.env.Control().Wallet(ctx, w.walletID)
	if err != nil {
		return fmt.Errorf("read balance: %w", err)
	}
	bal := wallet.Balance
	got := bal - w.baseline
	return w.check(fmt.Sprintf("the wallet balance changed by %d", delta), got == delta,
		fmt.Sprintf("balance %d (%+d from %d)", w.baseline+delta, delta, w.baseline),
		fmt.Sprintf("balance %d (%+d)", bal, got))
}

func lostConnection(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	ok := (a.TransportError != "" || a.Status == 0) && !a.IsResult() && !a.IsRefusal()
	return w.check(fmt.Sprintf("%s lost the connection", who), ok, "the connection closed with no answer", w.describe(a))
}
