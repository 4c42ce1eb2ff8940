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
	for reason, want := range map[string]int{ReasonKeyMissing: 400, ReasonKeyConflict: 422, ReasonBusy: 409, ReasonBadArguments: 0} {
		if got := statusOf(reason); got != want {
			t.Errorf("statusOf(%s) = %d, want %d", reason, got, want)
		}
	}
}
