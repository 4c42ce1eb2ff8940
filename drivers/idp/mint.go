package idp

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"time"
)

// MintPath is where an IdP started with Options.Mint signs a token on
// request: POST a MintRequest, get {"token": "..."}. A reproduction asks
// it for a token with the recorded one's claims, fresh times and id, and
// its own issuer.
const MintPath = "/idp/v1/token"

// MintRequest asks for a token: the claims to carry (iss, iat, exp and jti
// are the IdP's own, whatever they say) and its lifetime in seconds
// (0: 10 minutes; negative: a token that already expired).
type MintRequest struct {
	Claims     map[string]any `json:"claims"`
	TTLSeconds int64          `json:"ttl_seconds"`
}

// mint answers loopback clients only: anyone who reaches it can act as
// any principal a gateway trusting this IdP knows.
func (i *IdP) mint(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, reason, format string, args ...any) {
		writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...), "reason": reason})
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || !net.ParseIP(host).IsLoopback() {
		fail(http.StatusForbidden, "not_loopback", "the identity provider mints tokens for loopback clients only")
		return
	}
	var req MintRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		fail(http.StatusBadRequest, "bad_request", "request body is not a MintRequest: %v", err)
		return
	}
	if sub, _ := req.Claims["sub"].(string); sub == "" {
		fail(http.StatusBadRequest, "subject_required", "claims.sub, the principal's subject, is required")
		return
	}
	claims := map[string]any{"aud": i.aud}
	maps.Copy(claims, req.Claims)
	tok, err := i.Sign(Fresh(claims, i.Issuer(), time.Duration(req.TTLSeconds)*time.Second))
	if err != nil {
		fail(http.StatusInternalServerError, "sign_failed", "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"token": tok})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
