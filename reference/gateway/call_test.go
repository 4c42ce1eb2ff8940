package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// each runs fn on a fresh env of every backend, as a subtest.
func each(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.check(t)
			if err := runScenario(t, b, func(e *env) error { fn(t, e); return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func checkNothingHappened(t *testing.T, e *env, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if n, err := e.dispatches(tool); err != nil || n != 0 {
			t.Errorf("%s dispatched %d times (%v), want 0", tool, n, err)
		}
	}
	if l := e.ledger(); l.debits+l.refunds != 0 || l.balance != startFunds {
		t.Errorf("ledger %+v, want untouched", l)
	}
}

func TestRefusals(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		alice, aliceID := e.principal("alice")
		carol, _ := e.principal("carol", "some.other.tool")
		revoked, revokedID := e.principal("dave")
		e.must(e.st.RevokePrincipal(e.ctx, revokedID))
		stranger := e.caller
		stranger.Principal = &gateway.PrincipalRef{Provider: "harness", Issuer: "https://idp.test/" + e.wallet, Subject: "nobody-" + uuid.NewString()}
		_ = aliceID

		other := e.newCaller(e.newWallet(startFunds))
		now := e.clk.Now()
		permit := func(p store.Permit) string {
			p.ID = "pmt-" + uuid.NewString()
			if p.WalletID == "" {
				p.WalletID, p.APIKeyID = e.wallet, e.caller.APIKeyID
			}
			if p.Tool == "" {
				p.Tool = e.write
			}
			if p.ExpiresAt.IsZero() {
				p.ExpiresAt = now.Add(time.Minute)
			}
			p.CreatedAt = now
			e.must(e.st.CreatePermit(e.ctx, p))
			return p.ID
		}
		otherWalletPermit := permit(store.Permit{WalletID: other.WalletID, APIKeyID: other.APIKeyID, Budget: price})
		otherToolPermit := permit(store.Permit{Tool: e.read, Budget: price})
		expiredPermit := permit(store.Permit{Budget: price, ExpiresAt: now})
		smallPermit := permit(store.Permit{Budget: price - 1})

		for _, tc := range []struct {
			name   string
			r      req
			reason string
			retry  bool
		}{
			{"arguments not an object", req{args: `[1,2]`}, gateway.ReasonInvalidArguments, false},
			{"arguments not JSON", req{args: `{"a":`}, gateway.ReasonInvalidArguments, false},
			{"arguments with a duplicate key", req{args: `{"a":1,"a":2}`}, gateway.ReasonInvalidArguments, false},
			{"unknown tool", req{tool: "no.such." + uuid.NewString()}, gateway.ReasonUnknownTool, false},
			{"unknown tool with a key", req{tool: "no.such." + uuid.NewString(), key: "k-1"}, gateway.ReasonUnknownTool, false},
			{"unkeyed read-only tool", req{tool: e.read}, gateway.ReasonKeyRequired, false},
			{"unkeyed approval-gated tool", req{tool: e.approve}, gateway.ReasonKeyRequired, false},
			{"malformed client key", req{key: "bad\nkey"}, gateway.ReasonKeyInvalid, false},
			{"unregistered principal", req{caller: &stranger, key: "k-" + uuid.NewString()}, gateway.ReasonPrincipalDenied, false},
			{"unregistered principal unkeyed", req{caller: &stranger}, gateway.ReasonPrincipalDenied, false},
			{"revoked principal", req{caller: &revoked, key: "k-" + uuid.NewString()}, gateway.ReasonPrincipalDenied, false},
			{"principal not entitled to the tool", req{caller: &carol}, gateway.ReasonPrincipalDenied, false},
			{"principal denied before the key check", req{caller: &revoked, tool: e.read}, gateway.ReasonPrincipalDenied, false},
			{"no such permit", req{permit: "pmt-" + uuid.NewString()}, gateway.ReasonPermitInvalid, false},
			{"another wallet's permit", req{permit: otherWalletPermit}, gateway.ReasonPermitInvalid, false},
			{"another tool's permit", req{permit: otherToolPermit}, gateway.ReasonPermitInvalid, false},
			{"expired permit", req{permit: expiredPermit}, gateway.ReasonPermitExpired, false},
			{"expired permit with a key", req{permit: expiredPermit, key: "k-" + uuid.NewString()}, gateway.ReasonPermitExpired, false},
			{"permit budget below the price", req{permit: smallPermit}, gateway.ReasonPermitExhausted, false},
			{"no caller", req{caller: &gateway.Caller{}}, gateway.ReasonUnauthenticated, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.call(tc.r)
				var ref *gateway.Refusal
				if !errors.As(err, &ref) {
					t.Fatalf("err = %v, want refusal %s", err, tc.reason)
				}
				if ref.Reason != tc.reason || ref.Retryable != tc.retry || ref.Code != gateway.Codes[tc.reason] {
					t.Fatalf("refusal %+v, want reason %s retryable %v code %d", ref, tc.reason, tc.retry, gateway.Codes[tc.reason])
				}
			})
		}
		checkNothingHappened(t, e, e.write, e.read, e.approve)
		_ = alice

		// The refused permit call left no reservation: with budget, it runs.
		n := 0
		if _, err := ok(run(e.call(req{caller: &alice, key: "k-" + uuid.NewString()}))); err != nil {
			t.Fatal(err)
		}
		if n, _ = e.dispatches(e.write); n != 1 {
			t.Fatalf("dispatches %d", n)
		}
	})
}

