package soak

import (
	"math/rand/v2"
	"time"
)

// Mix is how often each kind of trouble is planned, as probabilities.
type Mix struct {
	Keyed       float64 // an Idempotency-Key; else the gateway derives the key
	Twins       float64 // the first call goes to two processes at once
	ClientDrop  float64 // the client abandons the first call
	GatewayDrop float64 // the gateway drops the first call's response (drop_response)
	FailBefore  float64 // the first call fails before its tool runs (fail at dispatch.before)
	Retry1      float64 // one more call after the result
	Retry2      float64 // two more calls after the result
}

// DefaultMix is the workload: half keyed, a retry after a third of
// the results, and twins and drops often enough that thousands of calls
// give hundreds of each. Pre-dispatch failures are as rare as gateway
// drops: each costs a wallet of its own.
func DefaultMix() Mix {
	return Mix{Keyed: 0.5, Twins: 0.12, ClientDrop: 0.10, GatewayDrop: 0.02, FailBefore: 0.02, Retry1: 0.25, Retry2: 0.10}
}

// Shape is how an operation's first call goes out.
type Shape string

// The shapes.
const (
	ShapePlain       Shape = "plain"
	ShapeTwins       Shape = "twins"        // to two processes, released together
	ShapeClientDrop  Shape = "client-drop"  // abandoned by the client
	ShapeGatewayDrop Shape = "gateway-drop" // connection closed by the gateway after dispatch
	ShapeFailBefore  Shape = "fail-before"  // failed by the gateway after its debit, before dispatch
)

// plan is one operation as the seed decides it. Nothing in it depends on
// scheduling, so a seed replays the same operations; the interleaving of
// concurrent operations is not replayed.
type plan struct {
	index  int
	keyed  bool
	wallet int // index of a shared wallet; a shape with a fault gets a wallet of its own
	shape  Shape
	first  int // process of the first call
	twin   int // the other process of a twin pair
	// A client drop closes the connection right after writing the request
	// (dropAfterSend), or gives up waiting after dropAfter; then it waits
	// pause before retrying.
	dropAfterSend bool
	dropAfter     time.Duration
	pause         time.Duration
	retries       []int // processes of the calls sent after the result
	// rng is the operation's own stream: backoff jitter and the processes
	// of in-progress retries.
	rng *rand.Rand
}

// planOp draws operation i of a run from the seed alone.
func planOp(seed uint64, i, procs, wallets int, m Mix) plan {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	p := plan{index: i, rng: rng, shape: ShapePlain}
	p.keyed = rng.Float64() < m.Keyed
	p.wallet = rng.IntN(wallets)
	p.first = rng.IntN(procs)
	twinShare := m.Twins
	if procs < 2 {
		twinShare = 0 // twins need two processes; their share stays plain
	}
	// Each shape takes its share of [0, 1) in turn; new shapes go last, so
	// a seed keeps planning the older shapes as before.
	clientDrops := m.Twins + m.ClientDrop
	gatewayDrops := clientDrops + m.GatewayDrop
	failures := gatewayDrops + m.FailBefore
	switch x := rng.Float64(); {
	case x < twinShare:
		p.shape = ShapeTwins
		p.twin = (p.first + 1 + rng.IntN(procs-1)) % procs // another process
	case m.Twins <= x && x < clientDrops:
		p.shape = ShapeClientDrop
		p.dropAfterSend = rng.IntN(2) == 0
		p.dropAfter = time.Duration(1+rng.IntN(20)) * time.Millisecond
		p.pause = time.Duration(rng.IntN(50)) * time.Millisecond
	case clientDrops <= x && x < gatewayDrops:
		p.shape = ShapeGatewayDrop
	case gatewayDrops <= x && x < failures:
		p.shape = ShapeFailBefore
	}
	n := 0
	switch x := rng.Float64(); {
	case x < m.Retry2:
		n = 2
	case x < m.Retry2+m.Retry1:
		n = 1
	}
	for range n {
		p.retries = append(p.retries, rng.IntN(procs))
	}
	return p
}

// backoff is the wait before re-sending after an in-progress answer or a
// drop: exponential from 5 ms, capped at 200 ms, with full jitter between
// half and one and a half times, so twins that collided spread out.
func backoff(k int, rng *rand.Rand) time.Duration {
	d := 5 * time.Millisecond << min(k, 5)
	d = min(d, 200*time.Millisecond)
	return d/2 + time.Duration(rng.Int64N(int64(d)))
}
