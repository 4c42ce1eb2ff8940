package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/wire"
)

func TestGatewayFlags(t *testing.T) {
	t.Setenv(envWindow, "")
	cfg, _, err := gatewayConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:8719" || cfg.Store != "sqlite:./mcpconform-state/gateway.db" || cfg.ControlToken != "" || len(cfg.Bugs) != 0 {
		t.Fatalf("defaults %+v", cfg)
	}
	if cfg.Settings != gateway.DefaultSettings() || cfg.LockTimeout != 5*time.Second {
		t.Fatalf("default settings %+v", cfg.Settings)
	}

	cfg, verbose, err := gatewayConfig([]string{"--addr", "127.0.0.1:0", "--store", "postgres://u@h/db", "--control-token", "T",
		"--bug", "random-unkeyed-key", "--bug", "replay-debits", "--window", "0", "--permit-ttl", "30s", "--stale-lock", "2s", "--lock-timeout", "1s", "-v",
		"--fixtures", "fx.json", "--codes", "seed"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := gateway.Settings{Window: 0, PermitTTL: 30 * time.Second, StaleLock: 2 * time.Second, LockTimeout: time.Second,
		Retention: gateway.DefaultRetention}
	if cfg.Settings != want || cfg.ControlToken != "T" || strings.Join(cfg.Bugs, ",") != "random-unkeyed-key,replay-debits" || !verbose || cfg.Fixtures != "fx.json" || cfg.Codes != gateway.CodesSeed {
		t.Fatalf("parsed %+v", cfg)
	}

	t.Setenv(envWindow, "45")
	if cfg, _, err := gatewayConfig(nil, io.Discard); err != nil || cfg.Settings.Window != 45*time.Second {
		t.Fatalf("env window: %v %+v", err, cfg.Settings)
	}
	if cfg, _, err := gatewayConfig([]string{"--window", "10s"}, io.Discard); err != nil || cfg.Settings.Window != 10*time.Second {
		t.Fatalf("flag over env: %v %+v", err, cfg.Settings)
	}
}

func TestGatewayCmdRefusals(t *testing.T) {
	t.Setenv(envWindow, "")
	dir := t.TempDir()
	badFixtures := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badFixtures, []byte(`{"wallets": [{"id": "w-1", "balanse": 3}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  string
		code int
		want string
	}{
		{"help", []string{"-h"}, "", 0, "Usage: mcpconform gateway"},
		{"negative window", []string{"--window", "-1s"}, "", 2, "must not be negative"},
		{"negative window from env", nil, "-5", 2, "must not be negative"},
		{"bad env window", nil, "five", 2, envWindow},
		{"env window out of range", nil, "10000000000", 2, envWindow + " 1e+10: out of range"},
		// 18446744074e9 ns wraps past 2^64 to a 0.29s window.
		{"env window that wrapped to a positive one", nil, "18446744074", 2, "out of range"},
		{"zero permit ttl", []string{"--permit-ttl", "0"}, "", 2, "permit ttl"},
		{"zero stale lock", []string{"--stale-lock", "0s"}, "", 2, "stale lock"},
		{"zero lock timeout", []string{"--lock-timeout", "0s"}, "", 2, "--lock-timeout"},
		{"bad duration", []string{"--window", "5"}, "", 2, "invalid value"},
		{"unknown bug", []string{"--bug", "nope"}, "", 2, "unknown bug switch"},
		{"unknown code table", []string{"--codes", "grpc"}, "", 2, `--codes: code table "grpc"`},
		{"bug of another store", []string{"--store", "postgres://u@127.0.0.1:1/db", "--bug", "select-for-update-sqlite"}, "", 2, "needs the sqlite store"},
		{"bad store", []string{"--store", "redis://x"}, "", 2, "want sqlite:PATH or postgres://"},
		{"extra arguments", []string{"serve"}, "", 2, "unexpected arguments"},
		{"unknown flag", []string{"--nope"}, "", 2, "flag provided but not defined"},
		{"bad fixtures file", []string{"--fixtures", badFixtures, "--store", "sqlite:" + filepath.Join(dir, "f.db")}, "", 2, `fixtures ` + badFixtures + `: json: unknown field "balanse"`},
		{"missing fixtures file", []string{"--fixtures", filepath.Join(dir, "none.json"), "--store", "sqlite:" + filepath.Join(dir, "f.db")}, "", 2, "fixtures: open"},
		{"port in use or bad", []string{"--addr", "127.0.0.1:99999", "--store", "sqlite:" + filepath.Join(t.TempDir(), "g.db")}, "", 2, "listen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envWindow, c.env)
			var out, errb bytes.Buffer
			code := gatewayCmd(context.Background(), c.args, &out, &errb)
			if code != c.code || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s", code, c.code, errb.String())
			}
			if strings.Contains(out.String(), "listening on") {
				t.Fatalf("listened: %s", out.String())
			}
		})
	}
}

// fixtureKey is an API key a fixtures file gives in clear.
const fixtureKey = "mcpk_k-ext-1_0123456789abcdef0123456789abcdef"

// syncBuffer is a goroutine-safe stdout.
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

func TestGatewayCmdRunsAndStops(t *testing.T) {
	t.Setenv(envWindow, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	fx := filepath.Join(t.TempDir(), "fixtures.json")
	if err := os.WriteFile(fx, []byte(`{"wallets": [{"id": "w-ext-1", "balance": 50, "api_keys": ["`+fixtureKey+`"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		done <- gatewayCmd(ctx, []string{"--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(t.TempDir(), "s", "g.db"),
			"--control-token", "tok", "--window", "60s", "--permit-ttl", "90s", "--fixtures", fx}, &out, &errb)
	}()
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		for _, l := range strings.Split(out.String(), "\n") {
			if a, ok := strings.CutPrefix(l, "listening on "); ok {
				base = a
			}
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d early:\n%s\n%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("never listened:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, w := range []string{"dev wallet:", "dev API key:  mcpk_", "curl -s " + base + "/mcp", "fixtures:     " + fx + " applied: 1 wallet (1 new, 1 credited), 1 API key (1 new)"} {
		if !strings.Contains(out.String(), w) {
			t.Fatalf("quickstart lacks %q:\n%s", w, out.String())
		}
	}
	req, _ := http.NewRequest("GET", base+"/control/capabilities", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var caps struct {
		Settings map[string]any `json:"settings"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&caps)
	resp.Body.Close()
	if caps.Settings["window_seconds"] != 60.0 || caps.Settings["effective_window_seconds"] != 60.0 || caps.Settings["permit_ttl_seconds"] != 90.0 {
		t.Fatalf("settings %v", caps.Settings)
	}
	// The fixtures file's key calls a tool, without the control API.
	req, _ = http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.echo","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer "+fixtureKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"charged":1`) {
		t.Fatalf("call with the fixtures key: %d %s", resp.StatusCode, raw)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop on cancel")
	}
}

// TestGatewayMaxSessionsFlag: the flag's 0 is "no bound", which the server
// config spells negative (its 0 is the default); a negative flag is refused.
func TestGatewayMaxSessionsFlag(t *testing.T) {
	t.Setenv(envWindow, "")
	for _, c := range []struct {
		args    []string
		want    int
		wantErr bool
	}{
		{nil, wire.DefaultMaxSessionsPerKey, false},
		{[]string{"--max-sessions-per-key", "3"}, 3, false},
		{[]string{"--max-sessions-per-key", "0"}, -1, false},
		{[]string{"--max-sessions-per-key", "-2"}, 0, true},
	} {
		cfg, _, err := gatewayConfig(c.args, io.Discard)
		if (err != nil) != c.wantErr || err == nil && cfg.MaxSessionsPerKey != c.want {
			t.Errorf("%v: %d, %v; want %d (error %v)", c.args, cfg.MaxSessionsPerKey, err, c.want, c.wantErr)
		}
	}
}

// TestGatewayGC: the gateway's GC target is its own default unless GOGC
// says otherwise; off is off.
func TestGatewayGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tt := range []struct {
		env  string
		set  bool
		want int
	}{{"", false, defaultGOGC}, {"150", true, 150}, {"off", true, -1}, {"  ", true, defaultGOGC}} {
		if tt.set {
			t.Setenv("GOGC", tt.env)
			// The runtime reads GOGC once, at start: set what it would have read.
			switch tt.env {
			case "150":
				debug.SetGCPercent(150)
			case "off":
				debug.SetGCPercent(-1)
			}
		} else {
			t.Setenv("GOGC", "")
			os.Unsetenv("GOGC")
		}
		if got := gatewayGC(); got != tt.want {
			t.Errorf("GOGC=%q: gatewayGC() = %d, want %d", tt.env, got, tt.want)
		}
		if got := debug.SetGCPercent(100); got != tt.want {
			t.Errorf("GOGC=%q: the runtime's target is %d, want %d", tt.env, got, tt.want)
		}
	}
}