func TestWindowSettings(t *testing.T) {
	b := sqliteBackend()
	st, _ := b.open(t)
	for _, s := range []gateway.Settings{
		{Window: -time.Second, PermitTTL: time.Minute, StaleLock: time.Minute},
		{Window: time.Minute, PermitTTL: 0, StaleLock: time.Minute},
		{Window: time.Minute, PermitTTL: time.Minute, StaleLock: -1},
	} {
		if _, err := gateway.New(gateway.Options{Store: st, Dispatcher: &fakeDispatcher{}, Settings: s}); err == nil {
			t.Errorf("New with %+v succeeded", s)
		}
	}
	if _, err := gateway.New(gateway.Options{Store: st, Dispatcher: &fakeDispatcher{}, Bugs: map[string]bool{"no-such-bug": true}}); err == nil {
		t.Error("New with an unknown bug switch succeeded")
	}
	g, err := gateway.New(gateway.Options{Store: st, Dispatcher: &fakeDispatcher{}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Settings() != gateway.DefaultSettings() {
		t.Errorf("zero settings gave %+v, want the defaults", g.Settings())
	}
	if eff := g.Settings().EffectiveWindow(); eff != 120*time.Second {
		t.Errorf("default effective window %v, want 120s", eff)
	}

	each(t, func(t *testing.T, e *env) {
		s := e.g.Settings()
		bad := s
		bad.Window = -time.Second
		if err := e.g.SetSettings(bad); err == nil {
			t.Fatal("SetSettings with a negative window succeeded")
		}
		if e.g.Settings() != s {
			t.Fatal("a refused SetSettings changed the settings")
		}
		zero := s
		zero.Window = 0
		e.must(e.g.SetSettings(zero))
		_, err := e.call(req{})
		if reason(err) != gateway.ReasonKeyRequired {
			t.Fatalf("unkeyed call with window 0: %v, want %s", err, gateway.ReasonKeyRequired)
		}
		checkNothingHappened(t, e, e.write)
		// Keyed calls still run with window 0.
		if _, err := ok(run(e.call(req{key: "k-" + uuid.NewString()}))); err != nil {
			t.Fatal(err)
		}
		e.g.ResetSettings()
		if e.g.Settings() != s {
			t.Fatalf("ResetSettings gave %+v, want %+v", e.g.Settings(), s)
		}
		if _, err := ok(run(e.call(req{}))); err != nil {
			t.Fatalf("unkeyed call after reset: %v", err)
		}
	})
}

func TestKeyedReplayIsWhole(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		key := "k-" + uuid.NewString()
		first, err := e.call(req{key: key, args: `{"text":"a <b> & c","n":1.50}`})
		if err != nil {
			t.Fatal(err)
		}
		rc1, res1, err := receiptOf(first)
		if err != nil {
			t.Fatal(err)
		}
		if rc1.Replayed || rc1.IdempotencyKey != key || rc1.Charged != price || !strings.HasPrefix(rc1.ID, "rcpt-") {
			t.Fatalf("first receipt %+v", rc1)
		}
		if !bytes.Contains(first.Result, []byte(`<ok>`)) || !bytes.Contains(res1.StructuredContent, []byte(`1.50`)) {
			t.Fatalf("result lost the tool's bytes: %s", first.Result)
		}
		if string(res1.Meta["tool/x"]) != "1" {
			t.Fatalf("the tool's own _meta was dropped: %s", first.Result)
		}
		second, err := e.call(req{key: key, args: `{ "n":1.50, "text":"a <b> & c" }`})
		if err != nil {
			t.Fatal(err)
		}
		rc2, res2, err := receiptOf(second)
		if err != nil {
			t.Fatal(err)
		}
		if rc2.ID != rc1.ID || !rc2.Replayed || rc2.Charged != price || rc2.IdempotencyKey != key {
			t.Fatalf("replay receipt %+v, first %+v", rc2, rc1)
		}
		if !bytes.Equal(res1.Content, res2.Content) || !bytes.Equal(res1.StructuredContent, res2.StructuredContent) || res1.IsError != res2.IsError {
			t.Fatalf("replay differs:\n%s\n%s", first.Result, second.Result)
		}
		// Byte for byte the same but for the flag.
		if want := bytes.Replace(first.Result, []byte(`"replayed":false`), []byte(`"replayed":true`), 1); !bytes.Equal(want, second.Result) {
			t.Fatalf("replay is not the stored result whole:\n%s\n%s", first.Result, second.Result)
		}
		// Other arguments under the same key: refused, nothing run.
		if _, err := e.call(req{key: key, args: `{"text":"other"}`}); reason(err) != gateway.ReasonKeyReused {
			t.Fatalf("reused key: %v", err)
		}
		if n, _ := e.dispatches(e.write); n != 1 {
			t.Fatalf("dispatches %d, want 1", n)
		}
		if l := e.ledger(); l.debits != 1 || l.balance != startFunds-price {
			t.Fatalf("ledger %+v", l)
		}
		// Another API key of the same wallet has its own key space.
		other := e.newCaller(e.wallet)
		rc3, err := ok(run(e.call(req{caller: &other, key: key})))
		if err != nil || rc3.ID == rc1.ID {
			t.Fatalf("other API key, same client key: %+v %v", rc3, err)
		}
	})
}

