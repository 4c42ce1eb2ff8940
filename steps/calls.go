package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

func registerCalls(sc *godog.ScenarioContext) {
	sc.Step(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) using key "([^"]*)"$`, func(ctx context.Context, who, tool, args, key string) error {
		return callNow(ctx, who, tool, args, key)
	})
	sc.Step(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) without a key$`, func(ctx context.Context, who, tool, args string) error {
		return callNow(ctx, who, tool, args, "")
	})
	sc.Step(`^"([^"]*)" starts calling "([^"]*)" with (\{.*\}) using key "([^"]*)"$`, func(ctx context.Context, who, tool, args, key string) error {
		return callInBackground(ctx, who, tool, args, key)
	})
	sc.Step(`^"([^"]*)" starts calling "([^"]*)" with (\{.*\}) without a key$`, func(ctx context.Context, who, tool, args string) error {
		return callInBackground(ctx, who, tool, args, "")
	})
	sc.Step(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) under permit "([^"]*)"$`, callUnderPermit)
	sc.Step(`^"([^"]*)" retries (?:its|their) last call with a new JSON-RPC id$`, retryLast)
	sc.Step(`^"([^"]*)" retries (?:its|their) last call with a new JSON-RPC id until it is not in progress$`, retryUntilDecided)
	sc.Step(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) using key "([^"]*)" and drops the connection once the tool runs$`, callAndDrop)
	sc.Step(`^"([^"]*)" sends a batch of two tools/call requests$`, sendBatch)
	sc.Step(`^"([^"]*)" sends the raw body (.+)$`, func(ctx context.Context, who, body string) error {
		return sendRaw(ctx, who, []byte(body))
	})
	sc.Step(`^"([^"]*)" sends a tools/call body over the gateway's body limit$`, sendOversized)
}

// newCall builds a call with the scenario's variables filled in.
func (w *world) newCall(who, tool, args, key string) (*wire.Call, error) {
	raw := json.RawMessage(w.expand(args))
	if !json.Valid(raw) {
		return nil, fmt.Errorf("arguments of the step are not JSON: %s", raw)
	}
	return &wire.Call{
		Tool:           w.toolName(tool),
		Arguments:      raw,
		IdempotencyKey: w.expand(key),
		Label:          fmt.Sprintf("%s: %s", who, tool),
		Lane:           who,
	}, nil
}

func (w *world) do(ctx context.Context, c *client, call *wire.Call) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, w.env.CallTimeout)
	defer cancel()
	w.noteMade(c, call)
	inv := w.record(w.invokeOp(c, call))
	wa, err := c.wire.CallTool(ctx, *call)
	a := newAnswer(wa, err)
	w.record(outcomeOp(w.env.Profile, c, call, inv, a, err))
	return a, err
}

func callNow(ctx context.Context, who, tool, args, key string) error {
	return send(ctx, who, tool, args, key, "")
}

// send makes one call and keeps its answer; permitID, if set, names an
// explicit permit.
func send(ctx context.Context, who, tool, args, key, permitID string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	call, err := w.newCall(who, tool, args, key)
	if err != nil {
		return err
	}
	call.PermitID = permitID
	c.last = call
	a, err := w.do(ctx, c, call)
	if err != nil && a == nil {
		return fmt.Errorf("%s calls %s: %w", who, tool, err)
	}
	c.answers = append(c.answers, a)
	return nil
}

// callUnderPermit sends an unkeyed call naming an explicit permit: the
// permit itself names the operation.
func callUnderPermit(ctx context.Context, who, tool, args, permit string) error {
	id, ok := getWorld(ctx).permits[permit]
	if !ok {
		return fmt.Errorf("no permit %q was granted in this scenario", permit)
	}
	return send(ctx, who, tool, args, "", id)
}

