package idp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func postMint(t *testing.T, i *IdP, body string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Post(i.Issuer()+MintPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestMintEndpoint: a minted token carries the requested claims under the
// IdP's own issuer, with its own times and id, and verifies against the
// JWKS like the harness's tokens.
func TestMintEndpoint(t *testing.T) {
	i := startIDP(t, Options{Mint: true})
	for _, tc := range []struct {
		name, body string
		status     int
		reason     string
		sub        string
		expired    bool
	}{
		{"claims kept, iss and jti its own", `{"claims":{"sub":"alice-1","aud":"mcpconform","iss":"http://elsewhere","jti":"old","tenant":"t1"},"ttl_seconds":600}`, 200, "", "alice-1", false},
		{"audience defaults to the IdP's", `{"claims":{"sub":"bob-2"}}`, 200, "", "bob-2", false},
		{"negative ttl: already expired", `{"claims":{"sub":"carol"},"ttl_seconds":-60}`, 200, "", "carol", true},
		{"no subject", `{"claims":{"aud":"mcpconform"}}`, 400, "subject_required", "", false},
		{"not JSON", `{"claims":`, 400, "bad_request", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := postMint(t, i, tc.body)
			if status != tc.status || out["reason"] != tc.reason {
				t.Fatalf("HTTP %d %v, want %d reason %q", status, out, tc.status, tc.reason)
			}
			if tc.status != 200 {
				return
			}
			claims, err := verify(t, i, out["token"])
			if tc.expired {
				if !errors.Is(err, jwt.ErrTokenExpired) {
					t.Fatalf("expired token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("minted token refused: %v", err)
			}
			if claims["sub"] != tc.sub || claims["iss"] != i.Issuer() || claims["jti"] == "old" || claims["jti"] == "" {
				t.Errorf("claims %v", claims)
			}
			if strings.Contains(tc.body, "tenant") && claims["tenant"] != "t1" {
				t.Errorf("claim tenant not kept: %v", claims)
			}
		})
	}
	_, a := postMint(t, i, `{"claims":{"sub":"same"}}`)
	_, b := postMint(t, i, `{"claims":{"sub":"same"}}`)
	if a["token"] == b["token"] {
		t.Error("two mints of the same claims gave the same token")
	}
}

func TestMintRefused(t *testing.T) {
	t.Run("not served without Mint", func(t *testing.T) {
		i := startIDP(t, Options{})
		if status, _ := postMint(t, i, `{"claims":{"sub":"alice"}}`); status == 200 {
			t.Fatalf("HTTP %d from an IdP that does not mint", status)
		}
	})
	t.Run("not loopback", func(t *testing.T) {
		i := startIDP(t, Options{Mint: true})
		req := httptest.NewRequest("POST", MintPath, bytes.NewReader([]byte(`{"claims":{"sub":"alice"}}`)))
		req.RemoteAddr = "192.0.2.7:40000"
		rec := httptest.NewRecorder()
		i.mint(rec, req)
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), `"not_loopback"`) {
			t.Fatalf("HTTP %d %s, want 403 not_loopback", rec.Code, rec.Body)
		}
	})
}

// TestMintFromKeyFile: a token minted from the key file alone verifies
// against the JWKS an IdP serves from that file.
func TestMintFromKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idp.pem")
	k, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	i := startIDP(t, Options{Key: k})
	tok, err := Mint(k, i.Issuer(), map[string]any{"sub": "u-1001"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := verify(t, i, tok)
	if err != nil || claims["sub"] != "u-1001" || claims["aud"] != DefaultAudience {
		t.Fatalf("claims %v, %v", claims, err)
	}
}
