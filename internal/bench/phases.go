package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Phase names, in the order they run against a gateway.
const (
	PhaseBaseline    = "bare go-sdk server, partner.echo"
	PhaseKeyedFirst  = "keyed first calls"
	PhaseKeyedReplay = "keyed replays"
	PhaseUnkeyed     = "unkeyed calls"
	PhaseReadOnly    = "read-only keyed calls (partner.notes.count)"
	// PhaseSpread is keyed first calls with one wallet per client: set
	// against PhaseKeyedFirst (all clients on one wallet) it shows what a
	// hot wallet costs.
	PhaseSpread = "keyed first calls, one wallet per client"
)

func objArg(name string, i int) []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, '}')
}

// MeasureBaseline loads the bare server with echo calls of distinct
// arguments.
func MeasureBaseline(ctx context.Context, url string, hc *http.Client, l Load) Stats {
	c := &Client{URL: url, HTTP: hc}
	st := Run(ctx, l, func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, EchoTool, objArg("n", i), "")
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK || r.Code != 0 || r.IsError {
			return fmt.Errorf("baseline: %v", r)
		}
		return nil
	})
	st.Name = PhaseBaseline
	return st
}

// Phases drives the gateway's load phases on one endpoint: a hot wallet
// shared by every client, and on demand one wallet per client.
type Phases struct {
	e      Endpoint
	hc     *http.Client
	l      Load
	run    string    // keeps this run's keys apart from earlier runs on the store
	hot    []*Client // one per gateway process, all on one wallet
	spread []*Client // one per worker, each its own wallet; made by Spread
	done   []keyedOp // the last first-call phase's operations, for Replays
	seq    int
	meter  *CPUMeter // the cores the last round's phases use; nil: not metered
}

// MeterCPU has MeasureRounds say how many cores each phase of its last
// round used, by m's reckoning.
func (p *Phases) MeterCPU(m CPUMeter) { p.meter = &m }

// NewPhases makes the hot wallet and its API key.
func NewPhases(ctx context.Context, e Endpoint, hc *http.Client, l Load) (*Phases, error) {
	_, apiKey, err := e.Fixture(ctx, 1_000_000_000)
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	p := &Phases{e: e, hc: hc, l: l, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	for _, u := range e.URLs {
		p.hot = append(p.hot, &Client{URL: u, APIKey: apiKey, HTTP: hc})
	}
	return p, nil
}

// prefix is a key prefix no earlier phase of this run used.
func (p *Phases) prefix(tag string) string {
	p.seq++
	return tag + "-" + p.run + "-" + strconv.Itoa(p.seq)
}

// client is worker w's client on the hot wallet: workers spread over the
// gateway processes.
func (p *Phases) client(w int) *Client { return p.hot[w%len(p.hot)] }

// KeyedFirst is the keyed first-call phase on the hot wallet: a new key and
// new arguments each. Its operations are kept for Replays.
func (p *Phases) KeyedFirst(ctx context.Context) Stats {
	st, done := keyedFirst(ctx, p.client, p.l, p.prefix("kf"))
	p.done = done
	st.Name = PhaseKeyedFirst
	return st
}

// Spread is KeyedFirst with one wallet (and API key) per client: set
// against KeyedFirst it shows what sharing one wallet costs.
func (p *Phases) Spread(ctx context.Context) (Stats, error) {
	for len(p.spread) < max(1, p.l.Concurrency) {
		_, apiKey, err := p.e.Fixture(ctx, 1_000_000_000)
		if err != nil {
			return Stats{Name: PhaseSpread}, fmt.Errorf("fixture: %w", err)
		}
		p.spread = append(p.spread, &Client{URL: p.e.URLs[len(p.spread)%len(p.e.URLs)], APIKey: apiKey, HTTP: p.hc})
	}
	st, _ := keyedFirst(ctx, func(w int) *Client { return p.spread[w] }, p.l, p.prefix("ks"))
	st.Name = PhaseSpread
	return st, nil
}

// Replays runs the operations of the last KeyedFirst again, same key and
// arguments, round robin; none yet is an error in the figures.
func (p *Phases) Replays(ctx context.Context) Stats {
	if len(p.done) == 0 {
		return Stats{Name: PhaseKeyedReplay, FirstError: "no keyed first call to replay"}
	}
	done := p.done
	st := RunWorkers(ctx, p.l, func(ctx context.Context, w, i int) error {
		o := done[i%len(done)]
		r, err := p.client(w).Call(ctx, EchoTool, o.args, o.key)
		if err != nil {
			return err
		}
		if !r.Result() || !r.Replayed {
			return fmt.Errorf("keyed replay: %v", r)
		}
		return nil
	})
	st.Name = PhaseKeyedReplay
	return st
}

// Unkeyed sends unkeyed calls with new arguments each, so each is a new
// derived operation.
func (p *Phases) Unkeyed(ctx context.Context) Stats {
	tag := p.prefix("u")
	st := RunWorkers(ctx, p.l, func(ctx context.Context, w, i int) error {
		r, err := p.client(w).Call(ctx, EchoTool, objArg(tag, i), "")
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("unkeyed call: %v", r)
		}
		return nil
	})
	st.Name = PhaseUnkeyed
	return st
}

