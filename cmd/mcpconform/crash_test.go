package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

// Crash scenarios: the reference gateway is killed
// with SIGKILL while a tools/call is held at a fault point, restarted on the
// same store, and the call is retried with a new JSON-RPC id. Whatever the
// point, the probe never sees a second dispatch, the ledger never a second
// debit, and every ledger entry written before the kill is still there.
//
// What each point gives after the restart (observed, and asserted):
//
//   - reserve.done: the record is reserved (in progress) and its auto permit
//     minted, nothing is charged or dispatched. The process that owned the
//     reservation is gone, and nothing tells the restarted gateway so: every
//     retry is answered idempotency_in_progress (retryable), honestly: no
//     dispatch, no debit. Once the reservation is older than the stale-lock
//     threshold (the gateway clock is advanced past it) the gateway decides:
//     an uncharged reservation never reached its tool, so a retry takes it
//     over and runs it: one dispatch, one debit.
//   - dispatch.before: the record is in progress and the debit is written,
//     nothing is dispatched. Every retry: idempotency_in_progress, still one
//     debit, no dispatch. Past the stale-lock threshold a charged record may
//     have reached its tool, so it is never run again: a retry is answered
//     outcome_unknown (not retryable, data.receipt the debit's) instead of
//     in progress for ever. The debit stays without a result (money held
//     for an operation that never ran) until an operator settles it.
//   - dispatch.after: the tool ran and the outcome is stored (record
//     completed) before the fault. The first retry replays it: the receipt
//     of the ledger's one debit, the probe's n = 1, no second dispatch.
//
// The same holds for a keyed call (Idempotency-Key) and an unkeyed one
// (derived key). Bounded: at most crashRetries retries per case, each
// answered at once; only 127.0.0.1.

const (
	crashRetries  = 5
	crashPrice    = 3
	crashBalance  = 100
	crashDeadline = 90 * time.Second
	// crashStaleLock is the stale-lock threshold, in seconds, of the retry
	// past it.
	crashStaleLock = 30
)

// errAnswered: the first attempt got an answer although its gateway was
// killed while holding it.
var errAnswered = errors.New("the first attempt was answered")

type crashCase struct {
	point string
	keyed bool
	// what the retries must see
	wantDispatches int
	wantDebits     int
	wantReplay     bool // else idempotency_in_progress on every retry
	// takenOver: once the stale-lock threshold has passed, a retry runs the
	// operation (else it is still in progress).
	takenOver bool
}

var crashCases = []crashCase{
	{"reserve.done", true, 0, 0, false, true},
	{"reserve.done", false, 0, 0, false, true},
	{"dispatch.before", true, 0, 1, false, false},
	{"dispatch.before", false, 0, 1, false, false},
	{"dispatch.after", true, 1, 1, true, false},
	{"dispatch.after", false, 1, 1, true, false},
}

func TestCrashSQLite(t *testing.T) { crashScenarios(t, "sqlite", "") }

// TestCrashPostgres runs the same on PostgreSQL (DATABASE_URL, else
// dockertest; skipped with the reason when neither is there, a failure with
// MCPCONFORM_REQUIRE_POSTGRES=1).
func TestCrashPostgres(t *testing.T) { crashScenarios(t, "postgres", pgtest.FreshDSN(t)) }

