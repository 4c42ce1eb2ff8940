package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func registerCrowds(sc *godog.ScenarioContext) {
	sc.Step(`^(\d+) clients call "([^"]*)" with (\{.*\}) using key "([^"]*)" at once$`, func(ctx context.Context, n int, tool, args, key string) error {
		return crowd(ctx, n, tool, args, key, false, false)
	})
	sc.Step(`^(\d+) clients call "([^"]*)" with (\{.*\}) using key "([^"]*)" at once, the first dispatch held$`, func(ctx context.Context, n int, tool, args, key string) error {
		return heldCrowd(ctx, n, tool, args, key)
	})
	sc.Step(`^(\d+) clients call "([^"]*)" with (\{.*\}) without a key at once$`, func(ctx context.Context, n int, tool, args string) error {
		return crowd(ctx, n, tool, args, "", false, false)
	})
	sc.Step(`^(\d+) clients split across every gateway URL call "([^"]*)" with (\{.*\}) without a key at once$`, func(ctx context.Context, n int, tool, args string) error {
		return crowd(ctx, n, tool, args, "", true, false)
	})
	sc.Step(`^(\d+) clients call "([^"]*)" with (\{.*\}) at once, each its own operation(?: using key "([^"]*)")?$`, func(ctx context.Context, n int, tool, args, key string) error {
		return crowd(ctx, n, tool, args, key, false, true)
	})
	sc.Step(`^exactly one operation ran and every answer is its receipt or retryable "([^"]*)"$`, oneOperation)
	sc.Step(`^a random workload of (\d+) calls runs on "([^"]*)" with seed-chosen keys, retries and conflicts$`, workload)
	sc.Step(`^every operation of the workload got one outcome$`, workloadAnswered)
	sc.Step(`^every dispatched operation was charged exactly once$`, bankInvariant)
	sc.Step(`^no operation was dispatched twice$`, noDoubleDispatch)
}

// ownOperation makes the i-th call of a crowd an operation of its own:
// its token (and key) get the suffix -i, so the calls race for the wallet
// and the store, not for one record.
func (w *world) ownOperation(call *wire.Call, i int) error {
	raw, _ := call.Arguments.(json.RawMessage)
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return fmt.Errorf("arguments of the step are not a JSON object: %w", err)
	}
	tok, _ := args["token"].(string)
	if tok == "" {
		return fmt.Errorf("each its own operation: the arguments need a \"token\"")
	}
	tok = fmt.Sprintf("%s-%d", tok, i)
	args["token"] = tok
	out, err := json.Marshal(args)
	if err != nil {
		return err
	}
	call.Arguments = json.RawMessage(out)
	if call.IdempotencyKey != "" {
		call.IdempotencyKey = fmt.Sprintf("%s-%d", call.IdempotencyKey, i)
	}
	w.mu.Lock()
	w.tokens = append(w.tokens, tok)
	w.mu.Unlock()
	return nil
}

// crowd sends n identical calls from n clients, all held at a barrier until
// every request is built, then released together.
func crowd(ctx context.Context, n int, tool, args, key string, split, distinct bool) error {
	w := getWorld(ctx)
	if split && !w.has(judge.CapTwoURLs) {
		return w.cannot(judge.CapTwoURLs, "the twins are split across two gateway processes")
	}
	if max := w.env.MaxConcurrency; max > 0 && n > max {
		// Fewer twins may miss the race the scenario exists to provoke: the
		// run can still fail, but it cannot pass on this step.
		_ = w.unobserved(checkOf(judge.KindConcurrency, "", "n", n, "max", max), fmt.Sprintf("%d clients call at once", n), judge.CapWire,
			fmt.Sprintf("%d concurrent clients; --concurrency allowed %d", n, max))
		n = max
	}
	w.evidence.Concurrency = n
	calls := make([]*wire.Call, n)
	clients := make([]*client, n)
	for i := range calls {
		call, err := w.newCall(fmt.Sprintf("twin-%02d", i), tool, args, key)
		if err != nil {
			return err
		}
		if distinct {
			if err := w.ownOperation(call, i); err != nil {
				return err
			}
		}
		calls[i] = call
		idx := 0
		if split {
			idx = i % len(w.env.URLs)
		}
		clients[i] = w.clientOn(call.Lane, idx)
		// Each twin opens its session before the barrier, so the calls
		// themselves, not the handshakes, arrive together.
		if err := clients[i].wire.Connect(ctx); err != nil {
			return fmt.Errorf("%s connects: %w", call.Lane, err)
		}
	}
	answers := make([]*answer, n)
	barrier := make(chan struct{})
	answered := make(chan struct{}, n)
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for i := range calls {
		go func(i int) {
			defer done.Done()
			ready.Done()
			<-barrier
			a, _ := w.do(ctx, clients[i], calls[i])
			answers[i] = a
			answered <- struct{}{}
		}(i)
	}
	ready.Wait()
	close(barrier)
	if w.holdToken != "" {
		// The first dispatch is held at the probe: every twin arrives while
		// the operation is surely running, so how the gateway answers a
		// duplicate in progress is seen every time, not by chance.
		w.releaseHeld(ctx, answered, n-1)
	}
	done.Wait()
	w.crowd = answers
	return nil
}

