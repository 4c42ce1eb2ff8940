package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/golden"
	"github.com/mcpconform/mcpconform/reference/store"
)

// routeCase is one request and the status it must get; {w}, {k}, {p}, {f}
// and {other} in path and body stand for ids made earlier in the run.
type routeCase struct {
	method, path, body string
	status             int
}

// routeTable walks every route of docs/control-api.md with a good request
// and with the refusals the contract names, plus unknown paths and wrong
// methods. Rows run in order: later ones use what earlier ones made.
var routeTable = []routeCase{
	{"PUT", "/control/clock", `{"now":"2026-12-02T18:00:00Z"}`, 200},
	{"GET", "/control/capabilities", "", 200},
	{"POST", "/control/wallets", `{"balance": 100}`, 201},
	{"POST", "/control/wallets", ``, 201},
	{"POST", "/control/wallets", `{"balance": -1}`, 400},
	{"POST", "/control/wallets", `{"balance": "lots"}`, 400},
	{"POST", "/control/wallets", `{"balance": 1}`, 415}, // sent as text/plain, see run
	{"GET", "/control/wallets/{w}", "", 200},
	{"GET", "/control/wallets/{w}/", "", 200},
	{"GET", "/control/wallets/w-nope", "", 404},
	{"POST", "/control/wallets/{w}/credit", `{"amount": 50}`, 200},
	{"POST", "/control/wallets/{w}/credit", `{"amount": 0}`, 400},
	{"POST", "/control/wallets/{w}/credit", `{"amount": 1125899906842624}`, 200},
	{"POST", "/control/wallets/w-nope/credit", `{"amount": 5}`, 404},
	{"GET", "/control/wallets/{w}/ledger", "", 200},
	{"GET", "/control/wallets/w-nope/ledger", "", 404},
	{"POST", "/control/keys", `{"wallet_id":"{w}"}`, 201},
	{"POST", "/control/keys", `{}`, 400},
	{"POST", "/control/keys", `{"wallet_id":"w-nope"}`, 404},
	{"POST", "/control/trust", `{"provider":"harness","issuer":"http://127.0.0.1:9","jwks_url":"http://127.0.0.1:9/jwks.json","audience":"mcpconform"}`, 204},
	{"POST", "/control/trust", `{"provider":"p","issuer":"i","jwks_url":"ftp://x","audience":"a"}`, 400},
	{"POST", "/control/principals", `{"provider":"harness","issuer":"http://127.0.0.1:9","subject":"alice","tools":[]}`, 201},
	{"POST", "/control/principals", `{"provider":"p"}`, 400},
	{"POST", "/control/principals/{p}/revoke", "", 204},
	{"POST", "/control/principals/p-nope/revoke", "", 404},
	{"POST", "/control/tools", `{"name":"probe.write.3f2a","price":3,"upstream_url":"http://127.0.0.1:9/mcp","upstream_tool":"probe.write"}`, 201},
	{"POST", "/control/tools", `{"name":"up.o","upstream_url":"http://127.0.0.1:9/mcp","title":"T","input_schema":{"type":"object"}}`, 201},
	{"POST", "/control/tools", `{"name":"partner.notes.count","price":5}`, 201},
	{"POST", "/control/tools", `{"name":"alias.echo","local_tool":"partner.echo","price":2}`, 201},
	{"POST", "/control/tools", `{"name":"made.up"}`, 400},
	{"POST", "/control/tools", `{"name":"partner.echo","title":"T"}`, 400},
	{"POST", "/control/tools", `{"name":"a/b","upstream_url":"http://127.0.0.1:9/mcp"}`, 201},
	{"DELETE", "/control/tools/a%2Fb", "", 204},
	{"DELETE", "/control/tools/never.there", "", 404},
	{"DELETE", "/control/tools/..", "", 404},
	{"POST", "/control/servers", `{"name":"s","url":"http://127.0.0.1:1/mcp"}`, 404},
	{"DELETE", "/control/servers/s", "", 404},
	{"POST", "/control/permits", `{"wallet_id":"{w}","key_id":"{k}","tool":"probe.write.3f2a","budget":3,"ttl":"120s"}`, 201},
	{"POST", "/control/permits", `{"wallet_id":"{w}","key_id":"{k}","tool":"partner.notes.count"}`, 201},
	{"POST", "/control/permits", `{"wallet_id":"{w}"}`, 400},
	{"POST", "/control/permits", `{"wallet_id":"{other}","key_id":"{k}","tool":"partner.echo"}`, 400},
	{"POST", "/control/permits", `{"wallet_id":"{w}","key_id":"{k}","tool":"nope"}`, 404},
	{"POST", "/control/permits", `{"wallet_id":"{w}","key_id":"{k}","tool":"partner.echo","ttl":"soon"}`, 400},
	{"POST", "/control/keys/{k}/revoke", "", 204},
	{"POST", "/control/keys/{k}/revoke", "", 204},
	{"POST", "/control/keys/k-nope/revoke", "", 404},
	{"GET", "/control/keys/{k}/revoke", "", 405},
	{"GET", "/control/dispatches?tool=partner.echo&wallet_id={w}", "", 200},
	{"GET", "/control/dispatches", "", 200},
	{"GET", "/control/locks?tool=partner.notes.write&wallet_id={w}", "", 200},
	{"GET", "/control/locks?wallet_id={w}", "", 200},
	{"GET", "/control/locks", "", 400},
	{"GET", "/control/operations?state=uncertain", "", 200},
	{"GET", "/control/operations", "", 400},
	{"GET", "/control/operations?state=completed", "", 400},
	{"POST", "/control/operations/op-done/settle", `{"outcome":"completed","result":{"content":[{"type":"text","text":"done"}]}}`, 200},
	{"POST", "/control/operations/op-done/settle", `{"outcome":"completed","result":{"content":[{"type":"text","text":"done"}]}}`, 409},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"maybe"}`, 400},
	{"POST", "/control/operations/op-back/settle", `{}`, 400},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"completed"}`, 400},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"completed","result":{"content":"done"}}`, 400},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"completed","result":[1]}`, 400},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"refunded","result":{"content":[]}}`, 400},
	{"POST", "/control/operations/op-back/settle", `{"outcome":"refunded"}`, 200},
	{"POST", "/control/operations/op-nope/settle", `{"outcome":"refunded"}`, 404},
	{"POST", "/control/operations/op-fresh/settle", `{"outcome":"refunded"}`, 409},
	{"GET", "/control/operations?state=uncertain", "", 200},
	{"GET", "/control/operations/op-back/settle", "", 405},
	{"GET", "/control/clock", "", 200},
	{"POST", "/control/clock/advance", `{"by":"130s"}`, 200},
	{"POST", "/control/clock/advance", `{"by":"130"}`, 400},
	{"PUT", "/control/clock", `{"now":"yesterday"}`, 400},
	{"DELETE", "/control/clock", "", 204},
	{"PUT", "/control/clock", `{"now":"2026-12-02T18:00:00.5+01:00"}`, 200},
	{"GET", "/control/settings", "", 200},
	{"PUT", "/control/settings", `{"window_seconds": 60, "stale_lock_seconds": 1.5}`, 200},
	{"PUT", "/control/settings", `{"window_seconds": -1}`, 400},
	{"PUT", "/control/settings", `{"window_seconds": "x"}`, 400},
	{"PUT", "/control/settings", `{"permit_ttl_seconds": 0}`, 400},
	{"DELETE", "/control/settings", "", 204},
	{"POST", "/control/faults", `{"point":"fence.read","action":"pause","count":1,"match":{"tool":"probe.write.3f2a","wallet_id":"{w}"}}`, 201},
	{"POST", "/control/faults", `{"point":"dispatch.after","action":"drop_response"}`, 201},
	{"POST", "/control/faults", `{"point":"nowhere","action":"pause"}`, 400},
	{"POST", "/control/faults", `{"point":"fence.read","action":"explode"}`, 400},
	{"POST", "/control/faults", `{"point":"fence.read","action":"pause","count":-1}`, 400},
	{"GET", "/control/faults/{f}", "", 200},
	{"GET", "/control/faults/f-nope", "", 404},
	{"POST", "/control/faults/{f}/await", `{"waiting":1,"timeout":"1ms"}`, 408},
	{"POST", "/control/faults/{f}/await", `{"waiting":0}`, 200},
	{"POST", "/control/faults/{f}/await", `{"timeout":"forever"}`, 400},
	{"POST", "/control/faults/f-nope/await", `{"timeout":"10ms"}`, 404},
	{"GET", "/control/faults", "", 200},
	{"POST", "/control/faults/{f}/release", "", 200},
	{"POST", "/control/faults/f-nope/release", "", 404},
	{"DELETE", "/control/faults", "", 204},
	{"GET", "/control/faults", "", 200},
	// Unknown endpoints and wrong methods.
	{"GET", "/control/", "", 404},
	{"GET", "/control/nope", "", 404},
	{"GET", "/control/%25zz", "", 404},
	{"GET", "/control/wallets//ledger", "", 404},
	{"GET", "/control/wallets/./ledger", "", 404},
	{"GET", "/control/faults/x/y/z", "", 404},
	{"GET", "/control/clock/.", "", 404},
	{"PUT", "/control/wallets", `{}`, 405},
	{"DELETE", "/control/capabilities", "", 405},
	{"PATCH", "/control/clock", "", 405},
	{"HEAD", "/control/clock", "", 405},
	{"OPTIONS", "/control/faults/", "", 405},
	{"GET", "/control/clock/advance", "", 405},
	{"GET", "/control/wallets/{w}/credit", "", 405},
	{"DELETE", "/control/principals/{p}/revoke", "", 405},
}

// TestRouteTable runs routeTable through the handler itself (a ServeMux in
// front of it would redirect the unclean paths before it saw them) and holds every answer (status, the
// headers a client acts on, the body with ids and ports replaced) to
// testdata/answers.golden, so a change to routing or to how answers are
// built cannot change what a client sees unnoticed.
func TestRouteTable(t *testing.T) {
	e := newEnv(t)
	ids := map[string]string{}
	seen := &placeholders{}
	var answers bytes.Buffer
	for i, c := range routeTable {
		// Dispatches and locks as the gateway would write them, once the
		// wallet exists.
		if c.path == "/control/dispatches?tool=partner.echo&wallet_id={w}" {
			seedEffects(t, e, ids["w"])
		}
		path, body := expand(c.path, ids), expand(c.body, ids)
		req := httptest.NewRequest(c.method, path, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.status == http.StatusUnsupportedMediaType {
			req.Header.Set("Content-Type", "text/plain")
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		resp := rec.Result()
		raw := rec.Body.Bytes()
		if resp.StatusCode != c.status {
			t.Errorf("row %d: %s %s %s: status %d, want %d: %s", i, c.method, path, body, resp.StatusCode, c.status, raw)
		}
		var m map[string]any
		if len(raw) > 0 {
			d := json.NewDecoder(bytes.NewReader(raw))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				t.Fatalf("row %d: %s %s: answer is not a JSON object: %q", i, c.method, path, raw)
			}
		}
		if resp.StatusCode >= 400 && c.method != "HEAD" && (m["error"] == nil || m["reason"] == nil) {
			t.Errorf("row %d: %s %s: an error without error and reason: %s", i, c.method, path, raw)
		}
		remember(m, ids, seen)
		fmt.Fprintf(&answers, "### %s %s %s\n%d\n", c.method, c.path, c.body, resp.StatusCode)
		for _, h := range []string{"Content-Type", "Allow", "Www-Authenticate"} {
			if v := resp.Header.Get(h); v != "" {
				fmt.Fprintf(&answers, "%s: %s\n", h, v)
			}
		}
		if m != nil {
			enc := json.NewEncoder(&answers)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(seen.replace(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden.Equal(t, filepath.Join("testdata", "answers.golden"), answers.Bytes())
}

func seedEffects(t *testing.T, e *env, wid string) {
	t.Helper()
	ctx := t.Context()
	now := e.clk.Now()
	for _, d := range []store.Dispatch{
		{ID: "d-1", Tool: "partner.echo", RecordKey: "r1", Fingerprint: "fp1", WalletID: wid, At: now},
		{ID: "d-2", Tool: "partner.notes.write", RecordKey: "r2", Fingerprint: "fp2", WalletID: wid, At: now.Add(time.Millisecond)},
	} {
		if err := e.st.LogDispatch(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.st.AcquireLock(ctx, wid+"|partner.notes.write|abc", "owner-1", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	seedOperations(t, e, wid)
}

// seedOperations leaves what a killed gateway would: two operations charged
// an hour ago and never finished (uncertain), and one reserved a moment ago
// and not charged (not uncertain).
func seedOperations(t *testing.T, e *env, wid string) {
	t.Helper()
	ctx := t.Context()
	now := e.clk.Now()
	for i, op := range []struct {
		key     string
		at      time.Duration
		charged int64
	}{{"op-back", -time.Hour, 5}, {"op-done", -time.Hour + time.Second, 5}, {"op-fresh", -time.Second, 0}} {
		at := now.Add(op.at)
		rec := store.Record{Key: op.key, Kind: store.KindClient, ClientKey: "client-" + op.key, WalletID: wid, APIKeyID: "k-seed",
			Tool: "partner.notes.write", Fingerprint: "fp", State: store.StateInProgress, Owner: fmt.Sprintf("owner-%d", i),
			PermitID: "pmt-" + op.key, CreatedAt: at, UpdatedAt: at}
		p := store.Permit{ID: rec.PermitID, WalletID: wid, APIKeyID: rec.APIKeyID, Tool: rec.Tool, Budget: 5, ExpiresAt: now.Add(time.Hour),
			Auto: true, RecordKey: rec.Key, CreatedAt: at}
		if _, _, err := e.st.Reserve(ctx, store.ReserveRequest{Record: rec, Permit: &p}); err != nil {
			t.Fatal(err)
		}
		if op.charged == 0 {
			continue
		}
		debit := store.LedgerEntry{ID: "le-" + op.key, WalletID: wid, Kind: store.EntryDebit, Amount: op.charged, RecordKey: rec.Key,
			Receipt: "rcpt-" + op.key, Tool: rec.Tool, At: at}
		if err := e.st.Charge(ctx, store.ChargeRequest{Entry: debit, RecordKey: rec.Key, Owner: rec.Owner, PermitID: p.ID, Now: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// expand puts the ids made so far into a row's path or body.
func expand(s string, ids map[string]string) string {
	for k, v := range ids {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// remember keeps the first wallet, key, principal and fault ids an answer
// hands out (and the second wallet as {other}) for later rows, and every
// generated value for the golden's placeholders.
func remember(m map[string]any, ids map[string]string, seen *placeholders) {
	short := map[string]string{"wallet_id": "w", "key_id": "k", "principal_id": "p", "fault_id": "f"}
	for k, s := range short {
		v, ok := m[k].(string)
		switch {
		case !ok:
		case ids[s] == "":
			ids[s] = v
		case s == "w" && ids["other"] == "" && v != ids["w"]:
			ids["other"] = v
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && s != "" && slices.Contains([]string{"wallet_id", "key_id", "api_key", "principal_id", "permit_id", "fault_id", "id"}, k) {
					seen.add(s, "<"+k+">")
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(m)
}

// placeholders names generated values in order of first sight, so the
// golden holds "<wallet_id#1>" where the run had a random id.
type placeholders struct {
	from, to []string
}

func (p *placeholders) add(v, kind string) {
	if slices.Contains(p.from, v) {
		return
	}
	n := 1
	for _, t := range p.to {
		if strings.HasPrefix(t, strings.TrimSuffix(kind, ">")+"#") {
			n++
		}
	}
	p.from = append(p.from, v)
	p.to = append(p.to, fmt.Sprintf("%s#%d>", strings.TrimSuffix(kind, ">"), n))
}

func (p *placeholders) replace(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = p.replace(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = p.replace(x)
		}
		return out
	case string:
		// Longest first: an API key holds its key id.
		order := make([]int, len(p.from))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return len(p.from[b]) - len(p.from[a]) })
		for _, i := range order {
			v = strings.ReplaceAll(v, p.from[i], p.to[i])
		}
		return v
	}
	return v
}
