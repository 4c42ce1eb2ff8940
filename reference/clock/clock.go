// Package clock is the reference gateway's only source of time. Windows,
// buckets, permit expiry and lock ages all read it, so the control API can
// freeze or move it and both stores agree (no database now()).
package clock

import (
	"sync"
	"time"
)

// Clock reads real time until frozen; a frozen clock moves only when told.
type Clock struct {
	mu     sync.Mutex
	frozen bool
	at     time.Time
	real   func() time.Time
}

// New returns a clock on real time.
func New() *Clock { return &Clock{real: time.Now} }

// Now returns the gateway's current time, in UTC.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return c.at
	}
	return c.real().UTC()
}

// Freeze stops the clock at t.
func (c *Clock) Freeze(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen, c.at = true, t.UTC()
}

// Advance moves the clock by d and returns the new time. A clock on real time
// is frozen at real time plus d, so an advance is never undone by real time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.frozen, c.at = true, c.real().UTC()
	}
	c.at = c.at.Add(d)
	return c.at
}

// Unfreeze returns the clock to real time.
func (c *Clock) Unfreeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = false
}

// Frozen reports whether the clock is frozen.
func (c *Clock) Frozen() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frozen
}
