package control

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileRoute is one endpoint of the API with real path arguments.
type hostileRoute struct {
	method, path string
	body         bool // reads a JSON body
}

func hostileRoutes(t *testing.T, e *env) []hostileRoute {
	t.Helper()
	wid := e.must(t, "POST", "/control/wallets", `{"balance": 5}`, 201)["wallet_id"].(string)
	pid := e.must(t, "POST", "/control/principals", `{"provider":"p","issuer":"http://i","subject":"s"}`, 201)["principal_id"].(string)
	fid := e.must(t, "POST", "/control/faults", `{"point":"fence.read","action":"pause"}`, 201)["fault_id"].(string)
	return []hostileRoute{
		{"GET", "/control/capabilities", false},
		{"POST", "/control/wallets", true},
		{"GET", "/control/wallets/" + wid, false},
		{"POST", "/control/wallets/" + wid + "/credit", true},
		{"GET", "/control/wallets/" + wid + "/ledger", false},
		{"POST", "/control/keys", true},
		{"POST", "/control/trust", true},
		{"POST", "/control/principals", true},
		{"POST", "/control/principals/" + pid + "/revoke", false},
		{"POST", "/control/tools", true},
		{"DELETE", "/control/tools/partner.echo", false},
		{"POST", "/control/permits", true},
		{"GET", "/control/dispatches?tool=partner.echo&wallet_id=" + wid, false},
		{"GET", "/control/locks?wallet_id=" + wid, false},
		{"GET", "/control/clock", false},
		{"PUT", "/control/clock", true},
		{"DELETE", "/control/clock", false},
		{"POST", "/control/clock/advance", true},
		{"GET", "/control/settings", false},
		{"PUT", "/control/settings", true},
		{"DELETE", "/control/settings", false},
		{"GET", "/control/faults", false},
		{"POST", "/control/faults", true},
		{"GET", "/control/faults/" + fid, false},
		{"POST", "/control/faults/" + fid + "/await", true},
		{"POST", "/control/faults/" + fid + "/release", false},
		{"DELETE", "/control/faults", false},
	}
}

// serve runs one request through the handler with a chosen RemoteAddr and
// checks the answer is JSON and, as an error, carries error and reason. It
// never lets a panic or a 5xx through.
func serve(t *testing.T, e *env, method, path, remote, authz, ctype string, body []byte) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.RemoteAddr = remote
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("%s %s: panic %v", method, path, v)
			}
		}()
		e.h.ServeHTTP(rec, req)
	}()
	var m map[string]any
	raw := rec.Body.Bytes()
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d answer is not JSON: %q", method, path, rec.Code, raw)
		}
	}
	if rec.Code >= 500 {
		t.Fatalf("%s %s %.60q: status %d: %s", method, path, body, rec.Code, raw)
	}
	if rec.Code >= 400 {
		if r, _ := m["reason"].(string); r == "" {
			t.Fatalf("%s %s: %d error without a reason: %s", method, path, rec.Code, raw)
		}
		if s, _ := m["error"].(string); s == "" {
			t.Fatalf("%s %s: %d error without a sentence: %s", method, path, rec.Code, raw)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s: error with Content-Type %q", method, path, ct)
		}
	}
	return rec.Code, m
}