// ReadOnly sends keyed calls of the read-only local tool.
func (p *Phases) ReadOnly(ctx context.Context) Stats {
	prefix := p.prefix("kr")
	st := RunWorkers(ctx, p.l, func(ctx context.Context, w, i int) error {
		r, err := p.client(w).Call(ctx, NotesCountTool, objArg("r", i), prefix+"-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("read-only keyed call: %v", r)
		}
		return nil
	})
	st.Name = PhaseReadOnly
	return st
}

// Phase runs the named phase once more (to profile it).
func (p *Phases) Phase(ctx context.Context, name string) (Stats, error) {
	switch name {
	case PhaseKeyedFirst:
		return p.KeyedFirst(ctx), nil
	case PhaseKeyedReplay:
		if len(p.done) == 0 {
			p.KeyedFirst(ctx)
		}
		return p.Replays(ctx), nil
	case PhaseUnkeyed:
		return p.Unkeyed(ctx), nil
	case PhaseSpread:
		return p.Spread(ctx)
	case PhaseReadOnly:
		return p.ReadOnly(ctx), nil
	}
	return Stats{}, fmt.Errorf("no phase %q", name)
}

// keyedOp is one keyed call: its key and arguments.
type keyedOp struct {
	key  string
	args []byte
}

// keyedFirst sends keyed first calls, worker w through client(w): a new key
// (prefix-i) and new arguments each. It returns the operations that got a
// fresh receipt.
func keyedFirst(ctx context.Context, client func(w int) *Client, l Load, prefix string) (Stats, []keyedOp) {
	var mu sync.Mutex
	var done []keyedOp
	st := RunWorkers(ctx, l, func(ctx context.Context, w, i int) error {
		o := keyedOp{key: prefix + "-" + strconv.Itoa(i), args: objArg("n", i)}
		r, err := client(w).Call(ctx, EchoTool, o.args, o.key)
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("keyed first call: %v", r)
		}
		mu.Lock()
		done = append(done, o)
		mu.Unlock()
		return nil
	})
	return st, done
}

// RoundEnv is what one interleaved round runs on: the gateway's phases,
// and the store-alone workload (nil: no same-run limits), with what to
// close once the round is over (nil: nothing).
type RoundEnv struct {
	Phases *Phases
	Store  *StoreAlone
	Close  func() error
}

// MeasureRounds measures the rate targets in n interleaved rounds, each the
// bare server, then the store alone (when env gives one), then the
// gateway's keyed first calls, their replays, unkeyed calls and keyed first
// calls on one wallet per client, back to back. On a shared 2-core machine
// the bare server's rate moves by a third between one minute and the next;
// a ratio taken within a round sets each gateway figure against the machine
// as it was a few seconds before. env(i) is round i's (from 0): a caller
// may hand each round a fresh database, or the same one every time.
func MeasureRounds(ctx context.Context, baselineURL string, env func(ctx context.Context, i int) (RoundEnv, error), n int) ([]Round, error) {
	var rounds []Round
	for i := range n {
		if ctx.Err() != nil {
			return rounds, ctx.Err()
		}
		e, err := env(ctx, i)
		if err != nil {
			return rounds, fmt.Errorf("round %d: %w", i+1, err)
		}
		r, err := measureRound(ctx, baselineURL, e, i == n-1)
		if e.Close != nil {
			err = errors.Join(err, e.Close())
		}
		if err != nil {
			return rounds, fmt.Errorf("round %d: %w", i+1, err)
		}
		rounds = append(rounds, r)
	}
	return rounds, nil
}

