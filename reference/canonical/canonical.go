// Package canonical turns a JSON value into one canonical byte string, so two
// requests that mean the same arguments get the same fingerprint and two that
// mean different arguments never do.
//
// The canonical form:
//   - no insignificant whitespace;
//   - object members sorted by key, comparing the keys' UTF-8 bytes;
//   - numbers by value: one spelling per decimal value, ECMAScript's
//     Number::toString layout as RFC 8785 prints numbers (1, 1.0 and 1e0 are
//     "1"; 1e2 and 100 are "100"; -0 is "0"; 1e21 is "1e+21", 1e-7 is
//     "1e-7"). Every number a float64 holds by its shortest form (any of up
//     to 15 significant digits, and most of 16 or 17) is written exactly as
//     RFC 8785 writes it. A number with more precision than a float64 keeps
//     all of it rather than being rounded: 9007199254740993 (2^53+1) stays
//     itself, where RFC 8785 would write 9007199254740992 and so give two
//     calls that mean different amounts to an upstream reading integers
//     exactly one fingerprint (a replay of the wrong outcome). Keeping the
//     digits can only make a miss of two numbers a double-based client reads
//     alike, never a collision of two that differ;
//   - strings re-encoded minimally: only '"', '\\' and control characters are
//     escaped (\b \f \n \r \t, else \u00xx); every other character is written
//     as itself, so "\u00e9" and "é" are one string;
//   - true, false and null as they are.
//
// Input the canonical form could not represent without ambiguity is refused,
// rather than silently rewritten into something that might equal another
// input: invalid UTF-8, lone surrogate escapes, duplicate object keys,
// trailing data and nesting deeper than MaxDepth. (encoding/json would replace
// the first two with U+FFFD and keep the last duplicate, so "\ud800" and
// "\ufffd" would share a fingerprint.) Unicode normalisation is not applied:
// NFC and NFD spellings differ, which is again a miss, not a collision.
package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting of arrays and objects.
const MaxDepth = 512

// ErrInvalid is wrapped by every error JSON returns.
var ErrInvalid = errors.New("canonical json")

// JSON returns the canonical form of one JSON value of any kind.
func JSON(raw json.RawMessage) ([]byte, error) {
	p := parser{in: raw}
	p.skipSpace()
	if p.pos >= len(p.in) {
		return nil, fmt.Errorf("%w: empty input", ErrInvalid)
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	if err := p.value(&out, 0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.errorf("trailing data after the value")
	}
	return out.Bytes(), nil
}

// Fingerprint is the hex sha256 of the canonical form.
func Fingerprint(raw json.RawMessage) (string, error) {
	c, err := JSON(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

type parser struct {
	in  []byte
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrInvalid, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(out *bytes.Buffer, depth int) error {
	if depth > MaxDepth {
		return p.errorf("nesting deeper than %d", MaxDepth)
	}
	p.skipSpace()
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out, depth)
	case c == '[':
		return p.array(out, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		writeString(out, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	default:
		return p.errorf("unexpected character %q", c)
	}
}

func (p *parser) literal(out *bytes.Buffer, word string) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		return p.errorf("invalid literal, want %s", word)
	}
	p.pos += len(word)
	out.WriteString(word)
	return nil
}

type member struct {
	key string
	val []byte
}

func (p *parser) object(out *bytes.Buffer, depth int) error {
	p.pos++ // '{'
	var members []member
	seen := map[string]bool{}
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		out.WriteString("{}")
		return nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.errorf("object key must be a string")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if seen[key] {
			return p.errorf("duplicate object key %q", key)
		}
		seen[key] = true
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.errorf("expected ':' after object key")
		}
		p.pos++
		var v bytes.Buffer
		if err := p.value(&v, depth+1); err != nil {
			return err
		}
		members = append(members, member{key: key, val: v.Bytes()})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated object")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		return p.errorf("expected ',' or '}' in object")
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.key)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return nil
}

func (p *parser) array(out *bytes.Buffer, depth int) error {
	p.pos++ // '['
	out.WriteByte('[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		out.WriteByte(']')
		return nil
	}
	for i := 0; ; i++ {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := p.value(out, depth+1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated array")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == ']' {
			p.pos++
			out.WriteByte(']')
			return nil
		}
		return p.errorf("expected ',' or ']' in array")
	}
}

