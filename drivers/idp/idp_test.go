package idp

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// verify checks a token the way a gateway would: the JWKS fetched over
// HTTP, then signature, issuer, audience and expiry.
func verify(t *testing.T, i *IdP, token string) (jwt.MapClaims, error) {
	t.Helper()
	resp, err := http.Get(i.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatalf("decode jwks: %v", err)
	}
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(token, claims, func(tk *jwt.Token) (any, error) {
		kid, _ := tk.Header["kid"].(string)
		keys := set.Key(kid)
		if len(keys) != 1 {
			return nil, fmt.Errorf("kid %q: %d keys", kid, len(keys))
		}
		return keys[0].Key, nil
	}, jwt.WithIssuer(i.Issuer()), jwt.WithAudience(DefaultAudience), jwt.WithValidMethods([]string{"ES256", "RS256"}), jwt.WithExpirationRequired())
	return claims, err
}

func startIDP(t *testing.T, opts Options) *IdP {
	t.Helper()
	i, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := i.Close(); err != nil {
			t.Error(err)
		}
	})
	return i
}

func TestTokens(t *testing.T) {
	rsaKey, err := Generate("RS256")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  *Key
		alg  string
	}{{"es256 default", nil, "ES256"}, {"rs256", rsaKey, "RS256"}} {
		t.Run(tc.name, func(t *testing.T) {
			i := startIDP(t, Options{Key: tc.key})
			if i.Key().Alg != tc.alg {
				t.Fatalf("alg %s", i.Key().Alg)
			}
			good, err := i.Token("alice", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			claims, err := verify(t, i, good)
			if err != nil {
				t.Fatalf("good token refused: %v", err)
			}
			if claims["sub"] != "alice" || claims["iss"] != i.Issuer() || claims["jti"] == "" {
				t.Fatalf("claims %v", claims)
			}
			forged, err := i.ForgedToken("alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := verify(t, i, forged); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
				t.Fatalf("forged token: %v, want a signature error", err)
			}
			expired, _ := i.Token("alice", -time.Minute)
			if _, err := verify(t, i, expired); !errors.Is(err, jwt.ErrTokenExpired) {
				t.Fatalf("expired token: %v", err)
			}
			wrongAud, _ := i.Sign(map[string]any{"iss": i.Issuer(), "aud": "other", "sub": "alice", "exp": time.Now().Add(time.Minute).Unix()})
			if _, err := verify(t, i, wrongAud); !errors.Is(err, jwt.ErrTokenInvalidAudience) {
				t.Fatalf("wrong audience: %v", err)
			}
		})
	}
}

func TestDiscovery(t *testing.T) {
	i := startIDP(t, Options{})
	resp, err := http.Get(i.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.Issuer != i.Issuer() || d.JWKSURI != i.JWKSURL() {
		t.Fatalf("discovery %+v %v", d, err)
	}
}

func TestLoadPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "idp.pem")
	k1, err := Load(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st, err)
	}
	k2, err := Load(path)
	if err != nil || k2.KID != k1.KID || k2.Alg != "ES256" {
		t.Fatalf("reload: %+v %v (first kid %s)", k2, err, k1.KID)
	}
	// A token from one run verifies against the JWKS of the next run on the
	// same key file and address: configure the gateway once.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	i1, err := Start(Options{Addr: addr, Key: k1})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := i1.Token("bob", time.Minute)
	_ = i1.Close()
	i2 := startIDP(t, Options{Addr: addr, Key: k2})
	if _, err := verify(t, i2, tok); err != nil {
		t.Fatalf("token of run 1 refused by run 2: %v", err)
	}
}

func TestLoadFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, blk *pem.Block) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	tests := []struct {
		name, path, alg string
		wantErr         bool
	}{
		{"pkcs1 rsa", write("rsa.pem", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}), "RS256", false},
		{"small rsa", write("small.pem", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}), "", true},
		{"public key", write("pub.pem", &pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}), "", true},
		{"garbage", func() string { p := filepath.Join(dir, "g"); _ = os.WriteFile(p, []byte("nope"), 0o600); return p }(), "", true},
		{"bad der", write("bad.pem", &pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := Load(tt.path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load: %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && k.Alg != tt.alg {
				t.Fatalf("alg %s, want %s", k.Alg, tt.alg)
			}
		})
	}
	if _, err := Generate("HS256"); err == nil {
		t.Error("Generate accepted HS256")
	}
}
