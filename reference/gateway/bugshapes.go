package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/canonical"
	"github.com/mcpconform/mcpconform/reference/store"
)

// The bugs of this file live in the shapes of what a call carries: its
// key's letters and length, its arguments' nesting and member order, an
// upstream's failure, a balance equal to the price. Only their switches
// call them.

// bugKey is the client key as key-case-folded and key-truncated see it.
func (g *Gateway) bugKey(k string) string {
	if g.bugs.On(bugs.KeyCaseFolded) {
		k = strings.ToLower(k)
	}
	if g.bugs.On(bugs.KeyTruncated) && len(k) > 32 {
		k = k[:32]
	}
	return k
}

// bugFingerprinted is what the fingerprint is taken over: the canonical
// arguments, or as fingerprint-raw-bytes and fingerprint-shallow see them.
func (g *Gateway) bugFingerprinted(raw, canon []byte) []byte {
	switch {
	case g.bugs.On(bugs.FingerprintRawBytes):
		return raw
	case g.bugs.On(bugs.FingerprintShallow):
		var top map[string]json.RawMessage
		if json.Unmarshal(canon, &top) != nil {
			return canon
		}
		for k, v := range top {
			if t := bytes.TrimSpace(v); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
				top[k] = json.RawMessage(`"` + string(t[:1]) + `"`)
			}
		}
		b, err := json.Marshal(top)
		if err != nil {
			return canon
		}
		return b
	}
	return canon
}

// bugSortedLists is the canonical arguments with every array's elements in
// byte order of their own canonical form, at every depth, as
// fingerprint-sorted-lists takes them (lists read as sets).
func (g *Gateway) bugSortedLists(canon []byte) []byte {
	if !g.bugs.On(bugs.FingerprintSortedLists) {
		return canon
	}
	if out, err := canonical.JSON(sortLists(canon)); err == nil {
		return out
	}
	return canon
}

// sortLists leaves a value it cannot decode as it came: the arguments
// were canonical JSON already, so that is never one of theirs.
func sortLists(v json.RawMessage) json.RawMessage {
	var out any = v
	var members map[string]json.RawMessage
	var elems []json.RawMessage
	switch {
	case json.Unmarshal(v, &members) == nil && members != nil:
		for k, m := range members {
			members[k] = sortLists(m)
		}
		out = members
	case json.Unmarshal(v, &elems) == nil && elems != nil:
		for i, e := range elems {
			elems[i] = sortLists(e)
		}
		slices.SortFunc(elems, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
		out = elems
	}
	b, err := json.Marshal(out)
	if err != nil {
		return v
	}
	return b
}

// isErrorResult says a tool's result is a failure it reported (isError).
func isErrorResult(result json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// errorNotStored answers a tool's result (its isError result, or one of
// large arguments) as it came, but keeps it out of the record: the record ends failed_refunded with its debit given
// back, as if nothing had run, so a retry runs the tool again.
func (g *Gateway) errorNotStored(ctx context.Context, c *callState, rec store.Record, receipt string, charged int64, result json.RawMessage) (CallResponse, error) {
	g.logDispatch(ctx, rec, g.dispatchRow(c, rec))
	body, err := withReceipt(result, Receipt{ID: receipt, IdempotencyKey: rec.ClientKey, Charged: charged})
	if err != nil {
		return CallResponse{}, err
	}
	now := g.clock.Now()
	o := store.Outcome{State: store.StateFailedRefunded, Receipt: receipt, Now: now}
	if charged > 0 {
		o.Refund = &store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryRefund,
			Amount: charged, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	}
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Finish(ctx, rec.Key, rec.Owner, o) }); err != nil {
		return CallResponse{}, g.storeErr("finish", err)
	}
	return CallResponse{Result: body}, nil
}

// atBoundary says the payer holds no more than price, which funds-boundary
// refuses though the balance covers it.
func (g *Gateway) atBoundary(ctx context.Context, payer string, price int64) bool {
	if price <= 0 {
		return false
	}
	w, err := g.store.Wallet(ctx, payer)
	return err == nil && w.Balance == price
}

// checkFundsEarly is funds-unlocked's one balance check, made once the
// call holds its reservation and before its charge: a wallet that cannot
// pay now drops its reservation, uncharged, and is refused. A wallet about to run dry
// waits a moment after the read, as a gateway doing other work between its
// check and its debit would: calls racing for the last credits all read
// the balance before any of them is charged, every time, not by chance.
func (g *Gateway) checkFundsEarly(ctx context.Context, c *callState, rec store.Record) error {
	w, err := g.store.Wallet(ctx, rec.WalletID)
	if err != nil {
		return g.storeErr("read wallet", err)
	}
	if w.Balance < 8*c.tool.Price {
		time.Sleep(50 * time.Millisecond)
	}
	if w.Balance >= c.tool.Price {
		return nil
	}
	g.dropReservation(ctx, rec)
	return Refuse(ReasonInsufficient, "wallet balance is below the price of %q (%d)", c.tool.Name, c.tool.Price)
}

// chargeUnchecked is funds-unlocked's charge once the store found the
// balance short: the call passed the check when it arrived, so the debit is
// written anyway and the wallet overdrawn.
func (g *Gateway) chargeUnchecked(ctx context.Context, debit store.LedgerEntry) error {
	return g.durable(ctx, func(ctx context.Context) error { return g.appendDebit(ctx, debit) })
}
