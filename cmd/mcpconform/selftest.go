package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpconform/mcpconform/bugmap"
	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/runner"
)

func selftestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := runner.Config{Target: "reference"}
	fs.StringVar(&cfg.Store, "store", "sqlite", "store for bugs that live on any store: sqlite or postgres")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed for scenario order and random workloads")
	fs.StringVar(&cfg.Out, "out", "", "write each bug's report under DIR/<bug>/")
	markdown := fs.Bool("markdown", false, "print the catch table as Markdown")
	mode := fs.String("mode", "full", "full: the reference with its control API; wire, wire-principals or wire-refuse: the reference presented as a vendor's gateway without one (fixtures file, remote probe; wire-principals also trusts the harness's identity provider; wire-refuse has unkeyed policy refuse)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mcpconform selftest [flags]\n\nRuns the suite against the reference gateway once per bug switch and prints the\ncatch table: which scenarios caught each bug. Fails unless every bug's listed\ncatchers fail and nothing else does (beyond its known collateral).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform selftest: %v\n", err)
		return 2
	}
	cfg.Binary, cfg.Concurrency = exe, 64
	progress := func(c reports.Catch) {
		fmt.Fprintf(stderr, "%s: %s\n", c.Bug, strings.Join(c.CaughtBy, " "))
	}
	collateral := bugmap.Collateral
	var table []reports.Catch
	switch *mode {
	case "full":
		table, err = runner.SelfTest(ctx, cfg, progress)
	case bugmap.ModeWire, bugmap.ModeWirePrincipals, bugmap.ModeWireRefuse:
		table, err = runner.SelfTestExternal(ctx, cfg, *mode, progress)
		collateral = bugmap.ExternalCollateral[*mode]
	default:
		fmt.Fprintf(stderr, "mcpconform selftest: --mode %q: want full, %s, %s or %s\n", *mode, bugmap.ModeWire, bugmap.ModeWirePrincipals, bugmap.ModeWireRefuse)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform selftest: %v\n", err)
		return 2
	}
	ok := true
	if *markdown {
		fmt.Fprintln(stdout, "| bug switch | caught by | also failed (collateral) | ok |")
		fmt.Fprintln(stdout, "|---|---|---|---|")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*markdown {
		fmt.Fprintln(tw, "BUG\tCAUGHT BY\tALSO FAILED\tOK")
	}
	for _, c := range table {
		ok = ok && c.OK
		var extra []string
		for _, id := range c.CaughtBy {
			if !slices.Contains(c.Expected, id) {
				extra = append(extra, id)
			}
		}
		verdict := "yes"
		if !c.OK {
			verdict = "NO (listed: " + strings.Join(c.Expected, " ") + "; collateral allowed: " + strings.Join(collateral[c.Bug], " ") + ")"
		}
		if *markdown {
			fmt.Fprintf(stdout, "| `%s` | %s | %s | %s |\n", c.Bug, strings.Join(c.Expected, ", "), strings.Join(extra, ", "), verdict)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Bug, strings.Join(c.Expected, ","), strings.Join(extra, ","), verdict)
		}
	}
	tw.Flush()
	if !ok {
		return 1
	}
	return 0
}
