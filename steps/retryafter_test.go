package steps

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// An in-progress answer's Retry-After sets the wait before the next retry;
// without one (or unreadable, or shorter) the loop's own pause stands.
func TestRetryWait(t *testing.T) {
	pause := 50 * time.Millisecond
	for _, tt := range []struct {
		name string
		a    *answer
		want time.Duration
	}{
		{"no answer", nil, pause},
		{"no header", &answer{Answer: &wire.Answer{Header: http.Header{}}}, pause},
		{"two seconds", &answer{Answer: &wire.Answer{Header: http.Header{"Retry-After": {"2"}}}}, 2 * time.Second},
		{"zero", &answer{Answer: &wire.Answer{Header: http.Header{"Retry-After": {"0"}}}}, pause},
		{"unreadable", &answer{Answer: &wire.Answer{Header: http.Header{"Retry-After": {"later"}}}}, pause},
	} {
		if got := retryWait(tt.a, pause); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// httpStyleProfile maps in progress, as the IETF draft answers it, to a 409
// whose body says busy, and key reuse to a 422.
func httpStyleProfile(t *testing.T) *target.Profile {
	t.Helper()
	p := &target.Profile{}
	if err := json.Unmarshal([]byte(`{"reasons": {
		"idempotency_in_progress": [{"http": 409, "body": "acme_busy"}],
		"idempotency_key_reused": [{"http": 422, "body": "acme_key_conflict"}]}}`), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// statusAnswer is a JSON-RPC error answered with an HTTP status and headers.
func statusAnswer(status int, data string, h http.Header) *answer {
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"acme","data":` + data + `}}`)
	var r wire.Response
	if err := json.Unmarshal(msg, &r); err != nil {
		panic(err)
	}
	return &answer{Answer: &wire.Answer{Status: status, Message: msg, Response: &r, Body: msg, Header: h}}
}

// A JSON-RPC refusal the profile maps to in progress by its HTTP status is
// read as retryable without data.retryable, as the same status answered in
// HTTP alone is; a flag it does carry is its own, and a status mapped to a
// final refusal makes nothing retryable. The history records the reading
// and the Retry-After, so recheck judges what the step judged.
func TestStatusMappedRetryable(t *testing.T) {
	p := httpStyleProfile(t)
	busy := http.Header{"Retry-After": {"1"}}
	for _, tc := range []struct {
		name          string
		a             *answer
		want          bool   // read as retryable
		typ           string // the history's outcome type
		retryAfter    string // recorded Retry-After, "-" for none
		retryableWant bool   // the step's "retryable" reading holds for want=true
	}{
		{"409 busy, no data.retryable", statusAnswer(409, `{"reason":"acme_busy"}`, busy), true, judge.Info, "1", true},
		{"409 busy, retryable true", statusAnswer(409, `{"reason":"acme_busy","retryable":true}`, busy), false, judge.Info, "1", true},
		{"409 busy, retryable false", statusAnswer(409, `{"reason":"acme_busy","retryable":false}`, nil), false, judge.Fail, "", false},
		{"409 busy without Retry-After", statusAnswer(409, `{"reason":"acme_busy"}`, http.Header{}), true, judge.Info, "", true},
		// A final answer at the status of in progress stays final: its
		// data.reason names another contract answer.
		{"409 outcome_unknown, no data.retryable", statusAnswer(409, `{"reason":"outcome_unknown","message":"acme_busy no more: the outcome is unknown"}`, nil), false, judge.Fail, "", false},
		{"422 conflict, no data.retryable", statusAnswer(422, `{"reason":"acme_key_conflict"}`, nil), false, judge.Fail, "-", false},
		{"200 busy, no data.retryable: no status says it", statusAnswer(200, `{"reason":"acme_busy"}`, nil), false, judge.Fail, "-", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusRetryable(p, tc.a); got != tc.want {
				t.Errorf("statusRetryable = %v, want %v", got, tc.want)
			}
			w := &world{env: &Env{Profile: p}}
			if got := w.retryableIs(tc.a, true); got != tc.retryableWant {
				t.Errorf("retryableIs(true) = %v, want %v", got, tc.retryableWant)
			}
			call := &wire.Call{Tool: "acme.write"}
			op := outcomeOp(p, &client{name: "A"}, call, 0, tc.a, nil)
			if op.Type != tc.typ {
				t.Errorf("outcome type %q, want %q", op.Type, tc.typ)
			}
			var v judge.CallValue
			if err := json.Unmarshal(op.Value, &v); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.retryAfter == "-" && v.RetryAfter != nil:
				t.Errorf("Retry-After recorded as %q, want none", *v.RetryAfter)
			case tc.retryAfter != "-" && (v.RetryAfter == nil || *v.RetryAfter != tc.retryAfter):
				t.Errorf("Retry-After recorded as %v, want %q", v.RetryAfter, tc.retryAfter)
			}
		})
	}
}
