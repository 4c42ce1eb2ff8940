// Package idemkey parses the Idempotency-Key request header: the one parser
// of the reference gateway (the wire layer reads the header with Parse, and
// a key from params._meta, already decoded, is checked with Validate).
//
// The header value is an RFC 8941 Structured Field sf-string ("k-1", with \"
// and \\ as the only escapes) or, for clients that do not quote, a bare token
// (k-1). Either way the key is 1..MaxLen characters of printable ASCII. A
// bare token has no spaces, quotes, backslashes, commas or semicolons: a comma
// means several field lines were joined into a list and a semicolon starts
// Structured Field parameters, and guessing which part is the key could make
// two different requests share one.
package idemkey

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLen is the longest key accepted.
const MaxLen = 255

// ErrInvalid is wrapped by every error Parse and Validate return.
var ErrInvalid = errors.New("invalid idempotency key")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Parse returns the key a header value carries.
func Parse(header string) (string, error) {
	// RFC 8941 4.2: leading and trailing spaces are discarded; HTTP field
	// values may also carry horizontal tabs as optional whitespace.
	v := strings.Trim(header, " \t")
	if v == "" {
		return "", invalid("empty value")
	}
	var key string
	if v[0] == '"' {
		k, rest, err := parseString(v)
		if err != nil {
			return "", err
		}
		if rest != "" {
			if rest[0] == ';' {
				return "", invalid("parameters after the string are not supported")
			}
			if rest[0] == ',' {
				return "", invalid("a list of values is not a key (several Idempotency-Key lines?)")
			}
			return "", invalid("unexpected %q after the closing quote", rest)
		}
		key = k
	} else {
		for i := 0; i < len(v); i++ {
			switch c := v[i]; {
			case c == ',':
				return "", invalid("a list of values is not a key (several Idempotency-Key lines?)")
			case c == ';':
				return "", invalid("parameters are not supported; quote the key as a string")
			case c == ' ' || c == '\t':
				return "", invalid("a bare token has no spaces; quote the key as a string")
			case c == '"' || c == '\\':
				return "", invalid("character %q at %d in a bare token; quote the key as a string", c, i)
			case c < 0x21 || c > 0x7e:
				return "", invalid("byte %#x at %d is not printable ASCII", c, i)
			}
		}
		key = v
	}
	if err := Validate(key); err != nil {
		return "", err
	}
	return key, nil
}

// parseString parses an sf-string at the start of v and returns the rest.
func parseString(v string) (key, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i >= len(v) {
				return "", "", invalid("unterminated string")
			}
			if v[i] != '"' && v[i] != '\\' {
				return "", "", invalid("escape \\%c: only \\\" and \\\\ are allowed", v[i])
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), v[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", invalid("byte %#x at %d is not printable ASCII", c, i)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", invalid("unterminated string: missing closing quote")
}

// Validate checks a key that arrived already decoded (the _meta entry): 1 to
// MaxLen characters of printable ASCII (space included, as in an sf-string).
func Validate(key string) error {
	if key == "" {
		return invalid("empty key")
	}
	if len(key) > MaxLen {
		return invalid("key of %d characters is longer than %d", len(key), MaxLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return invalid("byte %#x at %d is not printable ASCII", c, i)
		}
	}
	return nil
}
