package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/relay"
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
	if g.bugs.On(bugs.RoundsStoreQuestion) {
		g.rememberQuestion(rec, ir.Result) // BUG rounds-store-question
	}
	now := g.clock.Now()
	o := store.Outcome{State: store.StateFailedRefunded, Receipt: receipt, Now: now}
	if charged > 0 && !g.bugs.On(bugs.RoundsCharged) { // BUG rounds-charged: every round is paid for
		o.Refund = &store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: rec.WalletID, Kind: store.EntryRefund,
			Amount: charged, RecordKey: rec.Key, Receipt: receipt, Tool: c.tool.Name, At: now}
	}
	if err := g.durable(ctx, func(ctx context.Context) error { return g.store.Finish(ctx, rec.Key, rec.Owner, o) }); err != nil {
		g.log.Error("refund a round that asked for input", "record", rec.Key, "err", err)
		return CallResponse{}, g.storeErr("refund", err)
	}
	g.log.Info("tools/call round asked for input, refunded", "tool", c.tool.Name, "record", rec.Key)
	return CallResponse{Result: ir.Result}, nil
}

// roundAsNewWork is the rounds-replay-reruns bug: a call carrying the
// client's answers to an earlier round is taken for new work, under a
// record key of its own, so its stored outcome is never found.
func (g *Gateway) roundAsNewWork(ctx context.Context, c *callState, p keyPlan) keyPlan {
	if relay.RoundFrom(ctx) == nil || p.kind != store.KindClient {
		return p
	}
	p.key = recordKey(store.KindClient, c.r.Caller.WalletID, c.r.Caller.APIKeyID, c.principalKey, c.tool.Name,
		c.r.ClientKey+"#round-"+uuid.NewString())
	return p
}

// rememberQuestion keeps a round's input-required result for the
// rounds-store-question bug.
func (g *Gateway) rememberQuestion(rec store.Record, result json.RawMessage) {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.asked == nil {
		g.asked = map[string][]byte{}
	}
	g.asked[rec.Key] = result
}

// storedQuestion is the rounds-store-question bug: the outcome stored for
// a finished multi-round call is the question its earlier round asked,
// under the finished round's receipt; the live answer is still right.
func (g *Gateway) storedQuestion(rec store.Record, receipt string, charged int64, body json.RawMessage) json.RawMessage {
	g.callsMu.Lock()
	q, ok := g.asked[rec.Key]
	g.callsMu.Unlock()
	if !ok {
		return body
	}
	stored, err := withReceipt(q, Receipt{ID: receipt, IdempotencyKey: rec.ClientKey, Charged: charged})
	if err != nil {
		return body
	}
	return stored
}

// capabilityRefusal reports whether a dispatch failed on an upstream's
// refusal for a client capability the caller did not declare (-32021).
func capabilityRefusal(cause error) bool {
	ref := (*Refusal)(nil)
	return errors.As(cause, &ref) && ref.Reason == ReasonCapabilitiesMissing
}

// roundFingerprint is the rounds-fingerprinted bug: a later round's
// answers and state are hashed into the fingerprint, as if they were
// arguments.
func roundFingerprint(ctx context.Context, fp string) string {
	r := relay.RoundFrom(ctx)
	if r == nil {
		return fp
	}
	answers, err := json.Marshal(r.InputResponses)
	if err != nil {
		return fp
	}
	sum := sha256.Sum256(append(append([]byte(fp), answers...), r.RequestState...))
	return hex.EncodeToString(sum[:])
}
