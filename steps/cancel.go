package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cucumber/godog"
)

// Cancellation, as MCP 2026-07-28 has it: a closed response stream is a
// cancellation, and so is notifications/cancelled on a 2025-11-25 session.
// Either way the client re-sends the call with a new request id, so the
// gateway must never dispatch a cancelled operation a second time.
func registerCancel(sc *godog.ScenarioContext) {
	sc.Step(`^"([^"]*)" cancels its call with notifications/cancelled$`, cancelWithNotification)
	sc.Step(`^"([^"]*)" closes its response stream$`, closeStream)
}

// cancelWithNotification names the call in flight in notifications/cancelled,
// then abandons it: a cancelled request is owed no answer.
func cancelWithNotification(ctx context.Context, who string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	if c.pending == nil || c.last == nil {
		return fmt.Errorf("%s has no call in flight to cancel", who)
	}
	id, ok := c.last.ID.(json.RawMessage)
	if !ok {
		return fmt.Errorf("%s's call in flight has no id to cancel", who)
	}
	if _, err := c.wire.Cancel(ctx, id, "cancelled by the conformance scenario"); err != nil {
		return fmt.Errorf("%s sends notifications/cancelled: %w", who, err)
	}
	return closeStream(ctx, who)
}

// closeStream abandons the call in flight: its HTTP exchange is cut, which
// on the 2026-07-28 wire is the cancellation itself.
func closeStream(ctx context.Context, who string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	if c.pending == nil || c.cancel == nil {
		return fmt.Errorf("%s has no call in flight to abandon", who)
	}
	c.cancel()
	out := <-c.pending
	c.pending, c.cancel = nil, nil
	if out.answer != nil {
		c.answers = append(c.answers, out.answer)
	}
	w.letCancellationLand()
	return nil
}

// letCancellationLand gives the gateway the settle period to notice a
// cancellation before the scenario goes on (releases the upstream, say):
// nothing on the wire tells the client when a gateway has seen its closed
// stream, and a scenario must test what the gateway does with a
// cancellation it saw.
func (w *world) letCancellationLand() {
	if w.env.Settle > 0 {
		time.Sleep(w.env.Settle)
	}
}
