package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/repro"
	"github.com/mcpconform/mcpconform/internal/runner"
)

// reproCmd runs one scenario, writes its report into --out and beside it
// repro.sh, the scenario's exchange as curl calls against a running gateway.
func reproCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("repro", reproUsage, stderr)
	var cfg runner.Config
	var bugs stringList
	targetFlags(fs, &cfg, &bugs)
	featuresDir := fs.String("features", "", "take the scenario from the *.feature files in this directory instead of the bundled suite (explore's found/, say)")
	fs.StringVar(&cfg.Out, "out", "", "directory for the report, the evidence and repro.sh (required)")
	verbose := fs.Bool("v", false, "show the reference gateway's logs")
	// The ID may come before or after the flags.
	var id string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		id, args = args[0], args[1:]
	}
	if removedStrict("repro", args, stderr) {
		return 2
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	rest := fs.Args()
	if id == "" && len(rest) > 0 {
		id, rest = rest[0], rest[1:]
	}
	switch {
	case id == "":
		fmt.Fprintln(stderr, "mcpconform repro: a scenario ID is required (see mcpconform list)")
		return 2
	case len(rest) > 0:
		fmt.Fprintf(stderr, "mcpconform repro: unexpected arguments %q\n", rest)
		return 2
	case cfg.Out == "":
		fmt.Fprintln(stderr, "mcpconform repro: --out DIR is required")
		return 2
	}
	if !setUpTarget("repro", fs, &cfg, bugs, *verbose, stderr) {
		return 2
	}
	cfg.Features = features.FS
	if *featuresDir != "" {
		cfg.Features = os.DirFS(*featuresDir)
	}
	entries, err := catalog.Load(cfg.Features)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform repro: %v\n", err)
		return 2
	}
	entry, ok := catalog.ByID(entries)[id]
	if !ok {
		fmt.Fprintf(stderr, "mcpconform repro: no scenario with ID %q (see mcpconform list)\n", id)
		return 2
	}
	cfg.IDs = []string{id}
	out, err := runner.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform repro: %v\n", err)
		if runner.IsSetup(err) {
			return 2
		}
		return 1
	}
	if len(out.Run.Scenarios) != 1 {
		fmt.Fprintf(stderr, "mcpconform repro: the run produced %d scenarios, want 1\n", len(out.Run.Scenarios))
		return 2
	}
	sc := out.Run.Scenarios[0]
	res, err := repro.Script(repro.Input{Scenario: sc, Entry: entry, Target: out.Run.Target})
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform repro: %v\n", err)
		return 2
	}
	script := filepath.Join(cfg.Out, "repro.sh")
	if err := os.WriteFile(script, res.Script, 0o755); err != nil {
		fmt.Fprintf(stderr, "mcpconform repro: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: %s\n", sc.ID, sc.Verdict)
	if sc.Reason != "" {
		fmt.Fprintf(stdout, "  %s\n", sc.Reason)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "mcpconform repro: note: %s\n", w)
	}
	fmt.Fprintf(stdout, "report:   %s\n", filepath.Join(cfg.Out, "report.html"))
	fmt.Fprintf(stdout, "evidence: %s\n", filepath.Join(cfg.Out, "evidence"))
	run := []string{"GATEWAY=" + res.Gateway}
	for _, v := range res.Env {
		switch v {
		case "CONTROL_TOKEN":
			run = append(run, v+"=T")
		case "PROBE", "IDP":
			run = append(run, v+"=http://HOST:PORT")
		default:
			run = append(run, v+"=...")
		}
	}
	fmt.Fprintf(stdout, "script:   %s (run: %s bash %s; it ends REPRODUCED, exit 0, or NOT REPRODUCED, exit 1)\n", script, strings.Join(run, " "), script)
	return out.Code
}

const reproUsage = "Usage: mcpconform repro ID [flags] --out DIR\n\n" +
	"Runs one scenario, writes its report and evidence into DIR, and DIR/repro.sh: a bash script\n" +
	"of curl calls built from what the run sent (MCP requests, control API and probe calls, in\n" +
	"the order they started) that replays it against a running gateway (GATEWAY, CONTROL_TOKEN)\n" +
	"and a running `mcpconform probe` (PROBE) (for principals' tokens, a running `mcpconform idp`:\n" +
	"IDP, or TOKEN_<subject>; docs/repro.md), observes again what the failed checks observed\n" +
	"(dispatches per token, ledger entries, how each witnessed request ended) and ends with\n" +
	"REPRODUCED (exit 0) or NOT REPRODUCED (exit 1).\n\n"
