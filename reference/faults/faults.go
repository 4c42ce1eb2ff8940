// Package faults holds the named fault points a conformance harness arms
// through the control API: a pause that holds a request between two racing
// steps until released, a failure, or a dropped response. Pauses are how the
// harness makes races deterministic instead of hoping goroutines interleave.
package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Fault points, in the order a tools/call passes them. The reference
// gateway passes reserve.done (a reservation not yet charged) only while a
// pause is armed there; otherwise a reservation carries its charge, in one
// commit, and there is no such moment to stop at. Likewise it passes
// lock.acquired, fence.read and claim.held only while a fault is armed at
// one of them (or a lock bug switch is on); otherwise an unkeyed call's
// lock, slot choice and reservation are one write.
const (
	LockAcquired   = "lock.acquired"   // unkeyed: lock row held, before slot choice
	FenceRead      = "fence.read"      // unkeyed: slot chosen under the lock, before the fenced claim
	ClaimHeld      = "claim.held"      // unkeyed: inside the claim transaction, before the insert
	TakeoverRead   = "takeover.read"   // keyed retry: a stale, uncharged reservation read, before the takeover's write
	ReserveDone    = "reserve.done"    // key reserved (and permit minted), before the debit
	DispatchBefore = "dispatch.before" // debited, before dispatch
	DispatchAfter  = "dispatch.after"  // dispatched and stored, before the response
)

// Actions.
const (
	Pause        = "pause"
	Fail         = "fail"
	DropResponse = "drop_response"
	// Crash: the process that reaches the point is killed at once, as
	// kill -9 would kill it: nothing after the point is written, answered
	// or cleaned up. Whatever restarts the gateway serves the retries.
	Crash = "crash"
)

// MaxPause bounds how long a paused request waits when nobody releases it.
const MaxPause = 60 * time.Second

var points = []string{LockAcquired, FenceRead, ClaimHeld, TakeoverRead, ReserveDone, DispatchBefore, DispatchAfter}

// Errors for bad specs; the control API maps them to reasons.
var (
	ErrUnknownPoint  = errors.New("unknown fault point")
	ErrUnknownAction = errors.New("unknown fault action")
	ErrNotFound      = errors.New("no such fault")
)

// Points lists the fault points.
func Points() []string { return append([]string(nil), points...) }

// Actions lists the actions.
func Actions() []string { return []string{Pause, Fail, DropResponse, Crash} }

// Match narrows a fault to some calls; empty fields match all.
type Match struct {
	Tool     string
	WalletID string
}

func (m Match) covers(hit Match) bool {
	return (m.Tool == "" || m.Tool == hit.Tool) && (m.WalletID == "" || m.WalletID == hit.WalletID)
}

// Spec is what the harness arms.
type Spec struct {
	Point  string
	Action string
	Count  int
	Match  Match
}

// Status is a fault and its progress (the control API writes it as a
// controlapi.FaultState).
type Status struct {
	ID       string
	Point    string
	Action   string
	Count    int
	Match    Match
	Hits     int
	Waiting  int
	Released bool
}

type fault struct {
	Status
	seq     int
	release chan struct{}
}

// Registry is one process's armed faults.
type Registry struct {
	// Kill carries out a crash; nil kills this process with SIGKILL
	// (KillSelf). A test sets its own, to see the crash without dying.
	Kill func()

	mu      sync.Mutex
	faults  map[string]*fault
	seq     int
	changed chan struct{} // closed and replaced on every change, to wake Await
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{faults: map[string]*fault{}, changed: make(chan struct{})}
}