// measureRound is one round on e; last says it is the last, the one
// metered.
func measureRound(ctx context.Context, baselineURL string, e RoundEnv, last bool) (Round, error) {
	p := e.Phases
	var r Round
	// Only the last round is metered: the rounds are alike, and a
	// reader wants one figure a phase.
	metered := func(f func() Stats) Stats {
		if p.meter == nil || !last {
			return f()
		}
		began := p.meter.Read()
		st := f()
		if r.Cores == nil {
			r.Cores = map[string]CPUUse{}
		}
		r.Cores[st.Name] = p.meter.Since(began)
		return st
	}
	r.Baseline = metered(func() Stats { return MeasureBaseline(ctx, baselineURL, p.hc, p.l) })
	p.hc.CloseIdleConnections()
	if s := e.Store; s != nil {
		// Right after the bare server, so the two figures the ideal is made
		// of are as close in time as the gateway's are to either.
		r.Store = &StoreRound{First: metered(func() Stats { return s.First(ctx) })}
		r.Store.Replay = metered(func() Stats { return s.Replay(ctx) })
		r.Store.Unkeyed = metered(func() Stats { return s.Unkeyed(ctx) })
	}
	r.First = metered(func() Stats { return p.KeyedFirst(ctx) })
	if len(p.done) == 0 {
		return r, fmt.Errorf("no keyed first call succeeded: %s", r.First.FirstError)
	}
	r.Replay = metered(func() Stats { return p.Replays(ctx) })
	r.Unkeyed = metered(func() Stats { return p.Unkeyed(ctx) })
	var err error
	r.Spread = metered(func() Stats {
		var st Stats
		st, err = p.Spread(ctx)
		return st
	})
	p.hc.CloseIdleConnections()
	return r, err
}

// ScalePoint is the keyed first-call rate on one wallet with Clients
// clients spread over Processes gateway processes.
type ScalePoint struct {
	Store     string `json:"store"`
	Processes int    `json:"processes"`
	Clients   int    `json:"clients"`
	Stats     Stats  `json:"stats"`
}

