package wire

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// initSession opens a 2025-11-25 session with key-a and returns the headers
// a call on it carries.
func initSession(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, r, raw := post(t, url, map[string]string{"Authorization": "Bearer key-a"},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("initialize: %d %s", resp.StatusCode, raw)
	}
	hdr := map[string]string{"Authorization": "Bearer key-a", HeaderProtocol: Protocol20251125, HeaderSession: resp.Header.Get(HeaderSession)}
	if resp, _, raw := post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, raw)
	}
	return hdr
}

// TestResultTypePerWire: a tools/call result carries resultType "complete"
// on 2026-07-28, which requires it, and none on 2025-11-25, which does not
// define it; whatever the stored outcome says, first call or replay, since
// an outcome produced on one wire may be replayed on the other.
func TestResultTypePerWire(t *testing.T) {
	srv, core := newServer(t)
	url := srv.URL + "/mcp"
	session := initSession(t, url)
	tests := []struct {
		name   string
		stored string // the core's result's resultType member, "" for none
	}{
		{"no resultType stored", ""},
		{"complete stored", `"complete"`},
		{"empty stored", `""`},
		{"not a string stored", `7`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core.setResultType(tc.stored)
			for id, wire := range []struct {
				name string
				hdr  map[string]string
				meta string
				want string // "" means absent
			}{
				{"2025-11-25", session, "", ""},
				{"2026-07-28", headers2026("tools/call", "ok"), meta2026(""), "complete"},
			} {
				resp, r, raw := post(t, url, wire.hdr, callBody(id+1, "ok", `{}`, wire.meta))
				if resp.StatusCode != 200 || r.Error != nil {
					t.Fatalf("%s: %d %s", wire.name, resp.StatusCode, raw)
				}
				var res map[string]json.RawMessage
				if err := json.Unmarshal(r.Result, &res); err != nil {
					t.Fatal(err)
				}
				got, present := res["resultType"]
				switch {
				case wire.want == "" && present:
					t.Errorf("%s: resultType %s, want none: %s", wire.name, got, raw)
				case wire.want != "" && string(got) != `"`+wire.want+`"`:
					t.Errorf("%s: resultType %s, want %q: %s", wire.name, got, wire.want, raw)
				}
				if !strings.Contains(string(res["content"]), `"ok"`) {
					t.Errorf("%s: content lost: %s", wire.name, raw)
				}
			}
		})
	}
}

func (f *fakeCore) setResultType(raw string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resultType = raw
}
