package steps

import (
	"net/http"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// A refusal made in HTTP alone carries no retryable flag: a gateway that
// answers a failed dispatch or response with a 4xx of its own, mapped in its
// profile, is refused "with retryable" as its reason is, and the model
// reads it retryable too.
func TestHTTPOnlyRefusalRetryable(t *testing.T) {
	p, err := target.ParseProfile([]byte(`{"credentials": {"api_keys": ["k"]}, "reasons": {"dispatch_failed": [{"http": 424}], "response_failed": [{"http": 425}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{env: &Env{Profile: p}}
	for _, tc := range []struct {
		reason string
		status int
	}{{judge.ReasonDispatchFailed, 424}, {judge.ReasonResponseFailed, 425}} {
		a := &answer{Answer: &wire.Answer{Status: tc.status, Body: []byte("upstream failed"), Header: http.Header{}}}
		if !w.isReason(a, tc.reason) || !w.retryableIs(a, true) {
			t.Errorf("%s as HTTP %d: isReason %v, retryableIs(true) %v; want both", tc.reason, tc.status, w.isReason(a, tc.reason), w.retryableIs(a, true))
		}
		var v judge.CallValue
		refusalValue(p, a, &v)
		if !v.HTTPOnly || !v.ReadRetryable() {
			t.Errorf("%s as HTTP %d: the model reads HTTPOnly %v, retryable %v; want both", tc.reason, tc.status, v.HTTPOnly, v.ReadRetryable())
		}
	}
}
