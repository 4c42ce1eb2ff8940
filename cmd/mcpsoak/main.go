// Command mcpsoak runs the PostgreSQL soak: four reference
// gateway processes on one store, 10,000 calls with random retries, drops,
// pre-dispatch failures and twins, bounded in time, then the bank and
// one-dispatch invariants. It writes the figures to bench/soak.md; `make
// soak` runs it.
//
// The gateways are started from an mcpconform binary built into a temporary
// directory, on DATABASE_URL; every server listens on 127.0.0.1. Exit
// status: 0 every invariant held, 1 a violation, 2 the soak could not run.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/soak"
)

func main() {
	var cfg soak.Config
	fs := cli.NewFlagSet("mcpsoak", "Usage of "+os.Args[0]+":\n", os.Stderr, os.Stderr) // the text flag.Parse printed
	out := fs.String("out", "bench/soak.md", `markdown file the figures are written to ("" writes none)`)
	fs.Int64Var(&cfg.Seed, "seed", 0, "workload seed (0: from the clock; printed)")
	fs.IntVar(&cfg.Calls, "calls", 10_000, "calls to send")
	fs.IntVar(&cfg.Processes, "processes", 4, "reference gateway processes on the one store")
	fs.StringVar(&cfg.Store, "store", "postgres", "the store the processes share: postgres (DATABASE_URL) or sqlite (a file in a temporary directory)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 16, "operations in flight")
	fs.DurationVar(&cfg.Deadline, "deadline", 5*time.Minute, "bound of the workload")
	fs.Func("bug", "run the gateways with bug switch `NAME` (repeatable; \"mcpconform bugs\" lists them)", func(v string) error {
		cfg.Bugs = append(cfg.Bugs, v)
		return nil
	})
	verbose := fs.Bool("v", false, "also print the gateways' output")
	if code, ok := cli.Parse(fs, os.Args[1:]); !ok {
		os.Exit(code)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline+5*time.Minute) // build, start-up and read-back
	defer cancel()
	code, err := run(ctx, cfg, *out, *verbose)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpsoak: %v\n", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, cfg soak.Config, out string, verbose bool) (int, error) {
	switch cfg.Store {
	case "postgres":
		if cfg.DSN = os.Getenv("DATABASE_URL"); cfg.DSN == "" {
			return 2, fmt.Errorf("DATABASE_URL is not set: -store postgres needs it")
		}
	case "sqlite":
	default:
		return 2, fmt.Errorf("-store %q: want postgres or sqlite", cfg.Store)
	}
	tmp, err := os.MkdirTemp("", "mcpsoak-*")
	if err != nil {
		return 2, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintln(os.Stderr, "mcpsoak: building mcpconform")
	if cfg.Binary, err = target.Build(ctx, os.Getenv("GO"), tmp); err != nil {
		return 2, err
	}
	cfg.Log = os.Stderr
	if verbose {
		cfg.GatewayLog = os.Stderr
	}
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		return 2, err
	}
	for _, v := range res.Figures.First {
		fmt.Fprintf(os.Stderr, "mcpsoak: violation: %s\n", v)
	}
	if out != "" {
		if err := write(out, res.Figures); err != nil {
			return 2, err
		}
		fmt.Fprintf(os.Stderr, "mcpsoak: wrote %s\n", out)
	}
	if res.Figures.Violations > 0 {
		return 1, fmt.Errorf("%d violations (seed %d)", res.Figures.Violations, res.Figures.Seed)
	}
	return 0, nil
}

// write replaces out in one rename, so a failed run never leaves half a page.
func write(out string, f soak.Figures) error {
	var b bytes.Buffer
	if err := f.Markdown(&b); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write figures: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write figures: %w", err)
	}
	return nil
}
