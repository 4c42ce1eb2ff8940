package target

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Options starts the reference gateway.
type Options struct {
	// Binary is the mcpconform executable; default os.Executable(), which
	// under `go test` is the test binary, so tests must build and name it.
	Binary string
	Store  string // "sqlite" (default) or "postgres"
	// DSN is the PostgreSQL URL; default $DATABASE_URL.
	DSN     string
	Workers int // gateway processes on the same store; default 1
	Bugs    []string
	// StateDir holds the SQLite file; default a fresh temporary directory,
	// removed on Close.
	StateDir  string
	ExtraArgs []string
	// NoControl starts the gateway without its control API, as a vendor's
	// gateway without one: it is then set up by its own flags (--fixtures)
	// and tested through a profile.
	NoControl bool
	Env       []string  // added to the harness's environment
	Log       io.Writer // children's stdout and stderr; nil keeps only the tail
	// ProtocolVersion for the profile's wire clients; default 2025-11-25.
	ProtocolVersion string
	ReadyTimeout    time.Duration // default 30s per worker
	StopTimeout     time.Duration // SIGTERM grace before SIGKILL; default 10s
	// RestartCrashed restarts a worker that dies on its own (a crash fault
	// kills it) on the same address and arguments, as a supervisor would,
	// and logs the restart; a worker Kill or Close stopped stays stopped.
	RestartCrashed bool
}

// Reference starts Workers reference gateways on free loopback ports with a
// fresh control token and waits until each answers GET /control/capabilities.
func Reference(ctx context.Context, o Options) (*Target, error) {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("reference target: find binary: %w", err)
		}
		o.Binary = exe
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	t := &Target{Kind: "reference", Bugs: o.Bugs}
	if !o.NoControl {
		t.ControlToken = randomToken()
	}
	if o.StateDir == "" {
		dir, err := os.MkdirTemp("", "mcpconform-state-*")
		if err != nil {
			return nil, fmt.Errorf("reference target: state dir: %w", err)
		}
		o.StateDir, t.owned = dir, true
	} else if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("reference target: state dir: %w", err)
	}
	t.stateDir = o.StateDir
	var store string
	switch o.Store {
	case "", "sqlite":
		t.Store, store = "sqlite", "sqlite:"+filepath.Join(o.StateDir, "gw.db")
	case "postgres":
		dsn := o.DSN
		if dsn == "" {
			dsn = os.Getenv("DATABASE_URL")
		}
		if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
			t.Close()
			return nil, errors.New("reference target: postgres store needs a postgres:// DSN (Options.DSN or DATABASE_URL)")
		}
		t.Store, store = "postgres", dsn
	default:
		t.Close()
		return nil, fmt.Errorf("reference target: store %q: want sqlite or postgres", o.Store)
	}
	t.opts, t.storeArg = o, store
	for i := range o.Workers {
		p, err := startWorker(ctx, o, store, t.ControlToken, i)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("reference target: worker %d: %w", i, err)
		}
		t.mu.Lock()
		t.procs = append(t.procs, p)
		t.mu.Unlock()
		t.watch(i, p)
		t.URLs = append(t.URLs, "http://"+p.addr+"/mcp")
		if !o.NoControl {
			t.ControlURLs = append(t.ControlURLs, "http://"+p.addr+"/control")
		}
	}
	if o.NoControl {
		t.Profile = DefaultProfile()
		t.Profile.URLs = t.URLs
		return t, nil
	}
	caps, err := t.Control(0).Capabilities(ctx)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("reference target: %w", err)
	}
	pv := o.ProtocolVersion
	if pv == "" {
		pv = wire.V20251125
	}
	t.Profile = DefaultProfile()
	t.Profile.URLs, t.Profile.ProtocolVersion = t.URLs, pv
	t.Profile.ControlURL, t.Profile.ControlToken = t.ControlURLs[0], t.ControlToken
	t.Profile.Capabilities = caps.Capabilities
	return t, nil
}

