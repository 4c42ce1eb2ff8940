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