func TestUnkeyedDistinctArgumentsDispatch(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		a, err := ok(run(e.call(req{args: `{"text":"one"}`})))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.IdempotencyKey, gateway.DerivedKeyPrefix) {
			t.Fatalf("derived key %q", a.IdempotencyKey)
		}
		b, err := ok(run(e.call(req{args: `{"text":"two"}`})))
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == b.ID || a.IdempotencyKey == b.IdempotencyKey {
			t.Fatalf("distinct arguments share %+v %+v", a, b)
		}
		if n, _ := e.dispatches(e.write); n != 2 {
			t.Fatalf("dispatches %d", n)
		}
		if l := e.ledger(); l.debits != 2 {
			t.Fatalf("debits %d", l.debits)
		}
		// Another wallet with the same arguments is another operation.
		w := e.newWallet(startFunds)
		c := e.newCaller(w)
		rc, err := ok(run(e.call(req{caller: &c, args: `{"text":"one"}`})))
		if err != nil || rc.ID == a.ID || rc.IdempotencyKey == a.IdempotencyKey {
			t.Fatalf("other wallet: %+v %v", rc, err)
		}
	})
}

func TestBoundary(t *testing.T) {
	for _, tc := range []struct {
		name       string
		first, gap time.Duration // first call at boundary+first, retry gap later
		same       bool
	}{
		{"both 1ms before", -2 * time.Millisecond, time.Millisecond, true},
		{"1ms before, 1ms after", -time.Millisecond, 2 * time.Millisecond, true},
		{"at the boundary, 1ms after", 0, time.Millisecond, true},
		{"just under a window apart across the boundary", -time.Millisecond, 120*time.Second - time.Nanosecond, true},
		{"a whole window apart", -time.Millisecond, 120 * time.Second, false},
		{"two buckets apart", -time.Millisecond, 121 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			each(t, func(t *testing.T, e *env) {
				e.clk.Freeze(e.boundary().Add(tc.first))
				a, err := ok(run(e.call(req{})))
				if err != nil {
					t.Fatal(err)
				}
				e.clk.Advance(tc.gap)
				b, err := ok(run(e.call(req{})))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := e.dispatches(e.write)
				if got := a.ID == b.ID; got != tc.same || (tc.same && (n != 1 || !b.Replayed)) || (!tc.same && n != 2) {
					t.Fatalf("same receipt %v (want %v), dispatches %d, second %+v", got, tc.same, n, b)
				}
			})
		})
	}
}

func TestConcurrentTwins(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "unkeyed", true: "client key"}[keyed]
		t.Run(name, func(t *testing.T) {
			each(t, func(t *testing.T, e *env) {
				key := ""
				if keyed {
					key = "k-" + uuid.NewString()
				}
				const twins = 12
				var wg sync.WaitGroup
				outs := make([]outcome, twins)
				start := make(chan struct{})
				for i := range twins {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						outs[i] = run(e.call(req{key: key}))
					}()
				}
				close(start)
				wg.Wait()
				receipts := map[string]bool{}
				for _, o := range outs {
					switch reason(o.err) {
					case "":
						rc, _, err := receiptOf(o.resp)
						if err != nil {
							t.Fatal(err)
						}
						receipts[rc.ID] = true
					case gateway.ReasonInProgress:
					default:
						t.Fatalf("twin answered %v", o.err)
					}
				}
				if len(receipts) > 1 {
					t.Fatalf("twins got receipts %v: want one operation", receipts)
				}
				// After the race a retry gets the outcome (should every twin
				// have timed out on the store, this retry is the one run).
				settle(t, e, func() outcome { return run(e.call(req{key: key})) })
				n, err := e.dispatches(e.write)
				if err != nil || n != 1 {
					t.Fatalf("dispatches %d (%v), want one", n, err)
				}
				if l := e.ledger(); l.debits != 1 {
					t.Fatalf("debits %d", l.debits)
				}
			})
		})
	}
}

