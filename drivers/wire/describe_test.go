package wire

import (
	"net/http"
	"strings"
	"testing"
)

func TestDescribeIsOneLineWithAHint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   []string
	}{
		{"html page", 501, "<!DOCTYPE HTML>\n<html>\n<head><title>Error response</title></head>\n<body><p>Unsupported method</p></body></html>",
			[]string{`answered http 501: an HTML page titled "Error response"`, "not an MCP Streamable HTTP endpoint"}},
		{"text with newlines", 401, "unauthorized:\n  missing\tbearer token\n", []string{"answered http 401: unauthorized: missing bearer token", "auth header"}},
		{"long body", 404, strings.Repeat("é", 500), []string{"answered http 404: " + strings.Repeat("é", 200) + "…", "often /mcp"}},
		{"empty body", 500, "", []string{"answered http 500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(&Answer{Status: tc.status, Body: []byte(tc.body), Header: http.Header{}})
			if strings.Contains(got, "\n") {
				t.Errorf("describe spans lines: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("describe = %q, want it to contain %q", got, w)
				}
			}
		})
	}
}
