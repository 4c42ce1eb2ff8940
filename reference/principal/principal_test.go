package principal

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

type trusts []store.Trust

func (t trusts) Trusts(context.Context) ([]store.Trust, error) { return t, nil }

type failingTrusts struct{}

func (failingTrusts) Trusts(context.Context) ([]store.Trust, error) {
	return nil, errors.New("db down")
}

// idp is a test identity provider serving its JWKS.
type idp struct {
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int32
	srv     *httptest.Server
}

func newIDP(t *testing.T) *idp {
	p := &idp{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		set := jose.JSONWebKeySet{Keys: p.keys}
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) publish(kid, alg string, pub crypto.PublicKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: alg, Use: "sig"})
}

func (p *idp) trust() store.Trust {
	return store.Trust{Provider: "harness", Issuer: p.srv.URL, JWKSURL: p.srv.URL + "/jwks.json", Audience: "mcpconform"}
}

var now = time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)

func sign(t *testing.T, method jwt.SigningMethod, key crypto.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claims(iss string, mod func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{"iss": iss, "sub": "alice", "aud": "mcpconform", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestVerify(t *testing.T) {
	p := newIDP(t)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.publish("rsa-1", "RS256", rsaKey.Public())
	p.publish("ec-1", "ES256", ecKey.Public())
	p.publish("ed-1", "", edKey.Public())
	tr := p.trust()
	v := New(trusts{{Provider: "other", Issuer: "http://elsewhere", JWKSURL: "http://127.0.0.1:1/none", Audience: "x"}, tr},
		Options{Now: func() time.Time { return now }})
	iss := tr.Issuer
	want := &gateway.PrincipalRef{Provider: "harness", Issuer: iss, Subject: "alice"}

	good := []struct {
		name string
		tok  string
	}{
		{"rs256", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, nil))},
		{"es256", sign(t, jwt.SigningMethodES256, ecKey, "ec-1", claims(iss, nil))},
		{"eddsa", sign(t, jwt.SigningMethodEdDSA, edKey, "ed-1", claims(iss, nil))},
		{"no kid", sign(t, jwt.SigningMethodES256, ecKey, "", claims(iss, nil))},
		{"audience list", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { c["aud"] = []string{"a", "mcpconform"} }))},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), c.tok)
			if err != nil {
				t.Fatal(err)
			}
			if *got != *want {
				t.Fatalf("got %+v want %+v", got, want)
			}
		})
	}

	hs := sign(t, jwt.SigningMethodHS256, []byte("secret"), "rsa-1", claims(iss, nil))
	none := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims(iss, nil))
	bad := []struct {
		name string
		tok  string
		msg  string
	}{
		{"garbage", "not.a.jwt", "malformed"},
		{"untrusted issuer", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims("http://evil", nil)), "not trusted"},
		{"no issuer", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { delete(c, "iss") })), "no issuer"},
		{"wrong audience", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { c["aud"] = "other" })), "aud"},
		{"no audience", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { delete(c, "aud") })), "aud"},
		{"expired", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() })), "expired"},
		{"no exp", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { delete(c, "exp") })), "exp"},
		{"not yet valid", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })), "not valid yet"},
		{"no subject", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", claims(iss, func(c jwt.MapClaims) { delete(c, "sub") })), "subject"},
		{"wrong key same kid", sign(t, jwt.SigningMethodRS256, otherRSA, "rsa-1", claims(iss, nil)), "signature"},
		{"wrong key no kid", sign(t, jwt.SigningMethodRS256, otherRSA, "", claims(iss, nil)), "signature"},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, otherRSA, "rsa-9", claims(iss, nil)), "no signing key"},
		{"alg mismatch with key", sign(t, jwt.SigningMethodRS512, rsaKey, "rsa-1", claims(iss, nil)), "no signing key"},
		{"hs256", hs, "signing method"},
		{"alg none", none, "signing method"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), c.tok)
			var ref *gateway.Refusal
			if !errors.As(err, &ref) || ref.Reason != gateway.ReasonPrincipalInvalid {
				t.Fatalf("err %v, want principal_invalid", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestKeyRotationAndCache(t *testing.T) {
	p := newIDP(t)
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.publish("k1", "ES256", k1.Public())
	tr := p.trust()
	v := New(trusts{tr}, Options{Now: func() time.Time { return now }, MinRefresh: time.Nanosecond})
	ctx := context.Background()

	for i := 0; i < 3; i++ {
		if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, k1, "k1", claims(tr.Issuer, nil))); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for three tokens, want 1 (cached)", n)
	}
	// A new key appears: the unknown kid refreshes the set once.
	p.publish("k2", "ES256", k2.Public())
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, k2, "k2", claims(tr.Issuer, nil))); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

