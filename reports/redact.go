package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Redacted stands in for a credential in the evidence: "***" and the first
// eight hex digits of its SHA-256, so a reader (and repro) can tell which
// of a scenario's keys a request used without learning any of them.
func Redacted(secret string) string {
	if secret == "" {
		return "***"
	}
	sum := sha256.Sum256([]byte(secret))
	return "***" + hex.EncodeToString(sum[:4])
}

// RedactedAuth redacts the credential of an authorization header value,
// keeping its scheme: "Bearer ***1a2b3c4d".
func RedactedAuth(v string) string {
	if scheme, cred, ok := strings.Cut(v, " "); ok {
		return scheme + " " + Redacted(cred)
	}
	return Redacted(v)
}

// RedactedToken redacts a JWT's signature and keeps its header and claims,
// "h.p.***1a2b3c4d": a token that cannot be presented again, whose claims a
// reader (and repro, minting an equivalent one) can still read. A value
// that is not a compact JWT is redacted whole.
func RedactedToken(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return Redacted(v)
	}
	return parts[0] + "." + parts[1] + "." + Redacted(parts[2])
}
