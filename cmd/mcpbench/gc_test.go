package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseGCSettings(t *testing.T) {
	tests := []struct {
		in      string
		want    []gcSetting
		wantErr string
	}{
		{"GOGC=100", []gcSetting{{Env: []string{"GOGC=100"}}}, ""},
		{"GOGC=100; GOGC=off GOMEMLIMIT=256MiB;", []gcSetting{{Env: []string{"GOGC=100"}}, {Env: []string{"GOGC=off", "GOMEMLIMIT=256MiB"}}}, ""},
		{"", nil, "no settings"},
		{"GOGC", nil, "want GOGC=... or GOMEMLIMIT=..."},
		{"GODEBUG=x=1", nil, "want GOGC=... or GOMEMLIMIT=..."},
	}
	for _, tt := range tests {
		got, err := parseGCSettings(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseGCSettings(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
			}
		case err != nil || !reflect.DeepEqual(got, tt.want):
			t.Errorf("parseGCSettings(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestRenderGC(t *testing.T) {
	settings := []gcSetting{{Env: []string{"GOGC=100"}}, {Env: []string{"GOGC=400"}}}
	runs := [][]gcRun{
		{{First: 0.3, Replay: 0.7, Unkeyed: 0.3, PeakRSS: 38 << 20}, {First: 0.2, Replay: 0.6, Unkeyed: 0.2, PeakRSS: 40 << 20}, {First: 0.4, Replay: 0.8, Unkeyed: 0.4, PeakRSS: 36 << 20}},
		{{First: 0.4, Replay: 1.4, Unkeyed: 0.4, PeakRSS: 60 << 20}, {First: 0.5, Replay: 1.2, Unkeyed: 0.3, PeakRSS: 64 << 20}, {First: 0.3, Replay: 1.3, Unkeyed: 0.5, PeakRSS: 62 << 20}},
	}
	var b strings.Builder
	renderGC(&b, settings, runs, 3, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), "2 cores")
	for _, want := range []string{
		"| `GOGC=100` | 0.30× (0.30, 0.20, 0.40) | 0.70× (0.70, 0.60, 0.80) | 0.30× (0.30, 0.20, 0.40) | 38 MiB (38, 40, 36) |",
		"| `GOGC=400` | 0.40× (0.40, 0.50, 0.30) | 1.30× (1.40, 1.20, 1.30) | 0.40× (0.40, 0.30, 0.50) | 62 MiB (60, 64, 62) |",
		"interleaved, 3 rounds",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("renderGC lacks %q:\n%s", want, b.String())
		}
	}
}