// TestHostileInput: on every endpoint, requests off loopback, without the
// token, with malformed JSON, wrong types, another media type or a body over
// 1 MiB get a clear 4xx JSON error with a stable reason; never a panic, never
// a 5xx.
func TestHostileInput(t *testing.T) {
	e := newEnv(t)
	const local = "127.0.0.1:40000"
	auth := "Bearer " + token
	routes := hostileRoutes(t, e)

	// Every field any endpoint reads, each of the wrong JSON type.
	wrongTypes := `{"balance":"x","amount":"x","wallet_id":1,"provider":1,"issuer":[],"subject":{},"tools":"x",` +
		`"name":1,"price":"x","read_only":"x","approval":1,"upstream_url":1,"upstream_tool":1,"key_id":1,"tool":1,` +
		`"budget":"x","ttl":1,"now":1,"by":1,"window_seconds":"x","permit_ttl_seconds":"x","stale_lock_seconds":"x",` +
		`"point":1,"action":1,"count":"x","match":1,"waiting":"x","timeout":1,"jwks_url":1,"audience":1}`
	oversized := []byte(`{"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}`)

	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			for _, remote := range []string{"192.0.2.1:1234", "10.0.0.1:80", "[2001:db8::1]:443", "[::ffff:10.0.0.1]:1", "garbage", "", "localhost:1"} {
				if st, m := serve(t, e, rt.method, rt.path, remote, auth, "", nil); st != 403 || m["reason"] != "not_loopback" {
					t.Errorf("remote %q: %d %v, want 403 not_loopback", remote, st, m)
				}
			}
			for _, authz := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Basic " + token, token, "Bearer " + token + " x", "Bearer " + strings.Repeat("t", 10000)} {
				if st, m := serve(t, e, rt.method, rt.path, local, authz, "", nil); st != 401 || m["reason"] != "control_token_required" {
					t.Errorf("authorization %.30q: %d %v, want 401 control_token_required", authz, st, m)
				}
			}
			if !rt.body {
				// A body it does not read changes nothing about the errors.
				serve(t, e, rt.method, rt.path, local, auth, "application/json", []byte(`{"x":`))
				return
			}
			// PUT /settings calls every body it cannot use invalid_setting.
			want := "bad_request"
			if rt.path == "/control/settings" {
				want = "invalid_setting"
			}
			for _, b := range []string{`{`, `{"balance":`, `not json`, `{"a":1}}`, "\x00\xff", `[1]`, `"str"`, `12`, `true`, wrongTypes} {
				if st, m := serve(t, e, rt.method, rt.path, local, auth, "application/json", []byte(b)); st != 400 || m["reason"] != want {
					t.Errorf("body %.40q: %d %v, want 400 %s", b, st, m, want)
				}
			}
			if st, m := serve(t, e, rt.method, rt.path, local, auth, "text/plain", []byte(`{}`)); st != 415 || m["reason"] != "unsupported_media_type" {
				t.Errorf("text/plain: %d %v, want 415 unsupported_media_type", st, m)
			}
			if st, m := serve(t, e, rt.method, rt.path, local, auth, "application/json", oversized); st != 413 || m["reason"] != "request_too_large" {
				t.Errorf("oversized: %d %v, want 413 request_too_large", st, m)
			}
		})
	}

	// Random bodies on every endpoint: any answer, but never a panic or 5xx.
	rng := rand.New(rand.NewPCG(5, 5))
	alphabet := []byte(`{}[]":,0123456789.-eE truefalsnul\` + "\x00\xff")
	for i := range 3000 {
		rt := routes[rng.IntN(len(routes))]
		n := rng.IntN(64)
		b := make([]byte, n)
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		if i%3 == 0 {
			b = append([]byte(`{"balance":1,"point":"fence.read","action":"pause","timeout":"1ms",`), b...)
		}
		serve(t, e, rt.method, rt.path, local, auth, "application/json", b)
	}

	// Numbers out of every range.
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/control/settings", `{"window_seconds":1e300}`},
		{"PUT", "/control/settings", `{"window_seconds":1e10}`},
		{"PUT", "/control/settings", `{"stale_lock_seconds":-1e300}`},
		{"PUT", "/control/settings", `{"permit_ttl_seconds":1e-300}`},
		{"POST", "/control/wallets", `{"balance":9223372036854775807}`},
		{"POST", "/control/wallets", `{"balance":1e30}`},
		{"POST", "/control/clock/advance", `{"by":"2562047h"}`},
		{"POST", "/control/clock/advance", `{"by":"-9223372036s"}`},
		{"PUT", "/control/clock", `{"now":"99999-01-01T00:00:00Z"}`},
		{"PUT", "/control/clock", `{"now":"0001-01-01T00:00:00Z"}`},
		{"POST", "/control/faults", `{"point":"fence.read","action":"pause","count":9223372036854775807}`},
		{"POST", "/control/faults/x/await", `{"waiting":-5,"timeout":"-1s"}`},
	} {
		st, m := serve(t, e, c.method, c.path, local, auth, "application/json", []byte(c.body))
		t.Logf("%s %s %s: %d %v", c.method, c.path, c.body, st, m)
	}
	if st, m := serve(t, e, "GET", "/control/settings", local, auth, "", nil); st != 200 {
		t.Fatalf("settings after the range tests: %d %v", st, m)
	} else if w, _ := m["window_seconds"].(float64); w < 0 {
		t.Errorf("a negative window was accepted: %v", m)
	}

	// Unknown endpoints and methods are JSON errors too.
	for _, c := range []struct{ method, path string }{
		{"GET", "/control/"}, {"GET", "/control/nope"}, {"GET", "/control/%25zz"}, {"GET", "/control/wallets//ledger"},
		{"PATCH", "/control/clock"}, {"POST", "/control/capabilities"}, {"GET", "/control/faults/x/y/z"},
	} {
		if st, _ := serve(t, e, c.method, c.path, local, auth, "", nil); st != 404 && st != 405 {
			t.Errorf("%s %s: %d, want 404 or 405", c.method, c.path, st)
		}
	}
}

// TestCreditOverflow: fixture amounts are bounded, so no credit can push a
// balance past int64 (on SQLite the balance turned into a float, and every
// later read of the wallet, tools/call included, failed with a 500).
func TestCreditOverflow(t *testing.T) {
	e := newEnv(t)
	const local = "127.0.0.1:40000"
	auth := "Bearer " + token
	for _, b := range []string{`{"balance":9223372036854775807}`, `{"balance":1125899906842625}`} {
		if st, m := serve(t, e, "POST", "/control/wallets", local, auth, "application/json", []byte(b)); st != 400 || m["reason"] != "bad_request" {
			t.Fatalf("%s: %d %v, want 400 bad_request", b, st, m)
		}
	}
	_, m := serve(t, e, "POST", "/control/wallets", local, auth, "application/json", []byte(`{"balance":1125899906842624}`))
	wid, _ := m["wallet_id"].(string)
	credit := func(amount string) (int, map[string]any) {
		return serve(t, e, "POST", "/control/wallets/"+wid+"/credit", local, auth, "application/json", []byte(`{"amount":`+amount+`}`))
	}
	if st, m := credit("9223372036854775807"); st != 400 || m["reason"] != "bad_request" {
		t.Fatalf("max int64 credit: %d %v", st, m)
	}
	n := 1
	for ; n < 1100; n++ {
		st, m := credit("1125899906842624")
		if st == 400 {
			if m["reason"] != "bad_request" {
				t.Fatalf("credit %d: %v", n, m)
			}
			break
		}
		if st != 200 {
			t.Fatalf("credit %d: %d %v", n, st, m)
		}
	}
	if n != 1024 {
		t.Errorf("credits stopped at %d, want at 2^60 (1024 credits of 2^50)", n)
	}
	if st, m := serve(t, e, "GET", "/control/wallets/"+wid, local, auth, "", nil); st != 200 || m["balance"] != float64(MaxBalance) {
		t.Fatalf("wallet after the credits: %d %v", st, m)
	}
}
