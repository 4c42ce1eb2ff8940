package target

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseProfile: ParseProfile never panics, and a profile it accepts
// round-trips: written back as JSON it is accepted again, equal, and
// written the same way (the defaults it filled in are stable). The seed
// corpus is every profile in testdata plus testdata/fuzz/FuzzParseProfile.
func FuzzParseProfile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"urls":["http://h/mcp"],"credentials":{"api_keys":["k"]}}`,
		`{"control_url":"http://127.0.0.1:1/control","reasons":{"unauthenticated":[-32001,"denied"]}}`,
		`{"control_url":"http://h/c","reasons":{"unauthenticated":[null]}}`,
		`{"control_url":"http://h/c","auth":{"prefix":""},"receipt_path":"result._meta.x"}`,
		`{"control_url":"http://h/c"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseProfile(in)
		if err != nil {
			if p != nil {
				t.Fatalf("ParseProfile returned a profile and an error: %v", err)
			}
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("an accepted profile does not marshal: %v", err)
		}
		q, err := ParseProfile(out)
		if err != nil {
			t.Fatalf("accepted %q, but not its own JSON %s: %v", in, out, err)
		}
		if diff := cmp.Diff(p, q, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip of %q via %s changed it (-first +second):\n%s", in, out, diff)
		}
		again, _ := json.Marshal(q)
		if !bytes.Equal(out, again) {
			t.Fatalf("round trip is not stable:\n%s\n%s", out, again)
		}
	})
}
