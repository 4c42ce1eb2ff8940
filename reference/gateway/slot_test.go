package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// lockBlind is a store whose plain read of a lock row always comes too
// early: the row is taken right after it (a race no fault point can hold).
type lockBlind struct{ store.Store }

func (lockBlind) LockOf(context.Context, string) (store.Lock, error) {
	return store.Lock{}, store.ErrNotFound
}

// TestOneWriteLockHeld: an unkeyed call whose one write (ReserveSlot) finds
// its identity's lock held by another call, taken after its plain read of
// the lock row, is told to retry (in progress), as when that read sees it;
// a completed slot it would join is served. Nothing is dispatched or
// charged by it, and the holder's lock row is left alone.
func TestOneWriteLockHeld(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		g, err := gateway.New(gateway.Options{Store: lockBlind{e.st}, Clock: e.clk, Faults: e.faults, Dispatcher: e.disp,
			Settings: gateway.DefaultSettings()})
		e.must(err)
		args := `{"text":"held"}`
		call := func() (gateway.CallResponse, error) {
			return g.Call(e.ctx, gateway.CallRequest{Caller: e.caller, Tool: e.write, Arguments: json.RawMessage(args)})
		}
		identity := g.IdentityForTest(e.caller, e.write, json.RawMessage(args))
		holder, err := e.st.AcquireLock(e.ctx, identity, "another-call", e.clk.Now(), gateway.DefaultSettings().StaleLock)
		e.must(err)

		if _, err := call(); reason(err) != gateway.ReasonInProgress {
			t.Errorf("a call while another holds its lock: %v (%s), want %s", err, reason(err), gateway.ReasonInProgress)
		}
		checkNothingHappened(t, e, e.write)
		if lk, err := e.st.LockOf(e.ctx, identity); err != nil || lk != holder {
			t.Errorf("the holder's lock row: %+v, %v; want %+v", lk, err, holder)
		}

		// The holder's call completes; a retry while its row is still there
		// is served that outcome.
		released, err := e.st.ReleaseLock(e.ctx, identity, holder.Owner)
		if err != nil || !released {
			t.Fatalf("release the holder's lock: %v, %v", released, err)
		}
		first, err := ok(run(call()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.st.AcquireLock(e.ctx, identity, "another-call", e.clk.Now(), gateway.DefaultSettings().StaleLock)
		e.must(err)
		rc, err := ok(run(call()))
		if err != nil || !rc.Replayed || rc.ID != first.ID {
			t.Errorf("a retry of a completed call while another holds the lock: %+v, %v; want %s replayed", rc, err, first.ID)
		}
		if n, err := e.dispatches(e.write); err != nil || n != 1 {
			t.Errorf("%d dispatches (%v), want 1", n, err)
		}
	})
}
