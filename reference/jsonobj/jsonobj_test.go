package jsonobj

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestMarshal: members written as they are come out as the Encoder (HTML
// escaping off) writes the map, byte for byte, when the members are compact.
func TestMarshal(t *testing.T) {
	tests := []struct {
		name    string
		members map[string]json.RawMessage
	}{
		{"empty", map[string]json.RawMessage{}},
		{"sorted", map[string]json.RawMessage{"content": []byte(`[]`), "_meta": []byte(`{"a":1}`), "isError": []byte(`false`), "Zed": []byte(`null`)}},
		{"names to escape", map[string]json.RawMessage{"a\"b": []byte(`1`), "<&>": []byte(`"<&>"`), "tab\t\u2028": []byte(`2`)}},
		{"nested", map[string]json.RawMessage{"structuredContent": []byte(`{"z":[1,2.5,"x"],"a":{"b":null}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(tt.members); err != nil {
				t.Fatal(err)
			}
			got := Marshal(tt.members)
			if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
				t.Fatalf("got  %s\nwant %s", got, w)
			}
		})
	}
}
