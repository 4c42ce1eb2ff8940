package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DefaultReceiptPath is where the reference gateway puts the receipt id.
// Vendor gateways differ, so the path is configurable (Client.ReceiptPath,
// the profile's receipt_path).
const DefaultReceiptPath = "result._meta['io.mcpconform/receipt'].id"

// DefaultRefusalReceiptPath is where a refusal names the receipt of the
// debit it is about (outcome_unknown's): docs/wire.md's data.receipt.
const DefaultRefusalReceiptPath = "error.data.receipt"

// Path addresses a value inside a JSON document. Its text form is segments
// joined by dots; a segment that itself holds dots or slashes (MCP _meta keys
// such as "io.mcpconform/receipt" do) is written in brackets and single
// quotes: result._meta['io.mcpconform/receipt'].id. A segment of digits
// indexes an array. Single quotes were chosen because they need no escaping
// inside a JSON profile file.
type Path []string

// ParsePath parses the text form described at Path.
func ParsePath(s string) (Path, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("parse path: empty")
	}
	var p Path
	i := 0
	expectSeg := true // at the start or right after a dot
	for i < len(s) {
		switch {
		case s[i] == '[':
			if !strings.HasPrefix(s[i:], "['") {
				return nil, fmt.Errorf("parse path %q: at %d: want ['key']", s, i)
			}
			end := strings.Index(s[i+2:], "']")
			if end < 0 {
				return nil, fmt.Errorf("parse path %q: at %d: unterminated ['", s, i)
			}
			p = append(p, s[i+2:i+2+end])
			i += 2 + end + 2
			expectSeg = false
		case s[i] == '.':
			if expectSeg {
				return nil, fmt.Errorf("parse path %q: at %d: empty segment", s, i)
			}
			i++
			expectSeg = true
			if i == len(s) {
				return nil, fmt.Errorf("parse path %q: trailing dot", s)
			}
		default:
			if !expectSeg {
				return nil, fmt.Errorf("parse path %q: at %d: want . or [", s, i)
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			p = append(p, s[i:j])
			i = j
			expectSeg = false
		}
	}
	return p, nil
}

// MustParsePath is ParsePath for constants known to be valid.
func MustParsePath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String writes the path back in its text form.
func (p Path) String() string {
	var b strings.Builder
	for i, seg := range p {
		if strings.ContainsAny(seg, ".[]'/") || seg == "" {
			b.WriteString("['" + seg + "']")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// Lookup returns the raw JSON value at p inside doc.
func (p Path) Lookup(doc json.RawMessage) (json.RawMessage, bool) {
	cur := bytes.TrimSpace(doc)
	for _, seg := range p {
		if len(cur) == 0 {
			return nil, false
		}
		switch cur[0] {
		case '{':
			var m map[string]json.RawMessage
			if json.Unmarshal(cur, &m) != nil {
				return nil, false
			}
			v, ok := m[seg]
			if !ok {
				return nil, false
			}
			cur = bytes.TrimSpace(v)
		case '[':
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 {
				return nil, false
			}
			var a []json.RawMessage
			if json.Unmarshal(cur, &a) != nil || n >= len(a) {
				return nil, false
			}
			cur = bytes.TrimSpace(a[n])
		default:
			return nil, false
		}
	}
	return cur, true
}

// LookupString returns the value at p as a string: a JSON string's content,
// otherwise the raw JSON text (so a numeric receipt id still compares).
// Absent or null gives "".
func (p Path) LookupString(doc json.RawMessage) string {
	v, ok := p.Lookup(doc)
	if !ok || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
