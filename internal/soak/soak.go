// Package soak runs a seeded, bounded, randomized workload at volume
// against several reference gateway processes on one PostgreSQL store, over
// the wire only (drivers/), and afterwards hands its history to the one
// model of the retry contract (internal/judge) that judges every scenario
// and exploration: it has no checker of its own. The probe, not the
// gateway, counts dispatches; the control API gives the ledgers. Figures
// are measured, never asserted on.
package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Config is one soak.
type Config struct {
	// Binary is the mcpconform executable that serves the gateways
	// (target.Build makes one).
	Binary string
	// Store is "postgres" (the default, the soak) or "sqlite": the
	// processes then share one SQLite file, each queueing its own writes in
	// Go and all of them contending for the file's write lock.
	Store string
	// DSN is the PostgreSQL store; default $DATABASE_URL.
	DSN string
	// Seed decides every operation; 0 picks one from the clock (printed
	// and in the figures, so the run can be replayed with it).
	Seed        int64
	Calls       int           // calls to send, about (default 10,000)
	Processes   int           // gateway processes on the one store (default 4)
	Concurrency int           // operations in flight (default 16)
	Deadline    time.Duration // for the workload (default 5 min); the read-back has its own minute
	Wallets     int           // shared wallets (default 8)
	Price       int64         // of the soak's tool (default 3)
	Mix         *Mix          // nil: DefaultMix
	Bugs        []string      // bug switches the gateways run with
	// Log receives the seed and progress; nil discards. GatewayLog receives
	// the gateways' output; nil keeps only each one's tail.
	Log        io.Writer
	GatewayLog io.Writer
}

