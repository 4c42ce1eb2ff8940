package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/store"
)

// A finished record is purged once its retention has passed on the gateway
// clock, two ways: lazily, when a call reads its key (so a retry past the
// retention is new work at once, whenever the sweep last ran), and by a
// sweep some call makes at most once a minute of gateway time (so records
// nobody asks for again, unkeyed calls with arguments never repeated, do
// not pile up). A record in progress, running or uncertain, is never
// purged: its key must go on naming an operation that may have run.
const (
	sweepEvery = time.Minute
	// sweepBatch bounds one sweep's transaction, so it holds the store's
	// write lock briefly however much has piled up; the next sweep goes on.
	sweepBatch = 256
)

// purgeHorizon is the last write time a finished record may have and be
// purged at now.
func (g *Gateway) purgeHorizon(s Settings, now time.Time) time.Time {
	keep := s.Retention
	if g.bugs.On(bugs.PurgeInsideWindow) {
		keep /= 2 // BUG purge-inside-window
	}
	h := now.Add(-keep)
	if h.Before(store.MinTime) {
		return store.MinTime // nothing a store holds is older
	}
	return h
}

// expired says rec, as a call at c.now read it, is past its retention.
func (g *Gateway) expired(c *callState, rec store.Record) bool {
	anyState := g.bugs.On(bugs.PurgeUncertain) // BUG purge-uncertain
	return (anyState || rec.State != store.StateInProgress) && !rec.UpdatedAt.After(g.purgeHorizon(c.set, c.now))
}

// purgeExpired deletes rec when it is past its retention, conditionally in
// the store (still finished, not written since), and says whether the key
// now names nothing.
func (g *Gateway) purgeExpired(ctx context.Context, c *callState, rec store.Record) (bool, error) {
	if !g.expired(c, rec) {
		return false, nil
	}
	purge := g.store.PurgeRecord
	if g.bugs.On(bugs.PurgeUncertain) {
		purge = g.purgeRecordAny // BUG purge-uncertain
	}
	gone, err := purge(ctx, rec.Key, g.purgeHorizon(c.set, c.now))
	if err != nil {
		return false, g.storeErr("purge record", err)
	}
	if gone {
		g.log.Info("record purged past its retention", "record", rec.Key, "updated_at", rec.UpdatedAt, "retention", c.set.Retention)
	}
	// Not gone: a reservation replaced it meanwhile; the caller reads it again.
	return true, nil
}

// sweep purges finished records past their retention, when no sweep ran in
// the last minute of gateway time (or the clock was set back). One call at
// a time sweeps; the others go on. A failed sweep only delays the next.
func (g *Gateway) sweep(ctx context.Context, c *callState) {
	now := c.now.UnixNano()
	last := g.lastSweep.Load()
	if last != 0 && now >= last && now-last < int64(sweepEvery) {
		return
	}
	if !g.lastSweep.CompareAndSwap(last, now) {
		return
	}
	n, err := g.store.PurgeRecords(ctx, g.purgeHorizon(c.set, c.now), sweepBatch)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		g.log.Warn("retention sweep failed", "err", err)
	case n > 0:
		g.log.Info("retention sweep", "purged", n, "retention", c.set.Retention)
	}
}