func TestFailuresAndRetries(t *testing.T) {
	t.Run("dispatcher unreachable is refunded, retry runs", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			key := "k-" + uuid.NewString()
			e.disp.failNext(1)
			if _, err := e.call(req{key: key}); reason(err) != gateway.ReasonDispatchFailed {
				t.Fatalf("first: %v", err)
			}
			if l := e.ledger(); l.net() != 0 || l.debits != 1 || l.refunds != 1 {
				t.Fatalf("after refund %+v", l)
			}
			rc, err := ok(run(e.call(req{key: key})))
			if err != nil || rc.Replayed {
				t.Fatalf("retry %+v %v", rc, err)
			}
			if l := e.ledger(); l.net() != -price {
				t.Fatalf("after retry %+v", l)
			}
		})
	})
	t.Run("unkeyed refunded failure advances the attempt", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			identity := e.g.IdentityForTest(e.caller, e.write, []byte(`{"text":"hello"}`))
			e.arm(faults.DispatchBefore, faults.Fail, e.write)
			if _, err := e.call(req{}); reason(err) != gateway.ReasonDispatchFailed {
				t.Fatalf("first: %v", err)
			}
			rc, err := ok(run(e.call(req{})))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := e.st.RecordsByIdentity(e.ctx, identity, time.Unix(0, 0))
			e.must(err)
			if len(recs) != 2 || recs[0].State != store.StateFailedRefunded || recs[1].Attempt != 1 || recs[1].State != store.StateCompleted {
				t.Fatalf("records %+v", recs)
			}
			if recs[1].ClientKey != rc.IdempotencyKey || recs[0].ClientKey == recs[1].ClientKey {
				t.Fatalf("slot keys %q %q, receipt key %q", recs[0].ClientKey, recs[1].ClientKey, rc.IdempotencyKey)
			}
		})
	})
	t.Run("response failed after dispatch: retry replays", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			e.arm(faults.DispatchAfter, faults.Fail, e.write)
			_, err := e.call(req{})
			var ref *gateway.Refusal
			if !errors.As(err, &ref) || ref.Reason != gateway.ReasonResponseFailed || !ref.Retryable {
				t.Fatalf("first: %v", err)
			}
			rc, err := ok(run(e.call(req{})))
			if err != nil || !rc.Replayed {
				t.Fatalf("retry %+v %v", rc, err)
			}
			if n, _ := e.dispatches(e.write); n != 1 {
				t.Fatalf("dispatches %d", n)
			}
			if l := e.ledger(); l.debits != 1 {
				t.Fatalf("debits %d", l.debits)
			}
		})
	})
	t.Run("dropped response: retry replays", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			e.arm(faults.DispatchAfter, faults.DropResponse, e.write)
			resp, err := e.call(req{})
			if err != nil || !resp.Drop {
				t.Fatalf("first: %+v %v", resp, err)
			}
			rc, err := ok(run(e.call(req{})))
			if err != nil || !rc.Replayed {
				t.Fatalf("retry %+v %v", rc, err)
			}
			if n, _ := e.dispatches(e.write); n != 1 {
				t.Fatalf("dispatches %d", n)
			}
		})
	})
	t.Run("insufficient funds: nothing dispatched, retry after top-up runs", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			poor := e.newWallet(price - 1)
			c := e.newCaller(poor)
			key := "k-" + uuid.NewString()
			for _, k := range []string{key, ""} {
				if _, err := e.call(req{caller: &c, key: k}); reason(err) != gateway.ReasonInsufficient {
					t.Fatalf("poor call (key %q): %v", k, err)
				}
			}
			if n, _ := e.dispatches(e.write); n != 0 || e.disp.count(e.write) != 0 {
				t.Fatalf("dispatched %d", n)
			}
			e.must(e.st.Credit(e.ctx, store.LedgerEntry{ID: "le-" + uuid.NewString(), WalletID: poor, Kind: store.EntryCredit, Amount: 2 * price, At: e.clk.Now()}))
			for _, k := range []string{key, ""} {
				if _, err := ok(run(e.call(req{caller: &c, key: k}))); err != nil {
					t.Fatalf("after top-up (key %q): %v", k, err)
				}
				w, _ := e.st.Wallet(e.ctx, poor)
				if k == key && w.Balance != 2*price-1 {
					t.Fatalf("balance %d", w.Balance)
				}
			}
		})
	})
	t.Run("explicit permit: spent once, replays, never a derived key", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			id := "pmt-" + uuid.NewString()
			e.must(e.st.CreatePermit(e.ctx, store.Permit{ID: id, WalletID: e.wallet, APIKeyID: e.caller.APIKeyID, Tool: e.write,
				Budget: price, ExpiresAt: e.clk.Now().Add(time.Hour), CreatedAt: e.clk.Now()}))
			a, err := ok(run(e.call(req{permit: id})))
			if err != nil {
				t.Fatal(err)
			}
			if a.IdempotencyKey != gateway.PermitKeyPrefix+id {
				t.Fatalf("permit call key %q", a.IdempotencyKey)
			}
			b, err := ok(run(e.call(req{permit: id})))
			if err != nil || b.ID != a.ID || !b.Replayed {
				t.Fatalf("replay under the spent permit %+v %v", b, err)
			}
			if _, err := e.call(req{permit: id, args: `{"text":"other"}`}); reason(err) != gateway.ReasonKeyReused {
				t.Fatalf("other arguments under the permit: %v", err)
			}
			// A client key with the spent permit: a new operation, refused for budget.
			if _, err := e.call(req{permit: id, key: "k-" + uuid.NewString()}); reason(err) != gateway.ReasonPermitExhausted {
				t.Fatalf("client key on a spent permit: %v", err)
			}
			pm, err := e.st.Permit(e.ctx, id)
			e.must(err)
			if pm.Spent != price {
				t.Fatalf("permit spent %d", pm.Spent)
			}
			if n, _ := e.dispatches(e.write); n != 1 {
				t.Fatalf("dispatches %d", n)
			}
		})
	})
	t.Run("cancelled client: bookkeeping still finishes", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			f := e.arm(faults.DispatchBefore, faults.Pause, e.write)
			ctx, cancel := context.WithCancel(e.ctx)
			ch := make(chan outcome, 1)
			go func() {
				ch <- run(e.g.Call(ctx, gateway.CallRequest{Caller: e.caller, Tool: e.write, Arguments: json.RawMessage(`{"text":"hello"}`)}))
			}()
			e.await(f, ch)
			cancel() // the pause ends with the client gone; the tool runs and its outcome is stored
			e.wait(ch)
			rc, err := ok(run(e.call(req{})))
			if err != nil || !rc.Replayed {
				t.Fatalf("retry %+v %v", rc, err)
			}
		})
	})
}

