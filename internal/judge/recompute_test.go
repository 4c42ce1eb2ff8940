package judge

import (
	"encoding/json"
	"testing"
)

// A refusal check redone from the history judges what the step judged: a
// refusal made in HTTP alone has no data.retryable, so its flag is held
// against it in neither; a JSON-RPC refusal's flag is held in both.
func TestRecomputeRefusedFlag(t *testing.T) {
	step := 0
	outcome := func(v CallValue, typ string) []Op {
		b, _ := json.Marshal(v)
		return []Op{{Process: "A", Type: typ, F: FCall, Value: b, Step: &step}}
	}
	check := func(retryable string) Check {
		return Check{StepIndex: 0, Kind: KindRefused, Args: map[string]string{"client": "A", "reason": ReasonInProgress, "retryable": retryable}}
	}
	for _, tc := range []struct {
		name      string
		v         CallValue
		typ       string
		retryable string
		want      bool
	}{
		{"HTTP 409 mapped to in progress", CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{ReasonInProgress}}, Info, "true", true},
		{"JSON-RPC in progress, retryable", CallValue{Tool: "w", Reason: ReasonInProgress, Retryable: true}, Info, "true", true},
		{"JSON-RPC in progress, not retryable", CallValue{Tool: "w", Reason: ReasonInProgress}, Fail, "true", false},
		{"HTTP 409 mapped to something else", CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{"idempotency_key_reused"}}, Fail, "true", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(check(tc.retryable), outcome(tc.v, tc.typ))
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}