// MeasureScale runs keyed first calls on one wallet at each client count.
func MeasureScale(ctx context.Context, store string, e Endpoint, hc *http.Client, l Load, clients []int) ([]ScalePoint, error) {
	var out []ScalePoint
	for _, c := range clients {
		lc := l
		lc.Concurrency = c
		p, err := NewPhases(ctx, e, hc, lc)
		if err != nil {
			return out, err
		}
		st := p.KeyedFirst(ctx)
		hc.CloseIdleConnections()
		out = append(out, ScalePoint{Store: store, Processes: len(e.URLs), Clients: c, Stats: st})
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// Storm is one twin storm's figures.
type Storm struct {
	Keyed bool `json:"keyed"`
	N     int  `json:"n"`
	// Answered is the time from the release until every twin had its first
	// answer: a result, or the retryable idempotency_in_progress refusal.
	Answered time.Duration `json:"answered"`
	// Settled is the time until every twin held a result, retrying each
	// in-progress answer after SettleBackoff.
	Settled time.Duration `json:"settled"`
	// First answers by kind.
	Fresh, Replayed, InProgress, Other int
	FirstOther                         string `json:"first_other,omitempty"`
	Receipts                           int    // distinct receipts once settled
	Unsettled                          int    // twins still without a result at the deadline
	Dispatches                         int    // read back: GET /control/dispatches
	Debits                             int    // read back: debit entries of the wallet's ledger
}

// A twin retries an in-progress answer after a jittered exponential
// backoff: SettleBackoff, doubling up to SettleBackoffMax, each pause drawn
// from [d/2, d).
const (
	SettleBackoff    = 10 * time.Millisecond
	SettleBackoffMax = 320 * time.Millisecond
)

// SettleTwin retries a twin whose answer a is the in-progress refusal
// (busy), after Backoff each time, until it is something else or deadline
// passes; an error ends it. make bench's storms and mcpconform bench's
// settle their twins alike through it.
func SettleTwin[A any](a A, err error, busy func(A) bool, deadline time.Time, again func() (A, error)) (A, error) {
	for attempt := 0; err == nil && busy(a) && time.Now().Before(deadline); attempt++ {
		time.Sleep(Backoff(attempt, rand.Float64()))
		a, err = again()
	}
	return a, err
}

// SettleTimeout bounds how long twins retry before a storm is given up.
const SettleTimeout = 10 * time.Second

// Backoff is the pause before retry number attempt (from 0), given a draw
// u in [0, 1).
func Backoff(attempt int, u float64) time.Duration {
	d := SettleBackoff
	for range attempt {
		if d >= SettleBackoffMax {
			break
		}
		d *= 2
	}
	d = min(d, SettleBackoffMax)
	return d/2 + time.Duration(u*float64(d/2))
}

// RunStorm releases n identical partner.echo calls from n goroutines on a
// fresh wallet together, keyed (one Idempotency-Key) or unkeyed, then reads
// the dispatch and debit counts back through the control API. hc should hold
// n warm connections (WarmConnections) so the storm measures the gateway
// rather than n TCP handshakes.
func RunStorm(ctx context.Context, g *Gateway, hc *http.Client, n int, keyed bool) (Storm, error) {
	wallet, apiKey, err := g.Endpoint().Fixture(ctx, 1000)
	if err != nil {
		return Storm{}, fmt.Errorf("fixture: %w", err)
	}
	c := &Client{URL: g.URL, APIKey: apiKey, HTTP: hc}
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []byte(`{"storm":"` + tag + `"}`)
	key := ""
	if keyed {
		key = "storm-" + tag
	}
	firsts := make([]Reply, n)
	firstAt := make([]time.Duration, n)
	receipts := make([]string, n)
	firstErr := make([]error, n)
	var released time.Time
	var once sync.Once
	deadline := time.Now().Add(SettleTimeout) // reset at the release below
	settled, _, _ := Release(ctx, n, func(i int) func(context.Context) error {
		req := c.Prepare(EchoTool, args, key)
		return func(ctx context.Context) error {
			once.Do(func() { released = time.Now(); deadline = released.Add(SettleTimeout) })
			r, err := req.Send(ctx)
			firstAt[i], firsts[i], firstErr[i] = time.Since(released), r, err
			r, err = SettleTwin(r, err, Reply.InProgress, deadline, func() (Reply, error) { return c.Call(ctx, EchoTool, args, key) })
			if err == nil && r.Result() {
				receipts[i] = r.Receipt
			}
			return err
		}
	})
	s := Storm{Keyed: keyed, N: n, Settled: settled}
	distinct := map[string]bool{}
	for i := range n {
		s.Answered = max(s.Answered, firstAt[i])
		r := firsts[i]
		switch {
		case firstErr[i] != nil:
			s.Other++
			if s.FirstOther == "" {
				s.FirstOther = firstErr[i].Error()
			}
		case r.Result() && r.Replayed:
			s.Replayed++
		case r.Result():
			s.Fresh++
		case r.InProgress():
			s.InProgress++
		default:
			s.Other++
			if s.FirstOther == "" {
				s.FirstOther = r.String()
			}
		}
		if receipts[i] == "" {
			s.Unsettled++
		} else {
			distinct[receipts[i]] = true
		}
	}
	s.Receipts = len(distinct)
	ds, err := g.Control.Dispatches(ctx, EchoTool, wallet)
	if err != nil {
		return s, fmt.Errorf("read dispatches: %w", err)
	}
	s.Dispatches = len(ds)
	ledger, err := g.Control.Ledger(ctx, wallet)
	if err != nil {
		return s, fmt.Errorf("read ledger: %w", err)
	}
	for _, e := range ledger {
		if e.Kind == "debit" {
			s.Debits++
		}
	}
	return s, nil
}

// WarmConnections opens n keep-alive connections to base by sending n
// concurrent GET / requests released together, leaving them idle in hc.
func WarmConnections(ctx context.Context, hc *http.Client, base string, n int) error {
	_, _, errs := Release(ctx, n, func(int) func(context.Context) error {
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
	})
	return errors.Join(errs...)
}