// startWorker picks a free port and starts one gateway on it. The port is
// free when picked but may be taken before the child binds it, so a child
// that dies with "address already in use" is retried on another port.
func startWorker(ctx context.Context, o Options, store, token string, i int) (*proc, error) {
	var lastErr error
	for range 3 {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := gatewayArgs(addr, store, token)
		for _, b := range o.Bugs {
			args = append(args, "--bug", b)
		}
		args = append(args, o.ExtraArgs...)
		p, err := startProc(o, args, addr, i)
		if err != nil {
			return nil, err
		}
		err = p.waitReady(ctx, token, o.ReadyTimeout)
		if err == nil {
			return p, nil
		}
		_ = p.stop()
		lastErr = err
		if !strings.Contains(p.tail.String(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

// Kill sends SIGKILL to reference worker i and waits until it is gone: no
// graceful stop, no deferred cleanup, whatever it was doing is cut off (a
// crash). The store is left as the process left it. Not safe to call
// concurrently with Restart or Close.
func (t *Target) Kill(i int) error {
	if i < 0 || i >= len(t.procs) {
		return fmt.Errorf("kill: no reference worker %d", i)
	}
	p := t.proc(i)
	p.mu.Lock()
	p.stopping = true // an exit caused by us is no error on Close
	p.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill worker %d: %w", i, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill worker %d: still running 10s after SIGKILL", i)
	}
}

// Pid is the process id of reference worker i, 0 when there is none.
func (t *Target) Pid(i int) int {
	if i < 0 || i >= len(t.procs) || t.proc(i).cmd.Process == nil {
		return 0
	}
	return t.proc(i).cmd.Process.Pid
}

// Restart starts reference worker i again, on the same store, address,
// control token, bug switches and arguments, and waits until it is ready, so
// URLs and ControlURLs stay valid. A worker still running is stopped first
// (SIGTERM, as Close does); after Kill, it is a restart after a crash. Not
// safe to call concurrently with Kill or Close.
func (t *Target) Restart(ctx context.Context, i int) error {
	if i < 0 || i >= len(t.procs) {
		return fmt.Errorf("restart: no reference worker %d", i)
	}
	old := t.proc(i)
	old.mu.Lock()
	old.stopping = true // replaced here: no restart of its own
	old.mu.Unlock()
	select {
	case <-old.done:
	default:
		if err := old.stop(); err != nil {
			return fmt.Errorf("restart worker %d: %w", i, err)
		}
	}
	if err := t.startInPlace(ctx, i, old); err != nil {
		return fmt.Errorf("restart worker %d: %w", i, err)
	}
	return nil
}

// proc is worker i as it runs now.
func (t *Target) proc(i int) *proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.procs[i]
}

// watch restarts worker i once p dies on its own (RestartCrashed): not
// stopped by Kill, Restart or Close. The restart is written to the log and
// to the worker's output tail.
func (t *Target) watch(i int, p *proc) {
	if !t.opts.RestartCrashed {
		return
	}
	go func() {
		<-p.done
		p.mu.Lock()
		stopping, werr := p.stopping, p.waitErr
		p.mu.Unlock()
		t.mu.Lock()
		closed := t.closed || t.procs[i] != p
		t.mu.Unlock()
		if stopping || closed {
			return
		}
		t.logf("[gateway %d] exited on its own (%v): restarting it on %s", i, werr, p.addr)
		fmt.Fprintf(p.tail, "exited on its own (%v): restarting\n", werr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*t.opts.ReadyTimeout)
		defer cancel()
		if err := t.startInPlace(ctx, i, p); err != nil {
			t.logf("[gateway %d] restart failed: %v", i, err)
			return
		}
		t.logf("[gateway %d] restarted on %s", i, p.addr)
	}()
}

// startInPlace starts worker i again in place of old, which is gone (it
// died, or was stopped), on its address, store, control token, bug
// switches and arguments, and waits until it is ready. The port was old's
// a moment ago; a kernel that has not quite let go of it yet gets a few
// more tries. A target closed meanwhile, or whose worker i another start
// replaced, keeps what it has and the new process is stopped.
func (t *Target) startInPlace(ctx context.Context, i int, old *proc) error {
	args := gatewayArgs(old.addr, t.storeArg, t.ControlToken)
	for _, b := range t.opts.Bugs {
		args = append(args, "--bug", b)
	}
	args = append(args, t.opts.ExtraArgs...)
	var lastErr error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (last: %v)", ctx.Err(), lastErr)
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		p, err := startProc(t.opts, args, old.addr, i)
		if err != nil {
			return err
		}
		if err = p.waitReady(ctx, t.ControlToken, t.opts.ReadyTimeout); err == nil {
			t.mu.Lock()
			if t.closed || t.procs[i] != old {
				t.mu.Unlock()
				_ = p.stop()
				return errors.New("the target was closed or the worker started again meanwhile")
			}
			t.procs[i] = p
			t.mu.Unlock()
			t.watch(i, p)
			return nil
		}
		_ = p.stop()
		lastErr = err
		if !strings.Contains(p.tail.String(), "address already in use") {
			break
		}
	}
	return lastErr
}

