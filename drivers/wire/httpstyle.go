package wire

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// DefaultReplayValue is a replay marker's value when its profile names
// none: the IETF idempotency-key draft's "Idempotent-Replayed: true".
const DefaultReplayValue = "true"

// ReplayMarker is how a gateway marks a replayed result: a response header
// (Header, as the IETF idempotency-key draft's Idempotent-Replayed) or a
// member of the JSON-RPC message (Path, Path syntax, e.g.
// "result._meta.replayed"), holding Value. A result that carries it is a
// replay; one that does not is the call the tool ran for.
type ReplayMarker struct {
	Header string `json:"header,omitempty"`
	Path   string `json:"path,omitempty"`
	// Value the header or member holds on a replay: a header's text,
	// compared without case ("true" matches "True"); a member's JSON
	// value, or the text of a JSON string. Default DefaultReplayValue.
	Value string `json:"value,omitempty"`
}

// IsZero says no marker is configured.
func (m ReplayMarker) IsZero() bool { return m.Header == "" && m.Path == "" }

// Check refuses a marker that names both carriers or neither, a header
// that is no header name, or a path that does not parse.
func (m ReplayMarker) Check() error {
	switch {
	case m.Header != "" && m.Path != "":
		return errors.New("want header or path, not both")
	case m.Header == "" && m.Path == "":
		return errors.New("want header (a response header) or path (a member of the answer)")
	case m.Header != "" && !isHeaderToken(m.Header):
		return fmt.Errorf("header %q: not a header name", m.Header)
	case m.Path != "":
		if _, err := ParsePath(m.Path); err != nil {
			return fmt.Errorf("path: %w", err)
		}
	}
	return nil
}

// marks says whether header h and message msg carry the marker.
func (m ReplayMarker) marks(h http.Header, msg []byte) bool {
	want := m.Value
	if want == "" {
		want = DefaultReplayValue
	}
	if m.Header != "" {
		for _, v := range h.Values(m.Header) {
			if strings.EqualFold(strings.TrimSpace(v), want) {
				return true
			}
		}
		return false
	}
	p, err := ParsePath(m.Path)
	if err != nil {
		return false
	}
	raw, ok := p.Lookup(msg)
	if !ok {
		return false
	}
	return CanonicalJSON(raw) == want || p.LookupString(msg) == want
}

// ReplayMarked says whether a result carries the client's replay marker;
// configured is false when the client has none, so nothing can be said.
func (a *Answer) ReplayMarked() (marked, configured bool) {
	if a == nil || a.marker.IsZero() {
		return false, false
	}
	return a.marker.marks(a.Header, a.Message), true
}

// maxRetryAfter bounds how long one Retry-After may hold the harness: a
// gateway asking for minutes would stall a run, and the retry loops bound
// their attempts anyway.
const maxRetryAfter = 10 * time.Second

// RetryAfter is the answer's Retry-After header as a wait (RFC 9110 10.2.3:
// delay-seconds or an HTTP-date), at most maxRetryAfter; ok is false when
// the header is absent or unreadable.
func (a *Answer) RetryAfter() (wait time.Duration, ok bool) {
	if a == nil || a.Header == nil {
		return 0, false
	}
	return ParseRetryAfter(a.Header.Get("Retry-After"), time.Now())
}

// ParseRetryAfter reads a Retry-After value relative to now, as the judge
// reads it (judge.RetryAfterDelay), at most maxRetryAfter.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	d, ok := judge.RetryAfterDelay(v, now)
	return min(d, maxRetryAfter), ok
}

// isHeaderToken is RFC 9110's token, the syntax of a header name.
func isHeaderToken(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return s != ""
}
