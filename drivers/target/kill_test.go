package target

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKillRestart: Kill is a SIGKILL (a gateway ignoring SIGTERM dies too),
// Restart brings the worker back on the same address and store, and Close
// reports neither as an error.
func TestKillRestart(t *testing.T) {
	ctx := testCtx(t)
	o := fakeOpts("stubborn")
	o.Workers, o.StopTimeout = 2, 300*time.Millisecond
	tg, err := Reference(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	urls := append([]string(nil), tg.URLs...)
	pid := tg.Pid(1)
	if pid == 0 || pid == tg.Pid(0) {
		t.Fatalf("pids %d %d", tg.Pid(0), pid)
	}
	storeBefore := storeArg(t, tg, 1)

	if err := tg.Kill(1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tg.procs[1].done:
	default:
		t.Fatal("worker 1 still running after Kill")
	}
	if _, err := tg.Control(1).Capabilities(ctx); err == nil {
		t.Fatal("a killed worker answered")
	}
	if _, err := tg.Control(0).Capabilities(ctx); err != nil {
		t.Fatalf("worker 0 hit by the kill of worker 1: %v", err)
	}
	if err := tg.Kill(1); err != nil {
		t.Fatalf("second Kill: %v", err)
	}

	if err := tg.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if tg.Pid(1) == pid || tg.Pid(1) == 0 {
		t.Fatalf("pid after restart %d, before %d", tg.Pid(1), pid)
	}
	if tg.URLs[1] != urls[1] || tg.URLs[0] != urls[0] {
		t.Fatalf("urls %v, before %v", tg.URLs, urls)
	}
	if got := storeArg(t, tg, 1); got != storeBefore {
		t.Fatalf("restarted on store %q, before %q", got, storeBefore)
	}

	for _, i := range []int{-1, 2} {
		if err := tg.Kill(i); err == nil {
			t.Errorf("Kill(%d) = nil", i)
		}
		if err := tg.Restart(ctx, i); err == nil {
			t.Errorf("Restart(%d) = nil", i)
		}
	}
	// The stubborn fake ignores SIGTERM, so Close kills it and says so; a
	// worker that was killed and restarted is no extra error.
	err = tg.Close()
	if err == nil || strings.Count(err.Error(), "killed") != 2 {
		t.Fatalf("Close = %v, want both stubborn workers reported killed", err)
	}
}

// TestRestartRunningWorker: Restart of a live worker stops it first.
func TestRestartRunningWorker(t *testing.T) {
	ctx := testCtx(t)
	tg, err := Reference(ctx, fakeOpts("ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	old := tg.procs[0]
	if err := tg.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.done:
	default:
		t.Fatal("old worker still running")
	}
	if _, err := tg.Control(0).Capabilities(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestKillExternal(t *testing.T) {
	tg := &Target{Kind: "url"}
	if err := tg.Kill(0); err == nil {
		t.Fatal("Kill of an external target = nil")
	}
	if tg.Pid(0) != 0 {
		t.Fatal("external target has a pid")
	}
}

func storeArg(t *testing.T, tg *Target, i int) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", tg.ControlURLs[i]+"/capabilities", nil)
	req.Header.Set("Authorization", "Bearer "+tg.ControlToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var caps struct {
		StoreArg string `json:"store_arg"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&caps); err != nil {
		t.Fatal(err)
	}
	return caps.StoreArg
}
