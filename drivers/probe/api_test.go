package probe

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve sends one request through h from remote and returns the status and
// body.
func serve(t *testing.T, h http.Handler, method, path, remote, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func apiErr(t *testing.T, raw []byte) (msg, reason string) {
	t.Helper()
	var e struct{ Error, Reason string }
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("error body %q: %v", raw, err)
	}
	return e.Error, e.Reason
}

// The observation API answers loopback clients only; /mcp is for gateways
// wherever they run.
func TestAPIRefusesNonLoopback(t *testing.T) {
	p, _ := start(t)
	h := p.srv.Handler
	for _, remote := range []string{"192.0.2.1:1234", "10.0.0.5:80", "[2001:db8::1]:443", "garbage"} {
		for _, path := range []string{"/probe/v1", "/probe/v1/count?token=a", "/probe/v1/dispatches", "/probe/v1/nope"} {
			st, raw := serve(t, h, "GET", path, remote, "")
			if msg, reason := apiErr(t, raw); st != 403 || reason != "not_loopback" || !strings.Contains(msg, "loopback") {
				t.Errorf("%s %s: %d %s", remote, path, st, raw)
			}
		}
		st, raw := serve(t, h, "POST", "/probe/v1/stall", remote, `{"token":""}`)
		if _, reason := apiErr(t, raw); st != 403 || reason != "not_loopback" {
			t.Errorf("%s stall: %d %s", remote, st, raw)
		}
	}
	// Refused before anything happened.
	p.mu.Lock()
	stalls := len(p.stalls)
	p.mu.Unlock()
	if stalls != 0 {
		t.Fatal("a refused stall took effect")
	}
	for _, remote := range []string{"127.0.0.1:5", "[::1]:5"} {
		if st, raw := serve(t, h, "GET", "/probe/v1/count?token=a", remote, ""); st != 200 || !strings.Contains(string(raw), `"count":0`) {
			t.Errorf("%s: %d %s", remote, st, raw)
		}
	}
}

func TestAPIBadInput(t *testing.T) {
	p, _ := start(t)
	h := p.srv.Handler
	big := `{"token":"` + strings.Repeat("x", maxBody) + `"}`
	cases := []struct {
		name, method, path, body, ctype string
		status                          int
		reason, says                    string
	}{
		{"count without token", "GET", "/probe/v1/count", "", "", 400, "bad_request", `"token" is required`},
		{"stall without token", "POST", "/probe/v1/stall", `{}`, "", 400, "bad_request", `"token" is required`},
		{"stall with a number", "POST", "/probe/v1/stall", `{"token":7}`, "", 400, "bad_request", "not the JSON object"},
		{"unstall of null", "POST", "/probe/v1/unstall", `null`, "", 400, "bad_request", `"token" is required`},
		{"fail without token", "POST", "/probe/v1/fail", `{"how":"refuse"}`, "", 400, "bad_request", `"token" is required`},
		{"fail of an unknown kind", "POST", "/probe/v1/fail", `{"token":"a","how":"explode"}`, "", 400, "bad_request", "want tool_error or refuse"},
		{"empty body", "POST", "/probe/v1/stall", ``, "", 400, "bad_request", "EOF"},
		{"not JSON", "POST", "/probe/v1/stall", `token=a`, "", 400, "bad_request", "not the JSON object"},
		{"two values", "POST", "/probe/v1/stall", `{"token":"a"}{"token":"b"}`, "", 400, "bad_request", "more than one"},
		{"forget without prefix", "POST", "/probe/v1/forget", `{"token":"a"}`, "", 400, "bad_request", `"token_prefix" is required`},
		{"wait without token", "POST", "/probe/v1/wait", `{"n":1}`, "", 400, "bad_request", `"token" is required`},
		{"wait for negative n", "POST", "/probe/v1/wait", `{"token":"a","n":-1}`, "", 400, "bad_request", "negative"},
		{"wait with a bad timeout", "POST", "/probe/v1/wait", `{"token":"a","n":1,"timeout":"soon"}`, "", 400, "bad_request", "not a Go duration"},
		{"wait with a zero timeout", "POST", "/probe/v1/wait", `{"token":"a","n":1,"timeout":"0s"}`, "", 400, "bad_request", "must be positive"},
		{"quiet without quiet", "POST", "/probe/v1/quiet", `{"token_prefix":"a"}`, "", 400, "bad_request", `"quiet" is required`},
		{"quiet of a bad duration", "POST", "/probe/v1/quiet", `{"quiet":"5"}`, "", 400, "bad_request", "not a Go duration"},
		{"negative quiet", "POST", "/probe/v1/quiet", `{"quiet":"-1s"}`, "", 400, "bad_request", "must be positive"},
		{"quiet since a non-time", "POST", "/probe/v1/quiet", `{"quiet":"1s","since":"yesterday"}`, "", 400, "bad_request", "not the JSON object"},
		{"quiet after without since", "POST", "/probe/v1/quiet", `{"quiet":"1s","after":3}`, "", 400, "bad_request", `"after" goes with "since"`},
		{"form body", "POST", "/probe/v1/stall", `{"token":"a"}`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", "want application/json"},
		{"too large", "POST", "/probe/v1/stall", big, "", 413, "request_too_large", "over"},
		{"wrong method", "GET", "/probe/v1/stall", "", "", 405, "method_not_allowed", "allowed: POST"},
		{"post to a read", "POST", "/probe/v1/count?token=a", `{}`, "", 405, "method_not_allowed", "allowed: GET"},
		{"unknown endpoint", "GET", "/probe/v1/stalls", "", "", 404, "not_found", "/probe/v1/stalls"},
		{"deeper path", "GET", "/probe/v1/count/a", "", "", 404, "not_found", "no such probe endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			req.RemoteAddr = "127.0.0.1:1"
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			msg, reason := apiErr(t, rec.Body.Bytes())
			if rec.Code != c.status || reason != c.reason || !strings.Contains(msg, c.says) {
				t.Fatalf("%d %s, want %d %s saying %q", rec.Code, rec.Body, c.status, c.reason, c.says)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
	// Nothing above took effect.
	p.mu.Lock()
	stalls := len(p.stalls)
	p.mu.Unlock()
	if stalls != 0 {
		t.Fatal("a refused request stalled a token")
	}
}

// A body without Content-Type is read as JSON.
func TestAPIWithoutContentType(t *testing.T) {
	p, _ := start(t)
	req := httptest.NewRequest("POST", "/probe/v1/stall", strings.NewReader(`{"token":"x"}`))
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	p.srv.Handler.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	p.mu.Lock()
	_, held := p.stalls["x"]
	p.mu.Unlock()
	if !held {
		t.Fatal("stall not taken")
	}
	if st, raw := serve(t, p.srv.Handler, "GET", "/probe/v1", "127.0.0.1:1", ""); st != 200 ||
		!strings.Contains(string(raw), `"probe_api":"mcpconform-probe/1"`) || !strings.Contains(string(raw), `{"name":"probe.read","read_only":true}`) {
		t.Fatalf("info %d %s", st, raw)
	}
}
