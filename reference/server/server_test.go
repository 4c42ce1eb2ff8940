package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// lineWriter is a goroutine-safe stdout that reports each line.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
	part  []byte
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 100)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		select {
		case w.lines <- string(w.part[:i]):
		default:
		}
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

type gatewayProc struct {
	base   string
	out    *lineWriter
	cancel context.CancelFunc
	done   chan error
}

const controlToken = "e2e-token"

func start(t *testing.T, cfg Config) *gatewayProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newLineWriter()
	g := &gatewayProc{out: out, cancel: cancel, done: make(chan error, 1)}
	go func() { g.done <- Run(ctx, cfg, out) }()
	deadline := time.After(20 * time.Second)
	for g.base == "" {
		select {
		case l := <-out.lines:
			if a, ok := strings.CutPrefix(l, "listening on "); ok {
				g.base = a
			}
		case err := <-g.done:
			cancel()
			t.Fatalf("Run returned before listening: %v\n%s", err, out)
		case <-deadline:
			cancel()
			t.Fatalf("no listening line:\n%s", out)
		}
	}
	t.Cleanup(func() { g.stop(t) })
	return g
}

func (g *gatewayProc) stop(t *testing.T) {
	t.Helper()
	if g.cancel == nil {
		return
	}
	g.cancel()
	g.cancel = nil
	select {
	case err := <-g.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(ShutdownTimeout + 5*time.Second):
		t.Errorf("Run did not stop after cancel")
	}
}

func (g *gatewayProc) control(t *testing.T, method, path, body string, want int) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, g.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+controlToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func (g *gatewayProc) mcp(t *testing.T, hdr map[string]string, body string) (*http.Response, rpcAnswer) {
	t.Helper()
	resp, raw, err := g.post(hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	var a rpcAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("mcp answer %d %q: %v", resp.StatusCode, raw, err)
	}
	return resp, a
}