// number checks the RFC 8259 grammar and copies the literal unchanged.
func (p *parser) number(out *bytes.Buffer) error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.in[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.in) && p.in[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.errorf("invalid number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.errorf("invalid number: digit expected after '.'")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.errorf("invalid number: digit expected in exponent")
		}
	}
	// The number must end here: "01" or "1x" would otherwise pass as "0" then garbage.
	if p.pos < len(p.in) {
		switch c := p.in[p.pos]; c {
		case ' ', '\t', '\n', '\r', ',', ']', '}':
		default:
			return p.errorf("invalid character %q in number", c)
		}
	}
	writeNumber(out, p.in[start:p.pos])
	return nil
}

// writeNumber writes a number literal (already checked against the grammar)
// in the one spelling of its decimal value: ECMAScript's Number::toString
// layout of its significant digits and decimal point, without rounding.
func writeNumber(out *bytes.Buffer, lit []byte) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	mant, expLit := lit, []byte(nil)
	if i := bytes.IndexAny(lit, "eE"); i >= 0 {
		mant, expLit = lit[:i], lit[i+1:]
	}
	intPart, frac := mant, []byte(nil)
	if i := bytes.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := append(append([]byte{}, intPart...), frac...)
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = bytes.TrimRight(digits[lead:], "0")
	if len(digits) == 0 {
		out.WriteByte('0') // 0, -0, 0.0, 0e9: one zero, unsigned as ECMAScript prints -0
		return
	}
	if neg {
		out.WriteByte('-')
	}
	// The value is 0.DIGITS × 10^n.
	n := new(big.Int).SetInt64(int64(len(intPart) - lead))
	if len(expLit) > 0 {
		e, ok := new(big.Int).SetString(strings.TrimPrefix(string(expLit), "+"), 10)
		if ok {
			n.Add(n, e)
		}
	}
	k := int64(len(digits))
	if n.IsInt64() {
		switch m := n.Int64(); {
		case k <= m && m <= 21:
			out.Write(digits)
			out.WriteString(strings.Repeat("0", int(m-k)))
			return
		case 0 < m && m <= 21:
			out.Write(digits[:m])
			out.WriteByte('.')
			out.Write(digits[m:])
			return
		case -6 < m && m <= 0:
			out.WriteString("0.")
			out.WriteString(strings.Repeat("0", int(-m)))
			out.Write(digits)
			return
		}
	}
	out.WriteByte(digits[0])
	if k > 1 {
		out.WriteByte('.')
		out.Write(digits[1:])
	}
	out.WriteByte('e')
	e := n.Sub(n, big.NewInt(1))
	if e.Sign() >= 0 {
		out.WriteByte('+')
	}
	out.WriteString(e.String())
}

// str decodes a string token, refusing invalid UTF-8 and lone surrogates.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	var b []byte
	for {
		if p.pos >= len(p.in) {
			return "", p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(b), nil
		case c < 0x20:
			return "", p.errorf("control character %#x in string", c)
		case c == '\\':
			p.pos++
			if p.pos >= len(p.in) {
				return "", p.errorf("unterminated escape")
			}
			e := p.in[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || !bytes.HasPrefix(p.in[p.pos:], []byte(`\u`)) {
						return "", p.errorf("lone surrogate \\u%04x", r)
					}
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return "", p.errorf("invalid surrogate pair")
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", p.errorf("invalid escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8 in string")
			}
			b = append(b, p.in[p.pos:p.pos+n]...)
			p.pos += n
		}
	}
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.errorf("short \\u escape")
	}
	var r rune
	for _, c := range p.in[p.pos : p.pos+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errorf("invalid \\u escape %q", p.in[p.pos:p.pos+4])
		}
		r = r<<4 | rune(d)
	}
	p.pos += 4
	return r, nil
}

const hexDigits = "0123456789abcdef"

// writeString writes s (valid UTF-8) in the minimal escaped form.
func writeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			out.WriteString(`\"`)
		case c == '\\':
			out.WriteString(`\\`)
		case c == '\b':
			out.WriteString(`\b`)
		case c == '\f':
			out.WriteString(`\f`)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\r':
			out.WriteString(`\r`)
		case c == '\t':
			out.WriteString(`\t`)
		case c < 0x20:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xF])
		default:
			out.WriteByte(c)
		}
	}
	out.WriteByte('"')
}