func (c *Config) defaults() {
	if c.Store == "" {
		c.Store = "postgres"
	}
	if c.DSN == "" && c.Store == "postgres" {
		c.DSN = os.Getenv("DATABASE_URL")
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Calls <= 0 {
		c.Calls = 10_000
	}
	if c.Processes <= 0 {
		c.Processes = 4
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Deadline <= 0 {
		c.Deadline = 5 * time.Minute
	}
	if c.Wallets <= 0 {
		c.Wallets = 8
	}
	if c.Price <= 0 {
		c.Price = 3
	}
	if c.Mix == nil {
		m := DefaultMix()
		c.Mix = &m
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Result is a finished soak: its figures, the broken invariants (none on a
// correct gateway) and the history they were checked on.
type Result struct {
	Figures    Figures
	Violations []Violation
	History    History
}

// Bounds of one operation's retries while the gateway answers in progress:
// an honest gateway decides long before either.
const (
	settleCalls = 300
	settleTime  = 60 * time.Second
	callTimeout = 30 * time.Second // one call that should be answered
	readBack    = time.Minute      // probe, ledgers and dispatch log after the workload
	quiet       = 500 * time.Millisecond
)

// Run starts the probe and Processes reference gateways on one store,
// drives the workload, reads back the effects and judges them. An error is
// a soak that could not be run or read back; broken invariants are in
// Result.Violations.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	if cfg.Binary == "" {
		return nil, errors.New("soak: no mcpconform binary (Config.Binary)")
	}
	fmt.Fprintf(cfg.Log, "soak: seed %d, %d calls, %d processes, concurrency %d, bugs %v\n",
		cfg.Seed, cfg.Calls, cfg.Processes, cfg.Concurrency, cfg.Bugs)

	pr, err := probe.Start(probe.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	defer pr.Close()
	tg, err := target.Reference(ctx, target.Options{
		Binary: cfg.Binary, Store: cfg.Store, DSN: cfg.DSN, Workers: cfg.Processes, Bugs: cfg.Bugs,
		Log: cfg.GatewayLog, ProtocolVersion: wire.V20260728, // stateless: any process takes any call
	})
	if err != nil {
		return nil, fmt.Errorf("soak: start gateways: %w", err)
	}
	defer tg.Close()

	r := &runner{cfg: cfg, tg: tg, pr: pr, runID: nonce()}
	if err := r.setUp(ctx); err != nil {
		return nil, fmt.Errorf("soak: set up: %w", err)
	}
	ops, wall := r.drive(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBack)
	defer cancel()
	h, err := r.readBack(rctx, ops)
	if err != nil {
		return nil, fmt.Errorf("soak: read back: %w", err)
	}
	vs := Judge(h)
	f := r.figures(h, vs, wall)
	fmt.Fprintf(cfg.Log, "soak: %s\n", f.Summary())
	return &Result{Figures: f, Violations: vs, History: h}, nil
}

// runner is one soak in progress.
type runner struct {
	cfg   Config
	tg    *target.Target
	pr    *probe.Probe
	runID string // keeps tokens and keys apart from earlier runs on the store
	tool  string
	// settings are the gateways' window and stale-lock threshold, as the
	// model needs them.
	settings control.Settings

	// faults holds the shapes whose fault the gateways offer, with what
	// their arming did; set up before the workload and only read after.
	faults  map[Shape]*faultCount
	mu      sync.Mutex
	wallets []*wallet // shared ones first, then one per operation with a fault
	calls   atomic.Int64
	load    string // load average when the workload began
}

// ownFault is the fault a shape arms for its operation's first call.
type ownFault struct{ point, action string }

var ownFaults = map[Shape]ownFault{
	ShapeGatewayDrop: {"dispatch.after", "drop_response"},
	ShapeFailBefore:  {"dispatch.before", "fail"},
}

// faultCount is what the faults of one shape did over a run.
type faultCount struct {
	hits      atomic.Int64 // as the gateways counted them
	setupErrs atomic.Int64 // operations whose fault could not be armed
}

// wallet is a wallet with one API key and a wire client per process.
type wallet struct {
	id      string
	clients []*wire.Client
}

func (r *runner) setUp(ctx context.Context) error {
	cc := r.tg.Control(0)
	caps, err := cc.Capabilities(ctx)
	if err != nil {
		return err
	}
	r.settings = caps.Settings
	r.faults = map[Shape]*faultCount{}
	for shape, f := range ownFaults {
		if caps.Has(control.CapFaults) && slices.Contains(caps.FaultPoints, f.point) && slices.Contains(caps.FaultActions, f.action) {
			r.faults[shape] = &faultCount{}
		}
	}
	r.tool = "probe.write.soak-" + r.runID
	if _, err := cc.CreateTool(ctx, control.Tool{Name: r.tool, Price: control.Ptr(r.cfg.Price), ReadOnly: control.Ptr(false), Approval: control.Ptr(false),
		UpstreamURL: r.pr.URL(), UpstreamTool: probe.ToolWrite}); err != nil {
		return fmt.Errorf("create tool: %w", err)
	}
	// Credit for every call of the run on each wallet: a refusal for funds
	// would hide what the soak looks for.
	credit := r.cfg.Price * int64(2*r.cfg.Calls+100)
	for range r.cfg.Wallets {
		if _, err := r.newWallet(ctx, credit); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) newWallet(ctx context.Context, credit int64) (*wallet, error) {
	cc := r.tg.Control(0)
	w, err := cc.CreateWallet(ctx, credit)
	if err != nil {
		return nil, fmt.Errorf("create wallet: %w", err)
	}
	k, err := cc.CreateKey(ctx, w.WalletID)
	if err != nil {
		return nil, fmt.Errorf("create key on %s: %w", w.WalletID, err)
	}
	out := &wallet{id: w.WalletID}
	for i := range r.tg.URLs {
		c := r.tg.Wire(i)
		c.APIKey = k.APIKey
		out.clients = append(out.clients, c)
	}
	r.mu.Lock()
	r.wallets = append(r.wallets, out)
	r.mu.Unlock()
	return out, nil
}

// drive runs operations on Concurrency workers until Calls calls were sent
// or the deadline nears, and returns them in index order with the wall time.
func (r *runner) drive(ctx context.Context) ([]Op, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Deadline)
	defer cancel()
	r.load = loadAverage()
	start := time.Now()
	// No new operation once the last one could not settle in time.
	stopIssuing := start.Add(max(r.cfg.Deadline-settleTime, r.cfg.Deadline/2))
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-progress.C:
				fmt.Fprintf(r.cfg.Log, "soak: %d calls after %v\n", r.calls.Load(), time.Since(start).Round(time.Second))
			}
		}
	}()

	var (
		next atomic.Int64
		mu   sync.Mutex
		ops  []Op
		wg   sync.WaitGroup
	)
	shared := r.wallets[:r.cfg.Wallets]
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil && r.calls.Load() < int64(r.cfg.Calls) && time.Now().Before(stopIssuing) {
				i := int(next.Add(1) - 1)
				p := planOp(uint64(r.cfg.Seed), i, len(r.tg.URLs), len(shared), *r.cfg.Mix)
				op := r.runOp(ctx, p, shared[p.wallet])
				mu.Lock()
				ops = append(ops, op)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Index < ops[j].Index })
	return ops, wall
}

