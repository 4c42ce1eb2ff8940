// Package principal verifies enterprise principal tokens (the
// X-Principal-Token header): JWTs signed by a trusted identity provider,
// checked against the provider's JWKS, issuer and audience as configured with
// the control API (POST /control/trust, stored by store.PutTrust).
//
// JWT parsing and validation are golang-jwt/jwt/v5's; key sets are parsed
// with go-jose/v4. Only asymmetric signatures are accepted.
package principal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// TrustSource lists the trusted issuers (store.Store implements it).
type TrustSource interface {
	Trusts(ctx context.Context) ([]store.Trust, error)
}

// Options tune a Verifier. The zero value is usable.
type Options struct {
	// HTTPClient fetches key sets. Default: a client with FetchTimeout.
	HTTPClient *http.Client
	// FetchTimeout bounds one key-set fetch. Default 3 s.
	FetchTimeout time.Duration
	// CacheTTL is how long a fetched key set is used before it is fetched
	// again. Default 5 min. An unknown kid refetches sooner (MinRefresh).
	CacheTTL time.Duration
	// MinRefresh is the least time between two fetches of one URL caused by
	// unknown key ids. Default 1 s.
	MinRefresh time.Duration
	// Now is the time tokens' exp, nbf and iat are checked against; the
	// reference gateway passes its own clock. Default time.Now.
	Now func() time.Time
	// Leeway allows for clock skew on exp, nbf and iat. Default 0.
	Leeway time.Duration
}

// MaxJWKSBytes bounds a fetched key set.
const MaxJWKSBytes = 1 << 20

// Methods are the accepted signature algorithms.
var Methods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Verifier verifies principal tokens; safe for concurrent use.
type Verifier struct {
	src  TrustSource
	opts Options

	mu    sync.Mutex
	cache map[string]*keySet // by JWKS URL
}

type keySet struct {
	mu      sync.Mutex // serialises fetches of this URL
	set     *jose.JSONWebKeySet
	fetched time.Time
}

// New returns a Verifier reading trusts from src.
func New(src TrustSource, o Options) *Verifier {
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 3 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: o.FetchTimeout}
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 5 * time.Minute
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Verifier{src: src, opts: o, cache: map[string]*keySet{}}
}

func invalid(format string, args ...any) error {
	return gateway.Refuse(gateway.ReasonPrincipalInvalid, "principal token: "+format, args...)
}

// Verify checks token and names its principal. Every failure of the token is
// a *gateway.Refusal with reason principal_invalid; a failure to read the
// trusts from the store is returned as it is.
func (v *Verifier) Verify(ctx context.Context, token string) (*gateway.PrincipalRef, error) {
	parser := jwt.NewParser(jwt.WithValidMethods(Methods))
	unverified, _, err := parser.ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		return nil, invalid("malformed: %v", err)
	}
	iss, err := unverified.Claims.GetIssuer()
	if err != nil || iss == "" {
		return nil, invalid("no issuer (iss)")
	}
	trusts, err := v.src.Trusts(ctx)
	if err != nil {
		return nil, fmt.Errorf("principal: read trusts: %w", err)
	}
	var lastErr error
	matched := false
	for _, tr := range trusts {
		if tr.Issuer != iss {
			continue
		}
		matched = true
		ref, err := v.verifyWith(ctx, token, tr)
		if err == nil {
			return ref, nil
		}
		lastErr = err
	}
	if !matched {
		return nil, invalid("issuer %q is not trusted", iss)
	}
	return nil, lastErr
}

func (v *Verifier) verifyWith(ctx context.Context, token string, tr store.Trust) (*gateway.PrincipalRef, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(Methods),
		jwt.WithIssuer(tr.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(v.opts.Now),
		jwt.WithLeeway(v.opts.Leeway),
	}
	if tr.Audience != "" {
		opts = append(opts, jwt.WithAudience(tr.Audience))
	}
	var keyErr error
	claims := jwt.MapClaims{}
	tok, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		keys, err := v.keys(ctx, tr.JWKSURL, t)
		if err != nil {
			keyErr = err
			return nil, err
		}
		return keys, nil
	})
	if keyErr != nil {
		var ref *gateway.Refusal
		if errors.As(keyErr, &ref) {
			return nil, ref
		}
		return nil, invalid("%v", keyErr)
	}
	if err != nil || !tok.Valid {
		return nil, invalid("%v", err)
	}
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return nil, invalid("no subject (sub)")
	}
	return &gateway.PrincipalRef{Provider: tr.Provider, Issuer: tr.Issuer, Subject: sub}, nil
}

