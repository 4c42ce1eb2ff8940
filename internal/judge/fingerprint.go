package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
)

// fingerprints are a call's arguments as the model compares them:
// literal keeps every number as it was written (so 1 and 1.0, or two
// integers past 2^53, are other arguments, as a gateway that fingerprints
// the JSON it received sees them), value writes each number as its exact
// value (1, 1.0 and 1e0 are one). Member order and whitespace never count.
// Two calls whose literal prints differ but whose value prints agree may be
// taken for one operation or for two: the contract allows either.
type fingerprints struct{ literal, value string }

func fingerprint(args any) fingerprints {
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			s := fmt.Sprint(args)
			return fingerprints{s, s}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return fingerprints{string(raw), string(raw)}
	}
	var lit, val strings.Builder
	writeCanonical(&lit, v, false)
	writeCanonical(&val, v, true)
	return fingerprints{lit.String(), val.String()}
}

// writeCanonical writes v with object members sorted; byValue writes each
// number as its exact value in lowest terms.
func writeCanonical(w *strings.Builder, v any, byValue bool) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			w.Write(b)
			w.WriteByte(':')
			writeCanonical(w, x[k], byValue)
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			writeCanonical(w, e, byValue)
		}
		w.WriteByte(']')
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok && byValue {
			w.WriteString(r.RatString())
			return
		}
		w.WriteString(string(x))
	default:
		b, _ := json.Marshal(x)
		w.Write(b)
	}
}

// duplicateMembers reports whether raw JSON repeats a member name in one
// object, which a gateway may refuse as invalid arguments (docs/wire.md).
func duplicateMembers(args any) bool {
	raw, ok := args.(json.RawMessage)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next token of an object is a member name
	}
	var stack []*frame
	for {
		t, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		top := func() *frame {
			if len(stack) == 0 {
				return nil
			}
			return stack[len(stack)-1]
		}
		if f := top(); f != nil && f.object && f.key {
			if name, ok := t.(string); ok {
				if f.seen[name] {
					return true
				}
				f.seen[name] = true
				f.key = false
				continue
			}
		}
		switch d := t.(type) {
		case json.Delim:
			switch d {
			case '{':
				if f := top(); f != nil && f.object {
					f.key = true
				}
				stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			case '[':
				if f := top(); f != nil && f.object {
					f.key = true
				}
				stack = append(stack, &frame{})
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		default:
			if f := top(); f != nil && f.object {
				f.key = true
			}
		}
	}
}
