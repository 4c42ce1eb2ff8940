package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/runner"
	refbugs "github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reports"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", runUsage, stderr)
	var cfg runner.Config
	var bugs, ids stringList
	targetFlags(fs, &cfg, &bugs)
	featuresDir := fs.String("features", "", "run the scenarios of the *.feature files in this directory instead of the bundled suite (explore's found/, say)")
	fs.StringVar(&cfg.Tags, "tags", "", "tag expression selecting scenarios, Cucumber's syntax (\"@must and not @needs-clock\", \"(@a or @b) and @c\") or godog's (\"@must && ~@needs-clock\", \"@a,@b\")")
	fs.Var(&ids, "id", "run only this scenario ID (repeatable)")
	fs.StringVar(&cfg.Level, "level", "", "certification level claimed: wire, metered or full (default: the highest the target's capabilities allow)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed for scenario order and random workloads (0 keeps file order)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "most concurrent clients in one twin step")
	fs.StringVar(&cfg.ExpectedFailures, "expected-failures", "", "waiver file: a scenario ID and its reason a line; a waived scenario that passes fails the run")
	fs.StringVar(&cfg.Out, "out", "mcpconform-report", "directory for junit.xml, cucumber.json, summary.json, summary.md, report.html and evidence")
	baseline := fs.String("baseline", "", "an earlier report directory (or its summary.json): summary.md lists this run's regressions against it")
	settleFlag(fs, &cfg)
	format := fs.String("format", reports.FormatText, "what goes to standard output at the end: text (table and verdict), jsonl (a JSON line per scenario, then a summary line) or github (GitHub Actions annotations at each failing scenario's feature line, then the text)")
	verbose := fs.Bool("v", false, "show the reference gateway's logs")
	if removedStrict("run", args, stderr) {
		return 2
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpconform run: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if !slices.Contains(reports.Formats, *format) {
		fmt.Fprintf(stderr, "mcpconform run: --format %q: want one of %s\n", *format, strings.Join(reports.Formats, ", "))
		return 2
	}
	if cfg.Concurrency < 2 {
		fmt.Fprintf(stderr, "mcpconform run: --concurrency %d: twin scenarios need at least 2 concurrent clients\n", cfg.Concurrency)
		return 2
	}
	if *baseline != "" {
		sum, err := reports.ReadSummary(*baseline)
		if err != nil {
			fmt.Fprintf(stderr, "mcpconform run: --baseline %s: %v\n", *baseline, err)
			return 2
		}
		cfg.Baseline = &sum
	}
	if !setUpTarget("run", fs, &cfg, bugs, *verbose, stderr) {
		return 2
	}
	cfg.TargetArgs = rerunArgs(fs)
	cfg.IDs = ids
	if *featuresDir != "" {
		cfg.Features = os.DirFS(*featuresDir)
	}
	start := time.Now()
	out, err := runner.Run(ctx, cfg)
	if err != nil {
		return runError(ctx, "run", err, *format, stdout, stderr)
	}
	if !printRun("run", out, *format, stdout, stderr) {
		return runner.ExitSetup
	}
	if cfg.Out != "" {
		fmt.Fprintf(stderr, "report: %s/report.html (%.1fs)\n", cfg.Out, time.Since(start).Seconds())
	}
	return out.Code
}

// targetFlags are the flags that say what a command tests and how the
// reference gateway starts: run, repro and explore take them alike.
func targetFlags(fs *flag.FlagSet, cfg *runner.Config, bugs *stringList) {
	fs.StringVar(&cfg.Target, "target", "reference", "what to test: \"reference\" (start the bundled gateway) or a gateway URL")
	fs.StringVar(&cfg.Profile, "profile", "", "profile file (JSON) describing a URL target: key placement, reasons, credentials, capabilities")
	fs.StringVar(&cfg.Store, "store", "sqlite", "reference target's store: sqlite or postgres (postgres uses the database DATABASE_URL names)")
	fs.IntVar(&cfg.Workers, "workers", 2, "reference target: gateway processes sharing one store (twins-04 splits its calls across them)")
	fs.Var(bugs, "bug", "reference target: start it with this bug switch (repeatable; see mcpconform bugs)")
	peerFlags(fs, cfg) // a gateway's upstream pinned at a probe
}

// rerunFlags are the flags of run that say what it tested, with which
// peers and which suite, in the order a command reads best.
var rerunFlags = []string{"target", "profile", "store", "workers", "bug", "probe-addr", "probe-url", "idp-addr", "idp-key", "features", "level"}

// rerunArgs are the rerunFlags given on the command line, as given: with
// them a scenario of the report runs again against the same target.
func rerunArgs(fs *flag.FlagSet) []string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var args []string
	for _, name := range rerunFlags {
		if !set[name] {
			continue
		}
		f := fs.Lookup(name)
		if list, ok := f.Value.(*stringList); ok {
			for _, v := range *list {
				args = append(args, "--"+name, v)
			}
			continue
		}
		args = append(args, "--"+name, f.Value.String())
	}
	return args
}

// setUpTarget completes a configuration from targetFlags: a URL target
// needs its profile, the reference starts from this very binary. It says
// why not on stderr and returns false when the command cannot go on.
func setUpTarget(cmd string, fs *flag.FlagSet, cfg *runner.Config, bugs stringList, verbose bool, stderr io.Writer) bool {
	if msg := targetProblem(fs, cfg, bugs); msg != "" {
		fmt.Fprintf(stderr, "mcpconform %s: %s\n", cmd, msg)
		return false
	}
	cfg.Bugs = bugs
	cfg.Progress = stderr
	if verbose {
		cfg.Log = stderr
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform %s: find own binary: %v\n", cmd, err)
		return false
	}
	cfg.Binary = exe
	return true
}