// callInBackground sends a call whose answer a later step collects; the
// scenario steers it with pauses at the target's fault points.
func callInBackground(ctx context.Context, who, tool, args, key string) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	if c.pending != nil {
		return fmt.Errorf("%s already has a call in flight", who)
	}
	call, err := w.newCall(who, tool, args, key)
	if err != nil {
		return err
	}
	// The id is chosen now, so a cancellation can name the request.
	call.ID = c.wire.NextID()
	c.last = call
	c.pending = make(chan callOutcome, 1)
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	go func(out chan<- callOutcome) {
		a, err := w.do(bg, c, call)
		out <- callOutcome{a, err}
	}(c.pending)
	return nil
}

// settle collects a background call's answer, if one is in flight.
func (w *world) settle(c *client) error {
	if c.pending == nil {
		return nil
	}
	select {
	case out := <-c.pending:
		c.pending = nil
		if out.answer == nil {
			return fmt.Errorf("%s's call failed on the wire: %v", c.name, out.err)
		}
		c.answers = append(c.answers, out.answer)
		return nil
	case <-time.After(w.env.CallTimeout):
		return fmt.Errorf("%s's call got no answer within %v", c.name, w.env.CallTimeout)
	}
}

func retryLast(ctx context.Context, who string) error { return retryVia(ctx, who, nil) }

// retryVia sends who's last call again on wc (another gateway URL), or on
// who's own wire client when wc is nil; the answer is who's either way.
func retryVia(ctx context.Context, who string, wc *wire.Client) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	if err := w.settle(c); err != nil {
		return err
	}
	if c.last == nil {
		return fmt.Errorf("%s has made no call to retry", who)
	}
	retry := *c.last
	retry.ID = nil // a fresh JSON-RPC id, as real retries carry (MCP issue 3394)
	retry.Label = who + ": retry"
	sender := c
	if wc != nil {
		sender = &client{name: c.name, wire: wc}
		retry.Label += " on the other gateway URL"
	}
	a, err := w.do(ctx, sender, &retry)
	if err != nil && a == nil {
		return fmt.Errorf("%s retries: %w", who, err)
	}
	c.answers = append(c.answers, a)
	return nil
}

// retryUntilDecided retries while the target answers in-progress, a bounded
// number of times: an honest in-progress is allowed until it can decide.
func retryUntilDecided(ctx context.Context, who string) error {
	return retryUntilDecidedVia(ctx, who, nil)
}

// Bounds of retryUntilDecided: at most decideRetries retries, each after
// the in-progress answer's Retry-After or decidePause without one, while
// decideBudget lasts (a Retry-After of seconds would otherwise stretch 100
// retries over minutes).
const (
	decideRetries = 100
	decidePause   = 50 * time.Millisecond
	decideBudget  = 30 * time.Second
)

// retryUntilDecidedVia is retryUntilDecided with each retry sent as retryVia sends it.
func retryUntilDecidedVia(ctx context.Context, who string, wc *wire.Client) error {
	w := getWorld(ctx)
	deadline := time.Now().Add(decideBudget)
	var inProgress []*answer
	for i := 0; i < decideRetries; i++ {
		if err := retryVia(ctx, who, wc); err != nil {
			return err
		}
		c := w.clientFor(who)
		last := c.answers[len(c.answers)-1]
		if !w.isReason(last, judge.ReasonInProgress) {
			w.checkRetryAfter(who, judge.RetryAfterStep, inProgress)
			return nil
		}
		inProgress = append(inProgress, last)
		wait := retryWait(last, decidePause)
		if time.Now().Add(wait).After(deadline) {
			break
		}
		time.Sleep(wait)
	}
	w.checkRetryAfter(who, judge.RetryAfterStep, inProgress)
	// An operation never decided is an outcome the client cannot get: a
	// violated check, with its harm, not a step that could not be driven.
	c := w.clientFor(who)
	last := c.answers[len(c.answers)-1]
	w.noteAnswer(last)
	return w.check(checkOf(judge.KindDecided, judge.HarmLostOutcome, "client", who), fmt.Sprintf("%s's operation is decided once retried", who), judge.CapWire, false,
		fmt.Sprintf("a result, or a refusal that says nothing ran, within %d retries %v apart (or as Retry-After asks) and %v", decideRetries, decidePause, decideBudget),
		"still in progress: "+w.describe(last))
}

