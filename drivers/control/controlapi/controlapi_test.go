package controlapi

import (
	"encoding/json"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// TestRequestBytes holds the request bodies the harness sends to the bytes
// its client sent before these types were shared, so a gateway sees the
// same requests.
func TestRequestBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"tool", Tool{Name: "probe.write.1", Price: ptr[int64](3), ReadOnly: ptr(false), Approval: ptr(false), UpstreamURL: "http://127.0.0.1:9/mcp", UpstreamTool: "probe.write"},
			`{"name":"probe.write.1","price":3,"read_only":false,"approval":false,"upstream_url":"http://127.0.0.1:9/mcp","upstream_tool":"probe.write"}`},
		{"permit", PermitRequest{WalletID: "w-1", KeyID: "k-1", Tool: "t", Budget: ptr[int64](0), TTL: (2 * time.Minute).String()},
			`{"wallet_id":"w-1","key_id":"k-1","tool":"t","budget":0,"ttl":"2m0s"}`},
		{"settings", SettingsPatch{WindowSeconds: ptr(0.0), StaleLockSeconds: ptr(30.0)}, `{"window_seconds":0,"stale_lock_seconds":30}`},
		{"await", AwaitFault{Waiting: ptr(0), Timeout: "5s"}, `{"waiting":0,"timeout":"5s"}`},
		{"fault", Fault{Point: "fence.read", Action: "pause"}, `{"point":"fence.read","action":"pause"}`},
		{"fault match", Fault{Point: "fence.read", Action: "pause", Count: 1, Match: FaultMatch{Tool: "t"}}, `{"point":"fence.read","action":"pause","count":1,"match":{"tool":"t"}}`},
		{"advance", AdvanceClock{By: (130 * time.Second).String()}, `{"by":"2m10s"}`},
		{"principal", Principal{Provider: "harness", Issuer: "i", Subject: "s", Tools: []string{}}, `{"provider":"harness","issuer":"i","subject":"s","tools":[]}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%s: %s, %v\nwant %s", c.name, b, err, c.want)
		}
	}
}

// TestAnswersRoundTrip: answers as a gateway writes them decode into these
// types and encode back to the same members (fault state and error, whose
// members a client reads by name, included).
func TestAnswersRoundTrip(t *testing.T) {
	for _, c := range []struct {
		raw string
		v   any
	}{
		{`{"control_api":"mcpconform/1","capabilities":["clock"],"fault_points":["fence.read"],"fault_actions":["pause"],` +
			`"settings":{"window_seconds":300,"permit_ttl_seconds":120,"effective_window_seconds":120,"stale_lock_seconds":1.5,"lock_timeout":"5s"},` +
			`"store":"sqlite","bugs":[]}`, &Capabilities{}},
		{`{"entries":[{"id":"le-1","kind":"credit","amount":100,"receipt":"","tool":"","at":"2026-12-02T18:00:00.001Z"}]}`, &Ledger{}},
		{`{"name":"a","price":1,"read_only":false,"approval":false,"upstream_url":"","upstream_tool":"","overrides":{"title":"T"}}`, &RegisteredTool{}},
		{`{"fault_id":"f-1","point":"fence.read","action":"pause","count":1,"match":{},"hits":0,"waiting":0,"released":false}`, &FaultState{}},
		{`{"error":"1 request(s) waiting","reason":"await_timeout","fault":{"fault_id":"f-1","point":"fence.read","action":"pause","count":1,"match":{"wallet_id":"w-1"},"hits":1,"waiting":1,"released":false}}`, &Error{}},
		{`{"permit_id":"pmt-1","expires_at":"2026-12-02T18:02:00Z","budget":3}`, &Permit{}},
		{`{"locks":[{"identity":"w|t|","owner":"o","fence":2,"acquired_at":"2026-12-02T18:00:00Z"}]}`, &Locks{}},
	} {
		if err := json.Unmarshal([]byte(c.raw), c.v); err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.raw {
			t.Errorf("round trip\n got %s, %v\nwant %s", b, err, c.raw)
		}
	}
}
