package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// The steps below are the few that explore's generated scenarios need
// beyond the suite's: real time passing between calls, a client on the
// second gateway URL, an answer to an input request that may not come, and
// the last step of every generated scenario, which retries each operation
// until it is decided. Everything else a generated scenario says is a step
// the suite's own features use.
func registerExplore(sc *godog.ScenarioContext) {
	sc.Step(`^client "([^"]*)" talks to gateway URL (\d+)$`, talksToURL)
	sc.Step(`^"([^"]*)" answers the input its last answer asked for, if it asked$`, answersInputIfAsked)
	sc.Step(`^every operation is retried until it is decided$`, retryEveryOperation)
}

// talksToURL puts a client on the target's n-th gateway URL (1-based)
// before its first call: a retry through another process of one store.
func talksToURL(ctx context.Context, name string, n int) error {
	w := getWorld(ctx)
	if n < 1 {
		return fmt.Errorf("gateway URL %d: URLs are numbered from 1", n)
	}
	if n > 1 && !w.has(judge.CapTwoURLs) {
		return w.cannot(judge.CapTwoURLs, fmt.Sprintf("client %s talks to gateway URL %d", name, n))
	}
	w.mu.Lock()
	_, exists := w.clients[name]
	w.mu.Unlock()
	if exists {
		return fmt.Errorf("client %s already talks to gateway URL 1: put this step before its first use", name)
	}
	w.clientOn(name, n-1)
	return nil
}

// answersInputIfAsked answers the input request of the client's last
// answer, if it is one: a generated scenario cannot know whether a
// gateway (a buggy one, say) asked, and must go on either way.
func answersInputIfAsked(ctx context.Context, who string) error {
	w := getWorld(ctx)
	a, err := w.lastAnswer(who)
	if err != nil {
		return err
	}
	if askedOf(a) == nil {
		return nil
	}
	return answersInput(ctx, who)
}

// madeCall is a call the scenario made, with its client, kept so the last
// step can make each operation's call again.
type madeCall struct {
	client *client
	call   wire.Call
}

// noteMade keeps a call the scenario made.
func (w *world) noteMade(c *client, call *wire.Call) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.made = append(w.made, madeCall{client: c, call: *call})
}

// opsMade are the scenario's operations as the harness sent them, in the
// order each was first made, each with its latest call: one per caller
// (API key, wallet, principal), tool, key, permit and arguments, the
// rounds of a multi-round call and the twins of a crowd being one.
func (w *world) opsMade() []madeCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var order []string
	last := map[string]madeCall{}
	for _, m := range w.made {
		c := m.client
		k := fmt.Sprintf("%s|%s|%s|%v|%s|%s|%s|%s", c.credential, c.wallet, c.principal, c.forged,
			m.call.Tool, m.call.IdempotencyKey, m.call.PermitID, wire.CanonicalJSON(rawArgs(m.call)))
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = m
	}
	out := make([]madeCall, len(order))
	for i, k := range order {
		out[i] = last[k]
	}
	return out
}

func rawArgs(call wire.Call) json.RawMessage {
	if raw, ok := call.Arguments.(json.RawMessage); ok {
		return raw
	}
	return mustJSON(call.Arguments)
}

// maxDecideAttempts bounds the retries of one operation: an honest
// in-progress ends once its holder finishes, which every generated
// scenario lets happen before its last step.
const maxDecideAttempts = 40

// retryEveryOperation is a generated scenario's last step: every call still
// in flight is collected, then each operation's latest call is sent again
// with a new JSON-RPC id by the client that made it, until the answer is
// not one to retry (in progress, no answer; a retryable failure until it
// repeats). From
// here the model requires every operation to end decided (judge.EnvDecide),
// so one left in progress for ever, or charged and never run, is seen.
func retryEveryOperation(ctx context.Context) error {
	w := getWorld(ctx)
	for _, c := range w.clientList() {
		if c.pending != nil {
			if err := w.settle(c); err != nil {
				return err
			}
		}
	}
	w.noteEnv(judge.EnvValue{Kind: judge.EnvDecide})
	ops := w.opsMade()
	retries, stuck := 0, []string{}
	for _, m := range ops {
		call := m.call
		call.ID, call.DropAfterSend, call.DropWait = nil, false, nil
		call.Label = m.client.name + ": retry until decided"
		var a *answer
		failed := 0
		for attempt := 0; attempt < maxDecideAttempts; attempt++ {
			if attempt > 0 {
				time.Sleep(retryWait(a, time.Duration(min(attempt, 8))*25*time.Millisecond))
			}
			next := call
			var err error
			a, err = w.do(ctx, m.client, &next)
			retries++
			if err != nil && a == nil {
				return fmt.Errorf("%s retries %s: %w", m.client.name, call.Tool, err)
			}
			m.client.answers = append(m.client.answers, a)
			if !a.IsRefusal() || !a.Retryable() {
				if !w.running(a) {
					break
				}
				continue
			}
			// A retryable failure (dispatch_failed, response_failed) is
			// decided once it repeats: a fault armed once is spent by
			// the first retry, and what fails every time (a multi-round
			// tool on a client that cannot answer it) ran nothing.
			if !w.running(a) {
				if failed++; failed == 3 {
					break
				}
			}
		}
		if w.running(a) {
			stuck = append(stuck, fmt.Sprintf("%s's %s: %s", m.client.name, call.Tool, w.describe(a)))
		}
	}
	step := "every operation is retried until it is decided"
	actual := fmt.Sprintf("%d operation(s), %d call(s), none left in progress or unanswered", len(ops), retries)
	if len(stuck) > 0 {
		actual = fmt.Sprintf("still undecided after %d attempts: %v", maxDecideAttempts, stuck)
	}
	return w.check(checkOf(judge.KindRetried, judge.HarmLostOutcome, "ops", len(ops)), step, judge.CapWire, len(stuck) == 0,
		"each operation's call, sent again, ends in a result or a refusal, not in progress", actual)
}

// running says an answer leaves its operation undecided for the client:
// none came, or the operation is in progress.
func (w *world) running(a *answer) bool {
	return a == nil || a.TransportError != "" || w.isReason(a, judge.ReasonInProgress)
}

// clientList is the scenario's clients, in no particular order.
func (w *world) clientList() []*client {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*client, 0, len(w.clients))
	for _, c := range w.clients {
		out = append(out, c)
	}
	return out
}