// runOp sends operation p as planned, retries until it has a result, then
// sends the planned retries after the result.
func (r *runner) runOp(ctx context.Context, p plan, w *wallet) Op {
	op := Op{Index: p.index, Token: fmt.Sprintf("soak-%s-%d", r.runID, p.index), Wallet: w.id}
	if p.keyed {
		op.Key = fmt.Sprintf("k-%s-%d", r.runID, p.index)
	}
	call := wire.Call{Tool: r.tool, Arguments: map[string]any{"token": op.Token}, IdempotencyKey: op.Key}
	if _, faulted := ownFaults[p.shape]; faulted && r.faults[p.shape] == nil {
		p.shape = ShapePlain // the gateways offer no such fault
	}
	op.Shape = p.shape
	switch p.shape {
	case ShapePlain:
		op.Attempts = append(op.Attempts, r.send(ctx, w, p.first, call, keep))
	case ShapeTwins:
		op.Attempts = append(op.Attempts, r.sendTwins(ctx, w, p.first, p.twin, call)...)
	case ShapeClientDrop:
		how := abandonAfterSend
		if !p.dropAfterSend {
			how = abandonAfter(p.dropAfter)
		}
		op.Attempts = append(op.Attempts, r.send(ctx, w, p.first, call, how))
		sleep(ctx, p.pause)
	case ShapeGatewayDrop, ShapeFailBefore:
		count := r.faults[p.shape]
		dw, fid, err := r.armOwn(ctx, p.first, ownFaults[p.shape])
		if err != nil {
			// The operation still runs, plainly; the figures count it.
			count.setupErrs.Add(1)
			fmt.Fprintf(r.cfg.Log, "soak: op %d: no %s: %v\n", p.index, p.shape, err)
			op.Shape = ShapePlain
			op.Attempts = append(op.Attempts, r.send(ctx, w, p.first, call, keep))
			break
		}
		w, op.Wallet = dw, dw.id
		op.Attempts = append(op.Attempts, r.send(ctx, w, p.first, call, keep))
		if st, err := r.tg.Control(p.first).FaultState(ctx, fid); err == nil {
			count.hits.Add(int64(st.Hits))
		}
	}
	r.settle(ctx, &op, p, w, call, 0)
	for _, proc := range p.retries {
		if !op.Settled() {
			break
		}
		from := len(op.Attempts)
		op.Attempts = append(op.Attempts, r.send(ctx, w, proc, call, keep))
		r.settle(ctx, &op, p, w, call, from)
	}
	return op
}

// settle re-sends, with backoff, to a random process until an attempt from
// index from on is a result, within the bounds; it stops early on an answer
// that says a retry cannot help.
func (r *runner) settle(ctx context.Context, op *Op, p plan, w *wallet, call wire.Call, from int) {
	until := time.Now().Add(settleTime)
	for k := 0; ; k++ {
		last := op.Attempts[len(op.Attempts)-1]
		if slices.ContainsFunc(op.Attempts[from:], func(a Attempt) bool { return a.Kind == KindResult }) ||
			(last.Kind == KindError && !last.Retryable) {
			return
		}
		if k >= settleCalls || time.Now().After(until) || ctx.Err() != nil {
			return
		}
		sleep(ctx, backoff(k, p.rng))
		op.Attempts = append(op.Attempts, r.send(ctx, w, p.rng.IntN(len(w.clients)), call, keep))
	}
}

// armOwn makes a wallet of its own for an operation and arms f once on
// process proc for that wallet alone: the first call goes to proc, so the
// fault hits it and no other call of this or any other operation. The
// wallet being the operation's also ties every ledger entry in it, a
// refunded attempt's included, to the operation.
func (r *runner) armOwn(ctx context.Context, proc int, f ownFault) (*wallet, string, error) {
	w, err := r.newWallet(ctx, r.cfg.Price*10)
	if err != nil {
		return nil, "", err
	}
	fid, err := r.tg.Control(proc).ArmFault(ctx, control.Fault{Point: f.point, Action: f.action, Count: 1,
		Match: control.FaultMatch{Tool: r.tool, WalletID: w.id}})
	if err != nil {
		return nil, "", fmt.Errorf("arm %s at %s on process %d: %w", f.action, f.point, proc, err)
	}
	return w, fid, nil
}

// readBack waits until the gateways' detached work is over (no new
// dispatch for a moment: a call the client left still runs to its end),
// then reads the probe's counts, every wallet and the dispatch log.
func (r *runner) readBack(ctx context.Context, ops []Op) (History, error) {
	last := -1
	for n := r.pr.Count(""); n != last && ctx.Err() == nil; n = r.pr.Count("") {
		last = n
		sleep(ctx, quiet)
	}
	h := History{Tool: r.tool, Price: r.cfg.Price, WindowSeconds: control.WholeSeconds(r.settings.EffectiveWindowSeconds),
		StaleLockSeconds: control.WholeSeconds(r.settings.StaleLockSeconds), Ops: ops, Probe: map[string]int{}, GatewayDispatches: -1}
	for _, d := range r.pr.Dispatches() {
		h.Probe[d.Token]++
	}
	cc := r.tg.Control(0)
	for _, w := range r.wallets {
		s, err := cc.Snapshot(ctx, w.id)
		if err != nil {
			return h, fmt.Errorf("wallet %s: %w", w.id, err)
		}
		h.Wallets = append(h.Wallets, Wallet{ID: w.id, Balance: s.Balance, Ledger: s.Entries})
	}
	ds, err := cc.Dispatches(ctx, r.tool, "")
	if err != nil {
		return h, fmt.Errorf("dispatch log: %w", err)
	}
	h.GatewayDispatches = len(ds)
	return h, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// loadAverage is /proc/loadavg's first three fields, "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

func nonce() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
