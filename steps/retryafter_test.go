package steps

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
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
