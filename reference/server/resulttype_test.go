package server

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestReplayOnTheOtherWire: an outcome stored by a call on one protocol
// version and replayed on the other is valid for the wire it is replayed on:
// resultType "complete" on 2026-07-28, which requires it, none on
// 2025-11-25, which does not define it; first calls too.
func TestReplayOnTheOtherWire(t *testing.T) {
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + t.TempDir() + "/gw.db", Fixtures: writeFixtures(t)})
	send := func(wire, key string) (map[string]json.RawMessage, bool) {
		t.Helper()
		hdr := map[string]string{"Authorization": "Bearer " + extKey, "Idempotency-Key": key, "MCP-Protocol-Version": wire}
		meta := ""
		if wire == "2026-07-28" {
			hdr["Mcp-Method"], hdr["Mcp-Name"] = "tools/call", "partner.notes.write"
			meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		}
		resp, a := g.mcp(t, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":%q}%s}}`, key, meta))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", wire, resp.StatusCode)
		}
		_, rc := decodeResult(t, a)
		var res map[string]json.RawMessage
		if err := json.Unmarshal(a.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res, rc.Replayed
	}
	check := func(wire string, res map[string]json.RawMessage) {
		t.Helper()
		rt, ok := res["resultType"]
		if wire == "2026-07-28" && string(rt) != `"complete"` {
			t.Errorf("%s: resultType %s, want \"complete\"", wire, rt)
		}
		if wire == "2025-11-25" && ok {
			t.Errorf("%s: resultType %s, want none", wire, rt)
		}
	}
	for _, order := range [][2]string{{"2025-11-25", "2026-07-28"}, {"2026-07-28", "2025-11-25"}} {
		key := "cross-" + order[0]
		first, replayed := send(order[0], key)
		if replayed {
			t.Fatalf("%s: first call replayed", order[0])
		}
		check(order[0], first)
		again, replayed := send(order[1], key)
		if !replayed {
			t.Fatalf("%s: the retry was not a replay", order[1])
		}
		check(order[1], again)
	}
}
