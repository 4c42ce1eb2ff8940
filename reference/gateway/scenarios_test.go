package gateway_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// A scenario drives the gateway through one behaviour of the seed reviews and
// returns nil when the behaviour is right, else what went wrong. Every
// scenario must pass with no bug switch on and fail with each switch it
// lists in catches: that is the proof the test would have caught the bug.
type scenario struct {
	name    string
	catches []string
	run     func(e *env) error
}

func want(what string, got, exp any) error {
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		return fmt.Errorf("%s = %v, want %v", what, got, exp)
	}
	return nil
}

func first(errs ...error) error { return errors.Join(errs...) }

var scenarios = []scenario{
	{
		name:    "a tool re-priced and then removed by another process is charged and refused as the registry says",
		catches: []string{bugs.ToolEntriesUnversioned},
		run: func(e *env) error {
			other := e.reopen(e.t) // the other process's store, as its control API writes it
			if _, err := ok(run(e.call(req{key: "k-" + uuid.NewString()}))); err != nil {
				return err
			}
			e.must(other.PutTool(e.ctx, store.Tool{Name: e.write, Price: price + 4}))
			before := e.ledger()
			if _, err := ok(run(e.call(req{key: "k-" + uuid.NewString()}))); err != nil {
				return err
			}
			if got := before.balance - e.ledger().balance; got != price+4 {
				return fmt.Errorf("a call after another process re-priced the tool to %d was charged %d", price+4, got)
			}
			e.must(other.RemoveTool(e.ctx, e.write))
			if _, err := e.call(req{key: "k-" + uuid.NewString()}); reason(err) != gateway.ReasonUnknownTool {
				return fmt.Errorf("a call after another process removed the tool: %v, want %s", err, gateway.ReasonUnknownTool)
			}
			return nil
		},
	},
	{
		name:    "unkeyed retry replays the first receipt",
		catches: []string{bugs.RandomUnkeyedKey, bugs.FingerprintRawBytes},
		run: func(e *env) error {
			// A retry arrives with a fresh JSON-RPC id and maybe another key order.
			return e.replays(req{args: `{"text":"a","n":1}`}, func() {}, req{args: `{"n":1,"text":"a"}`})
		},
	},
	{
		name:    "retry 1ms past a window boundary replays",
		catches: []string{bugs.FloorBucket},
		run: func(e *env) error {
			return e.replaysAcrossBoundary(time.Millisecond, 2*time.Millisecond) // 1 ms into the next bucket
		},
	},
	{
		name:    "a retry half a second before the window ends, of a call at a fractional second, replays",
		catches: []string{bugs.WindowWholeSeconds},
		run: func(e *env) error {
			// The first call's second and the retry's are a whole window
			// apart, though its age is half a second less.
			half := 500 * time.Millisecond
			return e.replaysAcrossBoundary(half, e.g.Settings().EffectiveWindow()-half)
		},
	},
	{
		name:    "a list in another order is other arguments, keyed or unkeyed",
		catches: []string{bugs.FingerprintSortedLists},
		run: func(e *env) error {
			key := "list-" + uuid.NewString()[:8]
			if _, err := ok(run(e.call(req{key: key, args: `{"ids":[1,2],"m":{"t":["a","b"]}}`}))); err != nil {
				return err
			}
			_, keyed := e.call(req{key: key, args: `{"ids":[1,2],"m":{"t":["b","a"]}}`})
			a, err := ok(run(e.call(req{args: `{"ids":[1,2]}`})))
			if err != nil {
				return err
			}
			b, err := ok(run(e.call(req{args: `{"ids":[2,1]}`})))
			if err != nil {
				return err
			}
			n, err := e.dispatches(e.write)
			return first(err, want("keyed reason", reason(keyed), gateway.ReasonKeyReused),
				want("unkeyed receipts differ", a.ID != b.ID, true), want("dispatches", n, 3))
		},
	},
	{
		name:    "another principal on the same key gets its own result",
		catches: []string{bugs.PrincipalUnbound},
		run:     func(e *env) error { return e.ownResults(false) },
	},
	{
		name:    "another principal on the same key gets its own result on the stateless wire",
		catches: []string{bugs.PrincipalUnbound, bugs.PrincipalUnboundStateless},
		run:     func(e *env) error { return e.ownResults(true) },
	},
	{
		name:    "a revoked principal's retry is denied, not replayed",
		catches: []string{bugs.ReplayBeforeIGA},
		run: func(e *env) error {
			alice, id := e.principal("alice")
			if _, err := ok(run(e.call(req{caller: &alice, key: "k-" + uuid.NewString()[:8]}))); err != nil {
				return err
			}
			// The same unkeyed call, then the revocation.
			if _, err := ok(run(e.call(req{caller: &alice}))); err != nil {
				return err
			}
			e.must(e.st.RevokePrincipal(e.ctx, id))
			_, err := e.call(req{caller: &alice})
			return want("unkeyed retry after revocation", reason(err), gateway.ReasonPrincipalDenied)
		},
	},
	{
		name:    "a revoked principal gets no stored result of a removed tool",
		catches: []string{bugs.ReplayBeforeIGA},
		run: func(e *env) error {
			alice, id := e.principal("alice")
			key := "k-" + uuid.NewString()
			if _, err := ok(run(e.call(req{caller: &alice, key: key}))); err != nil {
				return err
			}
			e.must(e.st.RemoveTool(e.ctx, e.write))
			e.must(e.st.RevokePrincipal(e.ctx, id))
			_, err := e.call(req{caller: &alice, key: key})
			return want("keyed retry of a removed tool after revocation", reason(err), gateway.ReasonPrincipalDenied)
		},
	},
	{
		name:    "an unkeyed read-only call is refused before anything",
		catches: []string{bugs.ReadonlyCollapsed},
		run: func(e *env) error {
			_, err := e.call(req{tool: e.read})
			n, derr := e.dispatches(e.read)
			l := e.ledger()
			return first(derr, want("reason", reason(err), gateway.ReasonKeyRequired), want("dispatches", n, 0), want("debits", l.debits, 0))
		},
	},
	{
		name:    "client-key twins: the second finds the reservation",
		catches: []string{bugs.LookupBeforeReserve, bugs.UncertainEarly},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			return e.joinsHeld(req{key: key}, 0, req{key: key})
		},
	},
	{
		name:    "a retry after its explicit permit expired gets the stored outcome; new work under it is refused",
		catches: []string{bugs.PermitExpiryBlocksReplay},
		run: func(e *env) error {
			id := "pmt-" + uuid.NewString()
			now := e.clk.Now()
			e.must(e.st.CreatePermit(e.ctx, store.Permit{ID: id, WalletID: e.wallet, APIKeyID: e.caller.APIKeyID, Tool: e.write,
				Budget: 100, ExpiresAt: now.Add(time.Minute), CreatedAt: now}))
			a, err := ok(run(e.call(req{permit: id})))
			if err != nil {
				return err
			}
			e.clk.Advance(time.Minute + time.Second)
			b, errB := ok(run(e.call(req{permit: id}))) // the response of a was lost; the retry comes late
			_, errNew := e.call(req{permit: id, key: "k-" + uuid.NewString()})
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(errB, err, want("late retry's receipt", b.ID, a.ID), want("late retry replayed", b.Replayed, true),
				want("new work under the expired permit", reason(errNew), gateway.ReasonPermitExpired),
				want("dispatches", n, 1), want("debits", l.debits, 1))
		},
	},
	{
		name:    "an uncertain operation settled refunded: the woken holder runs nothing, a retry runs it afresh",
		catches: []string{bugs.SettleOverwritten, bugs.SettleRefundUnwritten},
		run:     func(e *env) error { return e.settles(gateway.SettleRefunded, false) },
	},
	{
		name:    "an uncertain operation settled completed: every retry, the woken holder's too, replays the settled result",
		catches: []string{bugs.SettleOverwritten, bugs.UncertainRefunded},
		run:     func(e *env) error { return e.settles(gateway.SettleCompleted, false) },
	},
	{
		name:    "a stalled holder already charged is never taken over",
		catches: []string{bugs.TakeoverCharged, bugs.UncertainInProgress},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			return e.joinsHeld(req{key: key}, e.g.Settings().StaleLock+time.Second, req{key: key})
		},
	},
	{
		name:    "a reservation abandoned before its charge is taken over; the stalled holder writes nothing",
		catches: []string{bugs.KeyedTakeoverUnfenced},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			f := e.arm(faults.ReserveDone, faults.Pause, e.write)
			a := e.async(req{key: key})
			e.await(f, a) // A reserved: nothing debited or dispatched
			_, errEarly := e.call(req{key: key})
			e.clk.Advance(e.g.Settings().StaleLock + time.Second)
			rb, errB := ok(run(e.call(req{key: key}))) // B takes the reservation over and runs it
			e.release(f)
			oa := e.wait(a)
			rc, errC := ok(run(e.call(req{key: key})))
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(errB, errC, err, want("retry before the threshold", reason(errEarly), gateway.ReasonInProgress),
				want("stalled holder's reason", reason(oa.err), gateway.ReasonInProgress),
				want("B replayed", rb.Replayed, false), want("C's receipt", rc.ID, rb.ID), want("C replayed", rc.Replayed, true),
				want("dispatches", n, 1), want("debits", l.debits, 1), want("refunds", l.refunds, 0))
		},
	},
	{
		name:    "a retry that read a stale reservation as uncharged leaves it to the holder that charged since",
		catches: []string{bugs.TakeoverTrustsRead},
		run: func(e *env) error {
			s := e.g.Settings()
			s.StaleLock = 30 * time.Second // below the permit TTL, so A's permit outlives the advance
			e.must(e.g.SetSettings(s))
			key := "k-" + uuid.NewString()
			fa := e.arm(faults.ReserveDone, faults.Pause, e.write)
			a := e.async(req{key: key})
			e.await(fa, a) // A reserved, not charged
			e.clk.Advance(s.StaleLock + time.Second)
			fb := e.arm(faults.TakeoverRead, faults.Pause, e.write)
			b := e.async(req{key: key})
			e.await(fb, b) // B read A's reservation as stale and uncharged
			e.release(fa)
			ra, errA := ok(e.wait(a)) // A charges, runs and finishes
			e.release(fb)
			rb, errB := ok(e.wait(b)) // B's write must see it: a replay
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(errA, errB, err, want("B's receipt", rb.ID, ra.ID), want("B replayed", rb.Replayed, true),
				want("dispatches", n, 1), want("debits", l.debits, 1))
		},
	},
	{
		name:    "stale-lock takeover at fence.read: the old holder writes nothing",
		catches: []string{bugs.StaleLockNoFence, bugs.SelectForUpdateSQLite},
		run: func(e *env) error {
			e.clk.Freeze(e.boundary().Add(-time.Second))
			identity := e.g.IdentityForTest(e.caller, e.write, []byte(`{"text":"hello"}`))
			f := e.arm(faults.FenceRead, faults.Pause, e.write)
			a := e.async(req{})
			e.await(f, a)                                         // A holds the lock, chose its slot and read its fence
			e.clk.Advance(e.g.Settings().StaleLock + time.Second) // past the stale threshold and the boundary
			rb, errB := ok(run(e.call(req{})))                    // B takes the lock over
			e.release(f)
			oa := e.wait(a)
			recs, err := e.st.RecordsByIdentity(e.ctx, identity, time.Unix(0, 0))
			n, derr := e.dispatches(e.write)
			l := e.ledger()
			return first(errB, err, derr, want("stale holder's reason", reason(oa.err), gateway.ReasonInProgress),
				want("records", len(recs), 1), want("dispatches", n, 1), want("debits", l.debits, 1),
				want("B replayed", rb.Replayed, false))
		},
	},
	{
		name:    "a taken-over holder's release leaves the new holder's lock",
		catches: []string{bugs.ReleaseUnpinned},
		run: func(e *env) error {
			prefix := e.g.LockIdentityPrefix(e.wallet, e.write)
			fa := e.arm(faults.FenceRead, faults.Pause, e.write)
			a := e.async(req{})
			e.await(fa, a)
			e.clk.Advance(e.g.Settings().StaleLock + time.Second)
			fb := e.arm(faults.FenceRead, faults.Pause, e.write)
			b := e.async(req{})
			e.await(fb, b) // B took the lock over (fence 2) and waits
			e.release(fa)
			oa := e.wait(a) // A lost its fence and released "its" lock
			locks, err := e.st.Locks(e.ctx, prefix)
			e.release(fb)
			_, errB := ok(e.wait(b))
			n, derr := e.dispatches(e.write)
			var lockErr error
			if err == nil && (len(locks) != 1 || locks[0].Fence != 2) {
				lockErr = fmt.Errorf("lock rows after the stale release = %+v, want B's (fence 2)", locks)
			}
			return first(err, lockErr, derr, errB, want("A's reason", reason(oa.err), gateway.ReasonInProgress), want("dispatches", n, 1))
		},
	},
	{
		name:    "a lock timeout is the retryable in-progress answer",
		catches: []string{bugs.LockTimeoutInternal},
		run: func(e *env) error {
			s := e.g.Settings()
			s.StaleLock = 30 * time.Second // below the permit TTL, so A's permit outlives the advance
			e.must(e.g.SetSettings(s))
			f := e.arm(faults.ClaimHeld, faults.Pause, e.write)
			a := e.async(req{})
			e.await(f, a) // A is inside its claim transaction: it holds the store's lock
			e.clk.Advance(s.StaleLock + time.Second)
			_, errB := e.call(req{}) // B tries to take the lock over and times out
			e.release(f)
			ra, errA := ok(e.wait(a))
			n, err := e.dispatches(e.write)
			var ref *gateway.Refusal
			retry := errors.As(errB, &ref) && ref.Retryable
			return first(errA, err, want("B's reason", reason(errB), gateway.ReasonInProgress), want("B retryable", retry, true),
				want("dispatches", n, 1), want("A replayed", ra.Replayed, false))
		},
	},
	{
		name:    "a replay writes no ledger entry",
		catches: []string{bugs.ReplayDebits},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			a, err := ok(run(e.call(req{key: key})))
			if err != nil {
				return err
			}
			before := e.ledger()
			b, err := ok(run(e.call(req{key: key})))
			if err != nil {
				return err
			}
			if _, err := ok(run(e.call(req{}))); err != nil { // unkeyed
				return err
			}
			if _, err := ok(run(e.call(req{}))); err != nil { // its replay
				return err
			}
			after := e.ledger()
			return first(want("replay receipt", b.ID, a.ID), want("debits after one keyed replay", before.debits, 1),
				want("debits after two operations and two replays", after.debits, 2), want("balance", after.balance, startFunds-2*price))
		},
	},
	{
		name:    "a failure before dispatch is refunded, and the retry runs",
		catches: []string{bugs.RefundMissing},
		run: func(e *env) error {
			f := e.arm(faults.DispatchBefore, faults.Fail, e.write)
			_, err := e.call(req{})
			var ref *gateway.Refusal
			if !errors.As(err, &ref) || ref.Reason != gateway.ReasonDispatchFailed || !ref.Retryable {
				return fmt.Errorf("failed call: %v, want retryable %s", err, gateway.ReasonDispatchFailed)
			}
			if st, _ := e.faults.Get(f); st.Hits != 1 {
				return fmt.Errorf("fault hits %d", st.Hits)
			}
			failed := e.ledger()
			rc, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			ran := e.ledger()
			rep, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			replayed := e.ledger()
			n, derr := e.dispatches(e.write)
			return first(derr, want("net after the refunded failure", failed.net(), 0),
				want("debit and refund", fmt.Sprint(failed.debits, failed.refunds), "1 1"),
				want("net after the retry", ran.net(), -price), want("retry replayed", rc.Replayed, false),
				want("entries after the replay", replayed.debits+replayed.refunds, ran.debits+ran.refunds),
				want("replay receipt", rep.ID, rc.ID), want("dispatches", n, 1))
		},
	},
	{
		name:    "keys that differ only in case, or past 32 characters, name operations of their own",
		catches: []string{bugs.KeyCaseFolded, bugs.KeyTruncated},
		run: func(e *env) error {
			k := "Key-" + uuid.NewString()
			long := strings.Repeat("p", 40)
			for _, key := range []string{k, strings.ToUpper(k), long + "-a", long + "-b"} {
				if _, err := ok(run(e.call(req{key: key, args: fmt.Sprintf(`{"k":%q}`, key)}))); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
			}
			n, err := e.dispatches(e.write)
			return first(err, want("dispatches", n, 4), want("net", e.ledger().net(), -4*price))
		},
	},
	{
		name:    "the same key with arguments that differ one object deeper is refused",
		catches: []string{bugs.FingerprintShallow},
		run: func(e *env) error {
			key := "deep-" + uuid.NewString()[:8]
			if _, err := ok(run(e.call(req{key: key, args: `{"a":{"b":1},"c":[1]}`}))); err != nil {
				return err
			}
			_, err := e.call(req{key: key, args: `{"a":{"b":2},"c":[1]}`})
			n, derr := e.dispatches(e.write)
			return first(derr, want("reason", reason(err), gateway.ReasonKeyReused), want("dispatches", n, 1))
		},
	},
	{
		name:    "an upstream error before the tool ran is refunded, and the retry runs",
		catches: []string{bugs.RefundMissing, bugs.UpstreamErrorCharged},
		run: func(e *env) error {
			e.disp.fails = 1
			_, err := e.call(req{key: "up-1"})
			refused := e.ledger()
			if _, rerr := ok(run(e.call(req{key: "up-1"}))); rerr != nil {
				return rerr
			}
			n, derr := e.dispatches(e.write)
			return first(derr, want("reason", reason(err), gateway.ReasonDispatchFailed), want("net after the refusal", refused.net(), 0),
				want("net after the retry", e.ledger().net(), -price), want("dispatches", n, 1))
		},
	},
	{
		name:    "an explicit permit is spent only by the API key it was granted to",
		catches: []string{bugs.PermitUnscoped},
		run: func(e *env) error {
			id, now := "pmt-"+uuid.NewString(), e.clk.Now()
			e.must(e.st.CreatePermit(e.ctx, store.Permit{ID: id, WalletID: e.wallet, APIKeyID: e.caller.APIKeyID, Tool: e.write,
				Budget: price, ExpiresAt: now.Add(time.Hour), CreatedAt: now}))
			other := e.newCaller(e.wallet)
			_, err := e.call(req{caller: &other, permit: id})
			n, derr := e.dispatches(e.write)
			return first(derr, want("reason", reason(err), gateway.ReasonPermitInvalid), want("dispatches", n, 0))
		},
	},
	{
		name:    "a call charged before its tool was re-priced is refunded what it paid",
		catches: []string{bugs.RefundAtCurrentPrice},
		run: func(e *env) error {
			f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
			e.disp.fails = 1
			ch := e.async(req{key: "rp-" + uuid.NewString()})
			e.await(f, ch)
			t, err := e.st.Tool(e.ctx, e.write)
			e.must(err)
			t.Price = price + 2
			e.must(e.st.PutTool(e.ctx, t))
			e.release(f)
			o := e.wait(ch)
			return first(want("reason", reason(o.err), gateway.ReasonDispatchFailed), want("net", e.ledger().net(), 0))
		},
	},
	{
		name:    "a call whose client cancels while the tool runs gets the tool's own result on its retry",
		catches: []string{bugs.CancelReachesUpstream},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			e.cancelledWhileRunning(key)
			o := run(e.call(req{key: key}))
			if _, err := ok(o); err != nil {
				return err
			}
			_, res, _ := receiptOf(o.resp)
			n, derr := e.dispatches(e.write)
			return first(derr, want("isError", res.IsError, false), want("dispatches", n, 1))
		},
	},
	{
		name:    "a refunded call under a permit that pays for one call is retried and runs",
		catches: []string{bugs.PermitRefundKept},
		run: func(e *env) error {
			id, now := "pmt-"+uuid.NewString(), e.clk.Now()
			e.must(e.st.CreatePermit(e.ctx, store.Permit{ID: id, WalletID: e.wallet, APIKeyID: e.caller.APIKeyID, Tool: e.write,
				Budget: price, ExpiresAt: now.Add(time.Hour), CreatedAt: now}))
			e.disp.fails = 1
			_, err := e.call(req{permit: id})
			_, rerr := ok(run(e.call(req{permit: id})))
			n, derr := e.dispatches(e.write)
			return first(derr, want("reason", reason(err), gateway.ReasonDispatchFailed), rerr, want("dispatches", n, 1))
		},
	},
	{
		name:    "a tool's isError result is charged, stored and replayed, never run again",
		catches: []string{bugs.ToolErrorNotStored},
		run: func(e *env) error {
			e.disp.toolErrors = 1
			o := run(e.call(req{key: "te-1"}))
			a, err := ok(o)
			if err != nil {
				return err
			}
			_, res, _ := receiptOf(o.resp)
			b, err := ok(run(e.call(req{key: "te-1"})))
			if err != nil {
				return err
			}
			n, derr := e.dispatches(e.write)
			return first(derr, want("isError", res.IsError, true), want("replayed receipt", b.ID, a.ID), want("dispatches", n, 1),
				want("net", e.ledger().net(), -price))
		},
	},
	{
		name:    "large arguments are stored and bound to the principal as small ones are",
		catches: []string{bugs.LargeArgsUnbound, bugs.LargeArgsUnstored},
		run: func(e *env) error {
			big := fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 20000))
			if err := e.replays(req{key: "big-1", args: big}, func() {}, req{key: "big-1", args: big}); err != nil {
				return fmt.Errorf("keyed retry: %w", err)
			}
			alice, _ := e.principal("alice")
			bob, _ := e.principal("bob")
			other := fmt.Sprintf(`{"text":%q}`, strings.Repeat("y", 20000))
			a, err := ok(run(e.call(req{caller: &alice, args: other})))
			if err != nil {
				return err
			}
			b, err := ok(run(e.call(req{caller: &bob, args: other})))
			if err != nil {
				return err
			}
			if a.ID == b.ID {
				return fmt.Errorf("bob got alice's receipt %s for large arguments", a.ID)
			}
			return nil
		},
	},
	{
		name:    "a wallet holding exactly the price pays for the call",
		catches: []string{bugs.FundsBoundary},
		run: func(e *env) error {
			c := e.newCaller(e.newWallet(price))
			if _, err := ok(run(e.call(req{caller: &c, key: "edge-1"}))); err != nil {
				return err
			}
			_, err := e.call(req{caller: &c, key: "edge-2"})
			return want("reason of the next call", reason(err), gateway.ReasonInsufficient)
		},
	},
	{
		name:    "a call paused after its reservation is refused once another call spent the wallet",
		catches: []string{bugs.FundsUnlocked},
		run: func(e *env) error {
			w := e.newWallet(price)
			c := e.newCaller(w)
			st, err := e.faults.Arm(faults.Spec{Point: faults.ReserveDone, Action: faults.Pause, Match: faults.Match{Tool: e.write, WalletID: w}})
			e.must(err)
			a := e.async(req{caller: &c, key: "race-1"})
			e.await(st.ID, a) // A reserved, found the balance enough, not charged
			if _, err := ok(run(e.call(req{caller: &c, key: "race-2"}))); err != nil {
				return fmt.Errorf("the second call: %w", err)
			}
			e.release(st.ID)
			oa := e.wait(a)
			wallet, err := e.st.Wallet(e.ctx, w)
			return first(err, want("reason of the paused call", reason(oa.err), gateway.ReasonInsufficient),
				want("balance", wallet.Balance, int64(0)))
		},
	},
	{
		name:    "an upstream's refusal for a capability the caller lacks is answered as it is, refunded",
		catches: []string{bugs.RefundMissing, bugs.CapabilityRefusalKept, bugs.CapabilityRefundTwice},
		run: func(e *env) error {
			e.disp.refusal = gateway.Refuse(gateway.ReasonCapabilitiesMissing, "sampling required")
			_, err := e.call(req{key: "caps-1"})
			var ref *gateway.Refusal
			if !errors.As(err, &ref) || ref.Reason != gateway.ReasonCapabilitiesMissing || ref.Code != -32021 || ref.Retryable {
				return fmt.Errorf("refused call: %v, want %s (-32021, not retryable)", err, gateway.ReasonCapabilitiesMissing)
			}
			refused := e.ledger()
			// Nothing was stored as the key's outcome: the same key runs.
			rc, err := ok(run(e.call(req{key: "caps-1"})))
			if err != nil {
				return err
			}
			n, derr := e.dispatches(e.write)
			return first(derr, want("net after the refusal", refused.net(), 0), want("retry replayed", rc.Replayed, false),
				want("net after the retry", e.ledger().net(), -price), want("dispatches", n, 1))
		},
	},
	{
		name:    "a multi-round call is charged once; a round that asked for input is refunded",
		catches: []string{bugs.RoundsCharged, bugs.RoundsReplayReruns, bugs.RoundsStoreQuestion, bugs.ReplayDropsStructured, bugs.RoundsFingerprinted},
		run: func(e *env) error {
			e.disp.asks = 1
			asked, err := e.call(req{key: "rounds-1"})
			if err != nil {
				return fmt.Errorf("the round that asks: %w", err)
			}
			if !strings.Contains(string(asked.Result), `"resultType":"input_required"`) {
				return fmt.Errorf("the round that asks answered %s, want the upstream's input-required result", asked.Result)
			}
			final, err := e.call(req{key: "rounds-1", round: true})
			done, err := ok(run(final, err))
			if err != nil {
				return err
			}
			retry, err := e.call(req{key: "rounds-1", round: true})
			again, err := ok(run(retry, err))
			if err != nil {
				return err
			}
			// The first round sent again (no answers) is the same operation.
			firstAgain, err := ok(run(e.call(req{key: "rounds-1"})))
			if err != nil {
				return fmt.Errorf("the first round sent again: %w", err)
			}
			_, finalRes, _ := receiptOf(final)
			_, againRes, _ := receiptOf(retry)
			l := e.ledger()
			n, derr := e.dispatches(e.write)
			return first(derr, want("net charge of the call", l.net(), -price), want("final round replayed", done.Replayed, false),
				want("retry replayed", again.Replayed, true), want("retry receipt", again.ID, done.ID), want("dispatches", n, 1),
				want("retry's structuredContent", string(againRes.StructuredContent), string(finalRes.StructuredContent)),
				want("the first round's receipt, sent again", firstAgain.ID, done.ID))
		},
	},
	{
		name:    "an unkeyed multi-round call is charged once too (its rounds share the derived key)",
		catches: []string{bugs.RoundsCharged},
		run: func(e *env) error {
			e.disp.asks = 1
			if _, err := e.call(req{}); err != nil {
				return fmt.Errorf("the round that asks: %w", err)
			}
			done, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			again, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			n, derr := e.dispatches(e.write)
			return first(derr, want("net charge of the call", e.ledger().net(), -price), want("retry receipt", again.ID, done.ID),
				want("dispatches", n, 1))
		},
	},
	{
		name:    "a retry after the effective window is a new operation",
		catches: []string{bugs.WindowIgnoresTTL},
		run: func(e *env) error {
			s := e.g.Settings()
			if s.EffectiveWindow() >= s.Window {
				return fmt.Errorf("settings %+v: want a permit TTL below the window", s)
			}
			a, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			e.clk.Advance(s.PermitTTL + 10*time.Second) // 130 s: inside the advertised 300, past the permit
			b, err := ok(run(e.call(req{})))
			if err != nil {
				return err
			}
			n, derr := e.dispatches(e.write)
			l := e.ledger()
			if a.ID == b.ID {
				return fmt.Errorf("retry after %v replayed receipt %s", s.PermitTTL+10*time.Second, a.ID)
			}
			return first(derr, want("dispatches", n, 2), want("debits", l.debits, 2))
		},
	},
	{
		name:    "a stale reservation of a removed tool is never run by a retry",
		catches: []string{bugs.RemovedToolTakeover},
		run: func(e *env) error {
			alice, id := e.principal("alice")
			key := "k-" + uuid.NewString()
			f := e.arm(faults.ReserveDone, faults.Pause, e.write)
			a := e.async(req{caller: &alice, key: key})
			e.await(f, a) // A reserved: nothing debited or dispatched
			e.must(e.st.RemoveTool(e.ctx, e.write))
			e.must(e.st.RevokePrincipal(e.ctx, id))
			e.clk.Advance(e.g.Settings().StaleLock + time.Second)
			_, errB := e.call(req{caller: &alice, key: key}) // may serve a stored outcome, never start work
			e.release(f)
			oa := e.wait(a)
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(err, want("retry's reason", reason(errB), gateway.ReasonUnknownTool),
				want("stalled holder's reason", reason(oa.err), gateway.ReasonInProgress),
				want("dispatches", n, 0), want("debits", l.debits, 0))
		},
	},
	{
		name:    "under an explicit permit and no key, read-only and approval-gated calls are refused",
		catches: []string{bugs.PermitSkipsKeyRules},
		run: func(e *env) error {
			permit := func(tool string) string {
				id, now := "pmt-"+uuid.NewString(), e.clk.Now()
				e.must(e.st.CreatePermit(e.ctx, store.Permit{ID: id, WalletID: e.wallet, APIKeyID: e.caller.APIKeyID, Tool: tool,
					Budget: 100, ExpiresAt: now.Add(time.Hour), CreatedAt: now}))
				return id
			}
			pr, pa := permit(e.read), permit(e.approve)
			_, errRead := e.call(req{tool: e.read, permit: pr})
			_, errApprove := e.call(req{tool: e.approve, permit: pa})
			// With a client key the permit is spent as usual.
			_, errKeyed := ok(run(e.call(req{tool: e.approve, permit: pa, key: "k-" + uuid.NewString()})))
			nr, err := e.dispatches(e.read)
			na, err2 := e.dispatches(e.approve)
			l := e.ledger()
			return first(err, err2, errKeyed, want("read-only reason", reason(errRead), gateway.ReasonKeyRequired),
				want("approval-gated reason", reason(errApprove), gateway.ReasonKeyRequired),
				want("read-only dispatches", nr, 0), want("approval-gated dispatches", na, 1), want("debits", l.debits, 1))
		},
	},
	{
		name:    "a lowered window still finds the slot cut under the longer one",
		catches: []string{bugs.SlotLookupByBucket},
		run: func(e *env) error {
			return e.replays(req{}, func() {
				s := e.g.Settings()
				s.Window = s.EffectiveWindow() / 2
				e.must(e.g.SetSettings(s))
			}, req{})
		},
	},
	{
		name:    "an unkeyed operation still running is joined past its window",
		catches: []string{bugs.RunningSlotExpires},
		run: func(e *env) error {
			return e.joinsHeld(req{}, e.g.Settings().EffectiveWindow()+time.Second, req{})
		},
	},
	{
		name:    "a call stalled before its charge past its permit's life is answered retryable",
		catches: []string{bugs.StalledPermitExpired},
		run: func(e *env) error {
			f := e.arm(faults.ReserveDone, faults.Pause, e.write)
			a := e.async(req{})
			e.await(f, a) // A reserved: nothing debited or dispatched
			e.clk.Advance(e.g.Settings().PermitTTL + time.Second)
			e.release(f)
			oa := e.wait(a)
			var ref *gateway.Refusal
			retry := errors.As(oa.err, &ref) && ref.Retryable
			rb, errB := ok(run(e.call(req{}))) // nothing ran: the retry runs it
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(errB, err, want("stalled call's reason", reason(oa.err), gateway.ReasonDispatchFailed),
				want("stalled call retryable", retry, true), want("retry replayed", rb.Replayed, false),
				want("dispatches", n, 1), want("debits", l.debits, 1), want("refunds", l.refunds, 0))
		},
	},
	{
		// The holder's process is gone (crash-01 kills it): its pause is
		// never released, and the retry reaches another process.
		name:    "a reservation another process left before its charge is taken over by a retry past the threshold",
		catches: []string{bugs.StaleReservationKept},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			f := e.arm(faults.ReserveDone, faults.Pause, e.write)
			a := e.async(req{key: key})
			e.await(f, a) // A reserved: nothing debited or dispatched
			other := e.process()
			e.clk.Advance(e.g.Settings().StaleLock + time.Second)
			rb, errB := ok(run(e.call(req{key: key, gw: other}))) // B takes the reservation over and runs it
			rc, errC := ok(run(e.call(req{key: key, gw: other})))
			n, err := e.dispatches(e.write)
			l := e.ledger()
			e.release(f)
			e.wait(a)
			return first(errB, errC, err, want("B replayed", rb.Replayed, false), want("C's receipt", rc.ID, rb.ID),
				want("C replayed", rc.Replayed, true), want("dispatches", n, 1), want("debits", l.debits, 1), want("refunds", l.refunds, 0))
		},
	},
	{
		name:    "a keyed retry that reaches another gateway process replays",
		catches: []string{bugs.KeyedRecordsPerProcess},
		run: func(e *env) error {
			key := "k-" + uuid.NewString()
			return e.replays(req{key: key}, func() {}, req{key: key, gw: e.process()})
		},
	},
	{
		name:    "a finished keyed operation still replays once real time has passed",
		catches: []string{bugs.FinishedKeyExpires},
		run: func(e *env) error {
			e.clk.Unfreeze() // the switch's lease is real time
			key := "k-" + uuid.NewString()
			return e.replays(req{key: key}, func() { time.Sleep(2 * gateway.BugLeaseForTest()) }, req{key: key})
		},
	},
	{
		name:    "a keyed retry replays until the retention ends and runs anew after it; a sweep purges what nobody asks for",
		catches: []string{bugs.PurgeInsideWindow},
		run: func(e *env) error {
			keep := e.g.Settings().Retention
			key := "k-" + uuid.NewString()
			if _, err := ok(run(e.call(req{args: `{"text":"swept"}`}))); err != nil {
				return err
			}
			a, err := ok(run(e.call(req{key: key})))
			if err != nil {
				return err
			}
			e.clk.Advance(keep - time.Second)
			b, err := ok(run(e.call(req{key: key})))
			if err != nil {
				return err
			}
			if err := first(want("a second before the retention ends: receipt", b.ID, a.ID), want("replayed", b.Replayed, true)); err != nil {
				return err
			}
			e.clk.Advance(2 * time.Second)
			late, err := ok(run(e.call(req{key: key})))
			if err != nil {
				return err
			}
			n, err := e.dispatches(e.write)
			l := e.ledger()
			// A minute on, the next call sweeps: the unkeyed call's record,
			// past its retention and never asked for again, goes too, and
			// nothing past the retention is left for a purge to find.
			e.clk.Advance(time.Minute)
			if _, err := ok(run(e.call(req{key: "k-" + uuid.NewString()}))); err != nil {
				return err
			}
			left, errLeft := e.st.PurgeRecords(e.ctx, e.clk.Now().Add(-keep), 100)
			return first(err, errLeft, want("past the retention: replayed", late.Replayed, false),
				want("dispatches", n, 3), want("debits", l.debits, 3),
				want("records past the retention after a sweep", left, 0))
		},
	},
	{
		name:    "a charged operation stalled past its retention is uncertain, never purged; its retention counts from its last write",
		catches: []string{bugs.PurgeUncertain},
		run: func(e *env) error {
			keep := e.g.Settings().Retention
			key := "k-" + uuid.NewString()
			f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
			a := e.async(req{key: key})
			e.await(f, a) // A charged, not dispatched
			e.clk.Advance(keep + time.Second)
			_, errB := e.call(req{key: key})
			e.release(f)
			ra, errA := ok(e.wait(a))
			e.clk.Advance(keep - time.Second) // the retention counts from A's outcome
			rc, errC := ok(run(e.call(req{key: key})))
			n, err := e.dispatches(e.write)
			l := e.ledger()
			return first(errA, errC, err, want("retry past the retention of a charged record in progress", reason(errB), gateway.ReasonOutcomeUnknown),
				want("C's receipt", rc.ID, ra.ID), want("C replayed", rc.Replayed, true),
				want("dispatches", n, 1), want("debits", l.debits, 1), want("refunds", l.refunds, 0))
		},
	},
	{
		name:    "a duplicate is in progress however long the first call's dispatch has run",
		catches: []string{bugs.ClaimLapses},
		run: func(e *env) error {
			e.clk.Unfreeze() // the switch's lease is real time
			key := "k-" + uuid.NewString()
			h := e.hold(e.write)
			a := e.async(req{key: key})
			e.started(h, a)
			time.Sleep(2 * gateway.BugLeaseForTest())
			_, errB := e.call(req{key: key})
			h.Release()
			ra, errA := ok(e.wait(a))
			n, err := e.dispatches(e.write)
			return first(errA, err, want("B's reason", reason(errB), gateway.ReasonInProgress),
				want("dispatches", n, 1), want("A replayed", ra.Replayed, false))
		},
	},
}