func TestReplayAuthorisation(t *testing.T) {
	t.Run("removed tool still replays to its principal", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			alice, _ := e.principal("alice")
			key := "k-" + uuid.NewString()
			a, err := ok(run(e.call(req{caller: &alice, key: key})))
			e.must(err)
			u, err := ok(run(e.call(req{caller: &alice, args: `{"text":"unkeyed"}`})))
			e.must(err)
			e.must(e.st.RemoveTool(e.ctx, e.write))
			b, err := ok(run(e.call(req{caller: &alice, key: key})))
			if err != nil || b.ID != a.ID || !b.Replayed {
				t.Fatalf("keyed replay of a removed tool %+v %v", b, err)
			}
			c, err := ok(run(e.call(req{caller: &alice, args: `{"text":"unkeyed"}`})))
			if err != nil || c.ID != u.ID || !c.Replayed {
				t.Fatalf("unkeyed replay of a removed tool %+v %v", c, err)
			}
			for name, r := range map[string]req{
				"new key":         {caller: &alice, key: "k-" + uuid.NewString()},
				"new arguments":   {caller: &alice, args: `{"text":"new"}`},
				"other principal": {key: key},
			} {
				if _, err := e.call(r); reason(err) != gateway.ReasonUnknownTool {
					t.Errorf("removed tool, %s: %v, want %s", name, err, gateway.ReasonUnknownTool)
				}
			}
			if _, err := e.call(req{caller: &alice, key: key, args: `{"text":"other"}`}); reason(err) != gateway.ReasonKeyReused {
				t.Errorf("removed tool, reused key: %v", err)
			}
			if n, _ := e.dispatches(e.write); n != 2 {
				t.Fatalf("dispatches %d", n)
			}
		})
	})
	t.Run("entitlement withdrawn: replay denied", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			alice, id := e.principal("alice")
			key := "k-" + uuid.NewString()
			if _, err := ok(run(e.call(req{caller: &alice, key: key}))); err != nil {
				t.Fatal(err)
			}
			p, err := e.st.PrincipalByID(e.ctx, id)
			e.must(err)
			p.Tools = []string{e.read}
			e.must(e.st.PutPrincipal(e.ctx, p))
			if _, err := e.call(req{caller: &alice, key: key}); reason(err) != gateway.ReasonPrincipalDenied {
				t.Fatalf("replay after the entitlement went: %v", err)
			}
			e.must(e.st.RemoveTool(e.ctx, e.write))
			if _, err := e.call(req{caller: &alice, key: key}); reason(err) != gateway.ReasonPrincipalDenied {
				t.Fatalf("replay of a removed tool after the entitlement went: %v", err)
			}
		})
	})
	t.Run("revoked between the entitlement check and the replay", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			alice, id := e.principal("alice")
			if _, err := ok(run(e.call(req{caller: &alice}))); err != nil {
				t.Fatal(err)
			}
			f := e.arm(faults.LockAcquired, faults.Pause, e.write)
			ch := e.async(req{caller: &alice})
			e.await(f, ch) // past step 2, before the slot is joined
			e.must(e.st.RevokePrincipal(e.ctx, id))
			e.release(f)
			if o := e.wait(ch); reason(o.err) != gateway.ReasonPrincipalDenied {
				t.Fatalf("replay after a revocation mid-call: %v", o.err)
			}
		})
	})
}

