package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

func TestSettingDuration(t *testing.T) {
	for _, c := range []struct {
		secs float64
		want time.Duration
		err  string // "" when accepted
	}{
		{0, 0, ""},
		{1.5, 1500 * time.Millisecond, ""},
		{300, 300 * time.Second, ""},
		{1e-9, time.Nanosecond, ""},
		{float64(gateway.MaxSettingSeconds), time.Duration(gateway.MaxSettingSeconds) * time.Second, ""},
		{-1, 0, "must not be negative"},
		{-1e300, 0, "must not be negative"},
		{float64(gateway.MaxSettingSeconds) + 1, 0, "out of range, at most 9223372036 seconds"},
		{1e10, 0, "out of range"},
		{1e300, 0, "out of range"},
		{1e-300, 0, "below the 1ns resolution"},
	} {
		got, err := gateway.SettingDuration("window_seconds", c.secs)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%v: %v, %v; want %v", c.secs, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "window_seconds ")):
			t.Errorf("%v: %v, %v; want an error naming window_seconds with %q", c.secs, got, err, c.err)
		}
	}
}

// The retention is never shorter than the effective window: a retry the
// window promises a replay must not find its slot purged.
func TestRetentionValidate(t *testing.T) {
	def := gateway.DefaultSettings()
	with := func(f func(*gateway.Settings)) gateway.Settings {
		s := def
		f(&s)
		return s
	}
	for _, c := range []struct {
		name string
		s    gateway.Settings
		err  string // "" when accepted
	}{
		{"default: a day", def, ""},
		{"equal to the effective window", with(func(s *gateway.Settings) { s.Retention = s.EffectiveWindow() }), ""},
		{"longer window capped by the permit ttl", with(func(s *gateway.Settings) { s.Retention, s.Window = 200*time.Second, time.Hour }), ""},
		{"window 0: any positive retention", with(func(s *gateway.Settings) { s.Retention, s.Window = time.Second, 0 }), ""},
		{"zero", with(func(s *gateway.Settings) { s.Retention = 0 }), "retention 0s: must be positive"},
		{"under the effective window", with(func(s *gateway.Settings) { s.Retention = time.Minute }),
			"retention 1m0s: must not be shorter than the effective unkeyed retry window 2m0s"},
		{"window and ttl raised above it", with(func(s *gateway.Settings) { s.Retention, s.Window, s.PermitTTL = time.Hour, 2*time.Hour, 2*time.Hour }),
			"must not be shorter than the effective unkeyed retry window 2h0m0s"},
	} {
		err := c.s.Validate()
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		}
	}
}