// post POSTs body to /mcp with the headers an MCP client sends and hdr, and
// reads the whole answer. Safe off the test's goroutine.
func (g *gatewayProc) post(hdr map[string]string, body string) (*http.Response, []byte, error) {
	req, _ := http.NewRequest("POST", g.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp, raw, err
}

type toolResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

func decodeResult(t *testing.T, a rpcAnswer) (toolResult, gateway.Receipt) {
	t.Helper()
	if a.Error != nil {
		t.Fatalf("error answer: %+v", a.Error)
	}
	var r toolResult
	if err := json.Unmarshal(a.Result, &r); err != nil {
		t.Fatal(err)
	}
	var rc gateway.Receipt
	if err := json.Unmarshal(r.Meta[gateway.ReceiptMetaKey], &rc); err != nil {
		t.Fatalf("no receipt in %s", a.Result)
	}
	return r, rc
}

func call(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func debits(t *testing.T, g *gatewayProc, wallet string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range g.control(t, "GET", "/control/wallets/"+wallet+"/ledger", "", 200)["entries"].([]any) {
		if m := e.(map[string]any); m["kind"] == "debit" {
			out = append(out, m)
		}
	}
	return out
}

func dispatches(t *testing.T, g *gatewayProc, wallet, tool string) int {
	t.Helper()
	return len(g.control(t, "GET", "/control/dispatches?tool="+tool+"&wallet_id="+wallet, "", 200)["dispatches"].([]any))
}

// TestSeedLiveRetest is the seed review's live retest over HTTP: an unkeyed
// partner.notes.write gives receipt R and one debit; the same call with a new
// JSON-RPC id gives R again, replayed, no second dispatch, still one debit;
// other arguments give a new receipt and a second debit.
func TestSeedLiveRetest(t *testing.T) {
	seedRetest(t, "sqlite", "sqlite:"+filepath.Join(t.TempDir(), "state", "gateway.db"))
}

// TestSeedLiveRetestPostgres runs the same on PostgreSQL (DATABASE_URL, else
// dockertest, else skipped unless MCPCONFORM_REQUIRE_POSTGRES=1).
func TestSeedLiveRetestPostgres(t *testing.T) {
	seedRetest(t, "postgres", pgtest.FreshDSN(t))
}

func seedRetest(t *testing.T, kind, storeArg string) {
	g := start(t, Config{Addr: "127.0.0.1:0", Store: storeArg, ControlToken: controlToken})

	caps := g.control(t, "GET", "/control/capabilities", "", 200)
	if caps["store"] != kind || caps["control_api"] != "mcpconform/1" {
		t.Fatalf("capabilities %v", caps)
	}
	wallet := g.control(t, "POST", "/control/wallets", `{"balance": 100}`, 201)["wallet_id"].(string)
	key := g.control(t, "POST", "/control/keys", `{"wallet_id":"`+wallet+`"}`, 201)["api_key"].(string)

	// A 2025-11-25 session, as an MCP client would open it.
	resp, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + key},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" || a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	sess := map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if st := g.notify(t, sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != 202 {
		t.Fatalf("initialized: HTTP %d", st)
	}

	_, a = g.mcp(t, sess, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	for _, name := range []string{"partner.echo", "partner.notes.write", "partner.notes.count"} {
		if !strings.Contains(string(a.Result), `"name":"`+name+`"`) {
			t.Fatalf("tools/list lacks %s: %s", name, a.Result)
		}
	}

	_, a = g.mcp(t, sess, call(3, "partner.notes.write", `{"text":"hello"}`))
	first, r1 := decodeResult(t, a)
	if r1.ID == "" || r1.Replayed || r1.Charged != 2 || !strings.HasPrefix(r1.IdempotencyKey, "mcp-retry-") {
		t.Fatalf("first receipt %+v", r1)
	}
	if d := debits(t, g, wallet); len(d) != 1 || d[0]["amount"] != 2.0 || d[0]["receipt"] != r1.ID {
		t.Fatalf("after the first call: debits %v", d)
	}
	if n := dispatches(t, g, wallet, "partner.notes.write"); n != 1 {
		t.Fatalf("after the first call: %d dispatches", n)
	}

	// The retry: same call, new JSON-RPC id.
	_, a = g.mcp(t, sess, call(4, "partner.notes.write", `{"text":"hello"}`))
	again, r2 := decodeResult(t, a)
	if r2.ID != r1.ID || !r2.Replayed || r2.IdempotencyKey != r1.IdempotencyKey {
		t.Fatalf("retry receipt %+v, first %+v", r2, r1)
	}
	if string(again.StructuredContent) != string(first.StructuredContent) || again.Content[0].Text != first.Content[0].Text {
		t.Fatalf("retry content %s, first %s", again.StructuredContent, first.StructuredContent)
	}
	if d := debits(t, g, wallet); len(d) != 1 {
		t.Fatalf("after the retry: debits %v", d)
	}
	if n := dispatches(t, g, wallet, "partner.notes.write"); n != 1 {
		t.Fatalf("after the retry: %d dispatches, want 1", n)
	}

	// The same retry over the stateless 2026-07-28 wire replays too.
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	_, a = g.mcp(t, map[string]string{"Authorization": "Bearer " + key, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "partner.notes.write"},
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"hello"},"_meta":`+meta+`}}`)
	if _, r := decodeResult(t, a); r.ID != r1.ID || !r.Replayed {
		t.Fatalf("2026 retry receipt %+v", r)
	}

	// Other arguments: a new operation.
	_, a = g.mcp(t, sess, call(6, "partner.notes.write", `{"text":"other"}`))
	_, r3 := decodeResult(t, a)
	if r3.ID == r1.ID || r3.Replayed {
		t.Fatalf("other arguments receipt %+v", r3)
	}
	if d := debits(t, g, wallet); len(d) != 2 || d[1]["receipt"] != r3.ID {
		t.Fatalf("after other arguments: debits %v", d)
	}
	if n := dispatches(t, g, wallet, "partner.notes.write"); n != 2 {
		t.Fatalf("after other arguments: %d dispatches", n)
	}
	if b := g.control(t, "GET", "/control/wallets/"+wallet, "", 200)["balance"]; b != 96.0 {
		t.Fatalf("balance %v, want 96", b)
	}

	// Unkeyed read-only call: refused before anything happens.
	_, a = g.mcp(t, sess, call(7, "partner.notes.count", `{}`))
	if a.Error == nil || a.Error.Data["reason"] != "idempotency_key_required" {
		t.Fatalf("unkeyed read: %+v", a)
	}
	// A keyed one runs.
	sess["Idempotency-Key"] = `"count-1"`
	_, a = g.mcp(t, sess, call(8, "partner.notes.count", `{}`))
	if r, rc := decodeResult(t, a); string(r.StructuredContent) == "" || rc.IdempotencyKey != "count-1" {
		t.Fatalf("keyed read: %s %+v", a.Result, rc)
	}

	// Batches are refused; a wrong key is unauthenticated.
	resp, a = g.mcp(t, sess, `[`+call(9, "partner.echo", `{}`)+`]`)
	if resp.StatusCode != 400 || a.Error == nil || a.Error.Data["reason"] != "batch_not_supported" {
		t.Fatalf("batch: %d %+v", resp.StatusCode, a)
	}
	resp, a = g.mcp(t, map[string]string{"Authorization": "Bearer mcpk_nope_nope"}, call(10, "partner.echo", `{}`))
	if resp.StatusCode != 401 || a.Error == nil || a.Error.Data["reason"] != "unauthenticated" {
		t.Fatalf("wrong key: %d %+v", resp.StatusCode, a)
	}
}

// TestQuickstart checks the printed dev wallet and key work as printed, and
// that the gateway stops cleanly.
func TestQuickstart(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
	g := start(t, Config{Addr: "127.0.0.1:0", Store: db})
	out := g.out.String()
	key := regexp.MustCompile(`dev API key:\s+(\S+)`).FindStringSubmatch(out)
	wallet := regexp.MustCompile(`dev wallet:\s+(\S+) \(balance 1000\)`).FindStringSubmatch(out)
	if key == nil || wallet == nil || !strings.Contains(out, "curl -s "+g.base+"/mcp") || !strings.Contains(out, "control API:  off") {
		t.Fatalf("quickstart:\n%s", out)
	}
	// The curl line's request, without a handshake or session.
	_, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + key[1], "MCP-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"hello"}}}`)
	if _, rc := decodeResult(t, a); rc.Charged != 2 {
		t.Fatalf("quickstart call receipt %+v", rc)
	}
	// Without a control token there is no control API.
	resp, err := http.Get(g.base + "/control/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("control API without a token: %d", resp.StatusCode)
	}
	g.stop(t)
	if !strings.Contains(g.out.String(), "stopped") {
		t.Fatalf("no stop line:\n%s", g.out)
	}
	if _, err := http.Get(g.base + "/mcp"); err == nil {
		t.Fatal("still serving after stop")
	}
}

