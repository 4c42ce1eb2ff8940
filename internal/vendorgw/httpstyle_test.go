package vendorgw

import "testing"

func TestAnswerOf(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		reason     string
		result     bool
	}{
		{"json refusal", `{"jsonrpc":"2.0","id":1,"error":{"code":-32041,"message":"m","data":{"reason":"acme_busy","retryable":true}}}`, "acme_busy", false},
		{"sse result", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n", "", true},
		{"sse refusal after a notification", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32040,\"message\":\"m\",\"data\":{\"reason\":\"acme_key_conflict\"}}}\n\n", "acme_key_conflict", false},
		{"empty", "", "", false},
	} {
		reason, result := answerOf([]byte(tt.body))
		if reason != tt.reason || result != tt.result {
			t.Errorf("%s: %q %v, want %q %v", tt.name, reason, result, tt.reason, tt.result)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for _, tt := range []struct {
		missing int // HTTPStyle.MissingKeyStatus
		reason  string
		want    int
	}{
		{0, ReasonKeyMissing, 400},
		{400, ReasonKeyMissing, 400},
		{428, ReasonKeyMissing, 428},
		// Only the missing key's status moves with the option.
		{428, ReasonKeyConflict, 422},
		{0, ReasonKeyConflict, 422},
		{0, ReasonBusy, 409},
		{428, ReasonBusy, 409},
		{0, ReasonBadArguments, 0},
	} {
		if got := (HTTPStyle{On: true, MissingKeyStatus: tt.missing}).statusOf(tt.reason); got != tt.want {
			t.Errorf("missing-key status %d: statusOf(%s) = %d, want %d", tt.missing, tt.reason, got, tt.want)
		}
	}
}

// The draft allows 400 or 428 for a missing key; anything else is refused
// at start, before it could answer a status no profile expects.
func TestMissingKeyStatusChecked(t *testing.T) {
	for _, tt := range []struct {
		status int
		ok     bool
	}{{0, true}, {400, true}, {428, true}, {412, false}, {500, false}} {
		o := Options{UpstreamURL: "http://127.0.0.1:1/mcp", APIKeys: map[string]string{"k": "t"},
			Tools: []Tool{{Name: "w", Upstream: "probe.write"}}, HTTPStyle: HTTPStyle{On: true, MissingKeyStatus: tt.status}}
		if err := o.check(); (err == nil) != tt.ok {
			t.Errorf("missing-key status %d: check() = %v, want ok %v", tt.status, err, tt.ok)
		}
	}
}
