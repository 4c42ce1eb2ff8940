package server

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
)

// extKey is the API key the operator's fixtures file gives wallet w-ext-1.
const extKey = "mcpk_k-ext-1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// writeFixtures writes a fixtures file giving w-ext-1 a balance of 1000 and
// extKey, partner.notes.write a price of 4, and extra tools.
func writeFixtures(t *testing.T, extraTools ...string) string {
	t.Helper()
	tools := append([]string{`{"name": "partner.notes.write", "price": 4}`}, extraTools...)
	body := `{"wallets": [{"id": "w-ext-1", "balance": 1000, "api_keys": ["` + extKey + `"]}],
		"tools": [` + strings.Join(tools, ",") + `]}`
	path := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ledgerOf reads a wallet's ledger from the SQLite file of a stopped gateway.
func ledgerOf(t *testing.T, dbPath, wallet string) (credits, debits []store.LedgerEntry, balance int64) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Ledger(t.Context(), wallet)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Kind {
		case store.EntryCredit:
			credits = append(credits, e)
		case store.EntryDebit:
			debits = append(debits, e)
		}
	}
	w, err := st.Wallet(t.Context(), wallet)
	if err != nil {
		t.Fatal(err)
	}
	return credits, debits, w.Balance
}

// TestFixturesFile starts the gateway as the harness will start one without a
// control API: with an operator's fixtures file, driven over MCP only. The
// imported key calls a tool at the file's price; a restart on the same store
// applies the file again and writes nothing new (one opening credit).
func TestFixturesFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state", "gw.db")
	cfg := Config{Addr: "127.0.0.1:0", Store: "sqlite:" + db, Fixtures: writeFixtures(t)}
	auth := map[string]string{"Authorization": "Bearer " + extKey, "MCP-Protocol-Version": "2025-11-25"}

	g := start(t, cfg)
	if want := "fixtures:     " + cfg.Fixtures + " applied: 1 wallet (1 new, 1 credited), 1 API key (1 new), 1 tool, 0 trusts, 0 principals"; !strings.Contains(g.out.String(), want) {
		t.Fatalf("quickstart lacks %q:\n%s", want, g.out)
	}
	_, a := g.mcp(t, auth, call(1, "partner.notes.write", `{"text":"first"}`))
	if _, rc := decodeResult(t, a); rc.Charged != 4 || rc.Replayed {
		t.Fatalf("call with the imported key: receipt %+v", rc)
	}
	g.stop(t)

	g = start(t, cfg)
	if want := "applied: 1 wallet (0 new, 0 credited), 1 API key (0 new)"; !strings.Contains(g.out.String(), want) {
		t.Fatalf("restart quickstart lacks %q:\n%s", want, g.out)
	}
	_, a = g.mcp(t, auth, call(2, "partner.notes.write", `{"text":"second"}`))
	if _, rc := decodeResult(t, a); rc.Charged != 4 {
		t.Fatalf("call after the restart: receipt %+v", rc)
	}
	g.stop(t)

	credits, debits, balance := ledgerOf(t, db, "w-ext-1")
	if len(credits) != 1 || credits[0].Amount != 1000 || len(debits) != 2 || balance != 1000-2*4 {
		t.Fatalf("w-ext-1 after two starts: credits %+v, debits %+v, balance %d", credits, debits, balance)
	}
}

// A bad fixtures file stops the start-up before the store is opened or
// anything listens.
func TestFixturesFileRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"wallets": [{"id": "w-1", "api_keys": ["mcpk_k-1_short"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "state", "gw.db")
	var out bytes.Buffer
	err := Run(context.Background(), Config{Addr: "127.0.0.1:0", Store: "sqlite:" + db, Fixtures: bad}, &out)
	var se *StartupError
	if err == nil || !strings.Contains(err.Error(), "fixtures "+bad+": wallets[0] (w-1): api_keys[0]: api key mcpk_k-1_…: the secret must be") {
		t.Fatalf("err %v", err)
	}
	if !errors.As(err, &se) {
		t.Fatalf("err %T is not a StartupError", err)
	}
	if _, statErr := os.Stat(filepath.Dir(db)); !os.IsNotExist(statErr) || strings.Contains(out.String(), "listening on") {
		t.Fatalf("the store was touched (%v) or the gateway listened:\n%s", statErr, out.String())
	}
}

// TestWindowZeroRefusesUnkeyed: a gateway started with a window of 0 (the
// "refuse" unkeyed policy, --window 0) refuses every unkeyed mutating call
// with idempotency_key_required before anything is reserved, charged or
// dispatched, on both wires; a keyed call still runs.
func TestWindowZeroRefusesUnkeyed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gw.db")
	s := gateway.DefaultSettings()
	s.Window = 0
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + db, Fixtures: writeFixtures(t), Settings: s})
	if !strings.Contains(g.out.String(), "window:       0s unkeyed retry window") {
		t.Fatalf("quickstart:\n%s", g.out)
	}
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		name string
		hdr  map[string]string
		body string
	}{
		{"2025-11-25", map[string]string{"MCP-Protocol-Version": "2025-11-25"}, call(1, "partner.notes.write", `{"text":"a"}`)},
		{"2025-11-25 retry", map[string]string{"MCP-Protocol-Version": "2025-11-25"}, call(2, "partner.notes.write", `{"text":"a"}`)},
		{"2026-07-28", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "partner.notes.write"},
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"a"},"_meta":` + meta + `}}`},
		{"another mutating tool", map[string]string{"MCP-Protocol-Version": "2025-11-25"}, call(4, "partner.echo", `{}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.hdr["Authorization"] = "Bearer " + extKey
			_, a := g.mcp(t, c.hdr, c.body)
			if a.Error == nil || a.Error.Code != gateway.Codes[gateway.ReasonKeyRequired] || a.Error.Data["reason"] != gateway.ReasonKeyRequired || a.Error.Data["retryable"] != false {
				t.Fatalf("unkeyed call with window 0: %+v", a.Error)
			}
		})
	}
	_, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + extKey, "MCP-Protocol-Version": "2025-11-25", "Idempotency-Key": "k-1"},
		call(5, "partner.notes.write", `{"text":"a"}`))
	if _, rc := decodeResult(t, a); rc.IdempotencyKey != "k-1" || rc.Charged != 4 {
		t.Fatalf("keyed call with window 0: %+v", rc)
	}
	g.stop(t)

	_, debits, _ := ledgerOf(t, db, "w-ext-1")
	st, err := sqlite.Open(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ds, err := st.Dispatches(t.Context(), store.DispatchFilter{WalletID: "w-ext-1"})
	if err != nil || len(ds) != 1 || len(debits) != 1 {
		t.Fatalf("after the refusals and one keyed call: dispatches %+v (%v), debits %+v; want the keyed call's only", ds, err, debits)
	}
	if n, err := st.CountNotes(t.Context(), "w-ext-1"); err != nil || n != 1 {
		t.Fatalf("notes %d, %v: want the keyed call's only", n, err)
	}
}