func TestAuthenticate(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		keyID, apiKey, err := e.g.IssueAPIKey(e.ctx, e.wallet)
		e.must(err)
		c, err := e.g.Authenticate(e.ctx, apiKey)
		if err != nil || c.WalletID != e.wallet || c.APIKeyID != keyID || c.Principal != nil {
			t.Fatalf("Authenticate = %+v, %v", c, err)
		}
		k, err := e.st.APIKey(e.ctx, keyID)
		e.must(err)
		if bytes.Contains([]byte(apiKey), k.SecretHash) || len(k.SecretHash) != 32 {
			t.Fatalf("stored secret hash %x", k.SecretHash)
		}
		wrong := apiKey[:len(apiKey)-1] + map[bool]string{true: "0", false: "1"}[apiKey[len(apiKey)-1] != '0']
		for _, bad := range []string{"", "mcpk_", "mcpk__", "Bearer " + apiKey, strings.TrimPrefix(apiKey, "mcpk_"), wrong,
			"mcpk_k-" + uuid.NewString() + "_00", "mcpk_" + keyID + "_"} {
			if _, err := e.g.Authenticate(e.ctx, bad); reason(err) != gateway.ReasonUnauthenticated {
				t.Errorf("Authenticate(%q) = %v, want unauthenticated", bad, err)
			}
		}
		if _, _, err := e.g.IssueAPIKey(e.ctx, "w-"+uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("IssueAPIKey for a missing wallet: %v", err)
		}

		// An imported key: only its hash is kept, it authenticates like an
		// issued one, and importing it again changes nothing.
		imported := "mcpk_k-imp-" + uuid.NewString()[:8] + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		for i, wantCreated := range []bool{true, false} {
			id, created, err := e.g.ImportAPIKey(e.ctx, e.wallet, imported)
			if err != nil || created != wantCreated || !strings.HasPrefix(imported, "mcpk_"+id+"_") {
				t.Fatalf("import %d: %q, %v, %v", i, id, created, err)
			}
		}
		if c, err := e.g.Authenticate(e.ctx, imported); err != nil || c.WalletID != e.wallet {
			t.Fatalf("Authenticate(imported) = %+v, %v", c, err)
		}
		if _, _, err := e.g.ImportAPIKey(e.ctx, "w-"+uuid.NewString(), "mcpk_k-x_"+strings.Repeat("a", 32)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ImportAPIKey for a missing wallet: %v", err)
		}
		if _, _, err := e.g.ImportAPIKey(e.ctx, e.wallet, "mcpk_k-x_short"); err == nil || strings.Contains(err.Error(), "short") {
			t.Errorf("ImportAPIKey of a short secret: %v (must be refused without quoting it)", err)
		}
	})
}

func TestLockIdentity(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		p := e.g.LockIdentityPrefix(e.wallet, e.write)
		if p != e.wallet+"|"+e.write+"|" {
			t.Fatalf("prefix %q", p)
		}
		if a, b := e.g.LockIdentityPrefix("w", "a|b"), e.g.LockIdentityPrefix("w", "a"); strings.HasPrefix(a, b) {
			t.Fatalf("prefix of tool a|b (%q) starts with tool a's (%q)", a, b)
		}
		identity := e.g.IdentityForTest(e.caller, e.write, []byte(`{"text":"hello"}`))
		if !strings.HasPrefix(identity, p) {
			t.Fatalf("identity %q lacks prefix %q", identity, p)
		}
		// While a call holds the lock, the control API can list it; after, it is gone.
		f := e.arm(faults.LockAcquired, faults.Pause, e.write)
		ch := e.async(req{})
		e.await(f, ch)
		locks, err := e.st.Locks(e.ctx, p)
		e.must(err)
		if len(locks) != 1 || locks[0].Identity != identity || locks[0].Fence != 1 {
			t.Fatalf("locks while held %+v", locks)
		}
		// A twin meanwhile is told to retry.
		if _, err := e.call(req{}); reason(err) != gateway.ReasonInProgress {
			t.Fatalf("twin while the lock is held: %v", err)
		}
		e.release(f)
		if _, err := ok(e.wait(ch)); err != nil {
			t.Fatal(err)
		}
		locks, err = e.st.Locks(e.ctx, p)
		e.must(err)
		if len(locks) != 0 {
			t.Fatalf("locks after the call %+v", locks)
		}
	})
}

func TestTakeoverAfterClaimLoses(t *testing.T) {
	// The seed's test: a takeover forced after the fence claim and before the
	// insert loses (lock timeout, in progress) and deletes nothing; the holder
	// goes on and dispatches once.
	each(t, func(t *testing.T, e *env) {
		s := e.g.Settings()
		s.StaleLock = 30 * time.Second
		e.must(e.g.SetSettings(s))
		prefix := e.g.LockIdentityPrefix(e.wallet, e.write)
		f := e.arm(faults.ClaimHeld, faults.Pause, e.write)
		a := e.async(req{})
		e.await(f, a)
		e.clk.Advance(s.StaleLock + time.Second)
		if _, err := e.call(req{}); reason(err) != gateway.ReasonInProgress {
			t.Fatalf("takeover during the claim: %v", err)
		}
		e.release(f)
		if _, err := ok(e.wait(a)); err != nil {
			t.Fatal(err)
		}
		locks, err := e.st.Locks(e.ctx, prefix)
		e.must(err)
		if len(locks) != 0 {
			t.Fatalf("locks left %+v", locks)
		}
		if n, _ := e.dispatches(e.write); n != 1 {
			t.Fatalf("dispatches %d", n)
		}
	})
}

