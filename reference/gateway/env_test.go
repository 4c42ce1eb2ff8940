package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
)

// testLockTimeout is the store's lock wait in these tests: short, so the
// lock-timeout cases do not wait long, and long enough for -race runs.
const testLockTimeout = 300 * time.Millisecond

// backend opens a fresh, migrated store of one kind.
type backend struct {
	name  string
	probe func(t *testing.T) // skips (or fails) t when the store is not available
	open  func(t *testing.T) (store.Store, reopener)
}

// reopener opens another handle on the same database, as a second gateway
// process would.
type reopener func(t *testing.T) store.Store

func (b backend) check(t *testing.T) {
	if b.probe != nil {
		b.probe(t)
	}
}

func sqliteBackend() backend {
	openPath := func(t *testing.T, path string) store.Store {
		t.Helper()
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{LockTimeout: testLockTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return backend{name: "sqlite", open: func(t *testing.T) (store.Store, reopener) {
		path := filepath.Join(t.TempDir(), "gateway.db")
		s := openPath(t, path)
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s, func(t *testing.T) store.Store { return openPath(t, path) }
	}}
}

// backends lists the stores the gateway tests run on.
func backends(t *testing.T) []backend {
	return append([]backend{sqliteBackend()}, extraBackends(t)...)
}

// fakeDispatcher counts real runs. fail makes the next dispatches fail as
// unreachable (nothing ran, nothing counted); hold makes the next run of a
// tool wait on a barrier.
type fakeDispatcher struct {
	mu    sync.Mutex
	runs  map[string]int
	fails int
	// toolErrors: the next calls run and answer isError.
	toolErrors int
	// asks is how many more rounds end asking the client for input (a
	// 2026-07-28 input-required result) before a run does its work.
	asks int
	// refusal, when set, answers the next dispatch (nothing ran): an
	// upstream's refusal the caller can act on.
	refusal *gateway.Refusal
	// panics is how many more runs do their work and then panic: a tool
	// (or the dispatcher's own code) crashing after it may have had effects.
	panics int
	holds  map[string]*hold
}

// hold is a barrier in the upstream: started is closed when the held run
// has begun, and the run answers once released.
type hold struct {
	started chan struct{}
	release chan struct{}
	// abandoned is closed when the held run's context ended before its
	// release: the gateway gave up its upstream call.
	abandoned chan struct{}
	once      sync.Once
}

func (h *hold) Release() { h.once.Do(func() { close(h.release) }) }

func (d *fakeDispatcher) Dispatch(ctx context.Context, r gateway.DispatchRequest) (json.RawMessage, error) {
	d.mu.Lock()
	h := d.holds[r.Tool.Name]
	delete(d.holds, r.Tool.Name)
	d.mu.Unlock()
	if h != nil {
		close(h.started)
		select {
		case <-h.release:
		case <-ctx.Done():
			close(h.abandoned)
			// The upstream had the call and its answer is lost with the
			// call's context, which the relay reports as it does: an
			// isError result (reference/tools/relaycall.go).
			d.mu.Lock()
			d.runs[r.Tool.Name]++
			d.mu.Unlock()
			return json.RawMessage(`{"content":[{"type":"text","text":"the call was sent but its outcome is unknown"}],"isError":true}`), nil
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fails > 0 {
		d.fails--
		return nil, errors.New("upstream unreachable")
	}
	if d.toolErrors > 0 {
		// The tool runs and reports a failure: a result like any other.
		d.toolErrors--
		d.runs[r.Tool.Name]++
		return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"run %d of %s failed"}],"isError":true}`, d.runs[r.Tool.Name], r.Tool.Name)), nil
	}
	if ref := d.refusal; ref != nil {
		d.refusal = nil
		return nil, fmt.Errorf("upstream refused: %w", ref)
	}
	if d.asks > 0 {
		d.asks--
		return nil, &gateway.InputRequired{Result: json.RawMessage(`{"content":[],"resultType":"input_required","requestState":"s",` +
			`"inputRequests":{"q":{"method":"elicitation/create","params":{"message":"sure?","requestedSchema":{"type":"object"}}}}}`)}
	}
	d.runs[r.Tool.Name]++
	n := d.runs[r.Tool.Name]
	if d.panics > 0 {
		d.panics--
		panic(fmt.Sprintf("run %d of %s crashed", n, r.Tool.Name))
	}
	return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"run %d of %s <ok>"}],"structuredContent":{"run":%d,"args":%s},"isError":false,"_meta":{"tool/x":1}}`,
		n, r.Tool.Name, n, r.Arguments)), nil
}