// heldCrowd is crowd with the operation's dispatch held at the probe until
// every other twin has its answer (or a grace period has passed, for a
// gateway that makes duplicates wait): the twins all meet the operation in
// progress.
func heldCrowd(ctx context.Context, n int, tool, args, key string) error {
	w := getWorld(ctx)
	if w.has(judge.CapUpstream) {
		if token := tokenIn(json.RawMessage(w.expand(args))); token != "" {
			if err := w.probeStall(ctx, token); err != nil {
				return fmt.Errorf("hold the first dispatch: %w", err)
			}
			w.holdToken = token
			defer func() { w.holdToken = "" }()
		}
	}
	return crowd(ctx, n, tool, args, key, false, false)
}

// releaseHeld waits for the held dispatch to arrive and for others answers
// (at most a grace period: a gateway may make duplicates wait), then lets
// the dispatch go.
func (w *world) releaseHeld(ctx context.Context, answered <-chan struct{}, others int) {
	defer func() { _ = w.probeUnstall(context.WithoutCancel(ctx), w.holdToken) }()
	wctx, cancel := context.WithTimeout(ctx, w.env.CallTimeout)
	defer cancel()
	if w.probeWait(wctx, w.holdToken, 1) != nil {
		return
	}
	grace := time.NewTimer(2 * time.Second)
	defer grace.Stop()
	for got := 0; got < others; got++ {
		select {
		case <-answered:
		case <-grace.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func oneOperation(ctx context.Context, reason string) error {
	w := getWorld(ctx)
	ok, actual, witness := judgeCrowd(w.crowd, w.describe, func(a *answer) bool { return w.isReason(a, reason) && w.retryableIs(a, true) })
	if !ok {
		for _, a := range witness {
			w.noteAnswer(a)
		}
	}
	err := w.check(checkOf(judge.KindOneOperation, judge.HarmLostOutcome, "reason", reason), "exactly one operation ran", judge.CapWire, ok,
		fmt.Sprintf("one receipt shared by every result, every other answer retryable %q", reason), actual)
	w.checkRetryAfter("the crowd", judge.RetryAfterCrowd, w.crowd)
	return err
}

// judgeCrowd holds that a crowd's results share one receipt and every
// other answer is fine. What it observed is counted per receipt and per
// kind of answer, never listed twin by twin; the witness is the smallest
// set of answers that proves a violation: one answer of each of the first
// two receipts (two receipts are two operations) and one of each other
// kind of answer.
func judgeCrowd(answers []*answer, describe func(*answer) string, fine func(*answer) bool) (ok bool, actual string, witness []*answer) {
	var receipts, others []string
	byReceipt, byKind := map[string]bool{}, map[string]bool{}
	for _, a := range answers {
		switch {
		case a != nil && a.IsResult() && a.Receipt() != "":
			r := a.Receipt()
			receipts = append(receipts, r)
			if !byReceipt[r] {
				byReceipt[r] = true
				if len(byReceipt) <= 2 {
					witness = append(witness, a)
				}
			}
		case fine(a):
		default:
			d := describe(a)
			others = append(others, d)
			if !byKind[d] {
				byKind[d] = true
				witness = append(witness, a)
			}
		}
	}
	ok = len(byReceipt) == 1 && len(others) == 0
	if ok {
		witness = nil
	}
	return ok, fmt.Sprintf("%d answers: receipts %s; other answers %s", len(answers), reports.Tally(receipts, 3), reports.Tally(others, 3)), witness
}

// op is one operation of the random workload, Jepsen style: a token unique to
// it, so every dispatch and debit traces back to exactly one operation.
type op struct {
	token, key string
	args       json.RawMessage
}

// workload runs a seeded mix of first calls, retries with new ids, unkeyed
// calls and conflicting reuse of a key.
func workload(ctx context.Context, n int, tool string) error {
	w := getWorld(ctx)
	h := fnv.New64a()
	h.Write([]byte(w.entry.ID))
	rng := rand.New(rand.NewSource(w.env.Seed ^ int64(h.Sum64())))
	c := w.clientFor("workload")
	w.workloadTool = tool
	var ops []op
	for i := 0; i < n; i++ {
		var call *wire.Call
		var err error
		switch r := rng.Intn(10); {
		case len(ops) > 0 && r < 4: // retry an earlier operation with a new id
			o := ops[rng.Intn(len(ops))]
			call = &wire.Call{Tool: w.toolName(tool), Arguments: o.args, IdempotencyKey: o.key, Lane: "workload", Label: "retry " + o.token}
		case len(ops) > 0 && r < 5: // reuse a key with other arguments: must be refused
			o := ops[rng.Intn(len(ops))]
			if o.key == "" {
				continue
			}
			call, err = w.newCall("workload", tool, fmt.Sprintf(`{"token":"$op%d","conflict":true}`, 1000+i), o.key)
		case r < 8:
			call, err = w.newCall("workload", tool, fmt.Sprintf(`{"token":"$op%d"}`, i+1), fmt.Sprintf("$k%d", i+1))
		default:
			call, err = w.newCall("workload", tool, fmt.Sprintf(`{"token":"$op%d"}`, i+1), "")
		}
		if err != nil {
			return err
		}
		raw, _ := call.Arguments.(json.RawMessage)
		if !strings.HasPrefix(call.Label, "retry") {
			ops = append(ops, op{token: tokenOf(call), key: call.IdempotencyKey, args: raw})
		}
		if _, err := w.do(ctx, c, call); err != nil {
			return fmt.Errorf("workload call %d: %w", i, err)
		}
	}
	return nil
}

// workloadAnswered holds that the workload's operations ran: each one's
// answers are one outcome (one receipt for all its results, or its
// refusal), computed from the history as recheck does.
func workloadAnswered(ctx context.Context) error {
	w := getWorld(ctx)
	ok, expected, actual := judge.EveryOperationAnswered(w.history, "workload")
	return w.check(checkOf(judge.KindAnswered, judge.HarmLostOutcome, "process", "workload"), "every operation of the workload got one outcome", judge.CapWire, ok, expected, actual)
}

// bankInvariant is computed from the scenario's history, the same events
// shipped in history/<id>.ndjson, so anyone can recheck it from the files.
func bankInvariant(ctx context.Context) error {
	w := getWorld(ctx)
	const step = "every dispatched operation was charged exactly once"
	if obs, observer := w.env.observer(); !w.has(judge.CapLedger) || obs == nil {
		missing := judge.CapLedger
		if w.has(judge.CapLedger) {
			missing = observer
		}
		return w.unobserved(checkOf(judge.KindBank, judge.HarmDoubleCharge), step, missing, "each operation that ran dispatched once and charged once at its price")
	}
	if err := w.recordEffects(ctx); err != nil {
		return err
	}
	// The read puts the prices in the history, for recheck.
	if _, err := w.ledgerRead(ctx); err != nil {
		return err
	}
	ok, expected, actual := judge.BankInvariant(w.history, w.prices[w.workloadTool])
	return w.check(checkOf(judge.KindBank, judge.HarmDoubleCharge), step, judge.CapLedger, ok, expected, actual)
}

func noDoubleDispatch(ctx context.Context) error {
	w := getWorld(ctx)
	obs, observer := w.env.observer()
	if obs == nil {
		return w.unobserved(checkOf(judge.KindAtMostOnce, judge.HarmDoubleDispatch), "no operation was dispatched twice", observer, "every token dispatched at most once")
	}
	if err := w.recordEffects(ctx); err != nil {
		return err
	}
	ok, twice := judge.AtMostOnce(w.history)
	if !ok {
		w.noteDispatches(dispatchesIn(w.history, twice))
	}
	return w.check(checkOf(judge.KindAtMostOnce, judge.HarmDoubleDispatch), "no operation was dispatched twice", observer, ok, "every token dispatched at most once",
		fmt.Sprintf("dispatched more than once: [%s]", strings.Join(twice, ", ")))
}
