package target

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
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

// TestRestartCrashed: with RestartCrashed, a worker that dies on its own
// (a crash fault's SIGKILL, here sent from outside) is started again on
// the same address and store, and the restart is logged; a worker Kill
// stopped stays stopped.
func TestRestartCrashed(t *testing.T) {
	ctx := testCtx(t)
	o := fakeOpts("ok")
	o.Workers, o.RestartCrashed = 2, true
	var log syncBuffer
	o.Log = &log
	tg, err := Reference(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	pid, storeBefore := tg.Pid(0), storeArg(t, tg, 0)
	if err := tg.proc(0).cmd.Process.Kill(); err != nil { // SIGKILL, not through Kill
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for tg.Pid(0) == pid || func() error { _, err := tg.Control(0).Capabilities(ctx); return err }() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("worker 0 not restarted after its crash; log:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := storeArg(t, tg, 0); got != storeBefore {
		t.Fatalf("restarted on store %q, before %q", got, storeBefore)
	}
	for time.Now().Before(deadline) && !strings.Contains(log.String(), "[gateway 0] restarted on") {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "[gateway 0] exited on its own") || !strings.Contains(log.String(), "[gateway 0] restarted on") {
		t.Errorf("the restart is not logged:\n%s", log.String())
	}
	killed := tg.Pid(1)
	if err := tg.Kill(1); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Control(1).Capabilities(ctx); err == nil || tg.Pid(1) != killed {
		t.Fatalf("a worker Kill stopped was restarted (pid %d, was %d)", tg.Pid(1), killed)
	}
	if err := tg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// syncBuffer is a log the workers' output and the target write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
