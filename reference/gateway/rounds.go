package gateway

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/store"
)

// InputRequired is a Dispatcher's answer when the upstream asked the client
// for input before it would finish (a 2026-07-28 input-required result):
// Result is that result, for the client to answer in the call's next round.
//
// A multi-round call is one operation, charged once: a round that ends
// asking for input is refunded like a call that failed before its tool ran
// (the record is failed_refunded, the debit given back, no dispatch logged),
// since the tool has not done its work yet; the round that finishes is
// charged and its result stored. So a retry of the finished call replays its
// final result, whichever round it repeats, and a retry of a round that
// asked for input asks again (docs/wire.md).
type InputRequired struct {
	Result json.RawMessage
}

func (e *InputRequired) Error() string { return "the upstream asked the client for input" }

// inputRequired ends a round that asked for input: refunded, nothing stored
// but the refund, the upstream's result answered as it is.
func (g *Gateway) inputRequired(ctx context.Context, c *callState, rec store.Record, receipt string, charged int64, ir *InputRequired) (CallResponse, error) {
	now := g.clock.Now()
	o := store.Outcome{State: store.StateFailedRefunded, Receipt: receipt, Now: now}
	if charged > 0 && !g.bugs.On(bugs.RoundsCharged) { // BUG rounds-charged: every round is paid for
		o.Refund = &store.LedgerEntry{ID: "le-" + uuid.NewString(), WalletID: rec.WalletID, Kind: store.EntryRefund,
			Amount: charged, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	}
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Finish(ctx, rec.Key, rec.Owner, o) }); err != nil {
		g.log.Error("refund a round that asked for input", "record", rec.Key, "err", err)
		return CallResponse{}, g.storeErr("refund", err)
	}
	g.log.Info("tools/call round asked for input, refunded", "tool", c.tool.Name, "record", rec.Key)
	return CallResponse{Result: ir.Result}, nil
}
