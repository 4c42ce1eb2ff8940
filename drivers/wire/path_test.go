package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in      string
		want    Path
		wantErr bool
	}{
		{in: "result.id", want: Path{"result", "id"}},
		{in: DefaultReceiptPath, want: Path{"result", "_meta", "io.mcpconform/receipt", "id"}},
		{in: "['a.b']", want: Path{"a.b"}},
		{in: "['a.b'].c['d/e']", want: Path{"a.b", "c", "d/e"}},
		{in: "result.content.0.text", want: Path{"result", "content", "0", "text"}},
		{in: "", wantErr: true},
		{in: "a..b", wantErr: true},
		{in: ".a", wantErr: true},
		{in: "a.", wantErr: true},
		{in: "a['b", wantErr: true},
		{in: "a[b]", wantErr: true},
		{in: "['a']b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePath(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePath(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ParsePath(%q) (-want +got):\n%s", tt.in, diff)
			}
			// The text form round-trips.
			again, err := ParsePath(got.String())
			if err != nil || !cmp.Equal(got, again) {
				t.Fatalf("round trip %q -> %q -> %v (%v)", tt.in, got.String(), again, err)
			}
		})
	}
}

func TestPathLookup(t *testing.T) {
	doc := json.RawMessage(`{"result":{"_meta":{"io.mcpconform/receipt":{"id":"rcpt-1","charged":3}},
		"content":[{"type":"text","text":"hi"}]},"n":7,"z":null}`)
	tests := []struct {
		path   string
		want   string
		wantOK bool
	}{
		{DefaultReceiptPath, "rcpt-1", true},
		{"result._meta['io.mcpconform/receipt'].charged", "3", true},
		{"result.content.0.text", "hi", true},
		{"result.content.1.text", "", false},
		{"result.content.x", "", false},
		{"n", "7", true},
		{"n.deeper", "", false},
		{"z", "", true},
		{"missing", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p := MustParsePath(tt.path)
			_, ok := p.Lookup(doc)
			if ok != tt.wantOK {
				t.Fatalf("Lookup ok = %v, want %v", ok, tt.wantOK)
			}
			if got := p.LookupString(doc); got != tt.want {
				t.Fatalf("LookupString = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSFString(t *testing.T) {
	tests := map[string]string{
		"k-1":       `"k-1"`,
		`a"b`:       `"a\"b"`,
		`a\b`:       `"a\\b"`,
		"":          `""`,
		"caf\u00e9": "caf\u00e9", // not sf-serializable: sent as is
	}
	for in, want := range tests {
		if got := SFString(in); got != want {
			t.Errorf("SFString(%q) = %q, want %q", in, got, want)
		}
	}
}
