package control

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/tools"
)

// fakeGateway stands in for *gateway.Gateway; the settlement of uncertain
// operations is the real gateway's (real), under the fake's settings.
type fakeGateway struct {
	st      store.Store
	mu      sync.Mutex
	s, init gateway.Settings
	real    *gateway.Gateway
}

// noDispatch is the real gateway's dispatcher: settling runs no tool.
type noDispatch struct{}

func (noDispatch) Dispatch(context.Context, gateway.DispatchRequest) (json.RawMessage, error) {
	return nil, fmt.Errorf("control tests dispatch nothing")
}

func (g *fakeGateway) synced() (*gateway.Gateway, error) {
	return g.real, g.real.SetSettings(g.Settings())
}

func (g *fakeGateway) Uncertain(ctx context.Context) ([]gateway.Uncertain, error) {
	real, err := g.synced()
	if err != nil {
		return nil, err
	}
	return real.Uncertain(ctx)
}

func (g *fakeGateway) Settle(ctx context.Context, key string, s gateway.Settlement) (gateway.Uncertain, store.Record, error) {
	real, err := g.synced()
	if err != nil {
		return gateway.Uncertain{}, store.Record{}, err
	}
	return real.Settle(ctx, key, s)
}

func (g *fakeGateway) Settings() gateway.Settings { g.mu.Lock(); defer g.mu.Unlock(); return g.s }
func (g *fakeGateway) SetSettings(s gateway.Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.s = s
	return nil
}
func (g *fakeGateway) ResetSettings() { g.mu.Lock(); defer g.mu.Unlock(); g.s = g.init }
func (g *fakeGateway) IssueAPIKey(ctx context.Context, wallet string) (string, string, error) {
	id := "k-" + uuid.NewString()[:8]
	secret := uuid.NewString()
	h := sha256.Sum256([]byte(secret))
	if err := g.st.CreateAPIKey(ctx, store.APIKey{ID: id, WalletID: wallet, SecretHash: h[:], CreatedAt: time.Now()}); err != nil {
		return "", "", err
	}
	return id, "mcpk_" + id + "_" + secret, nil
}
func (g *fakeGateway) LockIdentityPrefix(wallet, tool string) string {
	return wallet + "|" + tool + "|"
}

const token = "test-control-token"

type env struct {
	srv *httptest.Server
	st  store.Store
	clk *clock.Clock
	flt *faults.Registry
	gw  *fakeGateway
	h   http.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tools.Seed(ctx, st); err != nil {
		t.Fatal(err)
	}
	gw := &fakeGateway{st: st, s: gateway.DefaultSettings(), init: gateway.DefaultSettings()}
	e := &env{st: st, clk: clock.New(), flt: faults.New(), gw: gw}
	if gw.real, err = gateway.New(gateway.Options{Store: st, Clock: e.clk, Faults: e.flt, Dispatcher: noDispatch{}}); err != nil {
		t.Fatal(err)
	}
	bs, _ := bugs.Parse([]string{bugs.ReplayDebits})
	h, err := New(Config{Token: token, Store: st, Gateway: gw, Clock: e.clk, Faults: e.flt, StoreKind: "sqlite", Bugs: bs})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	mux := http.NewServeMux()
	mux.Handle("/control/", h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// do sends one request with the token; body "" sends none.
func (e *env) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	return e.doAuth(t, method, path, body, "Bearer "+token)
}

func (e *env) doAuth(t *testing.T, method, path, body, authz string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, raw)
		}
	}
	if resp.StatusCode >= 400 && (m["reason"] == nil || m["error"] == nil) {
		t.Fatalf("%s %s: error without reason/error: %s", method, path, raw)
	}
	return resp.StatusCode, m
}

