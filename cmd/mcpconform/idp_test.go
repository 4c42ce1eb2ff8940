package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/idp"
)

// claimsOf reads a token's payload (no signature check: the idp package
// tests that minted tokens verify).
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIdPCmdServesAndMints(t *testing.T) {
	base := "http://" + startListening(t, "idp", "--addr", "127.0.0.1:0", "--key", filepath.Join(t.TempDir(), "idp.pem"))
	if resp, err := http.Get(base + "/jwks.json"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("jwks: %v %v", resp, err)
	}
	resp, err := http.Post(base+idp.MintPath, "application/json", strings.NewReader(`{"claims":{"sub":"alice-1"},"ttl_seconds":60}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Token string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if c := claimsOf(t, out.Token); c["sub"] != "alice-1" || c["iss"] != base || c["aud"] != idp.DefaultAudience {
		t.Errorf("minted claims %v (issuer %s)", c, base)
	}
}

func TestIdPTokenCmd(t *testing.T) {
	key := filepath.Join(t.TempDir(), "idp.pem")
	if _, err := idp.Load(key); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "none.pem")
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"signs", []string{"--key", key, "--issuer", "http://127.0.0.1:9200", "--subject", "u-1001"}, 0, ""},
		{"no subject", []string{"--key", key, "--issuer", "http://127.0.0.1:9200"}, 2, "are required"},
		{"key not there", []string{"--key", missing, "--issuer", "http://127.0.0.1:9200", "--subject", "u"}, 2, "does not exist"},
		{"zero ttl", []string{"--key", key, "--issuer", "http://x", "--subject", "u", "--ttl", "0s"}, 2, "needs a lifetime"},
		{"stray argument", []string{"--key", key, "--issuer", "http://x", "--subject", "u", "extra"}, 2, `want 0 argument(s), got 1 ["extra"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), append([]string{"idp", "token"}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.err) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.err)
			}
			if code == 0 {
				if c := claimsOf(t, stdout.String()); c["sub"] != "u-1001" || c["iss"] != "http://127.0.0.1:9200" || c["aud"] != idp.DefaultAudience {
					t.Errorf("claims %v", c)
				}
			}
		})
	}
}
