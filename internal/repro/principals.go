package repro

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/idp"
)

// A principal token of the recorded run was signed by an identity
// provider that ended with it. The replay gets one with the same claims
// (fresh times and id) from IDP, a running `mcpconform idp`: registered
// through the control API as the run registered its own, when the run did;
// otherwise the target trusts a fixed issuer, and the reader hands the
// script a token (TOKEN_<subject>) or an IdP that issuer's gateway trusts.
type principalToken struct {
	value   string
	claims  map[string]any // as recorded, iss and the times and id left out
	subject string
	issuer  string
	ttl     int64  // seconds; negative for a token that had expired when sent
	name    string // PTOKEN_n, the shell variable it is bound to
	env     string // TOKEN_<subject>: the reader's token, when the script cannot register its IdP
}

// freshClaims are the claims a minted token gets anew.
var freshClaims = []string{"iss", "iat", "exp", "nbf", "jti"}

// jwtText finds a compact JWS in a header value (after a prefix such as
// "Bearer ", if the profile gives one).
// jwtText is a compact JWT as the evidence keeps it: its signature
// redacted to "***" and a fingerprint (reports.RedactedToken), or whole in
// records made before the redaction.
var jwtText = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.(?:\*\*\*)?[A-Za-z0-9_-]+`)

// bindPrincipals binds the run's identity provider (the issuer a control
// call registered) to ${IDP}, the subjects registered under it to fresh
// ones (a second run of the script must not meet the first one's revoked
// principal), and every principal token sent to a freshly minted one.
func (g *gen) bindPrincipals(acts []action) {
	registered := map[string]bool{}
	for _, a := range acts {
		if a.mcp || a.ex.Method != "POST" {
			continue
		}
		var body struct {
			Issuer  string `json:"issuer"`
			Subject string `json:"subject"`
		}
		if json.Unmarshal(a.ex.RequestBody, &body) != nil || body.Issuer == "" {
			continue
		}
		switch pathOf(a.ex) {
		case "/trust":
			if !registered[body.Issuer] {
				registered[body.Issuer] = true
				g.bind(body.Issuer, "${IDP}")
				g.usesIdP = true
			}
		case "/principals":
			if registered[body.Issuer] {
				g.fresh(body.Subject)
			}
		}
	}
	for _, a := range acts {
		if !a.mcp {
			continue
		}
		for _, k := range slices.Sorted(mapsKeys(a.ex.RequestHeaders)) {
			for _, tok := range jwtText.FindAllString(a.ex.RequestHeaders[k], -1) {
				if g.bound[tok] {
					continue
				}
				pt, ok := parsePrincipal(tok, a.ex.Started)
				if !ok {
					continue
				}
				pt.name = fmt.Sprintf("PTOKEN_%d", len(g.tokens)+1)
				if !registered[pt.issuer] {
					pt.env = "TOKEN_" + shvar(pt.subject)
					if !slices.Contains(g.env, pt.env) {
						g.warn = append(g.warn, fmt.Sprintf("%s: a principal token from %s, an identity provider the script cannot register; it takes the token from %s, or mints one at IDP (which must be that issuer, with the recorded run's --idp-key)", oneLine(a.ex.Label), pt.issuer, pt.env))
					}
				}
				g.bind(tok, "${"+pt.name+"}")
				g.tokens = append(g.tokens, pt)
			}
		}
	}
}

// parsePrincipal reads a token's claims; used is when the run first sent
// it, for the lifetime of one that had already expired.
func parsePrincipal(tok string, used time.Time) (principalToken, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return principalToken{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return principalToken{}, false
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return principalToken{}, false
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return principalToken{}, false
	}
	iss, _ := claims["iss"].(string)
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	ttl := int64(exp - iat)
	if u := float64(used.Unix()); !used.IsZero() && exp > 0 && exp <= u {
		ttl = min(int64(math.Floor(exp-u)), -1)
	}
	pt := principalToken{value: tok, subject: sub, issuer: iss, ttl: ttl, claims: map[string]any{}}
	for k, v := range claims {
		if !slices.Contains(freshClaims, k) {
			pt.claims[k] = v
		}
	}
	return pt, true
}

// emitTokens mints the replay's principal tokens before anything is sent.
func (g *gen) emitTokens() {
	if len(g.tokens) == 0 {
		return
	}
	g.p("")
	g.p("# Principal tokens: fresh ones (new times and id) with the recorded tokens' claims.")
	for _, pt := range g.tokens {
		claims, _ := json.Marshal(pt.claims) // map keys sorted: the same script for the same record
		mint := fmt.Sprintf(`mint %s %d`, g.word(string(claims)), pt.ttl)
		if pt.env == "" {
			g.p(`%s=$(%s) || die %s`, pt.name, mint, sq(fmt.Sprintf("IDP minted no token for %s", pt.subject)))
			continue
		}
		g.p(`%s="${%s:-}"`, pt.name, pt.env)
		g.p(`[ -n "$%s" ] || %s=$(%s) || die %s`, pt.name, pt.name, mint, sq(fmt.Sprintf(
			"set %s to a principal token for subject %s that the gateway accepts, or IDP to the identity provider it trusts (the recorded run's: mcpconform idp --addr %s --key THE-RUN'S-IDP-KEY)",
			pt.env, pt.subject, strings.TrimPrefix(pt.issuer, "http://"))))
	}
}

// mintHelper is the script's mint function, added when it mints.
const mintHelper = `
# mint CLAIMS TTL: a principal token with CLAIMS (JSON), fresh times and id, valid TTL
# seconds (negative: already expired), from the identity provider at IDP.
mint() {
  local tok
  [ -n "${IDP:-}" ] || return 1
  tok=$(curl -sS --max-time 30 -X POST -H 'Content-Type: application/json' \
    --data-raw "{\"claims\":$1,\"ttl_seconds\":$2}" "$IDP` + idp.MintPath + `" | field token)
  [ -n "$tok" ] && echo "$tok"
}
`