func TestStartupRefusals(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad store", Config{Addr: "127.0.0.1:0", Store: "mysql://x"}, "want sqlite:PATH or postgres://"},
		{"empty sqlite path", Config{Addr: "127.0.0.1:0", Store: "sqlite:"}, "needs a path"},
		{"bug for another store", Config{Addr: "127.0.0.1:0", Store: "postgres://u@127.0.0.1:1/db", Bugs: []string{bugs.SelectForUpdateSQLite}}, `needs the sqlite store; this gateway runs on postgres`},
		{"unknown bug", Config{Addr: "127.0.0.1:0", Store: "sqlite:" + filepath.Join(dir, "a.db"), Bugs: []string{"no-such-bug"}}, "unknown bug switch"},
		{"negative window", Config{Addr: "127.0.0.1:0", Store: "sqlite:" + filepath.Join(dir, "b.db"),
			Settings: gateway.Settings{Window: -time.Second, PermitTTL: time.Minute, StaleLock: time.Minute}}, "must not be negative"},
		{"bad address", Config{Addr: "127.0.0.1:99999", Store: "sqlite:" + filepath.Join(dir, "c.db")}, "listen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Run(ctx, c.cfg, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if strings.Contains(out.String(), "listening on") {
				t.Fatalf("printed a listening line: %s", out.String())
			}
		})
	}
	// The sqlite-only switch is accepted on sqlite.
	g := start(t, Config{Addr: "127.0.0.1:0", Store: "sqlite:" + filepath.Join(dir, "d.db"), ControlToken: controlToken, Bugs: []string{bugs.SelectForUpdateSQLite}})
	if b := g.control(t, "GET", "/control/capabilities", "", 200)["bugs"].([]any); len(b) != 1 || b[0] != bugs.SelectForUpdateSQLite {
		t.Fatalf("bugs %v", b)
	}
	if !strings.Contains(g.out.String(), "BUG SWITCHES ON") {
		t.Fatalf("no bug warning:\n%s", g.out)
	}
}

// TestDevWalletOncePerStore: the dev wallet and its key are made on the
// first start on a store; a later start reuses them, prints no key (only its
// hash is kept) and shows the balance the wallet has now.
func TestDevWalletOncePerStore(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
	g := start(t, Config{Addr: "127.0.0.1:0", Store: db})
	key := regexp.MustCompile(`dev API key:\s+(mcpk_\S+)`).FindStringSubmatch(g.out.String())
	if key == nil || !strings.Contains(g.out.String(), "dev wallet:   w-dev (balance 1000)") {
		t.Fatalf("first start:\n%s", g.out)
	}
	_, a := g.mcp(t, map[string]string{"Authorization": "Bearer " + key[1], "MCP-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"hello"}}}`)
	if _, rc := decodeResult(t, a); rc.Charged != 2 {
		t.Fatalf("receipt %+v", rc)
	}
	g.stop(t)

	g = start(t, Config{Addr: "127.0.0.1:0", Store: db})
	out := g.out.String()
	if strings.Contains(out, "mcpk_") || !strings.Contains(out, "dev wallet:   w-dev (balance 998)") || !strings.Contains(out, "key id k-dev") {
		t.Fatalf("second start:\n%s", out)
	}
	_, a = g.mcp(t, map[string]string{"Authorization": "Bearer " + key[1], "MCP-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"again"}}}`)
	if _, rc := decodeResult(t, a); rc.Charged != 2 {
		t.Fatalf("the first start's key after a restart: %+v", rc)
	}
}