// logf writes a line of the target's own to the log, if any.
func (t *Target) logf(format string, args ...any) {
	if t.opts.Log != nil {
		fmt.Fprintf(t.opts.Log, format+"\n", args...)
	}
}

// gatewayArgs are a worker's first arguments; no token, no control API.
func gatewayArgs(addr, store, token string) []string {
	args := []string{"gateway", "--addr", addr, "--store", store}
	if token != "" {
		args = append(args, "--control-token", token)
	}
	return args
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "ct_" + hex.EncodeToString(b)
}

// proc is one gateway child process.
type proc struct {
	cmd         *exec.Cmd
	addr        string
	tail        *tailBuffer
	done        chan struct{} // closed when the process exited
	waitErr     error
	stopTimeout time.Duration
	stopping    bool
	mu          sync.Mutex
}

func startProc(o Options, args []string, addr string, i int) (*proc, error) {
	p := &proc{addr: addr, tail: &tailBuffer{max: 8 << 10}, done: make(chan struct{}), stopTimeout: o.StopTimeout}
	// Not CommandContext: ctx bounds start-up only; the gateway lives until
	// Close.
	cmd := exec.Command(o.Binary, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	var out io.Writer = p.tail
	if o.Log != nil {
		out = io.MultiWriter(p.tail, &prefixWriter{w: o.Log, prefix: fmt.Sprintf("[gateway %d] ", i)})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second // a grandchild holding the pipes cannot hang Close
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	p.cmd = cmd
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls the capabilities endpoint until it answers 200, the child
// exits, or the timeout passes; the error carries the child's output tail.
func (p *proc) waitReady(ctx context.Context, token string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &control.Client{BaseURL: "http://" + p.addr + "/control", Token: token,
		HTTP: &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if token == "" {
			last = getRoot(ctx, c.HTTP, "http://"+p.addr+"/")
		} else {
			_, last = c.Capabilities(ctx)
		}
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			p.mu.Lock()
			werr := p.waitErr
			p.mu.Unlock()
			return fmt.Errorf("gateway exited before it was ready (%v); output:\n%s", werr, p.tail.String())
		case <-ctx.Done():
			return fmt.Errorf("gateway on %s not ready after %v (last: %v); output:\n%s", p.addr, timeout, last, p.tail.String())
		case <-tick.C:
		}
	}
}

// getRoot asks a gateway without a control API whether it serves yet.
func getRoot(ctx context.Context, hc *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}

// stop sends SIGTERM, waits for the grace period, then kills. An exit caused
// by our signal is no error; a child that had already died is.
func (p *proc) stop() error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopping || p.waitErr == nil {
			return nil
		}
		return fmt.Errorf("exited before Close: %v; output:\n%s", p.waitErr, p.tail.String())
	default:
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(p.stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("did not stop within %v of SIGTERM; killed", p.stopTimeout)
}

// tailBuffer keeps the last max bytes written, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append([]byte(nil), b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// prefixWriter tags each line with its worker, so two gateways' logs can be
// told apart in one stream.
type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	midLine bool
}

func (pw *prefixWriter) Write(p []byte) (int, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !pw.midLine {
			out.WriteString(pw.prefix)
		}
		out.Write(line)
		pw.midLine = line[len(line)-1] != '\n'
	}
	if _, err := pw.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}
