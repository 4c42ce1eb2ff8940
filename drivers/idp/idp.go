// Package idp is the harness's own identity provider: a JWKS endpoint and
// signed principal tokens. The harness tells the target to trust its issuer
// and JWKS URL, then mints tokens for the principals a scenario needs. A
// persistent key file and a fixed address let an operator configure an
// external gateway's trusted issuer once, before any run.
package idp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// DefaultAudience is the audience the control API's trust call names.
const DefaultAudience = "mcpconform"

// Key is a signing key and how it appears in the JWKS.
type Key struct {
	Signer crypto.Signer // *ecdsa.PrivateKey (P-256) or *rsa.PrivateKey
	Alg    string        // "ES256" or "RS256"
	KID    string        // RFC 7638 thumbprint: stable for a key file
}

// Generate makes a fresh key for alg ("ES256" or "RS256").
func Generate(alg string) (*Key, error) {
	var s crypto.Signer
	var err error
	switch alg {
	case "ES256":
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "RS256":
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return nil, fmt.Errorf("generate key: unsupported alg %q (want ES256 or RS256)", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generate %s key: %w", alg, err)
	}
	return newKey(s)
}

func newKey(s crypto.Signer) (*Key, error) {
	k := &Key{Signer: s}
	switch priv := s.(type) {
	case *ecdsa.PrivateKey:
		if priv.Curve != elliptic.P256() {
			return nil, errors.New("key: only P-256 EC keys (ES256) are supported")
		}
		k.Alg = "ES256"
	case *rsa.PrivateKey:
		if priv.N.BitLen() < 2048 {
			return nil, fmt.Errorf("key: RSA key of %d bits, want at least 2048", priv.N.BitLen())
		}
		k.Alg = "RS256"
	default:
		return nil, fmt.Errorf("key: unsupported key type %T", s)
	}
	jwk := jose.JSONWebKey{Key: s.Public()}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("key thumbprint: %w", err)
	}
	k.KID = base64.RawURLEncoding.EncodeToString(tp)
	return k, nil
}

// Load reads the PEM private key at path (PKCS#8, SEC1 or PKCS#1), or
// creates an ES256 key there (mode 0600) when the file does not exist, so
// `--idp-key FILE` keeps the same JWKS across runs.
func Load(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return create(path)
	}
	if err != nil {
		return nil, fmt.Errorf("load idp key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("load idp key %s: no PEM block", path)
	}
	var s any
	switch blk.Type {
	case "PRIVATE KEY":
		s, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		s, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		s, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("load idp key %s: PEM type %q is not a private key", path, blk.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("load idp key %s: %w", path, err)
	}
	signer, ok := s.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("load idp key %s: %T cannot sign", path, s)
	}
	k, err := newKey(signer)
	if err != nil {
		return nil, fmt.Errorf("load idp key %s: %w", path, err)
	}
	return k, nil
}

func create(path string) (*Key, error) {
	k, err := Generate("ES256")
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
	if err != nil {
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	// Write then rename, so a crash never leaves a half-written key that
	// the next run would refuse.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".idp-key-*")
	if err != nil {
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("create idp key: %w", err)
	}
	return k, nil
}

// Options configures Start.
type Options struct {
	Addr     string // default "127.0.0.1:0"; fixed with --idp-addr
	Key      *Key   // nil: a fresh ES256 key (see Load for a persistent one)
	Audience string // default DefaultAudience
	// Mint serves MintPath: fresh tokens on request, for loopback clients
	// (a repro script standing in for the run that ended).
	Mint bool
}

// IdP is a running identity provider.
type IdP struct {
	ln     net.Listener
	srv    *http.Server
	key    *Key
	forged *Key
	aud    string
	once   sync.Once
}

// Start listens and serves /jwks.json and /.well-known/openid-configuration.
func Start(opts Options) (*IdP, error) {
	key := opts.Key
	if key == nil {
		var err error
		if key, err = Generate("ES256"); err != nil {
			return nil, fmt.Errorf("idp: %w", err)
		}
	}
	forged, err := Generate(key.Alg)
	if err != nil {
		return nil, fmt.Errorf("idp: forged key: %w", err)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("idp: listen %s: %w", addr, err)
	}
	aud := opts.Audience
	if aud == "" {
		aud = DefaultAudience
	}
	i := &IdP{ln: ln, key: key, forged: forged, aud: aud}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: key.Signer.Public(), KeyID: key.KID, Algorithm: key.Alg, Use: "sig",
	}}})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("idp: encode jwks: %w", err)
	}
	discovery, _ := json.Marshal(map[string]any{
		"issuer": i.Issuer(), "jwks_uri": i.JWKSURL(),
		"id_token_signing_alg_values_supported": []string{key.Alg},
	})
	serve := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(body)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /jwks.json", serve(jwks))
	mux.Handle("GET /.well-known/openid-configuration", serve(discovery))
	if opts.Mint {
		mux.Handle("POST "+MintPath, http.HandlerFunc(i.mint))
	}
	i.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = i.srv.Serve(ln) }()
	return i, nil
}