// ownResults makes alice's unkeyed call, then bob's with the same arguments
// on the same API key, both on the stateless wire or not: bob must get an
// operation of his own.
func (e *env) ownResults(stateless bool) error {
	alice, _ := e.principal("alice")
	bob, _ := e.principal("bob")
	a, err := ok(run(e.call(req{caller: &alice, stateless: stateless})))
	if err != nil {
		return err
	}
	b, err := ok(run(e.call(req{caller: &bob, stateless: stateless})))
	if err != nil {
		return err
	}
	n, err := e.dispatches(e.write)
	if a.ID == b.ID {
		return fmt.Errorf("bob got alice's receipt %s (replayed %v)", a.ID, b.Replayed)
	}
	return first(err, want("dispatches", n, 2), want("bob replayed", b.Replayed, false))
}

// replays makes call a, then (after between) call b, which must replay a's
// receipt: one dispatch and one debit in all.
func (e *env) replays(a req, between func(), b req) error {
	ra, err := ok(run(e.call(a)))
	if err != nil {
		return err
	}
	between()
	rb, err := ok(run(e.call(b)))
	if err != nil {
		return err
	}
	n, err := e.dispatches(e.write)
	l := e.ledger()
	return first(err, want("retry receipt", rb.ID, ra.ID), want("retry replayed", rb.Replayed, true),
		want("dispatches", n, 1), want("debits", l.debits, 1))
}

