package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// The writes below have none of the conditions the store's own writes keep
// (owner, balance, lock holder, state). Only bug switches make them, through
// interfaces a store need not have, asserted on the store as given (not as
// the effect-only switches decorate it) when a switch writes, so a store
// without them serves every correct call path.

// appendDebit takes e.Amount off its wallet whatever the record and balance.
func (g *Gateway) appendDebit(ctx context.Context, e store.LedgerEntry) error {
	a, ok := g.given.(store.DebitAppender)
	if !ok {
		return missingWrite("DebitAppender")
	}
	return a.AppendDebit(ctx, e)
}

// appendRefund gives e.Amount back to its wallet whatever the record and
// whatever was refunded before.
func (g *Gateway) appendRefund(ctx context.Context, e store.LedgerEntry) error {
	a, ok := g.given.(store.RefundAppender)
	if !ok {
		return missingWrite("RefundAppender")
	}
	return a.AppendRefund(ctx, e)
}

// releaseLockAny deletes identity's lock row whoever holds it.
func (g *Gateway) releaseLockAny(ctx context.Context, identity string) error {
	r, ok := g.given.(store.AnyLockReleaser)
	if !ok {
		return missingWrite("AnyLockReleaser")
	}
	return r.ReleaseLockAny(ctx, identity)
}

// purgeRecordAny deletes key's record not written since before, whatever
// its state.
func (g *Gateway) purgeRecordAny(ctx context.Context, key string, before time.Time) (bool, error) {
	p, ok := g.given.(store.AnyRecordPurger)
	if !ok {
		return false, missingWrite("AnyRecordPurger")
	}
	return p.PurgeRecordAny(ctx, key, before)
}

func missingWrite(iface string) error {
	return fmt.Errorf("gateway: a bug switch is on that needs the store to be a store.%s, and it is not", iface)
}