func (r *Registry) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Arm adds a fault and returns its status.
func (r *Registry) Arm(s Spec) (Status, error) {
	if !slices.Contains(points, s.Point) {
		return Status{}, fmt.Errorf("arm %q: %w", s.Point, ErrUnknownPoint)
	}
	if !slices.Contains(Actions(), s.Action) {
		return Status{}, fmt.Errorf("arm %q: %w", s.Action, ErrUnknownAction)
	}
	if s.Action == DropResponse && s.Point != DispatchAfter {
		return Status{}, fmt.Errorf("arm drop_response at %q (only %s): %w", s.Point, DispatchAfter, ErrUnknownAction)
	}
	if s.Action == Fail && s.Point != DispatchBefore && s.Point != DispatchAfter {
		return Status{}, fmt.Errorf("arm fail at %q (only dispatch points): %w", s.Point, ErrUnknownAction)
	}
	if s.Count <= 0 {
		s.Count = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	f := &fault{
		Status:  Status{ID: "f-" + uuid.NewString(), Point: s.Point, Action: s.Action, Count: s.Count, Match: s.Match},
		seq:     r.seq,
		release: make(chan struct{}),
	}
	r.faults[f.ID] = f
	r.notifyLocked()
	return f.Status, nil
}

// Get returns a fault's status.
func (r *Registry) Get(id string) (Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.faults[id]
	if !ok {
		return Status{}, fmt.Errorf("fault %s: %w", id, ErrNotFound)
	}
	return f.Status, nil
}

// Await blocks until at least waiting requests wait at the fault, or ctx ends.
func (r *Registry) Await(ctx context.Context, id string, waiting int) (Status, error) {
	for {
		r.mu.Lock()
		f, ok := r.faults[id]
		if !ok {
			r.mu.Unlock()
			return Status{}, fmt.Errorf("fault %s: %w", id, ErrNotFound)
		}
		st, ch := f.Status, r.changed
		r.mu.Unlock()
		if st.Waiting >= waiting {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, fmt.Errorf("await fault %s (waiting %d of %d): %w", id, st.Waiting, waiting, ctx.Err())
		}
	}
}

// Release lets every request waiting at the fault go on and disarms it.
func (r *Registry) Release(id string) (Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.faults[id]
	if !ok {
		return Status{}, fmt.Errorf("fault %s: %w", id, ErrNotFound)
	}
	r.releaseLocked(f)
	return f.Status, nil
}

func (r *Registry) releaseLocked(f *fault) {
	if !f.Released {
		f.Released = true
		close(f.release)
		r.notifyLocked()
	}
}

// Reset releases and forgets every fault.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, f := range r.faults {
		r.releaseLocked(f)
		delete(r.faults, id)
	}
}

// List returns every fault, oldest first.
func (r *Registry) List() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	fs := make([]*fault, 0, len(r.faults))
	for _, f := range r.faults {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].seq < fs[j].seq })
	out := make([]Status, len(fs))
	for i, f := range fs {
		out[i] = f.Status
	}
	return out
}

// Armed reports whether a fault at point would take a hit of m now. The
// gateway asks before work that only a fault needs: a hook run inside a
// store transaction, which makes the store give that transaction a commit
// of its own.
func (r *Registry) Armed(point string, m Match) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.faults {
		if f.Point == point && !f.Released && f.Hits < f.Count && f.Match.covers(m) {
			return true
		}
	}
	return false
}

// Hit is called by the gateway at a point. It returns the action taken: ""
// when no armed fault matched, Pause after the pause ended, or Fail /
// DropResponse for the caller to carry out. A Crash never returns in the
// gateway: the process is killed inside Hit (Kill); a Registry whose Kill
// returns (a test's) returns Crash, which the gateway treats as no fault. Only the oldest matching fault
// with hits left takes the hit.
func (r *Registry) Hit(ctx context.Context, point string, m Match) string {
	r.mu.Lock()
	var hit *fault
	for _, f := range r.faults {
		if f.Point != point || f.Released || f.Hits >= f.Count || !f.Match.covers(m) {
			continue
		}
		if hit == nil || f.seq < hit.seq {
			hit = f
		}
	}
	if hit == nil {
		r.mu.Unlock()
		return ""
	}
	hit.Hits++
	if hit.Action == Crash {
		r.mu.Unlock()
		kill := r.Kill
		if kill == nil {
			kill = KillSelf
		}
		kill()
		return Crash
	}
	if hit.Action != Pause {
		r.notifyLocked()
		r.mu.Unlock()
		return hit.Action
	}
	hit.Waiting++
	r.notifyLocked()
	release := hit.release
	r.mu.Unlock()

	timer := time.NewTimer(MaxPause)
	defer timer.Stop()
	select {
	case <-release:
	case <-timer.C:
	case <-ctx.Done():
	}
	r.mu.Lock()
	hit.Waiting--
	r.notifyLocked()
	r.mu.Unlock()
	return Pause
}

// KillSelf kills this process at once with SIGKILL, the signal it cannot
// catch: no deferred function, no store write, no response after it. It
// does not return (the signal is delivered before the process could go
// on; should it not be, the caller blocks for ever rather than continue
// past the crash).
func KillSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix, TerminateProcess on Windows
	}
	select {}
}
