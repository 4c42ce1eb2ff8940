package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// writeLog is a store that logs the call path's writes, each one commit of
// the store: what a first call costs in durable commits.
type writeLog struct {
	store.Store
	mu  sync.Mutex
	log []string
}

func (w *writeLog) add(s string) { w.locked(func() { w.log = append(w.log, s) }) }

// take is the log so far, which starts afresh.
func (w *writeLog) take() (out []string) {
	w.locked(func() { out, w.log = w.log, nil })
	return out
}

func (w *writeLog) locked(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn()
}

func (w *writeLog) AcquireLock(ctx context.Context, identity, owner string, now time.Time, staleAfter time.Duration) (store.Lock, error) {
	w.add("acquire lock")
	return w.Store.AcquireLock(ctx, identity, owner, now, staleAfter)
}

func (w *writeLog) ReleaseLock(ctx context.Context, identity, owner string) (bool, error) {
	w.add("release lock")
	return w.Store.ReleaseLock(ctx, identity, owner)
}

func (w *writeLog) Reserve(ctx context.Context, r store.ReserveRequest) (store.Record, bool, error) {
	what := []string{"reserve"}
	if r.Charge != nil {
		what = append(what, "charge")
	}
	if r.Release {
		what = append(what, "release lock")
	}
	w.add(strings.Join(what, "+"))
	return w.Store.Reserve(ctx, r)
}

func (w *writeLog) ReserveSlot(ctx context.Context, r store.SlotRequest) (store.Record, bool, error) {
	var charged bool
	choose := r.Choose
	r.Choose = func(slots []store.Record) (*store.Record, store.ReserveRequest) {
		join, req := choose(slots)
		charged = req.Charge != nil
		return join, req
	}
	rec, created, err := w.Store.ReserveSlot(ctx, r)
	what := "reserve slot"
	if charged {
		what += "+charge"
	}
	w.add(what + "+release lock")
	return rec, created, err
}

func (w *writeLog) Charge(ctx context.Context, c store.ChargeRequest) error {
	w.add("charge")
	return w.Store.Charge(ctx, c)
}

func (w *writeLog) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	w.add("finish")
	return w.Store.Finish(ctx, key, owner, o)
}

func (w *writeLog) Abandon(ctx context.Context, key, owner string) error {
	w.add("abandon")
	return w.Store.Abandon(ctx, key, owner)
}

func (w *writeLog) LogDispatch(ctx context.Context, d store.Dispatch) error {
	w.add("log dispatch")
	return w.Store.LogDispatch(ctx, d)
}

// TestFirstCallCommits: a first call commits its reservation with its
// charge, then its outcome (an unkeyed one takes its retry lock in the same
// commit, and frees it there); a refused charge commits nothing at all; only
// a pause armed at reserve.done makes the gateway charge apart, and only one
// armed at lock.acquired commits an unkeyed call's lock apart.
func TestFirstCallCommits(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			b.check(t)
			for _, tc := range []struct {
				name string
				// run makes the call on e; its writes are logged.
				run  func(e *env) error
				want []string
			}{
				{"keyed", func(e *env) error {
					_, err := e.call(req{key: "k-1"})
					return err
				}, []string{"reserve+charge", "finish"}},
				{"unkeyed", func(e *env) error {
					_, err := e.call(req{})
					return err
				}, []string{"reserve slot+charge+release lock", "finish"}},
				{"unkeyed, paused at lock.acquired", func(e *env) error {
					id := e.arm(faults.LockAcquired, faults.Pause, e.write)
					ch := e.async(req{})
					e.await(id, ch)
					e.release(id)
					return e.wait(ch).err
				}, []string{"acquire lock", "reserve+charge+release lock", "finish"}},
				{"keyed, insufficient funds", func(e *env) error {
					_, err := e.call(req{key: "k-1", caller: ptr(e.newCaller(e.newWallet(price - 1)))})
					if ref := (*gateway.Refusal)(nil); !errors.As(err, &ref) || ref.Reason != gateway.ReasonInsufficient {
						return err
					}
					return nil
				}, []string{"reserve+charge"}},
				{"keyed, paused at reserve.done", func(e *env) error {
					id := e.arm(faults.ReserveDone, faults.Pause, e.write)
					ch := e.async(req{key: "k-1"})
					e.await(id, ch)
					e.release(id)
					return e.wait(ch).err
				}, []string{"reserve", "charge", "finish"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					var w *writeLog
					logged := b
					logged.open = func(t *testing.T) (store.Store, reopener) {
						s, r := b.open(t)
						w = &writeLog{Store: s}
						return w, r
					}
					err := runScenario(t, logged, func(e *env) error {
						w.take() // the env's fixtures
						return tc.run(e)
					})
					if err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(tc.want, w.take()); d != "" {
						t.Errorf("the call's writes (-want +got):\n%s", d)
					}
				})
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