func (d *fakeDispatcher) count(tool string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[tool]
}

// hold makes the next run of tool wait until the hold is released; the
// test's end releases it too, so no run is left waiting.
func (e *env) hold(tool string) *hold {
	h := &hold{started: make(chan struct{}), release: make(chan struct{}), abandoned: make(chan struct{})}
	e.t.Cleanup(h.Release)
	e.disp.mu.Lock()
	defer e.disp.mu.Unlock()
	if e.disp.holds == nil {
		e.disp.holds = map[string]*hold{}
	}
	e.disp.holds[tool] = h
	return h
}

// cancelledWhileRunning calls the write tool with key, the client giving up
// (its request done) while the upstream holds the call, and returns that
// call's outcome once the hold is released: after the gateway abandoned its
// upstream call, or after a bounded wait when it keeps it (a correct
// gateway has nothing to signal; the verdict does not hang on the wait).
func (e *env) cancelledWhileRunning(key string) outcome {
	h := e.hold(e.write)
	client, cancel := context.WithCancel(e.ctx)
	defer cancel()
	ch := e.async(req{key: key, clientDone: client.Done()})
	e.started(h, ch)
	cancel()
	select {
	case <-h.abandoned:
	case <-time.After(2 * time.Second):
	}
	h.Release()
	return e.wait(ch)
}

// started waits until the held run has begun; ch is the call expected to
// reach it: if it ends first (a bug switch can refuse it before dispatch),
// the wait ends at once with an error.
func (e *env) started(h *hold, ch <-chan outcome) {
	select {
	case <-h.started:
	case o := <-ch:
		e.fatalf("the call ended (%v) without reaching the upstream", o.err)
	case <-time.After(30 * time.Second):
		e.fatalf("the call never reached the upstream")
	}
}

func (d *fakeDispatcher) failNext(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fails = n
}

// env is one gateway on a fresh store with one wallet, one API key and three
// tools: a mutating one, a read-only one and an approval-gated one.
type env struct {
	t      *testing.T
	ctx    context.Context
	st     store.Store
	clk    *clock.Clock
	faults *faults.Registry
	disp   *fakeDispatcher
	g      *gateway.Gateway
	reopen reopener
	// storeKind names the backend, as the gateway's options do.
	storeKind string

	bugs    bugs.Set // the switches every gateway of the env runs with
	wallet  string
	caller  gateway.Caller
	write   string // tool names, unique per env
	read    string
	approve string
}

const (
	price      = 3
	readPrice  = 1
	startFunds = 100
)

func newEnv(t *testing.T, b backend, on ...string) *env {
	t.Helper()
	set, err := bugs.Parse(on)
	if err != nil {
		panic(abort{err})
	}
	e := &env{t: t, ctx: t.Context(), clk: clock.New(), faults: faults.New(), disp: &fakeDispatcher{runs: map[string]int{}}}
	e.st, e.reopen = b.open(t)
	t.Cleanup(e.faults.Reset) // never leave a paused goroutine behind
	// A frozen clock, 10 s into a window bucket of today's real time: tests
	// move it explicitly.
	w := gateway.DefaultSettings().EffectiveWindow()
	e.clk.Freeze(bucketStart(time.Now(), w).Add(10 * time.Second))
	e.bugs, e.storeKind = set, b.name
	e.g = e.process()
	suffix := uuid.NewString()[:8]
	e.write, e.read, e.approve = "probe.write."+suffix, "probe.read."+suffix, "probe.approve."+suffix
	e.must(e.st.PutTool(e.ctx, store.Tool{Name: e.write, Price: price}))
	e.must(e.st.PutTool(e.ctx, store.Tool{Name: e.read, Price: readPrice, ReadOnly: true}))
	e.must(e.st.PutTool(e.ctx, store.Tool{Name: e.approve, Price: price, Approval: true}))
	e.wallet = e.newWallet(startFunds)
	e.caller = e.newCaller(e.wallet)
	return e
}

