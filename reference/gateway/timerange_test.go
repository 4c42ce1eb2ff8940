package gateway_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/gateway"
)

// TestCheckTimes: settings whose times would leave the store's range at a
// given instant are refused, at start-up and when they are set.
func TestCheckTimes(t *testing.T) {
	now := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	year := 365 * 24 * time.Hour
	def := gateway.DefaultSettings()
	with := func(f func(*gateway.Settings)) gateway.Settings { s := def; f(&s); return s }
	for _, c := range []struct {
		name string
		s    gateway.Settings
		at   time.Time
		ok   bool
	}{
		{"defaults", def, now, true},
		{"permit ttl of 235 years", with(func(s *gateway.Settings) { s.PermitTTL = 235 * year }), now, true},
		{"permit ttl of 290 years", with(func(s *gateway.Settings) { s.PermitTTL = 290 * year }), now, false},
		{"defaults at the end of time", def, time.Date(2262, 4, 11, 23, 46, 0, 0, time.UTC), false},
		{"defaults after 2262", def, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"window of 290 years in 1980", with(func(s *gateway.Settings) { s.Window = 290 * year }), time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"window of 290 years in 1900", with(func(s *gateway.Settings) { s.Window = 290 * year }), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"stale lock of 290 years in 1900", with(func(s *gateway.Settings) { s.StaleLock = 290 * year }), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.CheckTimes(c.at)
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, gateway.ErrTimeRange)) {
				t.Fatalf("CheckTimes = %v, want ok %v", err, c.ok)
			}
		})
	}

	st, _ := sqliteBackend().open(t)
	clk := clock.New()
	clk.Freeze(now)
	long := with(func(s *gateway.Settings) { s.PermitTTL = 290 * year })
	if _, err := gateway.New(gateway.Options{Store: st, Clock: clk, Dispatcher: &fakeDispatcher{}, Settings: long}); !errors.Is(err, gateway.ErrTimeRange) {
		t.Fatalf("New with a 290-year permit ttl: %v", err)
	}
	g, err := gateway.New(gateway.Options{Store: st, Clock: clk, Dispatcher: &fakeDispatcher{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetSettings(long); !errors.Is(err, gateway.ErrTimeRange) || g.Settings() != def {
		t.Fatalf("SetSettings with a 290-year permit ttl: %v, settings %+v", err, g.Settings())
	}
}
