package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/store"
)

// The bug switches of this file replace a step of the call pipeline with a
// wrong one: a proxy with no idempotency, a run outside any reservation, a
// lookup before the reservation, a cancelled call forgotten, a replay
// served first or refreshed in the background. Each is reached by a
// one-line branch at the step it replaces. The correct path calls only
// undelivered, which notes nothing with its switch off.

// naiveCall is the no-idempotency bug: a proxy with no idempotency at all.
// Every call is reserved under a record key of its own, so no call ever
// finds another: no replay, no in-progress answer, no refusal of an unkeyed
// call; each is charged and dispatched. A client key is only echoed in the
// receipt, and a permit is not looked at.
func (g *Gateway) naiveCall(ctx context.Context, c *callState) (CallResponse, error) {
	k := c.r.ClientKey
	if k == "" {
		k = randomKeyPrefix + uuid.NewString()
	}
	p := keyPlan{kind: store.KindClient, clientKey: k,
		key: recordKey(store.KindClient, c.r.Caller.WalletID, c.r.Caller.APIKeyID, c.principalKey, c.tool.Name, uuid.NewString())}
	receipt := newReceipt()
	rec, _, err := g.reserveKeyed(ctx, c, p, g.firstCharge(c, receipt))
	if err != nil {
		return CallResponse{}, g.refusedCharge(ctx, c, rec, err)
	}
	g.reserved(ctx, c, rec)
	return g.run(ctx, c, rec, receipt)
}

// peekReplay serves a completed record before any check: only the
// replay-before-iga bug switch calls it.
func (g *Gateway) peekReplay(ctx context.Context, c *callState) (CallResponse, bool, error) {
	p, err := g.resolveKey(ctx, c)
	if err != nil {
		return CallResponse{}, false, nil // the correct path will give the refusal
	}
	rec, found, err := g.findStored(ctx, c, p)
	if err != nil || !found || rec.State != store.StateCompleted || rec.Fingerprint != c.fp {
		return CallResponse{}, false, err
	}
	resp, err := g.replay(ctx, c, rec)
	return resp, true, err
}

// dispatchUnreserved is the naive lease of the takeover-charged bug: a stale
// in-progress record is run again whatever it holds, outside the
// reservation, so a holder that was charged and stalled before its dispatch
// dispatches too when it resumes, and both are debited.
func (g *Gateway) dispatchUnreserved(ctx context.Context, c *callState, rec store.Record) (CallResponse, error) {
	body, _, err := g.runUnreserved(ctx, c, rec)
	if err != nil {
		return CallResponse{}, err
	}
	return CallResponse{Result: body}, nil
}

// runUnreserved is the bugs' own run, outside any reservation: a plain read
// of the balance, a debit no transaction ties to the record (the
// check-then-act), the dispatch and its log row. It returns the result with
// its receipt.
func (g *Gateway) runUnreserved(ctx context.Context, c *callState, rec store.Record) (json.RawMessage, string, error) {
	receipt := "rcpt-" + uuid.NewString()
	var charged int64
	if price := c.tool.Price; price > 0 {
		w, err := g.store.Wallet(ctx, rec.WalletID)
		if err != nil {
			return nil, "", g.storeErr("read wallet", err)
		}
		if w.Balance < price {
			return nil, "", Refuse(ReasonInsufficient, "wallet balance is below the price of %q (%d)", c.tool.Name, price)
		}
		err = g.appendDebit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryDebit,
			Amount: price, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: g.clock.Now()})
		if err != nil {
			return nil, "", g.storeErr("append debit", err)
		}
		charged = price
	}
	result, err := g.dispatch(ctx, DispatchRequest{Tool: c.tool, Arguments: c.r.Arguments, WalletID: rec.WalletID, RecordKey: rec.Key})
	if err != nil {
		return nil, "", Refuse(ReasonDispatchFailed, "the tool could not be reached: retry")
	}
	g.logDispatch(ctx, rec, g.dispatchRow(c, rec))
	body, err := withReceipt(result, Receipt{ID: receipt, IdempotencyKey: rec.ClientKey, Charged: charged})
	if err != nil {
		return nil, "", fmt.Errorf("gateway: build result: %w", err)
	}
	return body, receipt, nil
}

// forget is the cancel-forgets bug: clean-up written as if the request's
// cancellation meant the operation never happened. The tool did run (its
// dispatch is logged), but the record ends failed_refunded with the charge
// given back, exactly as a failure before dispatch would, so the next call
// with the same key reserves it afresh and dispatches and charges again.
func (g *Gateway) forget(ctx context.Context, c *callState, rec store.Record, receipt string, charged int64, d store.Dispatch) error {
	now := g.clock.Now()
	o := store.Outcome{State: store.StateFailedRefunded, Receipt: receipt, Now: now}
	if charged > 0 {
		o.Refund = &store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryRefund,
			Amount: charged, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	}
	g.logDispatch(ctx, rec, d)
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Finish(ctx, rec.Key, rec.Owner, o) }); err != nil {
		return g.storeErr("release cancelled call", err)
	}
	g.log.Info("tools/call cancelled by its client: outcome dropped, refunded", "tool", c.tool.Name, "record", rec.Key, "receipt", receipt)
	return fmt.Errorf("gateway: the client cancelled the call: %w", context.Canceled)
}

// undelivered is the replay-unmarked-undelivered bug's note that a
// stored outcome's response was never written (dropped, or failed after
// the tool ran); a no-op with the switch off.
func (g *Gateway) undelivered(key string) {
	if !g.bugs.On(bugs.ReplayUnmarkedUndelivered) {
		return
	}
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.unsent == nil {
		g.unsent = map[string]bool{}
	}
	g.unsent[key] = true
}

