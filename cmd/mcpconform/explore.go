package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/explore"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

func exploreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore", exploreUsage, stderr)
	var cfg explore.Config
	var bugs stringList
	targetFlags(fs, &cfg.Run, &bugs)
	settleFlag(fs, &cfg.Run)
	fs.StringVar(&cfg.Run.Level, "level", "", "certification level claimed: wire, metered or full (default: the highest the target's capabilities allow)")
	fs.IntVar(&cfg.Run.Concurrency, "concurrency", 64, "most concurrent clients in one twin step")
	fs.StringVar(&cfg.Run.Out, "out", "mcpconform-explore", "directory for the report; a finding goes to DIR/found/ (its .feature, .repro.sh and .seed)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of the scenarios drawn (0: one from the clock, printed)")
	fs.IntVar(&cfg.Seeds, "seeds", 1, "explore this many seeds in turn, from --seed on, against one start of the target")
	fs.IntVar(&cfg.Runs, "runs", explore.DefaultRuns, "scenarios to draw (of each seed)")
	fs.IntVar(&cfg.Steps, "steps", explore.DefaultSteps, "most actions in one scenario (a call, a retry, a wait, a change to the target...)")
	fs.DurationVar(&cfg.Budget, "budget", explore.DefaultBudget, "most time the scenarios may take; shrinking a finding may take as long again")
	fs.IntVar(&cfg.Scenario, "scenario", 0, "run only this scenario of the seed (the N of a finding's explore-SEED-N)")
	noShrink := fs.Bool("no-shrink", false, "write a finding as it was found, without shrinking it")
	format := fs.String("format", reports.FormatText, "what goes to standard output at the end: text or jsonl, as for run")
	verbose := fs.Bool("v", false, "show the reference gateway's logs")
	if removedStrict("explore", args, stderr) {
		return 2
	}
	if _, code, ok := cli.ParseArgs(fs, args, 0); !ok {
		return code
	}
	switch {
	case *format != reports.FormatText && *format != reports.FormatJSONL:
		fmt.Fprintf(stderr, "mcpconform explore: --format %q: want text or jsonl\n", *format)
		return 2
	case cfg.Runs < 1 || cfg.Seeds < 1 || cfg.Steps < 1 || cfg.Budget <= 0:
		fmt.Fprintln(stderr, "mcpconform explore: --runs, --seeds, --steps and --budget must be positive")
		return 2
	case cfg.Seed < 0:
		fmt.Fprintln(stderr, "mcpconform explore: --seed must not be negative")
		return 2
	case cfg.Scenario < 0 || cfg.Scenario > cfg.Runs:
		fmt.Fprintf(stderr, "mcpconform explore: --scenario %d: want 1 to --runs (%d)\n", cfg.Scenario, cfg.Runs)
		return 2
	}
	if !setUpTarget("explore", fs, &cfg.Run, bugs, *verbose, stderr) {
		return 2
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	cfg.NoShrink = *noShrink
	// A scenario explore drew is rerun from the feature file it wrote.
	cfg.Run.TargetArgs = append(rerunArgs(fs), "--features", filepath.Join(cfg.Run.Out, explore.FoundDir))
	cfg.Command = exploreCommand(fs, cfg)
	res, err := explore.Run(ctx, cfg)
	if err != nil {
		return runError(ctx, "explore", err, *format, stdout, stderr)
	}
	if !printRun("explore", res.Outcome, *format, stdout, stderr) {
		return runner.ExitSetup
	}
	fmt.Fprintf(stderr, "explore: seed %d: %d scenario(s) explored in %.1fs\n", cfg.Seed, res.Explored, res.Elapsed.Seconds())
	if f := res.Found; f != nil {
		fmt.Fprintf(stderr, "explore: found %s (%s) in scenario %d after %.1fs; shrunk from %d to %d steps\n",
			f.Target.Harm, f.Target.Kind, f.Run, f.After.Seconds(), f.From.Steps, f.To.Steps)
		for _, w := range f.Warnings {
			fmt.Fprintf(stderr, "explore: note: %s\n", w)
		}
		if cfg.Run.Out != "" {
			fmt.Fprintf(stderr, "explore: %s/%s/%s.feature (run it: mcpconform run --features %s/%s)\n", cfg.Run.Out, explore.FoundDir, f.ID, cfg.Run.Out, explore.FoundDir)
		}
	}
	if cfg.Run.Out != "" {
		fmt.Fprintf(stderr, "report: %s/report.html\n", cfg.Run.Out)
	}
	return res.Outcome.Code
}

// exploreCommand is the command line that reruns an exploration: the
// target's flags as given and the seed drawn.
func exploreCommand(fs *flag.FlagSet, cfg explore.Config) string {
	parts := []string{"mcpconform explore"}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "seed", "seeds", "out", "format", "v", "scenario", "no-shrink":
			return
		}
		if f.Name == "bug" {
			for _, b := range strings.Split(f.Value.String(), ",") {
				parts = append(parts, "--bug "+b)
			}
			return
		}
		parts = append(parts, fmt.Sprintf("--%s %s", f.Name, f.Value.String()))
	})
	slices.Sort(parts[1:])
	return strings.Join(append(parts, fmt.Sprintf("--seed %d", cfg.Seed)), " ")
}

const exploreUsage = `Usage: mcpconform explore [flags]

Draws random scenarios from the suite's own steps (keyed and unkeyed calls,
retries spread in time, twins, dispatches held at the probe, dropped
connections, cancellations, both protocol versions, other API keys,
wallets and principals; and where a control API offers them, clock moves
across window edges, settings, revocations, removed tools, faults,
explicit permits, read-only, approval and multi-round tools, a wide range
of prices), each ended by retrying every operation until it is decided,
and runs them against the target as 'run' runs the suite: one model of the
retry contract judges every history (docs/judge.md).

The first scenario that violates a check is shrunk to the fewest steps
that still violate a check of the same kind and harm, and written to
DIR/found/explore-SEED-N.feature (a scenario 'mcpconform run --features
DIR/found' runs as is), with its repro.sh and the seed that reruns it.

  mcpconform explore                                 the bundled reference gateway
  mcpconform explore --target URL --profile FILE    your gateway, as for run
  mcpconform explore --seed S --scenario N           scenario N of seed S again

Exit codes, as run's:
  0    nothing found, and everything observed at the level
  1    a violation found
  2    bad flags or profile, unreachable target
  3    nothing found, but a check of the level was not observed
  130  interrupted

Flags:
`
