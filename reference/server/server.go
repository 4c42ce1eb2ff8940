// Package server assembles and runs the reference gateway: store, clock,
// fault points, tools, the gateway core, the MCP endpoint (/mcp) and, when a
// token is given, the control API (/control/), on one listener.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/clock"
	"github.com/mcpconform/mcpconform/reference/control"
	"github.com/mcpconform/mcpconform/reference/faults"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/principal"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/tools"
	"github.com/mcpconform/mcpconform/reference/wire"
)

// Config is how the gateway is started.
type Config struct {
	// Addr is the listen address, e.g. "127.0.0.1:8719" (":0" picks a port).
	Addr string
	// Store is "sqlite:PATH" (a WAL database file, created with its
	// directory) or a PostgreSQL URL "postgres://..." / "postgresql://...".
	Store string
	// ControlToken turns the control API on; "" leaves it off.
	ControlToken string
	// Bugs are bug switches to run with (reference/bugs).
	Bugs []string
	// Settings are the start-up settings; the zero value means
	// gateway.DefaultSettings().
	Settings gateway.Settings
	// LockTimeout is the store's lock wait (SQLite busy timeout, PostgreSQL
	// lock_timeout); zero keeps Settings.LockTimeout.
	LockTimeout time.Duration
	Logger      *slog.Logger
	// DevBalance is the quickstart wallet's balance; zero means 1000.
	DevBalance int64
	// Fixtures is a fixtures file (docs/fixtures.md) applied at start-up,
	// before the gateway listens; "" applies none.
	Fixtures string
	// Codes names the JSON-RPC codes of the gateway's refusals (a name of
	// gateway.CodeTable): "" or "default", or "seed" for the seed gateway's.
	Codes string
	// BodyTimeout bounds reading one /mcp request body once its API key was
	// accepted; zero means wire.DefaultBodyTimeout.
	BodyTimeout time.Duration
	// MaxSessionsPerKey bounds one API key's live 2025-11-25 sessions in
	// this process; zero means wire.DefaultMaxSessionsPerKey, negative no
	// bound.
	MaxSessionsPerKey int
}

// StartupError is an error of Run before the gateway served anything: bad
// configuration, a store that cannot be opened or migrated, an address that
// cannot be bound. The command exits 2 on it (a set-up error), 1 on others.
type StartupError struct{ Err error }

func (e *StartupError) Error() string { return e.Err.Error() }
func (e *StartupError) Unwrap() error { return e.Err }

// ShutdownTimeout bounds the graceful stop.
const ShutdownTimeout = 5 * time.Second

// StoreKind parses a store argument into its kind ("sqlite" or "postgres")
// and the path or DSN.
func StoreKind(arg string) (kind, target string, err error) {
	switch {
	case strings.HasPrefix(arg, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(arg, "sqlite:"), "//")
		if path == "" {
			return "", "", fmt.Errorf("store %q: sqlite:PATH needs a path", arg)
		}
		return "sqlite", path, nil
	case strings.HasPrefix(arg, "postgres://"), strings.HasPrefix(arg, "postgresql://"):
		return "postgres", arg, nil
	}
	return "", "", fmt.Errorf("store %q: want sqlite:PATH or postgres://...", arg)
}

// CheckBugs parses bug switch names and refuses those that live in another
// store than kind.
func CheckBugs(names []string, kind string) (bugs.Set, error) {
	set, err := bugs.Parse(names)
	if err != nil {
		return nil, err
	}
	for _, n := range set.List() {
		if b := bugs.Lookup(n); b.Store != "" && b.Store != kind {
			return nil, fmt.Errorf("bug switch %q needs the %s store; this gateway runs on %s", n, b.Store, kind)
		}
	}
	return set, nil
}

// Run starts the gateway and serves until ctx ends, then stops cleanly. It
// prints a quickstart and then "listening on http://ADDR" to stdout.
func Run(ctx context.Context, cfg Config, stdout io.Writer) error {
	started := false
	err := run(ctx, cfg, stdout, &started)
	if err != nil && !started {
		return &StartupError{Err: err}
	}
	return err
}

