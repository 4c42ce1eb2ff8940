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
	"log/slog"
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
	// Logger receives key-set fetch failures, which the caller is not
	// shown. Default: discarded.
	Logger *slog.Logger
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
	mu       sync.Mutex // guards the fields below, never held over a fetch
	set      *jose.JSONWebKeySet
	fetched  time.Time
	inflight *fetchCall // the fetch running now, nil when none is
}

// fetchCall is one fetch of a key set, which every verification needing it
// meanwhile waits for.
type fetchCall struct {
	done chan struct{}
	err  error // set before done closes
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
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

	now := time.Now()
	set, fetched := ks.current()
	if set == nil || now.Sub(fetched) > v.opts.CacheTTL {
		if err := v.refresh(ctx, url, ks); err != nil {
			return jwt.VerificationKeySet{}, err
		}
		set, fetched = ks.current()
	}
	keys := pick(set, kid, alg)
	if len(keys) == 0 && kid != "" && now.Sub(fetched) >= v.opts.MinRefresh {
		if err := v.refresh(ctx, url, ks); err != nil {
			return jwt.VerificationKeySet{}, err
		}
		set, _ = ks.current()
		keys = pick(set, kid, alg)
	}
	if len(keys) == 0 {
		if kid != "" {
			return jwt.VerificationKeySet{}, invalid("no signing key with kid %q in the issuer's key set", kid)
		}
		return jwt.VerificationKeySet{}, invalid("no signing key in the issuer's key set")
	}
	return jwt.VerificationKeySet{Keys: keys}, nil
}

// pick is the public signing keys of set a token with kid and alg may be
// verified with: the key named kid, or every key when kid is "".
func pick(set *jose.JSONWebKeySet, kid, alg string) []jwt.VerificationKey {
	var cands []jose.JSONWebKey
	if kid != "" {
		cands = set.Key(kid)
	} else {
		cands = set.Keys
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

// current is the set as last fetched (nil before the first fetch).
func (ks *keySet) current() (*jose.JSONWebKeySet, time.Time) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.set, ks.fetched
}

// refresh fetches the set at url into ks, or waits for the fetch already
// running. No lock is held during the HTTP request: a verification that the
// cached set answers never waits on a slow key server. A failed fetch keeps
// the previous set, if any, but still fails the verification that needed
// it; what failed (the URL, the HTTP error) is logged for the operator, and
// the caller is told only that the issuer's key set was unavailable.
func (v *Verifier) refresh(ctx context.Context, url string, ks *keySet) error {
	ks.mu.Lock()
	f := ks.inflight
	if f != nil {
		ks.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return invalid("the issuer's key set is unavailable: %v", ctx.Err())
		}
	}
	f = &fetchCall{done: make(chan struct{})}
	ks.inflight = f
	ks.mu.Unlock()

	// The fetch serves every verification waiting on it, so it outlives
	// the request that started it (bounded by FetchTimeout).
	set, err := v.fetch(context.WithoutCancel(ctx), url)
	if err != nil {
		v.opts.Logger.Warn("principal: fetch JWKS", "url", url, "err", err)
		f.err = invalid("the issuer's key set is unavailable")
	}
	ks.mu.Lock()
	if err == nil {
		ks.set, ks.fetched = set, time.Now()
	}
	ks.inflight = nil
	ks.mu.Unlock()
	close(f.done)
	return f.err
}

// fetch reads and parses the key set at url. Its errors name the URL: they
// are logged, never sent to the caller.
func (v *Verifier) fetch(ctx context.Context, url string) (*jose.JSONWebKeySet, error) {
	ctx, cancel := context.WithTimeout(ctx, v.opts.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks_url %q: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS %s: HTTP %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read JWKS %s: %w", url, err)
	}
	if len(body) > MaxJWKSBytes {
		return nil, fmt.Errorf("JWKS at %s is larger than %d bytes", url, MaxJWKSBytes)
	}
	set, err := parseJWKS(body)
	if err != nil {
		return nil, fmt.Errorf("JWKS at %s: %w", url, err)
	}
	return set, nil
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