// firstDelivery says the record's outcome was never delivered before, and
// notes it delivered now: the replay about to be written is, as the bug
// sees it, its first delivery.
func (g *Gateway) firstDelivery(key string) bool {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	first := g.unsent[key]
	delete(g.unsent, key)
	return first
}

// revalidateAfter is how long the replay-revalidates bug waits before its
// background dispatch: longer than a scenario's settle period (the
// harness's default 50 ms), so the dispatch lands after the checks made
// right after the answer, and well under the run's final quiet period (1
// s), so the re-read at the run's end always sees it.
const revalidateAfter = 300 * time.Millisecond

// revalidate is the replay-revalidates bug: stale-while-revalidate, the
// replay already served, the operation is sent to its tool again in the
// background to refresh the stored result; the answer is discarded, and
// neither a dispatch row nor a ledger entry is written. The tool is read
// again, as a refresh resolves its route anew: a removed one is not sent.
func (g *Gateway) revalidate(rec store.Record, args json.RawMessage) {
	g.late.Add(1)
	go func() {
		defer g.late.Done()
		time.Sleep(revalidateAfter)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tool, err := g.store.Tool(ctx, rec.Tool)
		if err != nil || tool.Removed {
			return
		}
		if _, err := g.dispatch(ctx, DispatchRequest{Tool: tool, Arguments: args, WalletID: rec.WalletID, RecordKey: rec.Key}); err != nil {
			g.log.Warn("replay revalidation", "record", rec.Key, "err", err)
		}
	}()
}

// removedToolRuns is the removed-tool-runs bug: a removed tool's row still
// holds its route and price, and a call its key has no stored outcome for
// is run through them, outside any reservation.
func (g *Gateway) removedToolRuns(ctx context.Context, c *callState) (CallResponse, error) {
	p := keyPlan{kind: store.KindClient, clientKey: c.r.ClientKey,
		key: recordKey(store.KindClient, c.r.Caller.WalletID, c.r.Caller.APIKeyID, c.principalKey, c.tool.Name, c.r.ClientKey)}
	if rec, found, err := g.findStored(ctx, c, p); err != nil || (found && rec.State != store.StateFailedRefunded) {
		c.tool = store.Tool{Name: c.r.Tool}
		return g.missingTool(ctx, c)
	}
	body, _, err := g.runUnreserved(ctx, c, g.newRecord(c, p, uuid.NewString()))
	if err != nil {
		return CallResponse{}, err
	}
	return CallResponse{Result: body}, nil
}

// lookupThenDispatch is the concurrent-enqueue bug of the second seed review,
// kept only for the lookup-before-reserve switch: the key is looked up, the
// work billed and dispatched, and only then is the record written. Two twins
// both miss the lookup and both dispatch. dispatch.before sits between the
// lookup and the dispatch so a pause there makes the race deterministic.
func (g *Gateway) lookupThenDispatch(ctx context.Context, c *callState, p keyPlan) (CallResponse, error) {
	rec, found, err := g.findStored(ctx, c, p)
	if err != nil {
		return CallResponse{}, err
	}
	if found {
		return g.existing(ctx, c, rec)
	}
	if g.hit(ctx, faults.DispatchBefore, c) == faults.Fail {
		return CallResponse{}, Refuse(ReasonDispatchFailed, "the call failed before the tool ran: retry")
	}
	rec = g.newRecord(c, p, uuid.NewString())
	body, receipt, err := g.runUnreserved(ctx, c, rec)
	if err != nil {
		return CallResponse{}, err
	}
	if p.permit != nil {
		rec.PermitID = p.permit.ID
	}
	// The record comes last; a twin that wrote first makes this a no-op,
	// after this call has already dispatched and billed.
	if _, created, err := g.store.Reserve(ctx, store.ReserveRequest{Record: rec}); err != nil {
		return CallResponse{}, g.storeErr("reserve", err)
	} else if created {
		if err := g.store.Finish(ctx, rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: receipt, Result: body, Now: g.clock.Now()}); err != nil {
			return CallResponse{}, g.storeErr("finish", err)
		}
	}
	switch g.hit(ctx, faults.DispatchAfter, c) {
	case faults.Fail:
		return CallResponse{}, Refuse(ReasonResponseFailed, "the tool ran, but the response failed: retry to get it")
	case faults.DropResponse:
		return CallResponse{Drop: true}, nil
	}
	return CallResponse{Result: body}, nil
}

// cancelledWithClient is the cancel-reaches-upstream bug: the dispatch's
// context ends when the client's request does, so the upstream call is cut
// short though the tool already has it.
func cancelledWithClient(ctx context.Context, clientDone <-chan struct{}) (context.Context, context.CancelFunc) {
	dctx, stop := context.WithCancel(ctx)
	if clientDone != nil {
		go func() {
			select {
			case <-clientDone:
				stop()
			case <-dctx.Done():
			}
		}()
	}
	return dctx, stop
}

// currentPrice is the refund-at-current-price bug: a refund gives back what
// the tool costs now, read from the registry, not what its call was
// debited; a tool re-priced while the call was held pays the difference.
func (g *Gateway) currentPrice(ctx context.Context, c *callState, charged int64) int64 {
	t, err := g.store.Tool(ctx, c.tool.Name)
	if err != nil {
		return charged
	}
	return t.Price
}