func (e *env) must(t *testing.T, method, path, body string, want int) map[string]any {
	t.Helper()
	got, m := e.do(t, method, path, body)
	if got != want {
		t.Fatalf("%s %s %s: status %d, want %d: %v", method, path, body, got, want, m)
	}
	return m
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ name, authz string }{
		{"none", ""}, {"wrong", "Bearer nope"}, {"basic", "Basic " + token}, {"prefix", "Bearer " + token + "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []string{"/control/capabilities", "/control/wallets", "/control/nope"} {
				st, m := e.doAuth(t, "GET", p, "", c.authz)
				if st != 401 || m["reason"] != "control_token_required" {
					t.Fatalf("%s: %d %v", p, st, m)
				}
			}
		})
	}
	// Non-loopback clients are refused before the token is looked at.
	for _, remote := range []string{"10.1.2.3:5555", "[2001:db8::1]:80", "192.168.0.1:1"} {
		req := httptest.NewRequest("GET", "/control/capabilities", nil)
		req.RemoteAddr = remote
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), `"reason":"not_loopback"`) || !strings.Contains(rec.Body.String(), `"error":"forbidden`) {
			t.Fatalf("%s: %d %s", remote, rec.Code, rec.Body)
		}
	}
	req := httptest.NewRequest("GET", "/control/capabilities", nil)
	req.RemoteAddr = "[::1]:4444"
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("::1: %d %s", rec.Code, rec.Body)
	}
	if _, err := New(Config{Store: e.st, Gateway: e.gw, Clock: e.clk, Faults: e.flt}); err == nil {
		t.Fatal("New without a token")
	}
}

func TestCapabilities(t *testing.T) {
	e := newEnv(t)
	m := e.must(t, "GET", "/control/capabilities", "", 200)
	want := map[string]any{
		"control_api":   "mcpconform/1",
		"capabilities":  []any{"fixtures", "ledger", "dispatch_log", "clock", "faults", "principals", "upstream", "locks", "settings"},
		"fault_points":  []any{"lock.acquired", "fence.read", "claim.held", "takeover.read", "reserve.done", "dispatch.before", "dispatch.after"},
		"fault_actions": []any{"pause", "fail", "drop_response", "crash"},
		"settings": map[string]any{"window_seconds": 300.0, "permit_ttl_seconds": 120.0, "effective_window_seconds": 120.0,
			"stale_lock_seconds": 120.0, "lock_timeout": "5s", "retention_seconds": 86400.0},
		"store": "sqlite",
		"bugs":  []any{"replay-debits"},
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("capabilities\n got %v\nwant %v", m, want)
	}
}

