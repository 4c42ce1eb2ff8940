package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/explore"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

func selftestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("selftest", selftestUsage, stderr)
	cfg := runner.Config{Target: "reference"}
	fs.StringVar(&cfg.Store, "store", "sqlite", "store for bugs that live on any store: sqlite or postgres")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed for scenario order and random workloads")
	fs.StringVar(&cfg.Out, "out", "", "write each bug's report under DIR/<bug>/")
	markdown := fs.Bool("markdown", false, "print the catch table as Markdown")
	var only stringList
	fs.Var(&only, "bug", "run only this bug switch (repeatable; in the wire modes, one the mode lists)")
	withExplore := fs.Bool("explore", false, "hold explore to the bug switches instead of the suite: explore the reference once per switch with its default budget, and print which it caught, by which harm, in which scenario and how soon")
	mode := fs.String("mode", "full", "full: the reference with its control API; wire, wire-principals or wire-refuse: the reference presented as a vendor's gateway without one (fixtures file, remote probe; wire-principals also trusts the harness's identity provider; wire-refuse has unkeyed policy refuse)")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform selftest: %v\n", err)
		return 2
	}
	cfg.Binary, cfg.Concurrency = exe, 64
	if *withExplore {
		return exploreSelfTest(ctx, cfg, *mode, only, *markdown, stdout, stderr)
	}
	progress := func(c reports.Catch) {
		fmt.Fprintf(stderr, "%s: failed %s\n", c.Bug, strings.Join(c.CaughtBy, " "))
	}
	collateral := bugmap.Collateral
	var table []reports.Catch
	switch *mode {
	case "full":
		table, err = runner.SelfTest(ctx, cfg, only, progress)
	case bugmap.ModeWire, bugmap.ModeWirePrincipals, bugmap.ModeWireRefuse:
		table, err = runner.SelfTestExternal(ctx, cfg, *mode, only, progress)
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
		fmt.Fprintln(stdout, "| bug switch | caught by (the check that failed) | also failed (collateral) | ok |")
		fmt.Fprintln(stdout, "|---|---|---|---|")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*markdown {
		fmt.Fprintln(tw, "BUG\tCAUGHT BY (THE CHECK THAT FAILED)\tALSO FAILED\tOK")
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
			verdict = "NO (" + catchFault(c, collateral[c.Bug]) + ")"
		}
		var caught []string
		for _, ch := range c.Checks {
			mark := ""
			if !ch.Violated {
				mark = " [NOT VIOLATED]"
			}
			if *markdown {
				caught = append(caught, fmt.Sprintf("%s: `%s`%s", ch.Scenario, ch.Step, mark))
			} else {
				caught = append(caught, fmt.Sprintf("%s: %s%s", ch.Scenario, ch.Step, mark))
			}
		}
		if *markdown {
			fmt.Fprintf(stdout, "| `%s` | %s | %s | %s |\n", c.Bug, strings.Join(caught, "<br>"), strings.Join(extra, ", "), verdict)
			continue
		}
		if len(caught) == 0 {
			caught = []string{"-"}
		}
		for i, line := range caught {
			bug, also, v := c.Bug, strings.Join(extra, ","), verdict
			if i > 0 {
				bug, also, v = "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", bug, line, also, v)
		}
	}
	tw.Flush()
	if !ok {
		return 1
	}
	return 0
}

// catchFault says why a catch row is not OK: a named check that held (and
// what its scenario did instead), or a failure outside the catchers.
func catchFault(c reports.Catch, collateral []string) string {
	var why []string
	for _, ch := range c.Checks {
		if !ch.Violated {
			why = append(why, fmt.Sprintf("%s: %q %s", ch.Scenario, ch.Step, ch.Observed))
		}
	}
	for _, id := range c.CaughtBy {
		if !slices.Contains(c.Expected, id) && !slices.Contains(collateral, id) {
			why = append(why, id+" failed outside the catchers and the collateral ("+strings.Join(collateral, " ")+")")
		}
	}
	if len(c.Contradicted) > 0 {
		why = append(why, "recheck contradicts "+strings.Join(c.Contradicted, " "))
	}
	return strings.Join(why, "; ")
}

// exploreSelfTest is selftest --explore: a row per bug switch of the mode
// saying whether explore, with its default budget, caught it by a check of
// the bug's harm (bugmap.Harms), and after how many scenarios and seconds.
func exploreSelfTest(ctx context.Context, cfg runner.Config, mode string, only []string, markdown bool, stdout, stderr io.Writer) int {
	ecfg := explore.Config{Run: cfg, Seed: cfg.Seed}
	ecfg.Run.Seed = 0
	progress := func(c explore.Catch) {
		state := "caught"
		if !c.Caught {
			state = "NOT CAUGHT: " + c.Why
		}
		fmt.Fprintf(stderr, "%s (%s): %s\n", c.Bug, c.Mode, state)
	}
	table, err := explore.SelfTest(ctx, ecfg, mode, only, progress)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform selftest: %v\n", err)
		return 2
	}
	ok := true
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if markdown {
		fmt.Fprintln(stdout, "| bug switch | mode | caught | harm (check kind) | scenario | seconds |")
		fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
	} else {
		fmt.Fprintln(tw, "BUG\tMODE\tCAUGHT\tHARM (KIND)\tSCENARIO\tSECONDS")
	}
	for _, c := range table {
		ok = ok && c.Caught
		caught, harm := "yes", fmt.Sprintf("%s (%s)", c.Harm, c.Kind)
		if !c.Caught {
			caught = "NO: " + c.Why
		}
		if c.Harm == "" {
			harm = "-"
		}
		run := fmt.Sprintf("%d of %d", c.Run, c.Explored)
		if c.Run == 0 {
			run = fmt.Sprintf("- of %d", c.Explored)
		}
		if markdown {
			fmt.Fprintf(stdout, "| `%s` | %s | %s | %s | %s | %.1f |\n", c.Bug, c.Mode, caught, harm, run, c.Seconds)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\n", c.Bug, c.Mode, caught, harm, run, c.Seconds)
	}
	tw.Flush()
	if !ok {
		return 1
	}
	return 0
}

const selftestUsage = "Usage: mcpconform selftest [flags]\n\nRuns the suite against the reference gateway once per bug switch and prints the\ncatch table: for each bug, the checks that caught it (scenario and step).\nFails unless every check named for a bug is violated and no other scenario\nfails (beyond the bug's known collateral).\n\nFlags:\n"
