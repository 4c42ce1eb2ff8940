// Package bench is mcpconform's load driver: it measures the reference
// gateway against a bare go-sdk MCP server with the same client, storms it
// with identical calls released together, times the harness itself, and
// renders the figures as bench/results.md. `make bench` runs it through
// cmd/mcpbench; nothing here asserts on time.
package bench

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Load is a closed-loop load: Concurrency workers each send one call after
// another. Calls that finish during Warmup are not counted; the phase then
// runs for Duration, or until MaxCalls calls were counted if that is sooner.
type Load struct {
	Concurrency int
	Warmup      time.Duration
	Duration    time.Duration
	MaxCalls    int // 0: bounded by Duration only
}

// Op sends call number i of a phase (unique across its workers, from 0) and
// says whether it was answered as expected: an error is counted as a failed
// call, not as a throughput figure.
type Op func(ctx context.Context, i int) error

// Stats are one phase's figures.
type Stats struct {
	Name       string        `json:"name"`
	Calls      int           `json:"calls"`  // answered as expected within the window
	Errors     int           `json:"errors"` // answered otherwise within the window
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed"`
	Rate       float64       `json:"rate"` // Calls per second of Elapsed
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
}

// Run drives op under l and returns the phase's figures. Latencies are
// those of the counted calls only.
func Run(ctx context.Context, l Load, op Op) Stats {
	return RunWorkers(ctx, l, func(ctx context.Context, _, i int) error { return op(ctx, i) })
}

// RunWorkers is Run with the worker's number (from 0) handed to op too, for
// phases that give each client its own wallet or gateway process.
func RunWorkers(ctx context.Context, l Load, op func(ctx context.Context, worker, i int) error) Stats {
	conc := max(1, l.Concurrency)
	var (
		next    atomic.Int64
		counted atomic.Int64
		mu      sync.Mutex
		lats    []time.Duration
		errs    int
		first   string
		wg      sync.WaitGroup
	)
	start := time.Now()
	measureFrom := start.Add(l.Warmup)
	measureTo := measureFrom.Add(l.Duration)
	var stopAt atomic.Int64 // unix nanos when MaxCalls was reached; 0 while running
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			var localErrs int
			var localFirst string
			defer func() {
				mu.Lock()
				lats = append(lats, local...)
				errs += localErrs
				if first == "" {
					first = localFirst
				}
				mu.Unlock()
			}()
			for ctx.Err() == nil && stopAt.Load() == 0 {
				t0 := time.Now()
				if t0.After(measureTo) {
					return
				}
				err := op(ctx, w, int(next.Add(1)-1))
				t1 := time.Now()
				if t0.Before(measureFrom) || t1.After(measureTo) {
					continue // warm-up, or past the window
				}
				if s := stopAt.Load(); s != 0 && t1.UnixNano() > s {
					continue // past MaxCalls
				}
				if err != nil {
					localErrs++
					if localFirst == "" {
						localFirst = err.Error()
					}
					continue
				}
				local = append(local, t1.Sub(t0))
				if n := counted.Add(1); l.MaxCalls > 0 && int(n) >= l.MaxCalls {
					stopAt.CompareAndSwap(0, t1.UnixNano())
				}
			}
		}()
	}
	wg.Wait()
	end := measureTo
	if s := stopAt.Load(); s != 0 {
		end = time.Unix(0, s)
	}
	elapsed := end.Sub(measureFrom)
	if elapsed <= 0 {
		elapsed = time.Since(measureFrom)
	}
	return Summarize(lats, errs, first, elapsed)
}

// Summarize turns latencies into Stats over elapsed.
func Summarize(lats []time.Duration, errs int, firstErr string, elapsed time.Duration) Stats {
	s := make([]time.Duration, len(lats))
	copy(s, lats)
	sortDurations(s)
	st := Stats{Calls: len(s), Errors: errs, FirstError: firstErr, Elapsed: elapsed,
		P50: Percentile(s, 50), P99: Percentile(s, 99)}
	if elapsed > 0 {
		st.Rate = float64(len(s)) / elapsed.Seconds()
	}
	return st
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// latencies: the smallest value with at least p% of the values at or below
// it. It is 0 for no values; p <= 0 gives the minimum.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// Release runs op(i) for i in [0, n) on n goroutines held at a barrier until
// every one of them is ready (its request built), then released together. It
// returns each op's finish time after the release, and the longest of them:
// the time until all n were answered.
func Release(ctx context.Context, n int, prepare func(i int) func(ctx context.Context) error) (all time.Duration, each []time.Duration, errs []error) {
	each = make([]time.Duration, n)
	errs = make([]error, n)
	barrier := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	var released time.Time
	for i := range n {
		go func() {
			defer done.Done()
			send := prepare(i)
			ready.Done()
			<-barrier
			errs[i] = send(ctx)
			each[i] = time.Since(released)
		}()
	}
	ready.Wait()
	released = time.Now()
	close(barrier) // the write to released happens before every receive
	done.Wait()
	for _, d := range each {
		all = max(all, d)
	}
	return all, each, errs
}

// RateRatio is a phase's rate over its baseline's, measured in the same
// round: 0 when either is missing. make bench's rounds and mcpconform
// bench both judge a gateway by it, so the two figures mean one thing.
func RateRatio(phase, baseline Stats) float64 {
	if baseline.Rate <= 0 || phase.Calls == 0 {
		return 0
	}
	return phase.Rate / baseline.Rate
}

// P99Ratio is a phase's p99 over its baseline's (lower is better), +Inf
// when the phase answered nothing.
func P99Ratio(phase, baseline Stats) float64 {
	if baseline.P99 <= 0 || phase.Calls == 0 {
		return math.Inf(1)
	}
	return float64(phase.P99) / float64(baseline.P99)
}