// abort carries a setup or helper failure out of a scenario: helpers panic
// with it and runScenario turns it into the scenario's error, so a bug switch
// that makes a helper fail counts as caught instead of killing the test.
type abort struct{ err error }

func (e *env) must(err error) {
	if err != nil {
		panic(abort{err})
	}
}

func (e *env) fatalf(format string, args ...any) { panic(abort{fmt.Errorf(format, args...)}) }

// runScenario runs fn on a fresh env and returns its verdict.
func runScenario(t *testing.T, b backend, fn func(e *env) error, on ...string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, isAbort := r.(abort)
			if !isAbort {
				panic(r)
			}
			err = a.err
		}
	}()
	return fn(newEnv(t, b, on...))
}

// process is another gateway on the env's store, clock, faults and
// upstream, as a second process of one deployment is.
func (e *env) process() *gateway.Gateway {
	g, err := gateway.New(gateway.Options{Store: e.st, Clock: e.clk, Faults: e.faults, Dispatcher: e.disp,
		Settings: gateway.DefaultSettings(), Bugs: e.bugs, StoreKind: e.storeKind})
	e.must(err)
	return g
}

func (e *env) newWallet(balance int64) string {
	id := "w-" + uuid.NewString()
	e.must(e.st.CreateWallet(e.ctx, store.Wallet{ID: id, Balance: balance, CreatedAt: e.clk.Now()}))
	return id
}

func (e *env) newCaller(wallet string) gateway.Caller {
	_, apiKey, err := e.g.IssueAPIKey(e.ctx, wallet)
	e.must(err)
	c, err := e.g.Authenticate(e.ctx, apiKey)
	e.must(err)
	return c
}

// principal registers a principal and returns a caller on the env's key
// acting for it.
func (e *env) principal(subject string, tools ...string) (gateway.Caller, string) {
	id := "p-" + uuid.NewString()
	ref := &gateway.PrincipalRef{Provider: "harness", Issuer: "https://idp.test/" + e.wallet, Subject: subject + "-" + uuid.NewString()[:8]}
	e.must(e.st.PutPrincipal(e.ctx, store.Principal{ID: id, Provider: ref.Provider, Issuer: ref.Issuer, Subject: ref.Subject, Tools: tools}))
	c := e.caller
	c.Principal = ref
	return c, id
}

type req struct {
	caller *gateway.Caller
	tool   string
	args   string
	key    string
	permit string
	// clientDone stands for the client's request: closing it is the client
	// giving up on the call.
	clientDone <-chan struct{}
	// round marks a multi-round call's later round: it carries the
	// client's answers, as the wire layer puts them in the context.
	round bool
	// stateless: the call came on the stateless 2026-07-28 wire.
	stateless bool
	// gw is the gateway process the call reaches; nil for the env's own.
	gw *gateway.Gateway
}

func (e *env) call(r req) (gateway.CallResponse, error) {
	cr := gateway.CallRequest{Caller: e.caller, Tool: r.tool, Arguments: json.RawMessage(r.args), ClientKey: r.key, PermitID: r.permit,
		ClientDone: r.clientDone, Stateless: r.stateless}
	if r.caller != nil {
		cr.Caller = *r.caller
	}
	if cr.Tool == "" {
		cr.Tool = e.write
	}
	// Each call is a request of its own, authenticated afresh: the tool
	// registry's version is the one its key reads now, as the wire's
	// Authenticate would read it (a caller made once holds an old one).
	if k, err := e.st.APIKey(e.ctx, cr.Caller.APIKeyID); err == nil {
		cr.Caller.ToolsVersion = k.ToolsVersion
	}
	if r.args == "" {
		cr.Arguments = json.RawMessage(`{"text":"hello"}`)
	}
	ctx := e.ctx
	if r.round {
		ctx = relay.WithRound(ctx, &relay.Round{RequestState: "state"})
	}
	g := e.g
	if r.gw != nil {
		g = r.gw
	}
	return g.Call(ctx, cr)
}

// async runs a call in a goroutine; wait for its outcome on the channel.
func (e *env) async(r req) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		resp, err := e.call(r)
		ch <- outcome{resp, err}
	}()
	return ch
}