// targetProblem says what is wrong with the target flags, "" nothing: an
// option the chosen target would ignore is an error, never silently
// dropped, and so is a value no run can use.
func targetProblem(fs *flag.FlagSet, cfg *runner.Config, bugs stringList) string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.Target == "reference" {
		if cfg.Profile != "" {
			return "--profile describes a URL target; the reference target needs none (drop --profile, or give --target URL)"
		}
		for _, b := range bugs {
			if refbugs.Lookup(b) == nil {
				return fmt.Sprintf("--bug %q: no such bug switch (mcpconform bugs lists them)", b)
			}
		}
		if cfg.Store != "sqlite" && cfg.Store != "postgres" {
			return fmt.Sprintf("--store %q: want sqlite or postgres", cfg.Store)
		}
		if cfg.Workers < 1 {
			return fmt.Sprintf("--workers %d: the reference target needs at least 1 gateway process", cfg.Workers)
		}
	} else {
		if cfg.Profile == "" {
			return "a URL target needs --profile (see drivers/target/testdata/profile.example.json)"
		}
		for _, name := range []string{"bug", "store", "workers"} {
			if set[name] {
				return fmt.Sprintf("--%s is for the reference target; a URL target is tested as it runs (drop --%s)", name, name)
			}
		}
	}
	if cfg.Settle < 0 {
		return fmt.Sprintf("--settle %v: a duration of 0 or more (how long the probe must stay quiet)", cfg.Settle)
	}
	if cfg.FinalQuietFor < 0 {
		return fmt.Sprintf("--final-quiet %v: a duration of 0 or more (0 takes ten --settle periods)", cfg.FinalQuietFor)
	}
	return ""
}

// runError reports a run that ended in an error (set-up, or interrupted)
// as --format asks, and returns its exit code.
func runError(ctx context.Context, cmd string, err error, format string, stdout, stderr io.Writer) int {
	fmt.Fprintf(stderr, "mcpconform %s: %v\n", cmd, err)
	result, code := "ERROR", runner.ExitSetup
	if ctx.Err() != nil {
		result, code = reports.RunInterrupted, runner.ExitInterrupted
	}
	if format == reports.FormatJSONL {
		reports.PrintJSONLError(stdout, result, err.Error())
	} else if format == reports.FormatGitHub {
		reports.PrintGitHubError(stdout, result, err.Error())
	}
	return code
}

// printRun writes a finished run to stdout as --format asks; false when
// it could not (exit 2).
func printRun(cmd string, out runner.Outcome, format string, stdout, stderr io.Writer) bool {
	switch format {
	case reports.FormatJSONL:
		if err := reports.PrintJSONL(stdout, out.Run); err != nil {
			fmt.Fprintf(stderr, "mcpconform %s: %v\n", cmd, err)
			return false
		}
	case reports.FormatGitHub:
		reports.PrintGitHub(stdout, out.Run, "features")
	default:
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "tested: %s\n\n", reports.Subject(out.Run))
		reports.PrintSummary(stdout, out.Run)
	}
	return true
}

const runUsage = `Usage: mcpconform run [flags]

Runs the conformance scenarios against a target and writes a report.

  mcpconform run                                    the bundled reference gateway (SQLite, 2 processes)
  mcpconform run --target URL --profile FILE        your gateway, described by a profile (docs/profile.md)

Every check names the capability that observes it (the upstream probe, the
ledger, ...). What the target does not let the harness observe is reported
as not observed, never as passed: the scenario is INCOMPLETE (or SKIPPED
when its situation could not be created). A run is judged at a level:
wire (the MCP endpoint and the probe), metered (plus the ledger) or full
(plus clock, faults, settings, principals and two processes).

The report directory (--out) is replaced as a whole once the new report is
complete, so it never mixes two runs; meanwhile it holds error.txt saying a
run is under way, so a run killed on the way leaves no earlier verdict. A
run that fails before its scenarios (exit 2) leaves error.txt and a
junit.xml with one error there instead of an earlier verdict. A directory holding anything but a report is never replaced.

Exit codes:
  0    PASS         every @must check of the claimed level held
  1    FAIL         a check was violated
  2    ERROR        bad flags or profile, unreachable target, refused credentials
  3    INCOMPLETE   nothing failed, but a @must check of the level was not observed
  130  INTERRUPTED  stopped by SIGINT or SIGTERM (the partial report says so)

Flags:
`

// settleFlag is how long a scenario's effects get to show, and how long
// the last of them gets before the run's final recount.
func settleFlag(fs *flag.FlagSet, cfg *runner.Config) {
	fs.DurationVar(&cfg.Settle, "settle", 50*time.Millisecond, "how long the probe must stay quiet before a scenario's dispatches are final")
	fs.DurationVar(&cfg.FinalQuietFor, "final-quiet", 0, "how long the probe must stay quiet after the last scenario before every count is read again, to catch a late duplicate dispatch (0: ten --settle periods, at least 1s; raise it past a gateway's redelivery delay)")
}

// peerFlags are the flags of the harness-owned peers a target talks to: the
// upstream probe and the identity provider.
func peerFlags(fs *flag.FlagSet, cfg *runner.Config) {
	fs.StringVar(&cfg.ProbeAddr, "probe-addr", "127.0.0.1:0", "listen address of the upstream probe (pin it so a gateway's upstream can point at it)")
	fs.StringVar(&cfg.ProbeURL, "probe-url", "", "use a running probe (mcpconform probe) at this base URL instead of starting one")
	fs.StringVar(&cfg.IdPAddr, "idp-addr", "127.0.0.1:0", "listen address of the harness identity provider (JWKS)")
	fs.StringVar(&cfg.IdPKey, "idp-key", "", "PEM file holding the identity provider's signing key (created if missing)")
}
