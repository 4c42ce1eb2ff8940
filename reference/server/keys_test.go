package server

import (
	"path/filepath"
	"strings"
	"testing"
)

// initialize opens a 2025-11-25 session with key, as an MCP client would,
// and returns the headers of a request on it.
func (g *gatewayProc) initialize(t *testing.T, key string) map[string]string {
	t.Helper()
	resp, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + key},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" || a.Error != nil {
		t.Fatalf("initialize: HTTP %d %+v", resp.StatusCode, a.Error)
	}
	sess := map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if st := g.notify(t, sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != 202 {
		t.Fatalf("initialized: HTTP %d", st)
	}
	return sess
}

// TestRevokedKeyEveryProcess: a key revoked through one gateway process's
// control API is refused by another process on the same store at its next
// request, on a session that process opened with it before: the second
// process had just accepted the key, and keeps nothing of it in memory.
// Another key of the same wallet goes on working.
func TestRevokedKeyEveryProcess(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
	one := start(t, Config{Addr: "127.0.0.1:0", Store: db, ControlToken: controlToken})
	two := start(t, Config{Addr: "127.0.0.1:0", Store: db, ControlToken: controlToken})

	wallet := one.control(t, "POST", "/control/wallets", `{"balance": 100}`, 201)["wallet_id"].(string)
	k := one.control(t, "POST", "/control/keys", `{"wallet_id":"`+wallet+`"}`, 201)
	key, keyID := k["api_key"].(string), k["key_id"].(string)
	other := one.control(t, "POST", "/control/keys", `{"wallet_id":"`+wallet+`"}`, 201)["api_key"].(string)

	sess := two.initialize(t, key)
	if _, a := two.mcp(t, sess, call(2, "partner.echo", `{"text":"before"}`)); a.Error != nil {
		t.Fatalf("call before revocation: %+v", a.Error)
	}
	one.control(t, "POST", "/control/keys/"+keyID+"/revoke", "", 204)

	for name, req := range map[string]struct {
		g    *gatewayProc
		hdr  map[string]string
		body string
	}{
		"call on the open session": {two, sess, call(3, "partner.echo", `{"text":"after"}`)},
		"tools/list on it":         {two, sess, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`},
		"initialize on the other process": {one, map[string]string{"Authorization": "Bearer " + key},
			`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`},
	} {
		resp, a := req.g.mcp(t, req.hdr, req.body)
		if resp.StatusCode != 401 || a.Error == nil || a.Error.Data["reason"] != "unauthenticated" || !strings.Contains(a.Error.Message, "revoked") {
			t.Errorf("%s after revocation: HTTP %d %+v, want 401 unauthenticated saying revoked", name, resp.StatusCode, a.Error)
		}
	}
	if _, a := two.mcp(t, two.initialize(t, other), call(6, "partner.echo", `{"text":"other key"}`)); a.Error != nil {
		t.Errorf("another key of the wallet after the revocation: %+v", a.Error)
	}
	one.control(t, "POST", "/control/keys/"+keyID+"/revoke", "", 204) // again: the same answer
	one.control(t, "POST", "/control/keys/k-nope/revoke", "", 404)
}