func TestFixturesAndEffects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	w := e.must(t, "POST", "/control/wallets", `{"balance": 100}`, 201)
	wid, _ := w["wallet_id"].(string)
	if !strings.HasPrefix(wid, "w-") || w["balance"] != 100.0 {
		t.Fatalf("wallet %v", w)
	}
	if m := e.must(t, "POST", "/control/wallets/"+wid+"/credit", `{"amount": 50}`, 200); m["balance"] != 150.0 {
		t.Fatalf("credit %v", m)
	}
	if m := e.must(t, "GET", "/control/wallets/"+wid, "", 200); m["balance"] != 150.0 || m["wallet_id"] != wid {
		t.Fatalf("wallet %v", m)
	}
	empty := e.must(t, "POST", "/control/wallets", ``, 201)
	if empty["balance"] != 0.0 {
		t.Fatalf("empty wallet %v", empty)
	}
	led := e.must(t, "GET", "/control/wallets/"+wid+"/ledger", "", 200)
	entries, _ := led["entries"].([]any)
	if len(entries) != 2 {
		t.Fatalf("ledger %v", led)
	}
	for i, amt := range []float64{100, 50} {
		en := entries[i].(map[string]any)
		if en["kind"] != "credit" || en["amount"] != amt || !strings.HasPrefix(en["id"].(string), "le-") {
			t.Fatalf("entry %d: %v", i, en)
		}
		if _, err := time.Parse(time.RFC3339Nano, en["at"].(string)); err != nil {
			t.Fatalf("entry time %v", en["at"])
		}
	}

	k := e.must(t, "POST", "/control/keys", `{"wallet_id":"`+wid+`"}`, 201)
	kid, _ := k["key_id"].(string)
	if kid == "" || !strings.HasPrefix(k["api_key"].(string), "mcpk_") {
		t.Fatalf("key %v", k)
	}

	e.must(t, "POST", "/control/trust", `{"provider":"harness","issuer":"http://127.0.0.1:9","jwks_url":"http://127.0.0.1:9/jwks.json","audience":"mcpconform"}`, 204)
	trusts, _ := e.st.Trusts(ctx)
	if len(trusts) != 1 || trusts[0].JWKSURL != "http://127.0.0.1:9/jwks.json" {
		t.Fatalf("trusts %v", trusts)
	}

	p := e.must(t, "POST", "/control/principals", `{"provider":"harness","issuer":"http://127.0.0.1:9","subject":"alice","tools":[]}`, 201)
	pid, _ := p["principal_id"].(string)
	if !strings.HasPrefix(pid, "p-") {
		t.Fatalf("principal %v", p)
	}
	e.must(t, "POST", "/control/principals/"+pid+"/revoke", "", 204)
	if pr, _ := e.st.PrincipalByID(ctx, pid); !pr.Revoked {
		t.Fatal("not revoked")
	}
	// The same principal declared again keeps its id and is entitled again.
	p2 := e.must(t, "POST", "/control/principals", `{"provider":"harness","issuer":"http://127.0.0.1:9","subject":"alice","tools":["partner.echo"]}`, 201)
	if p2["principal_id"] != pid {
		t.Fatalf("redeclared principal got %v, want %s", p2, pid)
	}
	if pr, _ := e.st.PrincipalByID(ctx, pid); pr.Revoked || len(pr.Tools) != 1 {
		t.Fatalf("redeclared principal %+v", pr)
	}

	up := e.must(t, "POST", "/control/tools", `{"name":"probe.write.3f2a","price":3,"read_only":false,"approval":false,"upstream_url":"http://127.0.0.1:9/mcp","upstream_tool":"probe.write"}`, 201)
	if up["name"] != "probe.write.3f2a" {
		t.Fatalf("tool %v", up)
	}
	if tl, _ := e.st.Tool(ctx, "probe.write.3f2a"); tl.Price != 3 || tl.UpstreamURL != "http://127.0.0.1:9/mcp" || tl.UpstreamTool != "probe.write" {
		t.Fatalf("stored tool %+v", tl)
	}
	e.must(t, "POST", "/control/tools", `{"name":"partner.notes.count","price":5}`, 201)
	if tl, _ := e.st.Tool(ctx, "partner.notes.count"); tl.Price != 5 || !tl.ReadOnly || tl.UpstreamURL != "" {
		t.Fatalf("re-priced local tool %+v", tl)
	}
	e.must(t, "POST", "/control/tools", `{"name":"partner.echo","approval":true}`, 201)
	if tl, _ := e.st.Tool(ctx, "partner.echo"); tl.Price != 1 || !tl.Approval {
		t.Fatalf("re-flagged local tool %+v", tl)
	}
	e.must(t, "DELETE", "/control/tools/probe.write.3f2a", "", 204)
	if tl, err := e.st.Tool(ctx, "probe.write.3f2a"); err != nil || !tl.Removed {
		t.Fatalf("removed tool %+v %v", tl, err)
	}
	e.must(t, "POST", "/control/tools", `{"name":"probe.write.3f2a","price":3,"upstream_url":"http://127.0.0.1:9/mcp"}`, 201)
	if tl, _ := e.st.Tool(ctx, "probe.write.3f2a"); tl.Removed || tl.UpstreamTool != "probe.write.3f2a" {
		t.Fatalf("re-added tool %+v", tl)
	}

	e.clk.Freeze(time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC))
	pm := e.must(t, "POST", "/control/permits", `{"wallet_id":"`+wid+`","key_id":"`+kid+`","tool":"probe.write.3f2a","budget":3,"ttl":"120s"}`, 201)
	if pm["expires_at"] != "2026-12-02T18:02:00Z" || !strings.HasPrefix(pm["permit_id"].(string), "pmt-") {
		t.Fatalf("permit %v", pm)
	}
	if sp, _ := e.st.Permit(ctx, pm["permit_id"].(string)); sp.Budget != 3 || sp.APIKeyID != kid || sp.Auto {
		t.Fatalf("stored permit %+v", sp)
	}
	pm = e.must(t, "POST", "/control/permits", `{"wallet_id":"`+wid+`","key_id":"`+kid+`","tool":"partner.notes.count","ttl":"0s"}`, 201)
	if sp, _ := e.st.Permit(ctx, pm["permit_id"].(string)); sp.Budget != 5 || !sp.ExpiresAt.Equal(e.clk.Now().Add(120*time.Second)) {
		t.Fatalf("default permit %+v", sp)
	}

	// Dispatches and locks as the gateway would write them.
	now := e.clk.Now()
	for _, d := range []store.Dispatch{
		{ID: "d-1", Tool: "partner.echo", RecordKey: "r1", Fingerprint: "fp1", WalletID: wid, At: now},
		{ID: "d-2", Tool: "partner.notes.write", RecordKey: "r2", Fingerprint: "fp2", WalletID: wid, At: now},
		{ID: "d-3", Tool: "partner.echo", RecordKey: "r3", Fingerprint: "fp3", WalletID: "w-other", At: now},
	} {
		if err := e.st.LogDispatch(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	ds := e.must(t, "GET", "/control/dispatches?tool=partner.echo&wallet_id="+wid, "", 200)["dispatches"].([]any)
	if len(ds) != 1 || ds[0].(map[string]any)["id"] != "d-1" || ds[0].(map[string]any)["fingerprint"] != "fp1" {
		t.Fatalf("dispatches %v", ds)
	}
	if all := e.must(t, "GET", "/control/dispatches", "", 200)["dispatches"].([]any); len(all) != 3 {
		t.Fatalf("all dispatches %v", all)
	}
	if _, err := e.st.AcquireLock(ctx, wid+"|partner.notes.write|abc", "owner-1", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AcquireLock(ctx, wid+"|partner.echo|abc", "owner-2", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	ls := e.must(t, "GET", "/control/locks?tool=partner.notes.write&wallet_id="+wid, "", 200)["locks"].([]any)
	if len(ls) != 1 {
		t.Fatalf("locks %v", ls)
	}
	l := ls[0].(map[string]any)
	if l["owner"] != "owner-1" || l["fence"] != 1.0 || l["acquired_at"] != "2026-12-02T18:00:00Z" {
		t.Fatalf("lock %v", l)
	}
	if ls := e.must(t, "GET", "/control/locks?wallet_id="+wid, "", 200)["locks"].([]any); len(ls) != 2 {
		t.Fatalf("wallet locks %v", ls)
	}
	if ls := e.must(t, "GET", "/control/locks?wallet_id=w-other&tool=partner.echo", "", 200)["locks"].([]any); len(ls) != 0 {
		t.Fatalf("other wallet locks %v", ls)
	}
}

func TestFixtureErrors(t *testing.T) {
	e := newEnv(t)
	wid := e.must(t, "POST", "/control/wallets", `{"balance": 1}`, 201)["wallet_id"].(string)
	other := e.must(t, "POST", "/control/wallets", `{"balance": 1}`, 201)["wallet_id"].(string)
	kid := e.must(t, "POST", "/control/keys", `{"wallet_id":"`+wid+`"}`, 201)["key_id"].(string)
	big := `{"balance": 1, "pad": "` + strings.Repeat("x", MaxBodyBytes) + `"}`
	cases := []struct {
		method, path, body string
		status             int
		reason             string
	}{
		{"POST", "/control/wallets", `{"balance": -1}`, 400, "bad_request"},
		{"POST", "/control/wallets", `{"balance": "lots"}`, 400, "bad_request"},
		{"POST", "/control/wallets", `[1]`, 400, "bad_request"},
		{"POST", "/control/wallets", big, 413, "request_too_large"},
		{"GET", "/control/wallets/w-nope", "", 404, "not_found"},
		{"GET", "/control/wallets/w-nope/ledger", "", 404, "not_found"},
		{"POST", "/control/wallets/w-nope/credit", `{"amount": 5}`, 404, "not_found"},
		{"POST", "/control/wallets/" + wid + "/credit", `{"amount": 0}`, 400, "bad_request"},
		{"POST", "/control/keys", `{}`, 400, "bad_request"},
		{"POST", "/control/keys", `{"wallet_id":"w-nope"}`, 404, "not_found"},
		{"POST", "/control/trust", `{"provider":"p","issuer":"i"}`, 400, "bad_request"},
		{"POST", "/control/trust", `{"provider":"p","issuer":"i","jwks_url":"ftp://x","audience":"a"}`, 400, "bad_request"},
		{"POST", "/control/principals", `{"provider":"p"}`, 400, "bad_request"},
		{"POST", "/control/principals/p-nope/revoke", "", 404, "not_found"},
		{"POST", "/control/tools", `{"price": 1}`, 400, "bad_request"},
		{"POST", "/control/tools", `{"name":"made.up"}`, 400, "unknown_local_tool"},
		{"POST", "/control/tools", `{"name":"x","upstream_url":"not a url"}`, 400, "bad_request"},
		{"POST", "/control/tools", `{"name":"x","price":-1,"upstream_url":"http://h/mcp"}`, 400, "bad_request"},
		{"POST", "/control/tools", `{"name":"x","price":9007199254740992,"upstream_url":"http://h/mcp"}`, 400, "bad_request"},
		{"POST", "/control/tools", `{"name":"partner.echo","price":9007199254740992}`, 400, "bad_request"},
		{"POST", "/control/tools", `{"name":"partner.echo","price":9007199254740991}`, 201, ""},
		{"DELETE", "/control/tools/never.there", "", 404, "not_found"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `"}`, 400, "bad_request"},
		{"POST", "/control/permits", `{"wallet_id":"w-nope","key_id":"` + kid + `","tool":"partner.echo"}`, 404, "not_found"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `","key_id":"k-nope","tool":"partner.echo"}`, 404, "not_found"},
		{"POST", "/control/permits", `{"wallet_id":"` + other + `","key_id":"` + kid + `","tool":"partner.echo"}`, 400, "bad_request"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `","key_id":"` + kid + `","tool":"nope"}`, 404, "not_found"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `","key_id":"` + kid + `","tool":"partner.echo","ttl":"soon"}`, 400, "bad_request"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `","key_id":"` + kid + `","tool":"partner.echo","ttl":"-1s"}`, 400, "bad_request"},
		{"POST", "/control/permits", `{"wallet_id":"` + wid + `","key_id":"` + kid + `","tool":"partner.echo","budget":-2}`, 400, "bad_request"},
		{"GET", "/control/locks?tool=partner.echo", "", 400, "bad_request"},
		{"GET", "/control/locks", "", 400, "bad_request"},
		{"GET", "/control/nope", "", 404, "not_found"},
		{"GET", "/control/", "", 404, "not_found"},
		{"PUT", "/control/wallets", `{}`, 405, "method_not_allowed"},
		{"DELETE", "/control/capabilities", "", 405, "method_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path+" "+c.body[:min(len(c.body), 40)], func(t *testing.T) {
			st, m := e.do(t, c.method, c.path, c.body)
			if st != c.status || (c.reason != "" && m["reason"] != c.reason) {
				t.Fatalf("%d %v, want %d %s", st, m, c.status, c.reason)
			}
		})
	}
}

func TestClock(t *testing.T) {
	e := newEnv(t)
	m := e.must(t, "GET", "/control/clock", "", 200)
	if m["frozen"] != false {
		t.Fatalf("clock %v", m)
	}
	m = e.must(t, "PUT", "/control/clock", `{"now":"2026-12-02T18:00:00Z"}`, 200)
	if m["now"] != "2026-12-02T18:00:00Z" || m["frozen"] != true {
		t.Fatalf("set %v", m)
	}
	m = e.must(t, "POST", "/control/clock/advance", `{"by":"130s"}`, 200)
	if m["now"] != "2026-12-02T18:02:10Z" {
		t.Fatalf("advance %v", m)
	}
	m = e.must(t, "POST", "/control/clock/advance", `{"by":"1ms"}`, 200)
	if m["now"] != "2026-12-02T18:02:10.001Z" || !e.clk.Now().Equal(time.Date(2026, 12, 2, 18, 2, 10, 1e6, time.UTC)) {
		t.Fatalf("advance 1ms %v", m)
	}
	m = e.must(t, "PUT", "/control/clock", `{"now":"2026-12-02T19:00:00.000000001+01:00"}`, 200)
	if m["now"] != "2026-12-02T18:00:00.000000001Z" {
		t.Fatalf("set with offset %v", m)
	}
	e.must(t, "PUT", "/control/clock", `{"now":"yesterday"}`, 400)
	e.must(t, "POST", "/control/clock/advance", `{"by":"130"}`, 400)
	e.must(t, "DELETE", "/control/clock", "", 204)
	if e.clk.Frozen() {
		t.Fatal("still frozen")
	}
}

func TestSettings(t *testing.T) {
	e := newEnv(t)
	m := e.must(t, "PUT", "/control/settings", `{"window_seconds": 0}`, 200)
	if m["window_seconds"] != 0.0 || m["effective_window_seconds"] != 0.0 || m["permit_ttl_seconds"] != 120.0 {
		t.Fatalf("put %v", m)
	}
	m = e.must(t, "PUT", "/control/settings", `{"window_seconds": 60, "stale_lock_seconds": 1.5, "permit_ttl_seconds": 600}`, 200)
	if m["window_seconds"] != 60.0 || m["effective_window_seconds"] != 60.0 || m["stale_lock_seconds"] != 1.5 {
		t.Fatalf("put %v", m)
	}
	if s := e.gw.Settings(); s.StaleLock != 1500*time.Millisecond || s.PermitTTL != 600*time.Second {
		t.Fatalf("gateway settings %+v", s)
	}
	for _, body := range []string{`{"window_seconds": -1}`, `{"permit_ttl_seconds": -5}`, `{"stale_lock_seconds": -0.1}`, `{"permit_ttl_seconds": 0}`, `{"window_seconds": "x"}`} {
		st, m := e.do(t, "PUT", "/control/settings", body)
		if st != 400 || m["reason"] != "invalid_setting" {
			t.Fatalf("%s: %d %v", body, st, m)
		}
	}
	// Out of a duration's range: refused with a sentence that says so, not
	// wrapped into a negative window (1e10 s) or rounded to 0 (1e-300 s).
	for _, c := range []struct{ body, msg string }{
		{`{"window_seconds": 1e10}`, "window_seconds 1e+10: out of range, at most 9223372036 seconds"},
		{`{"window_seconds": 1e300}`, "out of range"},
		{`{"stale_lock_seconds": 9223372037}`, "stale_lock_seconds 9.223372037e+09: out of range"},
		{`{"window_seconds": 1e-300}`, "below the 1ns resolution"},
		{`{"permit_ttl_seconds": 1e-12}`, "permit_ttl_seconds 1e-12: below the 1ns resolution"},
		// The retention may not end before the window does, set either way.
		{`{"retention_seconds": 30}`, "retention 30s: must not be shorter than the effective unkeyed retry window 1m0s"},
		{`{"retention_seconds": 0}`, "retention 0s: must be positive"},
		{`{"retention_seconds": 3600, "window_seconds": 7200, "permit_ttl_seconds": 7200}`, "must not be shorter than the effective unkeyed retry window 2h0m0s"},
	} {
		st, m := e.do(t, "PUT", "/control/settings", c.body)
		if msg, _ := m["error"].(string); st != 400 || m["reason"] != "invalid_setting" || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: %d %v, want 400 invalid_setting saying %q", c.body, st, m, c.msg)
		}
	}
	if s := e.gw.Settings(); s.Window != 60*time.Second {
		t.Fatalf("a refused PUT changed settings: %+v", s)
	}
	if m := e.must(t, "GET", "/control/settings", "", 200); m["window_seconds"] != 60.0 {
		t.Fatalf("get %v", m)
	}
	if m := e.must(t, "PUT", "/control/settings", `{"retention_seconds": 60}`, 200); m["retention_seconds"] != 60.0 {
		t.Fatalf("put retention at the effective window %v", m)
	}
	e.must(t, "DELETE", "/control/settings", "", 204)
	if s := e.gw.Settings(); s != gateway.DefaultSettings() {
		t.Fatalf("reset %+v", s)
	}
}

func TestFaults(t *testing.T) {
	e := newEnv(t)
	f := e.must(t, "POST", "/control/faults", `{"point":"fence.read","action":"pause","count":1,"match":{"tool":"probe.write.3f2a","wallet_id":"w-1"}}`, 201)
	id, _ := f["fault_id"].(string)
	if !strings.HasPrefix(id, "f-") || f["point"] != "fence.read" {
		t.Fatalf("arm %v", f)
	}
	if g := e.must(t, "GET", "/control/faults/"+id, "", 200); g["hits"] != 0.0 || g["waiting"] != 0.0 || g["released"] != false {
		t.Fatalf("get %v", g)
	}
	// Nobody waits yet: the await times out with 408.
	st, m := e.do(t, "POST", "/control/faults/"+id+"/await", `{"waiting":1,"timeout":"50ms"}`)
	if st != 408 || m["reason"] != "await_timeout" {
		t.Fatalf("await: %d %v", st, m)
	}
	// A request reaches the point (matching), another does not match.
	if act := e.flt.Hit(context.Background(), faults.FenceRead, faults.Match{Tool: "other", WalletID: "w-1"}); act != "" {
		t.Fatalf("non-matching hit took action %q", act)
	}
	done := make(chan string)
	go func() {
		done <- e.flt.Hit(context.Background(), faults.FenceRead, faults.Match{Tool: "probe.write.3f2a", WalletID: "w-1"})
	}()
	a := e.must(t, "POST", "/control/faults/"+id+"/await", `{"waiting":1,"timeout":"5s"}`, 200)
	if a["waiting"] != 1.0 || a["hits"] != 1.0 {
		t.Fatalf("await %v", a)
	}
	r := e.must(t, "POST", "/control/faults/"+id+"/release", "", 200)
	if r["released"] != true {
		t.Fatalf("release %v", r)
	}
	select {
	case act := <-done:
		if act != faults.Pause {
			t.Fatalf("hit returned %q", act)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("release did not free the waiting request")
	}
	e.must(t, "POST", "/control/faults", `{"point":"dispatch.after","action":"drop_response"}`, 201)
	if l := e.must(t, "GET", "/control/faults", "", 200)["faults"].([]any); len(l) != 2 {
		t.Fatalf("list %v", l)
	}
	for _, c := range []struct{ body, reason string }{
		{`{"point":"nowhere","action":"pause"}`, "unknown_fault_point"},
		{`{"point":"fence.read","action":"explode"}`, "unknown_fault_action"},
		{`{"point":"fence.read","action":"drop_response"}`, "unknown_fault_action"},
		{`{"point":"fence.read","action":"pause","count":-1}`, "bad_request"},
	} {
		st, m := e.do(t, "POST", "/control/faults", c.body)
		if st != 400 || m["reason"] != c.reason {
			t.Fatalf("%s: %d %v", c.body, st, m)
		}
	}
	for _, p := range []string{"/control/faults/f-nope"} {
		if st, m := e.do(t, "GET", p, ""); st != 404 || m["reason"] != "not_found" {
			t.Fatalf("get missing: %d %v", st, m)
		}
		if st, m := e.do(t, "POST", p+"/await", `{"timeout":"10ms"}`); st != 404 || m["reason"] != "not_found" {
			t.Fatalf("await missing: %d %v", st, m)
		}
		if st, m := e.do(t, "POST", p+"/release", ""); st != 404 || m["reason"] != "not_found" {
			t.Fatalf("release missing: %d %v", st, m)
		}
	}
	if st, m := e.do(t, "POST", "/control/faults/"+id+"/await", `{"timeout":"forever"}`); st != 400 {
		t.Fatalf("bad timeout: %d %v", st, m)
	}
	e.must(t, "DELETE", "/control/faults", "", 204)
	if len(e.flt.List()) != 0 {
		t.Fatal("faults left after reset")
	}
}

// TestTimeRange: a permit, a setting or a clock that would put a time past
// what a store keeps (year 2262, where Unix nanoseconds end) is refused with
// a reason, never stored wrapped.
func TestTimeRange(t *testing.T) {
	e := newEnv(t)
	wid := e.must(t, "POST", "/control/wallets", `{"balance": 1}`, 201)["wallet_id"].(string)
	kid := e.must(t, "POST", "/control/keys", `{"wallet_id":"`+wid+`"}`, 201)["key_id"].(string)
	permit := func(ttl string) string {
		return `{"wallet_id":"` + wid + `","key_id":"` + kid + `","tool":"partner.echo","ttl":"` + ttl + `"}`
	}
	e.must(t, "PUT", "/control/clock", `{"now":"2026-12-02T18:00:00Z"}`, 200)
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		reason                   string
	}{
		{"permit past 2262", "POST", "/control/permits", permit("2562047h"), 400, "time_out_of_range"},
		{"permit of 235 years", "POST", "/control/permits", permit("2058600h"), 201, ""},
		{"permit ttl setting past 2262", "PUT", "/control/settings", `{"permit_ttl_seconds": 8e9}`, 400, "invalid_setting"},
		{"clock past 2262", "PUT", "/control/clock", `{"now":"2262-04-12T00:00:00Z"}`, 400, "time_out_of_range"},
		{"clock before 1677", "PUT", "/control/clock", `{"now":"1677-09-21T00:00:00Z"}`, 400, "time_out_of_range"},
		{"clock whose auto permits pass 2262", "PUT", "/control/clock", `{"now":"2262-04-11T23:46:00Z"}`, 400, "time_out_of_range"},
		{"clock advanced past 2262", "POST", "/control/clock/advance", `{"by":"2562047h"}`, 400, "time_out_of_range"},
		{"clock near the end", "PUT", "/control/clock", `{"now":"2262-04-11T00:00:00Z"}`, 200, ""},
		{"permit then past 2262", "POST", "/control/permits", permit("24h"), 400, "time_out_of_range"},
		{"window reaching back before 1677", "PUT", "/control/clock", `{"now":"1700-01-01T00:00:00Z"}`, 200, ""},
		{"settings then reaching back before 1677", "PUT", "/control/settings", `{"window_seconds": 1e9}`, 400, "invalid_setting"},
	} {
		st, m := e.do(t, c.method, c.path, c.body)
		if st != c.status || (c.reason != "" && m["reason"] != c.reason) {
			t.Errorf("%s: %d %v, want %d %s", c.name, st, m, c.status, c.reason)
		}
	}
	if s := e.gw.Settings(); s != gateway.DefaultSettings() {
		t.Fatalf("a refused PUT changed settings: %+v", s)
	}
}
