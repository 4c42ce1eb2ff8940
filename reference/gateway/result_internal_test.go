package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestReplayedIsTheStoredResult: a replay is the stored result with its
// receipt marked replayed, byte for byte what re-encoding the whole stored
// object would give, whatever the tool put in it.
func TestReplayedIsTheStoredResult(t *testing.T) {
	tests := []struct{ name, result string }{
		{"text", `{"content":[{"type":"text","text":"hi"}],"isError":false}`},
		{"markup and escapes kept", `{"content":[{"type":"text","text":"<b>&amp;</b> \u00e9 \"q\" \u2028"}],"structuredContent":{"z":1,"a":[1, 2.50, null]}}`},
		{"the tool's own _meta", `{"_meta":{"progress":{"done":true},"z":"<"},"content":[],"isError":true}`},
		{"odd member names", `{"content":[],"a<b>":1,"tab\t":{"x":"y"}}`},
		{"malformed", `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := Receipt{ID: "rcpt-1", IdempotencyKey: "k-1", Charged: 2}
			stored, err := withReceipt(json.RawMessage(tt.result), first)
			if err != nil {
				t.Fatal(err)
			}
			got, rc, err := replayed(stored)
			if err != nil {
				t.Fatal(err)
			}
			if want := (Receipt{ID: "rcpt-1", IdempotencyKey: "k-1", Charged: 2, Replayed: true}); rc != want {
				t.Fatalf("receipt %+v, want %+v", rc, want)
			}
			// The whole stored object decoded, the receipt changed, encoded again.
			var obj, meta map[string]json.RawMessage
			if err := json.Unmarshal(stored, &obj); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(obj["_meta"], &meta); err != nil {
				t.Fatal(err)
			}
			if meta[ReceiptMetaKey], err = marshal(rc); err != nil {
				t.Fatal(err)
			}
			if obj["_meta"], err = marshal(meta); err != nil {
				t.Fatal(err)
			}
			want, err := marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("replayed\n got %s\nwant %s", got, want)
			}
		})
	}
}