func TestFetchFailures(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/500" {
			http.Error(w, "boom", 500)
			return
		}
		_, _ = w.Write([]byte(`{"keys": "nope"}`))
	}))
	defer broken.Close()
	cases := []struct{ name, url, msg string }{
		{"timeout", slow.URL, "fetch JWKS"},
		{"http 500", broken.URL + "/500", "HTTP 500"},
		{"not a key set", broken.URL + "/jwks", "JWKS at"},
		{"refused", "http://127.0.0.1:1/jwks", "fetch JWKS"},
		{"no url", "", "no jwks_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := store.Trust{Provider: "p", Issuer: "http://iss", JWKSURL: c.url, Audience: "mcpconform"}
			// The fetch runs in Verify's goroutine: the log is written
			// before Verify returns.
			var logs bytes.Buffer
			v := New(trusts{tr}, Options{Now: func() time.Time { return now }, FetchTimeout: 200 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			start := time.Now()
			_, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, k, "k", claims("http://iss", nil)))
			var ref *gateway.Refusal
			if !errors.As(err, &ref) || ref.Reason != gateway.ReasonPrincipalInvalid {
				t.Fatalf("err %v", err)
			}
			// What failed is the operator's to read, not the caller's: the
			// answer names no URL (an internal address, often).
			if c.url != "" && (strings.Contains(err.Error(), c.url) || strings.Contains(err.Error(), "127.0.0.1")) {
				t.Fatalf("the refusal names the key server: %v", err)
			}
			if got := logs.String() + err.Error(); !strings.Contains(got, c.msg) {
				t.Fatalf("neither the log nor the refusal says %q: %s", c.msg, got)
			}
			if c.url != "" && !strings.Contains(logs.String(), c.url) {
				t.Fatalf("the log does not name the key server: %s", logs.String())
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("fetch not bounded: %v", time.Since(start))
			}
		})
	}
	// A store failure is not the token's fault: it is not a refusal.
	v := New(failingTrusts{}, Options{})
	_, err := v.Verify(context.Background(), sign(t, jwt.SigningMethodES256, k, "k", claims("http://iss", nil)))
	var ref *gateway.Refusal
	if err == nil || errors.As(err, &ref) {
		t.Fatalf("store failure: %v", err)
	}
}

// TestSlowFetchBlocksNoOne: while a refetch of a key set hangs on a slow
// key server, a token the cached set verifies is verified at once, and
// verifications needing the refetch share the one request.
func TestSlowFetchBlocksNoOne(t *testing.T) {
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var (
		fetches atomic.Int32
		hold    = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := []jose.JSONWebKey{{Key: k1.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"}}
		if fetches.Add(1) > 1 {
			<-hold // every refetch hangs until the test lets it go
			keys = append(keys, jose.JSONWebKey{Key: k2.Public(), KeyID: "k2", Algorithm: "ES256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
	}))
	defer srv.Close()
	defer close(hold)
	tr := store.Trust{Provider: "p", Issuer: srv.URL, JWKSURL: srv.URL + "/jwks.json", Audience: "mcpconform"}
	v := New(trusts{tr}, Options{Now: func() time.Time { return now }, MinRefresh: time.Nanosecond, FetchTimeout: 10 * time.Second})
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, k1, "k1", claims(tr.Issuer, nil))); err != nil {
		t.Fatal(err)
	}

	// Two tokens with the new kid start a refetch, which hangs.
	rotated := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, k2, "k2", claims(tr.Issuer, nil)))
			rotated <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for fetches.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the refetch never started")
		}
		time.Sleep(5 * time.Millisecond)
	}

	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, sign(t, jwt.SigningMethodES256, k1, "k1", claims(tr.Issuer, nil)))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a token of the cached set: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a token of the cached set waited on the slow refetch")
	}

	hold <- struct{}{}
	for range 2 {
		if err := <-rotated; err != nil {
			t.Fatalf("a token of the new key: %v", err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the two new-kid tokens share one refetch)", n)
	}
}