func run(ctx context.Context, cfg Config, stdout io.Writer, started *bool) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	settings := cfg.Settings
	if settings == (gateway.Settings{}) {
		settings = gateway.DefaultSettings()
	}
	if cfg.LockTimeout > 0 {
		settings.LockTimeout = cfg.LockTimeout
	}
	if err := settings.Validate(); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	kind, target, err := StoreKind(cfg.Store)
	if err != nil {
		return err
	}
	bugSet, err := CheckBugs(cfg.Bugs, kind)
	if err != nil {
		return err
	}
	codes, err := gateway.CodeTable(cfg.Codes)
	if err != nil {
		return err
	}
	// A bad file is refused before the store is touched.
	var fx *fixtures.File
	if cfg.Fixtures != "" {
		f, err := fixtures.Load(cfg.Fixtures)
		if err != nil {
			return err
		}
		fx = &f
	}

	st, err := openStore(ctx, kind, target, settings.LockTimeout)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s store: %w", kind, err)
	}
	if err := tools.Seed(ctx, st); err != nil {
		return err
	}

	clk := clock.New()
	flt := faults.New()
	disp := tools.New(st, tools.Options{Clock: clk, Logger: log})
	defer disp.Close()
	gw, err := gateway.New(gateway.Options{
		Store: st, Clock: clk, Faults: flt, Dispatcher: disp, Settings: settings,
		Bugs: bugSet, StoreKind: kind, Logger: log,
	})
	if err != nil {
		return err
	}
	var applied string
	if fx != nil {
		counts, err := fx.Apply(ctx, st, gw, clk.Now())
		if err != nil {
			return fmt.Errorf("fixtures %s: %w", cfg.Fixtures, err)
		}
		applied = fmt.Sprintf("%s applied: %s", cfg.Fixtures, counts)
		log.Info("fixtures applied", "file", cfg.Fixtures, "counts", counts.String())
	}
	verifier := principal.New(st, principal.Options{Now: clk.Now, Logger: log})

	mux := http.NewServeMux()
	mux.Handle("/mcp", wire.Handler(gw, verifier, disp, wire.Options{Logger: log, Codes: codes, Relay: disp, Bugs: bugSet, BodyTimeout: cfg.BodyTimeout, MaxSessionsPerKey: cfg.MaxSessionsPerKey}))
	if cfg.ControlToken != "" {
		ch, err := control.New(control.Config{
			Token: cfg.ControlToken, Store: st, Gateway: gw, Clock: clk, Faults: flt,
			StoreKind: kind, Bugs: bugSet, Logger: log, Servers: disp,
		})
		if err != nil {
			return err
		}
		mux.Handle("/control/", ch)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "mcpconform reference gateway: MCP over Streamable HTTP at POST /mcp")
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	wallet, keyID, apiKey, balance, err := devWallet(ctx, st, gw, clk, cfg.DevBalance)
	if err != nil {
		return err
	}
	printQuickstart(stdout, quickstart{
		addr: addr, kind: kind, target: target, wallet: wallet, keyID: keyID, apiKey: apiKey,
		balance: balance, control: cfg.ControlToken != "", bugs: bugSet.List(), settings: settings,
		fixtures: applied,
	})

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	*started = true
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", addr)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown did not finish; closing connections", "err", err)
		_ = srv.Close()
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

func openStore(ctx context.Context, kind, target string, lockTimeout time.Duration) (store.Store, error) {
	switch kind {
	case "sqlite":
		if dir := filepath.Dir(target); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("sqlite store directory: %w", err)
			}
		}
		st, err := sqlite.Open(ctx, target, sqlite.Options{LockTimeout: lockTimeout})
		if err != nil {
			return nil, fmt.Errorf("open sqlite store %s: %w", target, err)
		}
		return st, nil
	case "postgres":
		st, err := postgres.Open(ctx, target, postgres.Options{LockTimeout: lockTimeout})
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("unknown store kind %q", kind)
}

func devBalance(b int64) int64 {
	if b <= 0 {
		return 1000
	}
	return b
}

// The dev wallet and its API key have fixed ids, so a store has one of
// each however often the gateway starts on it.
const (
	devWalletID = "w-dev"
	devKeyID    = "k-dev"
)

