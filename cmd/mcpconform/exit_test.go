package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpconform/mcpconform/reports"
)

// cancelOnLine cancels a context once a line starting with prefix is
// written: the progress line of a finished scenario, so an interrupt lands
// between two scenarios exactly, without a timer.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	prefix string
	cancel context.CancelFunc
	seen   func() // called when the line is out, before cancelling
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.prefix != "" {
		for line := range strings.Lines(w.buf.String()) {
			if strings.HasPrefix(line, w.prefix) && w.seen != nil {
				w.seen()
				w.seen = nil
			}
			if strings.HasPrefix(line, w.prefix) {
				w.cancel()
			}
		}
	}
	return len(p), nil
}

func (w *cancelOnLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// urlProfile writes a minimal profile for a gateway at url.
func urlProfile(t *testing.T, url string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"name": "exit-code test", "urls": []string{url}, "credentials": map[string]any{"api_keys": []string{"sk-1"}}})
	p := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedURL is an address nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/mcp"
}

// Every exit code of run the README (and docs/verdicts.md) documents, reached through the command
// line, with what --out holds afterwards (INCOMPLETE: a full-level claim
// on one reference process, which cannot split twins across two). Nothing that is not the target's doing (unreachable, refused
// credentials, an interrupt) is ever reported as FAIL.
func TestRunExitCodes(t *testing.T) {
	t.Setenv(beMain, "1")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"invalid api key"}`, http.StatusUnauthorized)
	}))
	defer refusing.Close()
	for _, tc := range []struct {
		name        string
		args        []string
		cancelAfter string // cancel once this scenario's progress line is out
		preCancel   bool
		want        int
		result      string // summary.json's result; "" when the run never got to its scenarios
	}{
		{name: "pass", args: []string{"--id", "retry-01"}, want: 0, result: reports.RunPass},
		{name: "fail", args: []string{"--id", "retry-01", "--bug", "replay-debits"}, want: 1, result: reports.RunFail},
		{name: "incomplete", args: []string{"--id", "twins-04", "--workers", "1", "--level", "full"}, want: 3, result: reports.RunIncomplete},
		{name: "interrupted between scenarios", args: []string{"--id", "retry-01", "--id", "retry-02"}, cancelAfter: "retry-01", want: 130, result: reports.RunInterrupted},
		{name: "interrupted before set-up", preCancel: true, want: 130},
		{name: "unreachable target", args: []string{"--target", closedURL(t), "--profile", urlProfile(t, closedURL(t))}, want: 2},
		{name: "refused credentials", args: []string{"--target", refusing.URL + "/mcp", "--profile", urlProfile(t, refusing.URL+"/mcp")}, want: 2},
		{name: "usage", args: []string{"--workers"}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.preCancel {
				cancel()
			}
			out := filepath.Join(t.TempDir(), "out")
			errs := &cancelOnLine{prefix: tc.cancelAfter, cancel: cancel}
			midRun := ""
			errs.seen = func() {
				// What a run killed at this moment would leave in --out.
				b, _ := os.ReadFile(filepath.Join(out, reports.ErrorFile))
				midRun = string(b)
			}
			var stdout bytes.Buffer
			code := dispatch(ctx, append([]string{"run", "--out", out}, tc.args...), &stdout, errs)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout.String(), errs.String())
			}
			if tc.name == "usage" {
				if _, err := os.Stat(out); err == nil {
					t.Error("a usage error wrote --out")
				}
				return
			}
			if tc.result != reports.RunFail && strings.Contains(stdout.String()+errs.String(), "FAIL") {
				t.Errorf("a run that is no failure of the target says FAIL:\n%s\n%s", stdout.String(), errs.String())
			}
			junit, err := os.ReadFile(filepath.Join(out, reports.JUnitFile))
			if err != nil {
				t.Fatalf("no junit.xml: %v", err)
			}
			var suites struct {
				Failures int `xml:"failures,attr"`
				Errors   int `xml:"errors,attr"`
			}
			if err := xml.Unmarshal(junit, &suites); err != nil {
				t.Fatal(err)
			}
			if tc.result != reports.RunFail && suites.Failures != 0 {
				t.Errorf("junit.xml has %d failures", suites.Failures)
			}
			if tc.result == "" {
				txt, err := os.ReadFile(filepath.Join(out, reports.ErrorFile))
				if err != nil || suites.Errors != 1 {
					t.Errorf("error.txt: %v, junit errors %d; want the set-up failure recorded", err, suites.Errors)
				}
				if tc.want == 130 && !strings.HasPrefix(string(txt), "INTERRUPTED") {
					t.Errorf("error.txt = %q, want it to say INTERRUPTED", txt)
				}
				return
			}
			if tc.cancelAfter != "" && !strings.HasPrefix(midRun, "UNFINISHED: ") {
				t.Errorf("mid-run, --out held error.txt %q; want the record of a run under way", midRun)
			}
			sum, err := reports.LoadSummary(out)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Result != tc.result {
				t.Errorf("summary.json says %s, want %s", sum.Result, tc.result)
			}
		})
	}
}
