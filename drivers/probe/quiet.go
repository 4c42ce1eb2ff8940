package probe

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Quiet returns once no dispatch whose token starts with tokenPrefix ("" =
// any) has arrived for quiet, or ctx's error. The quiet period starts when
// Quiet is called and starts again at each such dispatch, so a late
// duplicate dispatch is seen before a run judges effects. quiet <= 0
// returns at once.
func (p *Probe) Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error {
	if _, err := p.quietFrom(ctx, tokenPrefix, quiet, quietMark{}); err != nil {
		return fmt.Errorf("probe: wait for %v without dispatches of %q*: %w", quiet, tokenPrefix, err)
	}
	return nil
}

// quietMark is where a quiet period stands, so a long poll that ran out can
// be resumed by the next request without losing a dispatch in between.
type quietMark struct {
	since time.Time // the quiet period's start; zero: now
	after uint64    // dispatches up to this arrival were looked at
}

// quietFrom waits from m; on ctx's end it returns the mark to resume from.
func (p *Probe) quietFrom(ctx context.Context, prefix string, quiet time.Duration, m quietMark) (quietMark, error) {
	p.mu.Lock()
	if m.since.IsZero() {
		m = quietMark{since: time.Now().UTC(), after: p.arrivals}
	} else {
		m = p.advance(m, prefix)
	}
	changed := p.changed
	p.mu.Unlock()
	if quiet <= 0 {
		return m, nil
	}
	timer := p.after(time.Until(m.since.Add(quiet)))
	for {
		select {
		case <-timer:
			// A dispatch may have arrived inside the period just before the
			// timer fired, its wake-up not yet taken: that one counts.
			p.mu.Lock()
			prev := m.since
			m = p.advance(m, prefix)
			changed = p.changed
			p.mu.Unlock()
			if m.since.Equal(prev) || !m.since.Before(prev.Add(quiet)) {
				return m, nil
			}
			timer = p.after(time.Until(m.since.Add(quiet)))
		case <-ctx.Done():
			return m, ctx.Err()
		case <-changed:
			p.mu.Lock()
			prev := m.since
			m = p.advance(m, prefix)
			changed = p.changed
			p.mu.Unlock()
			if !m.since.Equal(prev) {
				timer = p.after(time.Until(m.since.Add(quiet)))
			}
		}
	}
}

// advance moves the quiet period's start to the latest matching dispatch
// that arrived after m.after. p.mu is held.
func (p *Probe) advance(m quietMark, prefix string) quietMark {
	for i := len(p.dispatches) - 1; i >= 0 && p.dispatches[i].arrival > m.after; i-- {
		if d := p.dispatches[i].d; strings.HasPrefix(d.Token, prefix) {
			if d.At.After(m.since) {
				m.since = d.At
			}
			break
		}
	}
	m.after = p.arrivals
	return m
}