// retryWait is how long to wait before retrying an in-progress answer: its
// Retry-After when it has one (a gateway that names a time is asking for
// it; retrying sooner only earns another in-progress), else pause.
func retryWait(a *answer, pause time.Duration) time.Duration {
	if a == nil || a.Answer == nil {
		return pause
	}
	if d, ok := a.RetryAfter(); ok {
		return max(d, pause)
	}
	return pause
}

// callAndDrop sends the call, waits until the probe sees the tool run, then
// drops the connection: the client never learns the outcome.
func callAndDrop(ctx context.Context, who, tool, args, key string) error {
	w := getWorld(ctx)
	if w.env.Probe == nil || !w.has(judge.CapUpstream) {
		return w.cannot(judge.CapUpstream, "the drop waits until the probe sees the tool run")
	}
	c := w.clientFor(who)
	call, err := w.newCall(who, tool, args, key)
	if err != nil {
		return err
	}
	c.last = call
	token := tokenOf(call)
	drop := *call
	drop.DropAfterSend = true
	drop.DropWait = func(ctx context.Context) error { return w.probeWait(ctx, token, 1) }
	a, err := w.do(ctx, c, &drop)
	if err != nil {
		return fmt.Errorf("the tool never ran for %s before the drop: %w", token, err)
	}
	if a == nil || !a.Dropped {
		return fmt.Errorf("the connection was not dropped: %s", w.describe(a))
	}
	c.answers = append(c.answers, a)
	w.letCancellationLand()
	return nil
}

// tokenOf reads the probe token out of a call's arguments.
func tokenOf(call *wire.Call) string {
	raw, _ := call.Arguments.(json.RawMessage)
	return tokenIn(raw)
}

// tokenIn reads the probe token out of tool arguments, "" when none.
func tokenIn(args json.RawMessage) string {
	var v struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(args, &v)
	return v.Token
}

// bodyTool is the tool a raw body names: the scenario's "write" tool, else
// the profile's, so a refusal is for the body and never for an unknown tool.
func (w *world) bodyTool() string {
	if n, ok := w.tools["write"]; ok {
		return n
	}
	if t, ok := w.env.Profile.Tool(target.RoleWrite); ok {
		return t.Name
	}
	return "mcpconform.body-test"
}

func sendBatch(ctx context.Context, who string) error {
	w := getWorld(ctx)
	one := func(id int) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": w.bodyTool(), "arguments": map[string]any{"token": w.expand("$op1")}}})
		return string(b)
	}
	return sendRaw(ctx, who, []byte("["+one(1)+","+one(2)+"]"))
}

// sendOversized sends a call just over the gateway's body limit (the
// profile's body_limit_bytes, 1 MiB by default).
func sendOversized(ctx context.Context, who string) error {
	w := getWorld(ctx)
	limit := w.env.Profile.BodyLimit
	if limit <= 0 {
		limit = 1 << 20
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`)
	name, _ := json.Marshal(w.bodyTool())
	b.Write(name)
	b.WriteString(`,"arguments":{"token":"` + w.expand("$op1") + `","pad":"`)
	b.WriteString(strings.Repeat("x", int(limit)+(64<<10)))
	b.WriteString(`"}}}`)
	return sendRaw(ctx, who, b.Bytes())
}

func sendRaw(ctx context.Context, who string, body []byte) error {
	w := getWorld(ctx)
	c := w.clientFor(who)
	ctx, cancel := context.WithTimeout(ctx, w.env.CallTimeout)
	defer cancel()
	w.record(judge.Op{Process: c.name, Type: "invoke", F: judge.FRaw, Value: mustJSON(map[string]int{"bytes": len(body)})})
	wa, err := c.wire.Send(ctx, body, nil)
	a := newAnswer(wa, err)
	out := outcomeOp(w.env.Profile, c, &wire.Call{}, -1, a, err)
	out.F = judge.FRaw
	w.record(out)
	if err != nil && a == nil {
		return fmt.Errorf("%s sends a raw body: %w", who, err)
	}
	c.answers = append(c.answers, a)
	return nil
}
