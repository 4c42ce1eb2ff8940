package wire

import (
	"errors"
	"net/http"

	"github.com/mcpconform/mcpconform/reference/idemkey"
)

// headerKey returns the Idempotency-Key header's key, "" if absent. The
// value's forms are idemkey.Parse's; two header lines are refused like the
// comma list a proxy may fold them into.
func headerKey(h http.Header) (string, error) {
	vs := h.Values(HeaderIdempotencyKey)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return idemkey.Parse(vs[0])
	}
	return "", errors.New("more than one Idempotency-Key header")
}
