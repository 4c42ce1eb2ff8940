package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/reports"
)

// evidenceCap bounds a body kept in an Exchange: an oversized-body test
// would otherwise put megabytes into every report.
const evidenceCap = 64 << 10

// flatten turns headers into the evidence map, values joined by ", ", and
// hides the credentials: the one in authHeader ("Bearer ***" and a
// fingerprint) and the principal token's signature in principalHeader.
func flatten(h http.Header, authHeader, principalHeader string) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		switch {
		case authHeader != "" && strings.EqualFold(k, authHeader):
			v = reports.RedactedAuth(v)
		case principalHeader != "" && strings.EqualFold(k, principalHeader):
			v = reports.RedactedToken(v)
		}
		out[k] = v
	}
	return out
}

// setRequestBody keeps a JSON request body as raw JSON; anything else (a
// malformed-JSON test) or an oversized body goes to RequestBodyText, because
// RequestBody is a json.RawMessage and must stay valid JSON.
func setRequestBody(e *reports.Exchange, b []byte) {
	switch {
	case len(b) == 0:
	case len(b) <= evidenceCap && json.Valid(b):
		e.RequestBody = json.RawMessage(b)
	default:
		e.RequestBodyText = evidenceText(b)
	}
}

func evidenceText(b []byte) string {
	if len(b) <= evidenceCap {
		return string(b)
	}
	return fmt.Sprintf("%s… [%d bytes, first %d kept]", b[:1024], len(b), 1024)
}
