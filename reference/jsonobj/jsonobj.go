// Package jsonobj writes a JSON object from members that are JSON already.
//
// A tools/call result travels as an object whose members are kept as raw
// JSON (json.RawMessage) while the gateway edits one of them (the receipt in
// _meta, the resultType). json.Marshal of such a map validates and
// re-compacts every member's bytes again, the whole result each time it is
// written; members that came from json.Unmarshal are valid already.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Marshal writes members as one JSON object, names sorted as json.Marshal
// sorts a map's, each value as it is, and "<", ">" and "&" unescaped. Every
// value must be valid JSON (what json.Unmarshal put in a
// map[string]json.RawMessage, or a constant): Marshal does not check.
func Marshal(members map[string]json.RawMessage) []byte {
	names := make([]string, 0, len(members))
	size := 2
	for k, v := range members {
		names = append(names, k)
		size += len(k) + len(v) + 4
	}
	slices.Sort(names)
	out := bytes.NewBuffer(make([]byte, 0, size))
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	out.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			out.WriteByte(',')
		}
		_ = enc.Encode(k)           // a string always encodes
		out.Truncate(out.Len() - 1) // Encode's newline
		out.WriteByte(':')
		out.Write(members[k])
	}
	out.WriteByte('}')
	return out.Bytes()
}