func crashScenarios(t *testing.T, store, dsn string) {
	if testing.Short() {
		t.Skip("crash scenarios start gateway processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), crashDeadline)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.Reference(ctx, target.Options{
		Binary: exe, Store: store, DSN: dsn, Env: []string{beMain + "=1"},
		ProtocolVersion: wire.V20260728, // stateless: no session to lose in the crash
		ReadyTimeout:    20 * time.Second, StopTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.Close(); err != nil {
			t.Errorf("close target: %v", err)
		}
	}()
	pr, err := probe.Start(probe.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()

	cc := tg.Control(0)
	tool := "probe.write.crash-" + uuid.NewString()[:8]
	if _, err := cc.CreateTool(ctx, control.Tool{Name: tool, Price: control.Ptr[int64](crashPrice), ReadOnly: control.Ptr(false), Approval: control.Ptr(false), UpstreamURL: pr.URL(), UpstreamTool: probe.ToolWrite}); err != nil {
		t.Fatal(err)
	}
	for _, cs := range crashCases {
		name := cs.point + "/unkeyed"
		if cs.keyed {
			name = cs.point + "/keyed"
		}
		t.Run(name, func(t *testing.T) {
			if ctx.Err() != nil {
				t.Fatal("crash scenarios out of time")
			}
			crashOne(ctx, t, tg, pr, tool, cs)
			if t.Failed() {
				t.Logf("gateway output tail:\n%s", tg.LogTail(0))
			}
		})
	}
}

func crashOne(ctx context.Context, t *testing.T, tg *target.Target, pr *probe.Probe, tool string, cs crashCase) {
	cc := tg.Control(0)
	w, err := cc.CreateWallet(ctx, crashBalance)
	if err != nil {
		t.Fatal(err)
	}
	k, err := cc.CreateKey(ctx, w.WalletID)
	if err != nil {
		t.Fatal(err)
	}
	token := "crash-" + uuid.NewString()
	call := wire.Call{Tool: tool, Arguments: map[string]any{"token": token}}
	if cs.keyed {
		call.IdempotencyKey = "k-" + uuid.NewString()
	}
	fid, err := cc.ArmFault(ctx, control.Fault{Point: cs.point, Action: "pause",
		Match: control.FaultMatch{Tool: tool, WalletID: w.WalletID}})
	if err != nil {
		t.Fatal(err)
	}

	// The first attempt: held at the point, then cut off by the kill.
	first := tg.Wire(0)
	first.APIKey = k.APIKey
	done := make(chan error, 1)
	go func() {
		c := call
		c.ID = 1
		a, err := first.CallTool(ctx, c)
		if err == nil {
			err = fmt.Errorf("%w (status %d): %s", errAnswered, a.Status, a.Body)
		}
		done <- err
	}()
	if _, err := cc.AwaitFault(ctx, fid, 1, 15*time.Second); err != nil {
		t.Fatalf("await pause at %s: %v", cs.point, err)
	}
	if got := pr.Count(token); got != cs.wantDispatches {
		t.Fatalf("dispatches at the pause: %d, want %d", got, cs.wantDispatches)
	}
	before, err := cc.Ledger(ctx, w.WalletID)
	if err != nil {
		t.Fatal(err)
	}

	pid := tg.Pid(0)
	if err := tg.Kill(0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("first attempt (pid %d killed at %s): %v", pid, cs.point, err)
		if errors.Is(err, errAnswered) {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt did not end after the kill")
	}
	if err := tg.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}

	// Retries with new ids, bounded, while the gateway says in progress.
	retry := tg.Wire(0)
	retry.APIKey = k.APIKey
	var answers []*wire.Answer
	for i := range crashRetries {
		c := call
		c.ID = 100 + i
		a, err := retry.CallTool(ctx, c)
		if err != nil {
			t.Fatalf("retry %d: transport error: %v", i, err)
		}
		answers = append(answers, a)
		if a.ErrorReason() != "idempotency_in_progress" {
			break
		}
		if !a.Retryable() {
			t.Fatalf("retry %d: idempotency_in_progress not retryable: %s", i, a.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	last := answers[len(answers)-1]

	after, err := cc.Ledger(ctx, w.WalletID)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing lost: every entry before the kill is there, unchanged.
	have := map[string]judge.LedgerEntry{}
	for _, e := range after {
		have[e.ID] = e
	}
	for _, e := range before {
		g, ok := have[e.ID]
		if !ok || g.Kind != e.Kind || g.Amount != e.Amount || g.Receipt != e.Receipt {
			t.Errorf("ledger entry %+v before the kill is %+v after (present %v)", e, g, ok)
		}
	}
	var debits []judge.LedgerEntry
	var credit int64
	for _, e := range after {
		switch e.Kind {
		case "debit":
			debits = append(debits, e)
		case "credit":
			credit += e.Amount
		case "refund":
			t.Errorf("a refund after a crash at %s: %+v", cs.point, e)
		}
	}
	if len(debits) != cs.wantDebits {
		t.Errorf("debits: %d (%+v), want %d", len(debits), debits, cs.wantDebits)
	}
	if credit != crashBalance || len(after) != 1+len(debits) {
		t.Errorf("ledger after: %+v", after)
	}
	bal, err := cc.Wallet(ctx, w.WalletID)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(crashBalance - crashPrice*len(debits)); bal.Balance != want {
		t.Errorf("balance %d, want %d", bal.Balance, want)
	}
	if got := pr.Count(token); got != cs.wantDispatches {
		t.Errorf("probe dispatches after the retries: %d, want %d (a second dispatch?)", got, cs.wantDispatches)
	}
	if gd, err := cc.Dispatches(ctx, tool, w.WalletID); err != nil || len(gd) != cs.wantDispatches {
		t.Errorf("gateway dispatch log: %d entries (%v), want %d", len(gd), err, cs.wantDispatches)
	}

	if !cs.wantReplay {
		if len(answers) != crashRetries || last.ErrorReason() != "idempotency_in_progress" {
			t.Fatalf("want idempotency_in_progress on all %d retries; retry %d got %s", crashRetries, len(answers)-1, last.Body)
		}
		t.Logf("%s: %d retries, each idempotency_in_progress; %d debit, %d dispatch", cs.point, len(answers), len(debits), cs.wantDispatches)
		retryWhenStale(ctx, t, cc, retry, call, pr, token, w.WalletID, cs)
		return
	}
	if last.HasError() || last.IsError() {
		t.Fatalf("want the stored outcome replayed; got %s", last.Body)
	}
	if len(answers) != 1 {
		t.Errorf("replay came after %d in-progress answers; want at once", len(answers)-1)
	}
	if len(debits) == 1 && last.Receipt() != debits[0].Receipt {
		t.Errorf("replayed receipt %q, the debit's %q", last.Receipt(), debits[0].Receipt)
	}
	var res probe.Result
	if err := json.Unmarshal(last.StructuredContent(), &res); err != nil || res.Token != token || res.N != 1 {
		t.Errorf("replayed structuredContent %s (%v): want token %s n 1", last.StructuredContent(), err, token)
	}
	t.Logf("%s: replayed at once, receipt %s = the one debit's; 1 dispatch", cs.point, last.Receipt())
}

// retryWhenStale advances the restarted gateway's clock past the stale-lock
// threshold and retries once more: an uncharged reservation is taken over
// and run (one dispatch, one debit, the debit's receipt in the result); a
// charged one is answered outcome_unknown with the debit's receipt, with no
// dispatch.
func retryWhenStale(ctx context.Context, t *testing.T, cc *control.Client, retry *wire.Client, call wire.Call,
	pr *probe.Probe, token, walletID string, cs crashCase) {
	t.Helper()
	// A threshold well inside the effective window, so an unkeyed retry
	// still joins its slot rather than starting a new operation.
	set, err := cc.PutSettings(ctx, control.SettingsPatch{StaleLockSeconds: control.Ptr[float64](crashStaleLock)})
	if err != nil {
		t.Fatal(err)
	}
	if set.EffectiveWindowSeconds <= crashStaleLock+1 {
		t.Fatalf("effective window %vs: too short for a stale-lock threshold of %ds", set.EffectiveWindowSeconds, crashStaleLock)
	}
	if _, err := cc.AdvanceClock(ctx, (crashStaleLock+1)*time.Second); err != nil {
		t.Fatal(err)
	}
	// The next case's first attempt runs on this process: back to real
	// time and the start-up settings, or its reservation would be dated in
	// this case's future.
	defer func() {
		if err := errors.Join(cc.ResetClock(ctx), cc.ResetSettings(ctx)); err != nil {
			t.Errorf("reset clock and settings: %v", err)
		}
	}()
	call.ID = 200
	a, err := retry.CallTool(ctx, call)
	if err != nil {
		t.Fatalf("retry past the stale-lock threshold: %v", err)
	}
	ledger, err := cc.Ledger(ctx, walletID)
	if err != nil {
		t.Fatal(err)
	}
	var debits []judge.LedgerEntry
	for _, e := range ledger {
		if e.Kind == "debit" {
			debits = append(debits, e)
		}
	}
	if !cs.takenOver {
		if a.ErrorReason() != "outcome_unknown" || a.Retryable() || pr.Count(token) != 0 || len(debits) != 1 {
			t.Fatalf("past the stale-lock threshold a charged record must be answered outcome_unknown, not retryable: got %s; %d dispatches, %d debits",
				a.Body, pr.Count(token), len(debits))
		}
		if got := wire.MustParsePath("receipt").LookupString(a.Response.Error.Data); got != debits[0].Receipt {
			t.Errorf("outcome_unknown data.receipt %q, want the debit's %q", got, debits[0].Receipt)
		}
		t.Logf("%s past the stale-lock threshold: outcome_unknown, receipt %s, 0 dispatches, 1 debit", cs.point, debits[0].Receipt)
		return
	}
	if a.HasError() || a.IsError() {
		t.Fatalf("past the stale-lock threshold the abandoned reservation should be taken over and run; got %s", a.Body)
	}
	if n := pr.Count(token); n != 1 {
		t.Errorf("probe dispatches after the takeover: %d, want 1", n)
	}
	if len(debits) != 1 || debits[0].Receipt != a.Receipt() {
		t.Errorf("debits after the takeover: %+v, want one with the answer's receipt %q", debits, a.Receipt())
	}
	t.Logf("%s past the stale-lock threshold: taken over, receipt %s, 1 dispatch, 1 debit", cs.point, a.Receipt())
}
