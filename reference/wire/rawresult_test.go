package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRawResultMarshal: a result written member by member is the JSON
// json.Marshal of its members would be, names in the same (sorted) order,
// with the SDK's own _meta entries as it set them.
func TestRawResultMarshal(t *testing.T) {
	tests := []struct {
		name        string
		core        string
		newProtocol bool
		sdkMeta     map[string]any // what the SDK adds to _meta before writing
	}{
		{"bare", `{"content":[{"type":"text","text":"hi"}],"isError":false}`, false, nil},
		{"no content", `{"isError":true}`, true, nil},
		{"receipt and spacing kept", `{ "_meta" : {"io.mcpconform/receipt": {"id":"r-1", "replayed":true}},
			"content" : [ {"type":"text","text":"<a> & \u00e9 \"q\""} ], "structuredContent":{"z":1,"a":[1, 2.50]} }`, true, nil},
		{"the SDK's _meta", `{"content":[],"_meta":{"k":"v"}}`, true, map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "gw", "version": "1"}}},
		{"an odd member name", `{"content":[],"a\"b\u2028":1,"resultType":"complete"}`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := newRawResult(json.RawMessage(tt.core), tt.newProtocol)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.sdkMeta {
				if r.Meta == nil {
					r.Meta = map[string]any{}
				}
				r.Meta[k] = v
			}
			got, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			// What json.Marshal of the members writes.
			members := map[string]json.RawMessage{}
			for k, v := range r.fields {
				members[k] = v
			}
			if len(r.Meta) > 0 {
				if members["_meta"], err = json.Marshal(map[string]any(r.Meta)); err != nil {
					t.Fatal(err)
				}
			}
			want, err := json.Marshal(members)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Fatalf("written %s\n(-json.Marshal +written)\n%s", got, diff)
			}
			if names := topNames(t, got); !slices.IsSorted(names) {
				t.Fatalf("member names %q not in json.Marshal's order", names)
			}
		})
	}
}

// topNames is the names of a JSON object's members, in order.
func topNames(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}
