package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// sessionServer is a handler allowing max sessions per key, and a channel
// told each key whose session ended and gave its slot back.
func sessionServer(t *testing.T, max int) (*httptest.Server, *handler, chan string) {
	t.Helper()
	h := Handler(&fakeCore{}, fakeVerifier{}, fakeTools{}, Options{MaxSessionsPerKey: max}).(*handler)
	ended := make(chan string, 16)
	h.sessionEnded = func(key string) { ended <- key }
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h, ended
}

// TestSessionLimitPerKey: an initialize over a key's bound of live
// sessions is refused session_limit_reached, and answered once one of the
// key's sessions ended; another key, and requests that open no session,
// are not held to it; an initialize that opened no session keeps no slot.
func TestSessionLimitPerKey(t *testing.T) {
	srv, h, ended := sessionServer(t, 2)
	url := srv.URL + "/mcp"
	keyA := map[string]string{"Authorization": "Bearer key-a"}

	// Refused by the SDK, which closes the session it opened for it
	// (though it sends its id), or refused before any session: no slot kept.
	for name, hdr := range map[string]map[string]string{
		"bad params":               keyA,
		"unknown protocol version": {"Authorization": "Bearer key-a", HeaderProtocol: "1999-01-01"},
	} {
		body := initBody
		if name == "bad params" {
			body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":5}`
		}
		if resp, r, raw := post(t, url, hdr, body); resp.StatusCode == 200 && r.Error == nil {
			t.Fatalf("initialize with %s: %d %s, want a refusal", name, resp.StatusCode, raw)
		}
		if n := h.sessions.live("k-a"); n != 0 {
			t.Fatalf("%d slots held after an initialize with %s, want 0", n, name)
		}
	}

	var sids []string
	for i := range 2 {
		resp, r, raw := post(t, url, keyA, initBody)
		if resp.StatusCode != 200 || r.Error != nil || resp.Header.Get(HeaderSession) == "" {
			t.Fatalf("initialize %d: %d %s", i+1, resp.StatusCode, raw)
		}
		sids = append(sids, resp.Header.Get(HeaderSession))
	}
	resp, r, raw := post(t, url, keyA, `{"jsonrpc":"2.0","id":"third","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if resp.StatusCode != http.StatusTooManyRequests || r.Error == nil || r.Error.Data["reason"] != ReasonSessionLimit ||
		r.Error.Data["retryable"] != true || string(r.ID) != `"third"` || resp.Header.Get(HeaderSession) != "" {
		t.Fatalf("initialize over the bound: %d %s, want 429 %s with the request's id", resp.StatusCode, raw, ReasonSessionLimit)
	}

	for name, req := range map[string]struct {
		hdr  map[string]string
		body string
	}{
		"another key's initialize": {map[string]string{"Authorization": "Bearer key-b"}, initBody},
		"a sessionless call":       {keyA, callBody(2, "ok", `{}`, "")},
		"a call on an open session": {map[string]string{"Authorization": "Bearer key-a", HeaderSession: sids[0], HeaderProtocol: Protocol20251125},
			callBody(3, "ok", `{}`, "")},
	} {
		if resp, r, raw := post(t, url, req.hdr, req.body); resp.StatusCode != 200 || r.Error != nil {
			t.Errorf("%s while key-a is at its bound: %d %s", name, resp.StatusCode, raw)
		}
	}

	resp, _, raw = send(t, http.MethodDelete, url, "", map[string]string{"Authorization": "Bearer key-a", HeaderSession: sids[0], HeaderProtocol: Protocol20251125}, "")
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE session: %d %s", resp.StatusCode, raw)
	}
	select {
	case key := <-ended:
		if key != "k-a" {
			t.Fatalf("slot given back for %s, want k-a", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the deleted session's slot was not given back")
	}
	if resp, r, raw := post(t, url, keyA, initBody); resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("initialize after a session ended: %d %s", resp.StatusCode, raw)
	}
}

// TestSessionLimitRacingInitializes: initializes racing for a key's last
// slots open exactly as many sessions as the bound allows, whatever their
// order: each slot is taken before the SDK opens the session.
func TestSessionLimitRacingInitializes(t *testing.T) {
	const max, racers = 3, 12
	srv, h, _ := sessionServer(t, max)
	start := make(chan struct{})
	statuses := make(chan int, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(initBody))
			req.Header.Set("Authorization", "Bearer key-a")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[200] != max || counts[http.StatusTooManyRequests] != racers-max {
		t.Fatalf("statuses %v, want %d opened and %d refused", counts, max, racers-max)
	}
	if n := h.sessions.live("k-a"); n != max {
		t.Fatalf("%d slots held, want %d", n, max)
	}
}

// TestSessionLimitOff: a negative bound turns the limit off.
func TestSessionLimitOff(t *testing.T) {
	srv, h, _ := sessionServer(t, -1)
	for i := range 3 {
		if resp, r, raw := post(t, srv.URL+"/mcp", map[string]string{"Authorization": "Bearer key-a"}, initBody); resp.StatusCode != 200 || r.Error != nil {
			t.Fatalf("initialize %d without a bound: %d %s", i+1, resp.StatusCode, raw)
		}
	}
	if n := h.sessions.live("k-a"); n != 0 {
		t.Fatalf("%d slots counted without a bound, want none", n)
	}
}