type outcome struct {
	resp gateway.CallResponse
	err  error
}

func (e *env) wait(ch <-chan outcome) outcome {
	select {
	case o := <-ch:
		return o
	case <-time.After(30 * time.Second):
		e.fatalf("call did not return")
		return outcome{}
	}
}

// arm arms a fault for the env's wallet.
func (e *env) arm(point, action string, tool string) string {
	st, err := e.faults.Arm(faults.Spec{Point: point, Action: action, Match: faults.Match{Tool: tool, WalletID: e.wallet}})
	e.must(err)
	return st.ID
}

// await waits until a call waits at fault id. ch is that call: if it ends
// without reaching the point (a bug switch can route around it), the wait
// ends at once with an error instead of running into the timeout.
func (e *env) await(id string, ch <-chan outcome) {
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.faults.Await(ctx, id, 1)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			e.fatalf("%v", err)
		}
	case o := <-ch:
		e.fatalf("the call ended (%v) without reaching the fault point", o.err)
	}
}

func (e *env) release(id string) {
	_, err := e.faults.Release(id)
	e.must(err)
}

// dispatches counts the runs of tool, checking the gateway's dispatch log
// agrees with the fake dispatcher.
func (e *env) dispatches(tool string) (int, error) {
	ds, err := e.st.Dispatches(e.ctx, store.DispatchFilter{Tool: tool, WalletID: e.wallet})
	if err != nil {
		return 0, err
	}
	if n := e.disp.count(tool); n != len(ds) {
		return n, fmt.Errorf("dispatcher ran %s %d times, dispatch log has %d", tool, n, len(ds))
	}
	return len(ds), nil
}

// ledger sums the wallet's entries.
type totals struct {
	debits, refunds   int
	debited, refunded int64
	balance           int64
}

func (t totals) net() int64 { return t.refunded - t.debited }

func (e *env) ledger() totals {
	entries, err := e.st.Ledger(e.ctx, e.wallet)
	e.must(err)
	var t totals
	for _, en := range entries {
		switch en.Kind {
		case store.EntryDebit:
			t.debits++
			t.debited += en.Amount
		case store.EntryRefund:
			t.refunds++
			t.refunded += en.Amount
		}
	}
	w, err := e.st.Wallet(e.ctx, e.wallet)
	e.must(err)
	t.balance = w.Balance
	if t.balance != startFunds+t.net() {
		e.fatalf("balance %d does not match the ledger (start %d, net %d)", t.balance, startFunds, t.net())
	}
	return t
}

// reason is a refusal's reason, "" for success, "internal" for an internal error.
func reason(err error) string {
	if err == nil {
		return ""
	}
	var ref *gateway.Refusal
	if errors.As(err, &ref) {
		return ref.Reason
	}
	return "internal"
}

type result struct {
	Content           json.RawMessage            `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

func receiptOf(resp gateway.CallResponse) (gateway.Receipt, result, error) {
	var res result
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return gateway.Receipt{}, res, fmt.Errorf("result %s: %w", resp.Result, err)
	}
	var rc gateway.Receipt
	if err := json.Unmarshal(res.Meta[gateway.ReceiptMetaKey], &rc); err != nil {
		return rc, res, fmt.Errorf("receipt in %s: %w", resp.Result, err)
	}
	if rc.ID == "" {
		return rc, res, fmt.Errorf("no receipt in %s", resp.Result)
	}
	return rc, res, nil
}

// ok checks a call succeeded and returns its receipt.
func ok(o outcome) (gateway.Receipt, error) {
	if o.err != nil {
		return gateway.Receipt{}, fmt.Errorf("call failed: %w", o.err)
	}
	rc, _, err := receiptOf(o.resp)
	return rc, err
}

func run(r gateway.CallResponse, err error) outcome { return outcome{r, err} }

// boundary is the next window boundary after the clock, for the settings in force.
func (e *env) boundary() time.Time {
	w := e.g.Settings().EffectiveWindow()
	return bucketStart(e.clk.Now(), w).Add(w)
}

// bucketStart is the start of t's bucket: floor(unix nanos / w) * w.
func bucketStart(t time.Time, w time.Duration) time.Time {
	n := t.UnixNano()
	return time.Unix(0, n-n%int64(w)).UTC()
}
