package wire

import (
	"fmt"
	"net/http"
	"strings"
)

// MaxKeyLength is the longest idempotency key accepted.
const MaxKeyLength = 255

// ParseIdempotencyKey reads an Idempotency-Key header value: a Structured
// Field string (RFC 8941, `"k-1"`, with \" and \\ escapes) or a bare token
// (`k-1`: printable ASCII without spaces, quotes or backslashes). Surrounding
// spaces are ignored; parameters are not allowed.
func ParseIdempotencyKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", fmt.Errorf("empty idempotency key")
	}
	var key string
	if v[0] == '"' {
		var b strings.Builder
		i := 1
		closed := false
		for ; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '\\':
				i++
				if i >= len(v) || (v[i] != '"' && v[i] != '\\') {
					return "", fmt.Errorf("invalid escape in structured field string")
				}
				b.WriteByte(v[i])
			case c == '"':
				closed = true
			case c < 0x20 || c > 0x7e:
				return "", fmt.Errorf("non-printable character in idempotency key")
			default:
				b.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return "", fmt.Errorf("unterminated structured field string")
		}
		if i != len(v)-1 {
			return "", fmt.Errorf("trailing characters after the structured field string")
		}
		key = b.String()
	} else {
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c <= 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return "", fmt.Errorf("invalid character %q in bare idempotency key (quote it as a structured field string)", c)
			}
		}
		key = v
	}
	return key, ValidateKey(key)
}

// ValidateKey checks a decoded key: 1 to 255 characters of printable ASCII.
func ValidateKey(k string) error {
	if k == "" {
		return fmt.Errorf("empty idempotency key")
	}
	if len(k) > MaxKeyLength {
		return fmt.Errorf("idempotency key is %d characters; at most %d", len(k), MaxKeyLength)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fmt.Errorf("idempotency key must be printable ASCII")
		}
	}
	return nil
}

// headerKey returns the Idempotency-Key header's key, "" if absent.
func headerKey(h http.Header) (string, error) {
	vs := h.Values(HeaderIdempotencyKey)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return ParseIdempotencyKey(vs[0])
	}
	return "", fmt.Errorf("more than one Idempotency-Key header")
}