// settle retries a call while it is answered in-progress (a twin storm may
// leave every twin timed out on the store) and fails t on any other refusal.
func settle(t *testing.T, e *env, call func() outcome) gateway.Receipt {
	t.Helper()
	for range 50 {
		o := call()
		if reason(o.err) == gateway.ReasonInProgress {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		rc, err := ok(o)
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	t.Fatal("still in progress after 50 retries")
	return gateway.Receipt{}
}

// secondGateway is another gateway process on the same database: its own
// store handle and fault registry, the same frozen clock (the harness sets
// both processes' clocks alike).
func (e *env) secondGateway() (*gateway.Gateway, *faults.Registry) {
	f := faults.New()
	e.t.Cleanup(f.Reset)
	g, err := gateway.New(gateway.Options{Store: e.reopen(e.t), Clock: e.clk, Faults: f, Dispatcher: e.disp,
		Settings: e.g.Settings(), StoreKind: e.g.StoreKind()})
	e.must(err)
	return g, f
}

func TestTwoGateways(t *testing.T) {
	t.Run("twins split across two processes dispatch once", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			g2, _ := e.secondGateway()
			for _, key := range []string{"", "k-" + uuid.NewString()} {
				var wg sync.WaitGroup
				errs := make(chan error, 16)
				start := make(chan struct{})
				for i := range 16 {
					g := e.g
					if i%2 == 1 {
						g = g2
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						_, err := g.Call(e.ctx, gateway.CallRequest{Caller: e.caller, Tool: e.write, Arguments: json.RawMessage(`{"text":"split"}`), ClientKey: key})
						if r := reason(err); r != "" && r != gateway.ReasonInProgress {
							errs <- err
						}
					}()
				}
				close(start)
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatalf("twin (key %q): %v", key, err)
				}
				settle(t, e, func() outcome {
					return run(g2.Call(e.ctx, gateway.CallRequest{Caller: e.caller, Tool: e.write, Arguments: json.RawMessage(`{"text":"split"}`), ClientKey: key}))
				})
			}
			if n, err := e.dispatches(e.write); err != nil || n != 2 {
				t.Fatalf("dispatches %d (%v), want one per operation", n, err)
			}
			if l := e.ledger(); l.debits != 2 {
				t.Fatalf("debits %d", l.debits)
			}
		})
	})
	t.Run("takeover by the other process fences the first", func(t *testing.T) {
		each(t, func(t *testing.T, e *env) {
			g2, _ := e.secondGateway()
			f := e.arm(faults.FenceRead, faults.Pause, e.write)
			a := e.async(req{})
			e.await(f, a)
			e.clk.Advance(e.g.Settings().StaleLock + time.Second)
			rb, err := ok(run(g2.Call(e.ctx, gateway.CallRequest{Caller: e.caller, Tool: e.write, Arguments: json.RawMessage(`{"text":"hello"}`)})))
			if err != nil || rb.Replayed {
				t.Fatalf("takeover call %+v %v", rb, err)
			}
			e.release(f)
			if o := e.wait(a); reason(o.err) != gateway.ReasonInProgress {
				t.Fatalf("fenced holder: %v", o.err)
			}
			// The first process now replays the second's outcome.
			rc, err := ok(run(e.call(req{})))
			if err != nil || rc.ID != rb.ID {
				t.Fatalf("replay on the first process %+v %v", rc, err)
			}
			if n, _ := e.dispatches(e.write); n != 1 {
				t.Fatalf("dispatches %d", n)
			}
		})
	})
}