// keys returns the verification keys for a token: the key named by its kid
// (refetching the set once when the kid is unknown), or every signing key of
// the set when the token names none.
func (v *Verifier) keys(ctx context.Context, url string, t *jwt.Token) (jwt.VerificationKeySet, error) {
	if url == "" {
		return jwt.VerificationKeySet{}, invalid("the trust for this issuer has no jwks_url")
	}
	kid, _ := t.Header["kid"].(string)
	alg, _ := t.Header["alg"].(string)
	ks := v.entry(url)
	ks.mu.Lock()
	defer ks.mu.Unlock()

	now := time.Now()
	if ks.set == nil || now.Sub(ks.fetched) > v.opts.CacheTTL {
		if err := v.fetch(ctx, url, ks); err != nil {
			return jwt.VerificationKeySet{}, err
		}
	}
	pick := func() []jwt.VerificationKey {
		var cands []jose.JSONWebKey
		if kid != "" {
			cands = ks.set.Key(kid)
		} else {
			cands = ks.set.Keys
		}
		var out []jwt.VerificationKey
		for _, k := range cands {
			if k.Use != "" && k.Use != "sig" {
				continue
			}
			if k.Algorithm != "" && alg != "" && k.Algorithm != alg {
				continue
			}
			if !k.Valid() {
				continue
			}
			pub := k.Public() // zero value for symmetric keys
			if pub.Key == nil {
				continue
			}
			out = append(out, pub.Key)
		}
		return out
	}
	keys := pick()
	if len(keys) == 0 && kid != "" && now.Sub(ks.fetched) >= v.opts.MinRefresh {
		if err := v.fetch(ctx, url, ks); err != nil {
			return jwt.VerificationKeySet{}, err
		}
		keys = pick()
	}
	if len(keys) == 0 {
		if kid != "" {
			return jwt.VerificationKeySet{}, invalid("no signing key with kid %q at %s", kid, url)
		}
		return jwt.VerificationKeySet{}, invalid("no signing key at %s", url)
	}
	return jwt.VerificationKeySet{Keys: keys}, nil
}

func (v *Verifier) entry(url string) *keySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	ks, ok := v.cache[url]
	if !ok {
		ks = &keySet{}
		v.cache[url] = ks
	}
	return ks
}

// fetch reads the key set at url into ks (ks.mu held). A failed fetch keeps
// the previous set, if any, but still fails the verification that needed it.
func (v *Verifier) fetch(ctx context.Context, url string, ks *keySet) error {
	ctx, cancel := context.WithTimeout(ctx, v.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return invalid("jwks_url %q: %v", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return invalid("fetch JWKS: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return invalid("fetch JWKS %s: HTTP %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return invalid("read JWKS: %v", err)
	}
	if len(body) > MaxJWKSBytes {
		return invalid("JWKS at %s is larger than %d bytes", url, MaxJWKSBytes)
	}
	set, err := parseJWKS(body)
	if err != nil {
		return invalid("JWKS at %s: %v", url, err)
	}
	ks.set, ks.fetched = set, time.Now()
	return nil
}

// parseJWKS parses a key set, skipping keys go-jose cannot represent (an
// unknown kty or curve) instead of refusing the whole set.
func parseJWKS(body []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err == nil {
		return &set, nil
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	if raw.Keys == nil {
		return nil, errors.New(`no "keys" member`)
	}
	for _, k := range raw.Keys {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(k); err == nil {
			set.Keys = append(set.Keys, jwk)
		}
	}
	return &set, nil
}
