package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

func TestProbeCmdRunsAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	defer stop()
	pr, pw := io.Pipe()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- probeCmd(run, []string{"--addr", "127.0.0.1:0"}, pw, &errb)
		pw.Close()
	}()
	var printed []string
	var mcpURL, apiURL string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		l := sc.Text()
		printed = append(printed, l)
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "MCP endpoint:"); ok {
			mcpURL = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "observation API:"); ok {
			apiURL, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		}
		if strings.HasPrefix(l, "listening on ") {
			break
		}
	}
	out := strings.Join(printed, "\n")
	if mcpURL == "" || apiURL == "" || !strings.HasSuffix(mcpURL, "/mcp") || !strings.HasSuffix(apiURL, probe.APIPath) {
		t.Fatalf("URLs not printed (stderr %s):\n%s", errb.String(), out)
	}
	for _, w := range []string{"probe.write (mutating)", "probe.read (read-only)", "Point the gateway's upstream MCP server at " + mcpURL} {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	c := &wire.Client{BaseURL: mcpURL, ProtocolVersion: wire.V20260728}
	a, err := c.CallTool(ctx, wire.Call{Tool: probe.ToolWrite, Arguments: map[string]any{"token": "cmd/1"}})
	if err != nil || a.IsError() || a.HasError() {
		t.Fatalf("call: %v %s", err, a.Body)
	}
	r, err := probe.Dial(ctx, apiURL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Count(ctx, "cmd/1"); n != 1 || err != nil {
		t.Fatalf("count %d, %v", n, err)
	}
	if r.URL() != mcpURL {
		t.Fatalf("Remote URL %s, printed %s", r.URL(), mcpURL)
	}

	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d, stderr %s", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatal("probe did not stop")
	}
	if _, err := probe.Dial(ctx, apiURL); err == nil {
		t.Fatal("probe still answers after its stop")
	}
}

func TestProbeCmdRefusals(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Usage: mcpconform probe"},
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined"},
		{"extra arguments", []string{"serve"}, 2, "unexpected arguments: serve"},
		{"bad port", []string{"--addr", "127.0.0.1:99999"}, 2, "listen"},
		{"address in use", []string{"--addr", taken.Addr().String()}, 2, "address already in use"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			// An already-cancelled ctx: a command that started would stop at
			// once, with exit 0 and "listening on" printed.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			code := probeCmd(ctx, c.args, &out, &errb)
			if code != c.code || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s", code, c.code, errb.String())
			}
			if strings.Contains(out.String(), "listening on") {
				t.Fatalf("listened: %s", out.String())
			}
		})
	}
}

func TestProbeIsACommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"probe", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "Usage: mcpconform probe") {
		t.Fatalf("probe -h: exit %d, stderr %s", code, errb.String())
	}
	out.Reset()
	if code := dispatch(context.Background(), []string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "mcpconform probe ") {
		t.Fatalf("usage does not name probe:\n%s", out.String())
	}
}

func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8720": "127.0.0.1:8720",
		"0.0.0.0:8720":   "127.0.0.1:8720",
		"[::]:8720":      "[::1]:8720",
		"[::1]:8720":     "[::1]:8720",
		"localhost:1":    "localhost:1",
	} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%s) = %s, want %s", in, got, want)
		}
	}
}
