package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/store"
)

// Uncertain is an operation answered outcome_unknown: charged, its owner
// silent for the stale-lock threshold. Receipt and Charged are its debit's
// ("" and 0 for a free tool, whose charge writes no ledger entry).
type Uncertain struct {
	Record  store.Record
	Receipt string
	Charged int64
}

// Settlement outcomes an operator may choose.
const (
	SettleCompleted = "completed" // the tool ran: Result is its CallToolResult
	SettleRefunded  = "refunded"  // it did not: the debit is given back
)

// Settlement is an operator's decision on an uncertain operation.
type Settlement struct {
	Outcome string
	Result  json.RawMessage // the CallToolResult, for SettleCompleted only
}

// Uncertain lists the operations a retry would be answered outcome_unknown
// for now, by the gateway clock and the stale-lock threshold in force.
func (g *Gateway) Uncertain(ctx context.Context) ([]Uncertain, error) {
	set := g.Settings()
	if set.StaleLock <= 0 {
		return nil, nil // nothing is ever stale, so nothing is uncertain
	}
	recs, err := g.store.UncertainRecords(ctx, g.clock.Now().Add(-set.StaleLock))
	if err != nil {
		return nil, g.storeErr("read uncertain records", err)
	}
	out := make([]Uncertain, 0, len(recs))
	for _, rec := range recs {
		debit, err := g.chargeEntry(ctx, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, Uncertain{Record: rec, Receipt: debit.Receipt, Charged: debit.Amount})
	}
	return out, nil
}

// Settle decides an uncertain operation for good. Completed stores result
// under the receipt of its debit (a new one for a free tool) for every
// retry to replay, as if its owner had stored it. Refunded gives the debit
// back and ends the record failed_refunded, as a failure before dispatch
// does, so the next retry runs the operation afresh. Either is refused with
// store.ErrNotUncertain once the record is not uncertain any more (its
// owner finished it, say): the store re-checks in the same transaction.
func (g *Gateway) Settle(ctx context.Context, key string, s Settlement) (Uncertain, store.Record, error) {
	set := g.Settings()
	now := g.clock.Now()
	rec, err := g.store.Record(ctx, key)
	if err != nil {
		return Uncertain{}, store.Record{}, g.storeErr("read record", err)
	}
	staleBefore := now.Add(-set.StaleLock)
	if set.StaleLock <= 0 || rec.State != store.StateInProgress || !rec.Charged || rec.UpdatedAt.After(staleBefore) {
		return Uncertain{}, rec, fmt.Errorf("gateway: record %s (%s): %w", key, rec.State, store.ErrNotUncertain)
	}
	debit, err := g.chargeEntry(ctx, rec)
	if err != nil {
		return Uncertain{}, rec, err
	}
	u := Uncertain{Record: rec, Receipt: debit.Receipt, Charged: debit.Amount}
	st := store.Settlement{Owner: rec.Owner, StaleBefore: staleBefore}
	switch s.Outcome {
	case SettleCompleted:
		if u.Receipt == "" {
			u.Receipt = newReceipt()
		}
		body, err := withReceipt(s.Result, Receipt{ID: u.Receipt, IdempotencyKey: rec.ClientKey, Charged: u.Charged})
		if err != nil {
			return u, rec, fmt.Errorf("gateway: settled result: %w", err)
		}
		st.Outcome = store.Outcome{State: store.StateCompleted, Receipt: u.Receipt, Result: body, Now: now}
	case SettleRefunded:
		st.Outcome = store.Outcome{State: store.StateFailedRefunded, Receipt: u.Receipt, Now: now}
		kept, err := g.stillKept(ctx, rec, debit)
		if err != nil {
			return u, rec, err
		}
		if kept && !g.bugs.On(bugs.SettleRefundUnwritten) { // BUG settle-refund-unwritten
			st.Outcome.Refund = &store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: debit.WalletID, Kind: store.EntryRefund,
				Amount: u.Charged, RecordKey: rec.Key, Receipt: u.Receipt, Tool: rec.Tool, At: now}
		}
	default:
		return u, rec, fmt.Errorf("gateway: settlement outcome %q: want %q or %q", s.Outcome, SettleCompleted, SettleRefunded)
	}
	if err := g.store.Settle(ctx, key, st); err != nil {
		return u, rec, g.storeErr("settle", err)
	}
	got, err := g.store.Record(ctx, key)
	if err != nil {
		return u, rec, g.storeErr("read settled record", err)
	}
	g.log.Info("uncertain operation settled", "record", key, "outcome", s.Outcome, "receipt", u.Receipt, "charged", u.Charged)
	return u, got, nil
}

// stillKept says rec's debit is charged and, under the uncertain-refunded
// bug, not refunded already by an outcome_unknown answer: a settlement
// refunded gives back only what the wallet still pays. Without the bug
// nothing refunds an uncertain operation's debit but its settlement.
func (g *Gateway) stillKept(ctx context.Context, rec store.Record, debit store.LedgerEntry) (bool, error) {
	if debit.Amount <= 0 || !g.bugs.On(bugs.UncertainRefunded) { // BUG uncertain-refunded
		return debit.Amount > 0, nil
	}
	refunded, err := g.refundedEntry(ctx, rec, debit)
	return !refunded, err
}

// refundUncertain is the uncertain-refunded bug: the debit of an
// operation answered outcome_unknown is given back, once, while the
// operation stays in progress and uncertain. A failed write is only
// logged: the answer stands either way.
func (g *Gateway) refundUncertain(ctx context.Context, rec store.Record, debit store.LedgerEntry) {
	refunded, err := g.refundedEntry(ctx, rec, debit)
	if err == nil && !refunded {
		err = g.appendRefund(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: debit.WalletID, Kind: store.EntryRefund,
			Amount: debit.Amount, RecordKey: rec.Key, Receipt: debit.Receipt, Tool: rec.Tool, At: g.clock.Now()})
	}
	if err != nil {
		g.log.Warn("refund an uncertain operation's debit", "record", rec.Key, "err", err)
	}
}

// refundedEntry says the ledger holds a refund of debit, rec's charge.
func (g *Gateway) refundedEntry(ctx context.Context, rec store.Record, debit store.LedgerEntry) (bool, error) {
	entries, err := g.store.Ledger(ctx, rec.WalletID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, g.storeErr("read ledger of "+rec.WalletID, err)
	}
	return slices.ContainsFunc(entries, func(e store.LedgerEntry) bool {
		return e.Kind == store.EntryRefund && e.RecordKey == rec.Key && e.Receipt == debit.Receipt
	}), nil
}

// chargeEntry is rec's debit, the zero entry when there is none (a free
// tool's charge writes no entry): an in-progress record keeps no receipt
// of its own, its ledger entry does.
func (g *Gateway) chargeEntry(ctx context.Context, rec store.Record) (store.LedgerEntry, error) {
	entries, err := g.store.Ledger(ctx, rec.WalletID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.LedgerEntry{}, g.storeErr("read ledger of "+rec.WalletID, err)
	}
	var debit store.LedgerEntry
	for _, e := range entries {
		if e.RecordKey == rec.Key && e.Kind == store.EntryDebit {
			debit = e // the latest: a refunded earlier attempt left its own
		}
	}
	return debit, nil
}