// replaysAcrossBoundary makes an unkeyed call before a window boundary,
// with the clock frozen, and its retry after the clock advanced by: the
// retry must replay it.
func (e *env) replaysAcrossBoundary(before, by time.Duration) error {
	e.clk.Freeze(e.boundary().Add(-before))
	a, err := ok(run(e.call(req{})))
	if err != nil {
		return err
	}
	e.clk.Advance(by)
	b, err := ok(run(e.call(req{})))
	if err != nil {
		return err
	}
	n, err := e.dispatches(e.write)
	return first(err, want("receipt of the retry", b.ID, a.ID), want("dispatches", n, 1))
}

// joinsHeld holds call a at dispatch.before (reserved and debited, not yet
// dispatched), moves the clock by d, and makes call b, which must never run
// a second time: answered in progress (a's tool may be running), or, once a
// has been silent for the stale-lock threshold, outcome_unknown (a may have
// been killed after its tool ran). Then a finishes: one dispatch and one
// debit in all.
func (e *env) joinsHeld(a req, d time.Duration, b req) error {
	wantB := gateway.ReasonInProgress
	if st := e.g.Settings().StaleLock; st > 0 && d >= st {
		wantB = gateway.ReasonOutcomeUnknown
	}
	f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
	ch := e.async(a)
	e.await(f, ch)
	e.clk.Advance(d)
	_, errB := e.call(b)
	e.release(f)
	ra, errA := ok(e.wait(ch))
	n, err := e.dispatches(e.write)
	l := e.ledger()
	return first(errA, err, want("B's reason", reason(errB), wantB),
		want("dispatches", n, 1), want("debits", l.debits, 1), want("A replayed", ra.Replayed, false))
}

