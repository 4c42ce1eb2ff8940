package clock

import (
	"testing"
	"time"
)

func TestFreezeAdvanceUnfreeze(t *testing.T) {
	base := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	c := &Clock{real: func() time.Time { return base }}
	if got := c.Now(); !got.Equal(base) || c.Frozen() {
		t.Fatalf("real clock: got %v frozen=%v, want %v unfrozen", got, c.Frozen(), base)
	}
	at := base.Add(time.Hour)
	c.Freeze(at)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("frozen: got %v, want %v", got, at)
	}
	if got := c.Advance(130 * time.Second); !got.Equal(at.Add(130 * time.Second)) {
		t.Fatalf("advance: got %v, want %v", got, at.Add(130*time.Second))
	}
	c.Unfreeze()
	if got := c.Now(); !got.Equal(base) || c.Frozen() {
		t.Fatalf("unfrozen: got %v, want %v", got, base)
	}
	// Advancing a real clock freezes it at real time plus the step.
	if got := c.Advance(time.Millisecond); !got.Equal(base.Add(time.Millisecond)) || !c.Frozen() {
		t.Fatalf("advance from real: got %v frozen=%v", got, c.Frozen())
	}
}
