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
	// PhaseKeyedSerial is keyed first calls from one client: set against
	// PhaseKeyedFirst it shows whether the store's writes scale with clients.
	PhaseKeyedSerial = "keyed first calls, 1 client (diagnostic)"
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

// MeasureGateway runs the four gateway phases on one wallet: keyed first
// calls (a new key and new arguments each), keyed replays (the keys of the
// first phase again, same arguments), unkeyed calls (new arguments each, so
// each is a new derived operation) and read-only keyed calls.
func MeasureGateway(ctx context.Context, g *Gateway, hc *http.Client, l Load) ([]Stats, error) {
	_, apiKey, err := g.Fixture(ctx, 1_000_000_000)
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	c := &Client{URL: g.URL, APIKey: apiKey, HTTP: hc}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	first, done := keyedFirst(ctx, c, l, "kf-"+run)
	if len(done) == 0 {
		return []Stats{first}, fmt.Errorf("no keyed first call succeeded: %s", first.FirstError)
	}
	replay := keyedReplays(ctx, c, l, done)

	unkeyed := Run(ctx, l, func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, EchoTool, objArg("u-"+run, i), "")
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("unkeyed call: %v", r)
		}
		return nil
	})
	unkeyed.Name = PhaseUnkeyed

	ro := Run(ctx, l, func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, NotesCountTool, objArg("r", i), "kr-"+run+"-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("read-only keyed call: %v", r)
		}
		return nil
	})
	ro.Name = PhaseReadOnly

	one := l
	one.Concurrency = 1
	serial := Run(ctx, one, func(ctx context.Context, i int) error {
		r, err := c.Call(ctx, EchoTool, objArg("s", i), "ks-"+run+"-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if !r.Result() || r.Receipt == "" || r.Replayed {
			return fmt.Errorf("keyed first call: %v", r)
		}
		return nil
	})
	serial.Name = PhaseKeyedSerial
	return []Stats{first, replay, unkeyed, ro, serial}, nil
}

// keyedOp is one keyed call: its key and arguments.
type keyedOp struct {
	key  string
	args []byte
}

// keyedFirst is the keyed first-call phase: a new key (prefix-i) and new
// arguments each. It returns the operations that got a fresh receipt, for
// keyedReplays.
func keyedFirst(ctx context.Context, c *Client, l Load, prefix string) (Stats, []keyedOp) {
	var mu sync.Mutex
	var done []keyedOp
	st := Run(ctx, l, func(ctx context.Context, i int) error {
		o := keyedOp{key: prefix + "-" + strconv.Itoa(i), args: objArg("n", i)}
		r, err := c.Call(ctx, EchoTool, o.args, o.key)
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
	st.Name = PhaseKeyedFirst
	return st, done
}

// keyedReplays is the replay phase: the operations of a first-call phase
// again, same key and arguments, round robin.
func keyedReplays(ctx context.Context, c *Client, l Load, done []keyedOp) Stats {
	st := Run(ctx, l, func(ctx context.Context, i int) error {
		o := done[i%len(done)]
		r, err := c.Call(ctx, EchoTool, o.args, o.key)
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

// MeasureRounds measures the rate targets in n interleaved rounds, each the
// bare server, then the gateway's keyed first calls and their replays, back
// to back. On a shared 2-core machine the bare server's rate moves by a
// third between one minute and the next; a ratio taken within a round sets
// each gateway figure against the machine as it was a few seconds before.
func MeasureRounds(ctx context.Context, baselineURL string, g *Gateway, hc *http.Client, l Load, n int) ([]Round, error) {
	_, apiKey, err := g.Fixture(ctx, 1_000_000_000)
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	c := &Client{URL: g.URL, APIKey: apiKey, HTTP: hc}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var rounds []Round
	for i := range n {
		if ctx.Err() != nil {
			return rounds, ctx.Err()
		}
		var r Round
		r.Baseline = MeasureBaseline(ctx, baselineURL, hc, l)
		hc.CloseIdleConnections()
		var done []keyedOp
		r.First, done = keyedFirst(ctx, c, l, "kr-"+run+"-"+strconv.Itoa(i))
		if len(done) == 0 {
			return rounds, fmt.Errorf("round %d: no keyed first call succeeded: %s", i+1, r.First.FirstError)
		}
		r.Replay = keyedReplays(ctx, c, l, done)
		hc.CloseIdleConnections()
		rounds = append(rounds, r)
	}
	return rounds, nil
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
	wallet, apiKey, err := g.Fixture(ctx, 1000)
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
			for attempt := 0; err == nil && r.InProgress() && time.Now().Before(deadline); attempt++ {
				time.Sleep(Backoff(attempt, rand.Float64()))
				r, err = c.Call(ctx, EchoTool, args, key)
			}
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