// TestChangesSeenByEveryProcess: what another gateway process changes in
// the store, this one acts on at its next call. A key imported there
// authenticates here at once, though this gateway looked its id up before
// it existed (no key is remembered as missing); that key revoked there, a
// principal revoked and a tool removed there are refused, denied and
// unknown here on the very next call (none is remembered at all), though
// this gateway had just accepted the key.
func TestChangesSeenByEveryProcess(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		g2, _ := e.secondGateway()
		other := e.reopen(e.t) // the other process's store, as its control API writes it

		apiKey := "mcpk_k-two-" + uuid.NewString()[:8] + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		if _, err := e.g.Authenticate(e.ctx, apiKey); reason(err) != gateway.ReasonUnauthenticated {
			t.Fatalf("Authenticate before the key exists = %v, want unauthenticated", err)
		}
		if _, _, err := g2.ImportAPIKey(e.ctx, e.wallet, apiKey); err != nil {
			t.Fatal(err)
		}
		if c, err := e.g.Authenticate(e.ctx, apiKey); err != nil || c.WalletID != e.wallet {
			t.Fatalf("Authenticate after the other process imported the key = %+v, %v", c, err)
		}
		keyID, _, _ := strings.Cut(strings.TrimPrefix(apiKey, "mcpk_"), "_")
		e.must(other.RevokeAPIKey(e.ctx, keyID))
		for name, g := range map[string]*gateway.Gateway{"this process": e.g, "the revoking process": g2} {
			_, err := g.Authenticate(e.ctx, apiKey)
			if reason(err) != gateway.ReasonUnauthenticated || !strings.Contains(err.Error(), "revoked") {
				t.Errorf("Authenticate in %s after the other process revoked the key = %v, want unauthenticated saying revoked", name, err)
			}
		}
		if _, _, err := g2.ImportAPIKey(e.ctx, e.wallet, apiKey); err != nil {
			t.Fatalf("importing the revoked key again (a restart with the same fixtures): %v", err)
		}
		if _, err := e.g.Authenticate(e.ctx, apiKey); reason(err) != gateway.ReasonUnauthenticated {
			t.Errorf("Authenticate after the revoked key was imported again = %v, want unauthenticated: an import never revives a key", err)
		}
		if _, err := e.g.Authenticate(e.ctx, apiKey[:len(apiKey)-1]+"x"); err == nil || strings.Contains(err.Error(), "revoked") {
			t.Errorf("Authenticate with a revoked key's id and a wrong secret = %v, want plain unauthenticated (revocation told only to the secret's holder)", err)
		}

		caller, pid := e.principal("two-processes")
		if _, err := e.call(req{caller: &caller, args: `{"text":"before revocation"}`}); err != nil {
			t.Fatalf("call as the principal: %v", err)
		}
		e.must(other.RevokePrincipal(e.ctx, pid))
		if _, err := e.call(req{caller: &caller, args: `{"text":"after revocation"}`}); reason(err) != gateway.ReasonPrincipalDenied {
			t.Errorf("call after the other process revoked the principal: %v, want principal_denied", err)
		}

		if _, err := e.call(req{args: `{"text":"before removal"}`}); err != nil {
			t.Fatalf("call: %v", err)
		}
		e.must(other.RemoveTool(e.ctx, e.write))
		if _, err := e.call(req{args: `{"text":"after removal"}`}); reason(err) != gateway.ReasonUnknownTool {
			t.Errorf("call after the other process removed the tool: %v, want unknown_tool", err)
		}
	})
}

// TestLockHeldServesCompletedSlot: while a call holds an identity's retry
// lock, a retry of that identity's completed call is served its stored
// outcome from a plain read instead of being told to retry; with nothing
// completed to join, a twin is still told to retry. One dispatch in all.
func TestLockHeldServesCompletedSlot(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		first, err := ok(e.callOutcome(req{args: `{"text":"settled"}`}))
		if err != nil || first.Replayed {
			t.Fatalf("first call: %+v, %v", first, err)
		}
		f := e.arm(faults.LockAcquired, faults.Pause, e.write)
		holder := e.async(req{args: `{"text":"settled"}`})
		e.await(f, holder)
		rc, err := ok(e.callOutcome(req{args: `{"text":"settled"}`}))
		if err != nil || !rc.Replayed || rc.ID != first.ID {
			t.Errorf("retry while the lock is held: %+v, %v; want the first call's receipt %s, replayed", rc, err, first.ID)
		}
		e.release(f)
		if rc, err := ok(e.wait(holder)); err != nil || rc.ID != first.ID {
			t.Errorf("the lock holder: %+v, %v; want the first call's receipt", rc, err)
		}

		f = e.arm(faults.LockAcquired, faults.Pause, e.write)
		holder = e.async(req{args: `{"text":"running"}`})
		e.await(f, holder)
		if _, err := e.call(req{args: `{"text":"running"}`}); reason(err) != gateway.ReasonInProgress {
			t.Errorf("twin of a call that holds the lock and has no slot yet: %v, want in progress", err)
		}
		e.release(f)
		if _, err := ok(e.wait(holder)); err != nil {
			t.Fatal(err)
		}
		if n, err := e.dispatches(e.write); err != nil || n != 2 {
			t.Errorf("%d dispatches (%v), want 2: one per distinct call", n, err)
		}
	})
}

func (e *env) callOutcome(r req) outcome {
	resp, err := e.call(r)
	return outcome{resp, err}
}

// TestUnrelatedUnkeyedCallsDoNotQueue: the retry lock's identity holds the
// caller, the tool and the arguments, so while one unkeyed call holds its
// lock, an unkeyed call of the same caller and tool with other arguments
// runs at once, and one with the same arguments is told to retry.
func TestUnrelatedUnkeyedCallsDoNotQueue(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		f := e.arm(faults.LockAcquired, faults.Pause, e.write)
		holder := e.async(req{args: `{"text":"one"}`})
		e.await(f, holder)
		if _, err := ok(e.callOutcome(req{args: `{"text":"two"}`})); err != nil {
			t.Errorf("unkeyed call with other arguments while the first holds its lock: %v", err)
		}
		if _, err := e.call(req{args: `{"text":"one"}`}); reason(err) != gateway.ReasonInProgress {
			t.Errorf("its twin: %v, want in progress", err)
		}
		e.release(f)
		if _, err := ok(e.wait(holder)); err != nil {
			t.Fatal(err)
		}
	})
}
