package server

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestAPIKeysNeverInClear: over a run of calls (answered, refused, failed,
// with right and wrong keys, keys in odd places), the gateway's log, at
// debug level, never holds an API key secret or the control token, and the
// SQLite files hold only the secret's hash. (The quickstart printed on
// stdout shows the dev key once, on purpose; the log is what operators keep.)
func TestAPIKeysNeverInClear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	var logs syncBuffer
	g := start(t, Config{
		Addr: "127.0.0.1:0", Store: "sqlite:" + filepath.Join(dir, "gw.db"), ControlToken: controlToken,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})

	wallet := g.control(t, "POST", "/control/wallets", `{"balance": 2}`, 201)["wallet_id"].(string)
	var keys []string
	for range 3 {
		keys = append(keys, g.control(t, "POST", "/control/keys", `{"wallet_id":"`+wallet+`"}`, 201)["api_key"].(string))
	}
	var secrets []string
	for _, k := range keys {
		rest := strings.TrimPrefix(k, "mcpk_")
		_, secret, ok := strings.Cut(rest, "_")
		if !ok || len(secret) < 16 {
			t.Fatalf("api key %q: no secret part", k)
		}
		secrets = append(secrets, secret)
	}
	// Wrong keys are secrets too: a typo of a real one, a real secret under
	// another key id.
	wrong := []string{keys[0][:len(keys[0])-1] + "x", "mcpk_k-nope_" + secrets[1], "mcpk_" + strings.Repeat("z", 40)}
	secrets = append(secrets, wrong[0][len("mcpk_"):], secrets[1], strings.Repeat("z", 40))

	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	id := 0
	next := func() int { id++; return id }
	for _, k := range keys {
		g.mcp(t, bearer(k), call(next(), "partner.notes.write", `{"text":"one"}`)) // answered, then replayed
		g.mcp(t, bearer(k), call(next(), "partner.notes.write", `{"text":"one"}`))
		g.mcp(t, bearer(k), call(next(), "partner.notes.write", fmt.Sprintf(`{"text":"n%d"}`, id))) // new operations: insufficient funds at some point
		g.mcp(t, bearer(k), call(next(), "no.such.tool", `{}`))                                     // unknown tool
		g.mcp(t, bearer(k), call(next(), "partner.echo", `[1]`))                                    // invalid arguments
		g.mcp(t, bearer(k), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, next()))
		h := bearer(k)
		h["Idempotency-Key"] = `"k-1"` // keyed, then reused with other arguments
		g.mcp(t, h, call(next(), "partner.notes.write", `{"text":"two"}`))
		g.mcp(t, h, call(next(), "partner.notes.write", `{"text":"three"}`))
		h["Idempotency-Key"] = "bad key"
		g.mcp(t, h, call(next(), "partner.notes.write", `{"text":"two"}`))
		h = bearer(k)
		h["X-Principal-Token"] = k // no trusted issuer: principal_invalid
		g.mcp(t, h, call(next(), "partner.echo", `{}`))
	}
	for _, k := range wrong {
		g.mcp(t, bearer(k), call(next(), "partner.echo", `{}`))
	}
	g.mcp(t, map[string]string{"Authorization": "Basic " + keys[0]}, call(next(), "partner.echo", `{}`))
	g.mcp(t, map[string]string{"Authorization": "Bearer " + keys[0]}, `{"jsonrpc":"2.0","id":`) // parse error
	g.stop(t)

	out := logs.String()
	if !strings.Contains(out, "level=") {
		t.Fatalf("the gateway logged nothing; the test proves nothing:\n%s", out)
	}
	for _, s := range append(secrets, controlToken) {
		if strings.Contains(out, s) {
			t.Errorf("the log holds a secret %q:\n%s", s, out)
		}
	}

	// The store: the SQLite database and whatever WAL or journal is beside it.
	files, err := filepath.Glob(filepath.Join(dir, "gw.db*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no store files in %s: %v", dir, err)
	}
	var disk []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		disk = append(disk, b...)
	}
	for i, s := range secrets {
		if bytes.Contains(disk, []byte(s)) {
			t.Errorf("the store files hold secret %d in clear", i)
		}
	}
	for i, s := range secrets[:len(keys)] {
		if sum := sha256.Sum256([]byte(s)); !bytes.Contains(disk, sum[:]) {
			t.Errorf("the store files do not hold the hash of key %d's secret (how is it stored?)", i)
		}
	}
}
