package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/server"
	"github.com/mcpconform/mcpconform/reference/wire"
)

// envWindow sets the default of --window, as in the SEL-498 review.
const envWindow = "MCP_UNKEYED_RETRY_WINDOW_SECONDS"

const gatewayUsage = `Usage: mcpconform gateway [flags]

Runs the bundled reference gateway: a metered MCP gateway whose tools/call is
safe to retry. MCP over Streamable HTTP at POST /mcp (2025-11-25 sessions and
the stateless 2026-07-28 wire); with --control-token, the conformance control
API at /control/ (loopback clients only). It prints a dev wallet and API key
(the key on the store's first start only) with a curl line to try, then "listening on http://ADDR", and stops cleanly on
SIGINT or SIGTERM.

Unkeyed mutating calls get a derived idempotency key valid for the effective
window, min(--window, --permit-ttl); --window 0 refuses unkeyed calls.

Its garbage collector runs at GOGC=400 unless GOGC is set (measured in
bench/gc.md: replays about twice as fast as at Go's default of 100, for a
peak resident set of about 60 MiB); set GOMEMLIMIT to what the process may
use, so a large heap is collected before it reaches that.

--fixtures FILE sets up wallets (with API keys given whole), tools, trusted
issuers and principals at start-up, for a harness that drives the gateway
over MCP only (docs/fixtures.md). Applying the same file again on the same
store writes nothing new: a restart is safe.

Examples:
  mcpconform gateway
  mcpconform gateway --store postgres://user:pass@localhost:5432/mcpconform --control-token secret
  mcpconform gateway --fixtures fixtures.json --window 0
  mcpconform gateway --codes seed     (the seed gateway's JSON-RPC codes)
  mcpconform gateway --bug random-unkeyed-key     (deliberately wrong; see mcpconform bugs)

Flags:
`

// gatewayConfig parses the gateway flags. It returns flag.ErrHelp for -h.
func gatewayConfig(args []string, stderr io.Writer) (server.Config, bool, error) {
	fs := newFlagSet("gateway", gatewayUsage, stderr)
	def := gateway.DefaultSettings()
	window := def.Window
	if v, ok := os.LookupEnv(envWindow); ok && strings.TrimSpace(v) != "" {
		secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return server.Config{}, false, fmt.Errorf("%s=%q: want a whole number of seconds", envWindow, v)
		}
		if window, err = gateway.SettingDuration(envWindow, float64(secs)); err != nil {
			return server.Config{}, false, err
		}
	}
	var cfg server.Config
	var bugNames []string
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8719", "listen address (host:port; port 0 picks one)")
	fs.StringVar(&cfg.Store, "store", "sqlite:./mcpconform-state/gateway.db", "store: sqlite:PATH (a file, created with its directory) or postgres://user:pass@host:port/db")
	fs.StringVar(&cfg.ControlToken, "control-token", "", "turn the control API on at /control/, guarded by this bearer token (loopback clients only)")
	fs.StringVar(&cfg.Fixtures, "fixtures", "", "apply this fixtures file (JSON: wallets, tools, trust, principals; docs/fixtures.md) at start-up")
	fs.Func("bug", "run with this bug switch on (repeatable; names: mcpconform bugs)", func(v string) error {
		if bugs.Lookup(v) == nil {
			return fmt.Errorf("unknown bug switch %q (known: %s)", v, strings.Join(bugs.Names(), ", "))
		}
		bugNames = append(bugNames, v)
		return nil
	})
	fs.StringVar(&cfg.Codes, "codes", gateway.CodesDefault, "JSON-RPC codes of the refusals: \"default\" (docs/wire.md) or \"seed\" (the seed gateway's, for a vendor matching them; data.reason is the same)")
	fs.DurationVar(&window, "window", window, "unkeyed retry window (default from $"+envWindow+" when set); 0 refuses unkeyed calls; negative is an error")
	permitTTL := fs.Duration("permit-ttl", def.PermitTTL, "auto-permit lifetime; caps the effective window")
	staleLock := fs.Duration("stale-lock", def.StaleLock, "age after which an unkeyed call's lock row may be taken over (the old holder is fenced)")
	retention := fs.Duration("retention", def.Retention, "how long a finished operation's record (its key and stored outcome) is kept after its last write, then purged; at least the effective window")
	lockTimeout := fs.Duration("lock-timeout", def.LockTimeout, "how long a store write waits for a lock (SQLite busy timeout, PostgreSQL lock_timeout); a timeout answers idempotency_in_progress")
	maxSessions := fs.Int("max-sessions-per-key", wire.DefaultMaxSessionsPerKey, "live 2025-11-25 sessions one API key may hold in this process; an initialize over it is refused session_limit_reached; 0: no bound")
	verbose := fs.Bool("v", false, "log requests the gateway refuses or fails, and other details, to stderr")
	if code, ok := cli.Parse(fs, args); !ok {
		if code == 0 {
			return cfg, false, flag.ErrHelp
		}
		return cfg, false, errUsage
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	cfg.Bugs = bugNames
	switch {
	case *maxSessions < 0:
		return cfg, false, fmt.Errorf("--max-sessions-per-key %d: must be 0 (no bound) or more", *maxSessions)
	case *maxSessions == 0:
		cfg.MaxSessionsPerKey = -1
	default:
		cfg.MaxSessionsPerKey = *maxSessions
	}
	cfg.Settings = gateway.Settings{Window: window, PermitTTL: *permitTTL, StaleLock: *staleLock, LockTimeout: *lockTimeout,
		Retention: *retention}
	cfg.LockTimeout = *lockTimeout
	if *lockTimeout <= 0 {
		return cfg, false, fmt.Errorf("--lock-timeout %v: must be positive", *lockTimeout)
	}
	if err := cfg.Settings.Validate(); err != nil {
		return cfg, false, err
	}
	kind, _, err := server.StoreKind(cfg.Store)
	if err != nil {
		return cfg, false, err
	}
	if _, err := server.CheckBugs(cfg.Bugs, kind); err != nil {
		return cfg, false, err
	}
	if _, err := gateway.CodeTable(cfg.Codes); err != nil {
		return cfg, false, fmt.Errorf("--codes: %w", err)
	}
	return cfg, *verbose, nil
}

// defaultGOGC is the gateway process's GC target when GOGC is not set.
// Measured (bench/gc.md, make bench-gc): against Go's default of 100 it
// about doubles the replay rate and lifts first calls by about a third on
// these machines, for a peak resident set of about 60 MiB instead of 40;
// GOGC=off with a memory limit adds little more and holds the whole limit.
const defaultGOGC = 400

// gatewayGC sets the GC target to defaultGOGC unless the operator's GOGC
// says otherwise, and returns the target in force (-1: off).
func gatewayGC() int {
	if v, ok := os.LookupEnv("GOGC"); ok && strings.TrimSpace(v) != "" {
		p := debug.SetGCPercent(-1) // read the runtime's reading of GOGC, and put it back
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(defaultGOGC)
	return defaultGOGC
}

// errUsage: the flag package already printed what was wrong.
var errUsage = errors.New("usage")

func gatewayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, verbose, err := gatewayConfig(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "mcpconform gateway: %v\n", err)
		return 2
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	gcPercent := gatewayGC()
	cfg.Logger.Debug("garbage collector", "GOGC", gcPercent, "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
	if err := server.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "mcpconform gateway: %v\n", err)
		var se *server.StartupError
		if errors.As(err, &se) {
			return 2
		}
		return 1
	}
	return 0
}