// TestScenariosCatchBugs runs every scenario with no switch on (all must
// pass) and with each switch on (the scenarios listed for it must fail), on
// every store. It logs the catch table: which scenarios each switch fails.
func TestScenariosCatchBugs(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			b.check(t)
			t.Run("no bugs", func(t *testing.T) {
				for _, sc := range scenarios {
					t.Run(sc.name, func(t *testing.T) {
						t.Parallel()
						if err := runScenario(t, b, sc.run); err != nil {
							t.Fatal(err)
						}
					})
				}
			})
			table := map[string][]string{}
			var mu = make(chan struct{}, 1)
			t.Run("bugs", func(t *testing.T) {
				for _, bug := range bugs.All {
					t.Run(bug.Name, func(t *testing.T) {
						if bug.Layer != "" {
							t.Skipf("a switch of the %s layer, which these scenarios do not pass through", bug.Layer)
						}
						t.Parallel()
						caught := map[string]bool{}
						for _, sc := range scenarios {
							if err := runScenario(t, b, sc.run, bug.Name); err != nil {
								caught[sc.name] = true
								t.Logf("caught by %q: %v", sc.name, err)
							}
						}
						listed := 0
						for _, sc := range scenarios {
							for _, c := range sc.catches {
								if c == bug.Name {
									listed++
									if !caught[sc.name] {
										t.Errorf("scenario %q passed with %s on: the bug is not caught", sc.name, bug.Name)
									}
								}
							}
						}
						if listed == 0 {
							t.Errorf("no scenario lists %s", bug.Name)
						}
						names := make([]string, 0, len(caught))
						for n := range caught {
							names = append(names, n)
						}
						sort.Strings(names)
						mu <- struct{}{}
						table[bug.Name] = names
						<-mu
					})
				}
			})
			var lines []string
			for _, bug := range bugs.All {
				lines = append(lines, fmt.Sprintf("  %-26s %s", bug.Name, strings.Join(table[bug.Name], "; ")))
			}
			t.Logf("catch table (%s):\n%s", b.name, strings.Join(lines, "\n"))
		})
	}
}

var _ = store.KindDerived