// devWallet opens the quickstart wallet and its API key when the store has
// none yet. apiKey is "" when the key existed: only its hash is stored, so
// it was printed once, when it was made. balance is the wallet's now.
func devWallet(ctx context.Context, st store.Store, gw *gateway.Gateway, clk *clock.Clock, opening int64) (wallet, keyID, apiKey string, balance int64, err error) {
	if _, _, err := fixtures.OpenWallet(ctx, st, devWalletID, devBalance(opening), clk.Now()); err != nil {
		return "", "", "", 0, fmt.Errorf("dev wallet: %w", err)
	}
	w, err := st.Wallet(ctx, devWalletID)
	if err != nil {
		return "", "", "", 0, fmt.Errorf("dev wallet: %w", err)
	}
	_, err = st.APIKey(ctx, devKeyID)
	switch {
	case err == nil:
		return devWalletID, devKeyID, "", w.Balance, nil
	case !errors.Is(err, store.ErrNotFound):
		return "", "", "", 0, fmt.Errorf("dev API key: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", "", 0, fmt.Errorf("dev API key: %w", err)
	}
	apiKey = "mcpk_" + devKeyID + "_" + hex.EncodeToString(raw[:])
	// Two gateways starting on one store at once: the second one's import
	// fails on the taken id, and it prints no key, as on any later start.
	if _, _, err := gw.ImportAPIKey(ctx, devWalletID, apiKey); err != nil {
		if _, lookErr := st.APIKey(ctx, devKeyID); lookErr == nil {
			return devWalletID, devKeyID, "", w.Balance, nil
		}
		return "", "", "", 0, fmt.Errorf("dev API key: %w", err)
	}
	return devWalletID, devKeyID, apiKey, w.Balance, nil
}

type quickstart struct {
	addr, kind, target, wallet, keyID, apiKey string
	balance                                   int64
	control                                   bool
	bugs                                      []string
	settings                                  gateway.Settings
	fixtures                                  string // "" when no fixtures file was applied
}

func printQuickstart(w io.Writer, q quickstart) {
	where := q.target
	if q.kind == "postgres" {
		where = "(DSN given)"
	}
	fmt.Fprintf(w, "mcpconform reference gateway\n")
	fmt.Fprintf(w, "  store:        %s %s\n", q.kind, where)
	fmt.Fprintf(w, "  MCP endpoint: http://%s/mcp (2025-11-25 sessions and stateless 2026-07-28)\n", q.addr)
	fmt.Fprintf(w, "  dev wallet:   %s (balance %d)\n", q.wallet, q.balance)
	shown := q.apiKey
	if q.apiKey == "" {
		shown = "<dev API key>"
		fmt.Fprintf(w, "  dev API key:  key id %s, printed when this store's dev wallet was made (only its hash is kept)\n", q.keyID)
	} else {
		fmt.Fprintf(w, "  dev API key:  %s (key id %s; printed this once, only its hash is kept)\n", q.apiKey, q.keyID)
	}
	fmt.Fprintf(w, "  window:       %v unkeyed retry window, %v permit TTL (effective %v), stale lock %v\n",
		q.settings.Window, q.settings.PermitTTL, q.settings.EffectiveWindow(), q.settings.StaleLock)
	if q.fixtures != "" {
		fmt.Fprintf(w, "  fixtures:     %s\n", q.fixtures)
	}
	if q.control {
		fmt.Fprintf(w, "  control API:  http://%s/control/ (loopback only, Authorization: Bearer <control token>)\n", q.addr)
	} else {
		fmt.Fprintf(w, "  control API:  off (start with --control-token T to turn it on)\n")
	}
	if len(q.bugs) > 0 {
		fmt.Fprintf(w, "  BUG SWITCHES ON: %s (this gateway is deliberately wrong)\n", strings.Join(q.bugs, ", "))
	}
	fmt.Fprintf(w, "try an unkeyed call (run it twice: the retry replays the same receipt, one debit):\n")
	fmt.Fprintf(w, "  curl -s http://%s/mcp -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' "+
		"-H 'MCP-Protocol-Version: 2025-11-25' "+
		`-d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"partner.notes.write","arguments":{"text":"hello"}}}'`+"\n",
		q.addr, shown)
}