// Issuer is the base URL, http://HOST:PORT, used as the iss claim.
func (i *IdP) Issuer() string { return "http://" + i.ln.Addr().String() }

// JWKSURL is where the public key is served.
func (i *IdP) JWKSURL() string { return i.Issuer() + "/jwks.json" }

// Audience is the aud claim of every token.
func (i *IdP) Audience() string { return i.aud }

// Addr is the listen address.
func (i *IdP) Addr() string { return i.ln.Addr().String() }

// Key is the trusted signing key.
func (i *IdP) Key() *Key { return i.key }

// Token signs a principal token for subject valid for ttl; ttl 0 means 10
// minutes, a negative ttl gives a token that already expired.
func (i *IdP) Token(subject string, ttl time.Duration) (string, error) {
	return i.Sign(i.claims(subject, ttl))
}

// ForgedToken is a token for subject that looks right (same issuer,
// audience, alg and kid) but is signed by a key the JWKS does not hold,
// so only a real signature check refuses it.
func (i *IdP) ForgedToken(subject string) (string, error) {
	return sign(i.forged, i.key.KID, i.claims(subject, 0))
}

// Sign signs arbitrary claims with the trusted key, for negative tests such
// as a wrong audience or issuer.
func (i *IdP) Sign(claims map[string]any) (string, error) {
	return sign(i.key, i.key.KID, claims)
}

func (i *IdP) claims(subject string, ttl time.Duration) map[string]any {
	return Fresh(map[string]any{"aud": i.aud, "sub": subject}, i.Issuer(), ttl)
}

// Fresh completes claims for issuer as a token signed now: iss, iat, exp
// and jti are set (whatever claims held for them), aud defaults to
// DefaultAudience, the rest is kept. ttl 0 means 10 minutes; a negative
// ttl gives a token that already expired.
func Fresh(claims map[string]any, issuer string, ttl time.Duration) map[string]any {
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	now := time.Now()
	iat := now
	if ttl < 0 {
		iat = now.Add(2 * ttl) // issued before it expired
	}
	out := map[string]any{"aud": DefaultAudience}
	for k, v := range claims {
		out[k] = v
	}
	out["iss"], out["iat"], out["exp"], out["jti"] = issuer, iat.Unix(), now.Add(ttl).Unix(), uuid.NewString()
	return out
}

// Mint signs claims completed by Fresh with k, for issuer: a token like
// the harness's own, from a persistent key file and the issuer a gateway
// was told to trust.
func Mint(k *Key, issuer string, claims map[string]any, ttl time.Duration) (string, error) {
	return sign(k, k.KID, Fresh(claims, issuer, ttl))
}

func sign(k *Key, kid string, claims map[string]any) (string, error) {
	var m jwt.SigningMethod = jwt.SigningMethodES256
	if k.Alg == "RS256" {
		m = jwt.SigningMethodRS256
	}
	t := jwt.NewWithClaims(m, jwt.MapClaims(claims))
	t.Header["kid"] = kid
	s, err := t.SignedString(k.Signer)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// Close stops the server.
func (i *IdP) Close() error {
	var err error
	i.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = i.srv.Shutdown(ctx); err != nil {
			err = fmt.Errorf("idp: shutdown: %w", err)
		}
		// Serve may not have taken the listener yet when Shutdown ran; close
		// it here so the address is free once Close returns.
		_ = i.ln.Close()
	})
	return err
}
