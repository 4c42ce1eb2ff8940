package wire

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 2 ", 2 * time.Second, true},
		{"3600", maxRetryAfter, true}, // capped: a gateway cannot stall a run
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true}, // a past date: no wait
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	} {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReplayMarker(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"acme/replayed":true,"state":"replay"}}}`)
	for _, tt := range []struct {
		name   string
		m      ReplayMarker
		header http.Header
		marked bool
	}{
		{"header, default value", ReplayMarker{Header: "Idempotent-Replayed"}, http.Header{"Idempotent-Replayed": {"True"}}, true},
		{"header absent", ReplayMarker{Header: "Idempotent-Replayed"}, http.Header{}, false},
		{"header false", ReplayMarker{Header: "Idempotent-Replayed"}, http.Header{"Idempotent-Replayed": {"false"}}, false},
		{"header, own value", ReplayMarker{Header: "X-Cache", Value: "HIT"}, http.Header{"X-Cache": {"hit"}}, true},
		{"path true", ReplayMarker{Path: "result._meta['acme/replayed']"}, nil, true},
		{"path string", ReplayMarker{Path: "result._meta.state", Value: "replay"}, nil, true},
		{"path other value", ReplayMarker{Path: "result._meta.state", Value: "first"}, nil, false},
		{"path absent", ReplayMarker{Path: "result._meta.none"}, nil, false},
	} {
		a := &Answer{Header: tt.header, Message: msg, marker: tt.m}
		marked, configured := a.ReplayMarked()
		if marked != tt.marked || !configured {
			t.Errorf("%s: marked %v configured %v, want %v true", tt.name, marked, configured, tt.marked)
		}
	}
	if _, configured := (&Answer{Message: msg}).ReplayMarked(); configured {
		t.Error("an answer without a marker says it is configured")
	}
	for _, m := range []ReplayMarker{{}, {Header: "A", Path: "result.x"}, {Header: "bad header"}, {Path: "result..x"}} {
		if m.Check() == nil {
			t.Errorf("%+v: accepted", m)
		}
	}
}
