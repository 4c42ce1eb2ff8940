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
