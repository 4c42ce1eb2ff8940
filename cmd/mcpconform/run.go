package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/runner"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg runner.Config
	var bugs, ids stringList
	fs.StringVar(&cfg.Target, "target", "reference", "what to test: \"reference\" (start the bundled gateway) or a gateway URL")
	fs.StringVar(&cfg.Profile, "profile", "", "profile file (JSON) describing a URL target: key placement, reasons, credentials, capabilities")
	fs.StringVar(&cfg.Store, "store", "sqlite", "reference target's store: sqlite or postgres (postgres uses DATABASE_URL, else dockertest)")
	fs.IntVar(&cfg.Workers, "workers", 1, "reference target: gateway processes sharing one store (2 splits twins across processes; postgres)")
	fs.Var(&bugs, "bug", "reference target: start it with this bug switch (repeatable; see mcpconform bugs)")
	fs.StringVar(&cfg.Tags, "tags", "", "godog tag expression selecting scenarios, e.g. \"@must && ~@needs-clock\"")
	fs.Var(&ids, "id", "run only this scenario ID (repeatable)")
	fs.BoolVar(&cfg.Strict, "strict", false, "fail the run on any skipped or undefined @must scenario")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed for scenario order and random workloads (0 keeps file order)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "most concurrent clients in one twin step")
	fs.StringVar(&cfg.ExpectedFailures, "expected-failures", "", "file of scenario IDs expected to fail (one a line); one that passes fails the run")
	fs.StringVar(&cfg.Out, "out", "mcpconform-report", "directory for junit.xml, cucumber.json, summary.json, report.html and evidence")
	fs.StringVar(&cfg.ProbeAddr, "probe-addr", "127.0.0.1:0", "listen address of the upstream probe (pin it so a gateway's upstream can point at it)")
	fs.StringVar(&cfg.IdPAddr, "idp-addr", "127.0.0.1:0", "listen address of the harness identity provider (JWKS)")
	fs.StringVar(&cfg.IdPKey, "idp-key", "", "PEM file holding the identity provider's signing key (created if missing)")
	verbose := fs.Bool("v", false, "show the reference gateway's logs")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mcpconform run [flags]\n\nRuns the conformance scenarios against a target and writes a report.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpconform run: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if cfg.Target != "reference" && cfg.Profile == "" {
		fmt.Fprintln(stderr, "mcpconform run: a URL target needs --profile (see drivers/target/testdata/profile.example.json)")
		return 2
	}
	cfg.Bugs, cfg.IDs = bugs, ids
	cfg.Progress = stderr
	if *verbose {
		cfg.Log = stderr
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform run: find own binary: %v\n", err)
		return 2
	}
	cfg.Binary = exe
	start := time.Now()
	out, err := runner.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform run: %v\n", err)
		if runner.IsSetup(err) {
			return 2
		}
		return 1
	}
	fmt.Fprintln(stdout)
	reports.PrintSummary(stdout, out.Run)
	if cfg.Out != "" {
		fmt.Fprintf(stderr, "report: %s/report.html (%.1fs)\n", cfg.Out, time.Since(start).Seconds())
	}
	return out.Code
}
