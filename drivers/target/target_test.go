package target

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake `mcpconform gateway` when this variable
// names a mode, so Reference is tested without the real gateway.
const fakeEnv = "MCPCONFORM_FAKE_GATEWAY"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeGateway(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func fakeGateway(mode string, args []string) int {
	if len(args) == 0 || args[0] != "gateway" {
		fmt.Fprintln(os.Stderr, "fake: want the gateway subcommand")
		return 2
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	store := fs.String("store", "", "")
	token := fs.String("control-token", "", "")
	extra := fs.String("extra", "", "")
	var bugs multi
	fs.Var(&bugs, "bug", "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	sigs := make(chan os.Signal, 1)
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: store unreachable")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	default:
		signal.Notify(sigs, syscall.SIGTERM)
	}
	fmt.Fprintln(os.Stderr, "starting")
	if mode == "hang" {
		select {
		case <-sigs:
		case <-time.After(60 * time.Second):
		}
		return 0
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "listening on %s\n", *addr)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /control/capabilities", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+*token {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"no","reason":"control_token_required"}`)
			return
		}
		kind, _, _ := strings.Cut(*store, ":")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"control_api": "mcpconform/1", "capabilities": []string{"fixtures", "clock", "locks"},
			"settings": map[string]any{"window_seconds": 300, "lock_timeout": "1s"},
			"store":    kind, "bugs": append([]string{}, bugs...), "store_arg": *store, "extra": *extra,
		})
	})
	go func() { _ = http.Serve(ln, mux) }()
	select {
	case <-sigs:
	case <-time.After(60 * time.Second): // never outlive a test run
	}
	return 0
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func fakeOpts(mode string) Options {
	return Options{Binary: os.Args[0], Env: []string{fakeEnv + "=" + mode}, ReadyTimeout: 10 * time.Second, StopTimeout: 5 * time.Second}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReferenceTwoWorkers(t *testing.T) {
	ctx := testCtx(t)
	var log syncBuf
	o := fakeOpts("ok")
	o.Workers, o.Bugs, o.ExtraArgs, o.Log = 2, []string{"skip-fence", "no-refund"}, []string{"--extra", "x1"}, &log
	tg, err := Reference(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if len(tg.URLs) != 2 || tg.URLs[0] == tg.URLs[1] || len(tg.ControlURLs) != 2 || tg.Kind != "reference" || tg.Store != "sqlite" {
		t.Fatalf("target %+v", tg)
	}
	wantStore := "sqlite:" + filepath.Join(tg.stateDir, "gw.db")
	for i := range 2 {
		// Every worker answers with the token, on the same store, with the
		// bug switches and extra arguments passed through.
		req, _ := http.NewRequestWithContext(ctx, "GET", tg.ControlURLs[i]+"/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+tg.ControlToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var caps struct {
			Bugs     []string `json:"bugs"`
			StoreArg string   `json:"store_arg"`
			Extra    string   `json:"extra"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&caps)
		resp.Body.Close()
		if caps.StoreArg != wantStore || !slices.Equal(caps.Bugs, o.Bugs) || caps.Extra != "x1" {
			t.Errorf("worker %d saw %+v, want store %s", i, caps, wantStore)
		}
		if !strings.HasSuffix(tg.URLs[i], "/mcp") || tg.Wire(i).BaseURL != tg.URLs[i] || tg.Control(i).BaseURL != tg.ControlURLs[i] {
			t.Errorf("worker %d urls %s %s", i, tg.URLs[i], tg.ControlURLs[i])
		}
	}
	if !tg.Profile.Has("locks") || tg.Profile.ControlToken != tg.ControlToken {
		t.Errorf("profile %+v", tg.Profile)
	}
	if rep := tg.Report(); rep.Kind != "reference" || len(rep.URLs) != 2 || !slices.Contains(rep.Capabilities, "clock") {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(log.String(), "[gateway 1] listening on") || !strings.Contains(tg.LogTail(0), "listening on") {
		t.Errorf("log %q", log.String())
	}
	if err := tg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, p := range tg.procs {
		select {
		case <-p.done:
		default:
			t.Errorf("worker %d still running after Close", i)
		}
	}
	if _, err := os.Stat(tg.stateDir); !os.IsNotExist(err) {
		t.Errorf("state dir left behind: %v", err)
	}
	if err := tg.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestReferenceStartFailures(t *testing.T) {
	ctx := testCtx(t)
	tests := []struct {
		name string
		opts func() Options
		want []string
	}{
		{"child exits", func() Options { return fakeOpts("exit") }, []string{"exited before it was ready", "fatal: store unreachable"}},
		// Long enough for the child to have printed "starting" however loaded
		// the machine: the error must carry the child's output.
		{"never ready", func() Options { o := fakeOpts("hang"); o.ReadyTimeout = 3 * time.Second; return o }, []string{"not ready after 3s", "starting"}},
		{"no binary", func() Options { o := fakeOpts("ok"); o.Binary = filepath.Join(t.TempDir(), "nope"); return o }, []string{"start"}},
		{"unknown store", func() Options { o := fakeOpts("ok"); o.Store = "mysql"; return o }, []string{`store "mysql"`}},
		{"postgres without dsn", func() Options { o := fakeOpts("ok"); o.Store = "postgres"; return o }, []string{"DATABASE_URL"}},
	}
	t.Setenv("DATABASE_URL", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			tg, err := Reference(ctx, tt.opts())
			if err == nil {
				tg.Close()
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if time.Since(t0) > 8*time.Second {
				t.Errorf("took %v", time.Since(t0))
			}
		})
	}
}

func TestReferencePostgresDSN(t *testing.T) {
	o := fakeOpts("ok")
	o.Store, o.DSN = "postgres", "postgres://u@127.0.0.1:1/db"
	tg, err := Reference(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Store != "postgres" || tg.Profile.Capabilities == nil {
		t.Fatalf("target %+v", tg)
	}
	caps, err := tg.Control(0).Capabilities(testCtx(t))
	if err != nil || caps.Store != "postgres" {
		t.Fatalf("capabilities %+v %v", caps, err)
	}
}

func TestCloseKillsStubbornGateway(t *testing.T) {
	o := fakeOpts("stubborn")
	o.StopTimeout = 200 * time.Millisecond
	tg, err := Reference(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	err = tg.Close()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Close = %v, want a kill report", err)
	}
	select {
	case <-tg.procs[0].done:
	default:
		t.Fatal("stubborn gateway still running")
	}
}

func TestExternal(t *testing.T) {
	p, err := LoadProfile("testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := External("http://127.0.0.1:8081/mcp", p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tg.URLs, []string{"http://127.0.0.1:8081/mcp", "http://127.0.0.1:8080/mcp"}) || tg.Kind != "url" {
		t.Fatalf("urls %v", tg.URLs)
	}
	if tg.Control(5).BaseURL != p.ControlURL || tg.Control(0).Token != "ct_example" || tg.Wire(3).BaseURL != tg.URLs[1] {
		t.Fatalf("clients")
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}

	min, _ := LoadProfile("testdata/good-minimal.json")
	if _, err := External("", &Profile{Credentials: min.Credentials}); err == nil {
		t.Fatal("target without URL accepted")
	}
	if _, err := External("not a url", min); err == nil {
		t.Fatal("bad --target URL accepted")
	}
	if _, err := External("http://127.0.0.1:1/mcp", nil); err == nil {
		t.Fatal("nil profile accepted")
	}
	tg, _ = External("", min)
	if tg.Control(0) != nil || len(tg.URLs) != 1 {
		t.Fatalf("minimal target %+v", tg)
	}
}

func TestResolveCapabilities(t *testing.T) {
	ctx := testCtx(t)
	noCtl, _ := LoadProfile("testdata/good-no-control.json")
	tg, _ := External("", noCtl)
	if caps, err := tg.ResolveCapabilities(ctx); err != nil || !slices.Equal(caps, []string{"upstream"}) {
		t.Fatalf("no control: %v %v", caps, err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gw/control/capabilities" || r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(404)
			return
		}
		fmt.Fprint(w, `{"control_api":"mcpconform/1","capabilities":["fixtures","faults"]}`)
	}))
	defer ts.Close()
	p, err := ParseProfile([]byte(`{"urls":["` + ts.URL + `/gw/mcp"],"control_url":"` + ts.URL + `/gw/control","control_token":"tok"}`))
	if err != nil {
		t.Fatal(err)
	}
	tg, _ = External("", p)
	caps, err := tg.ResolveCapabilities(ctx)
	if err != nil || !slices.Equal(caps, []string{"fixtures", "faults"}) || !p.Has("faults") {
		t.Fatalf("from control API: %v %v", caps, err)
	}
}

// The profile's URL spelled another way is the target's one URL, never a
// second gateway (which would claim the two-urls capability).
func TestExternalURLSpellings(t *testing.T) {
	for _, tc := range []struct {
		target, profile string
		urls            int
	}{
		{"http://127.0.0.1:8719/mcp", "http://localhost:8719/mcp", 1},
		{"http://localhost:8719/mcp", "http://[::1]:8719/mcp/", 1},
		{"http://gw.example/mcp", "http://GW.example:80/mcp", 1},
		{"https://gw.example/mcp", "https://gw.example:443/mcp", 1},
		{"http://127.0.0.1:8719/mcp", "http://127.0.0.1:8729/mcp", 2},
		{"http://127.0.0.1:8719/mcp", "http://127.0.0.1:8719/v2/mcp", 2},
		{"http://127.0.0.1:8719/mcp", "https://127.0.0.1:8719/mcp", 2},
	} {
		tg, err := External(tc.target, &Profile{URLs: []string{tc.profile}})
		if err != nil {
			t.Fatal(err)
		}
		if len(tg.URLs) != tc.urls || tg.URLs[0] != tc.target {
			t.Errorf("--target %s with profile URL %s: URLs %v, want %d starting with the target", tc.target, tc.profile, tg.URLs, tc.urls)
		}
	}
}
