package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/runner"
)

const doctorUsage = `Usage: mcpconform doctor --target URL --profile FILE [flags]
       mcpconform doctor                          (the bundled reference gateway)

Checks a target before a run: reachable, credentials accepted, MCP initialize
works, the profile's tools are listed, one call through the gateway reaches the
harness's upstream probe, and what the control API offers. Then what a run
will make of every scenario when the gateway gets everything right, in the
verdicts run reports (docs/verdicts.md): passed; incomplete (a check needs
a capability the target lacks, or a later step does); skipped (its
situation needs one); not-applicable (another unkeyed policy, an MCP
version the target does not serve, an optional feature it does not have).
Each group says how many keep a run at the level shown from a PASS.

Exit codes: 0 every check fine, 1 a wiring problem was found, 2 set-up error
(bad flags or profile, unreachable target, refused credentials).

Flags:
`

func doctorCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("doctor", doctorUsage, stderr)
	var cfg runner.Config
	fs.StringVar(&cfg.Target, "target", "reference", "\"reference\" or a gateway URL")
	fs.StringVar(&cfg.Profile, "profile", "", "profile file describing a URL target (docs/profile.md)")
	peerFlags(fs, &cfg)
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if cfg.Target != "reference" && cfg.Profile == "" {
		fmt.Fprintln(stderr, "mcpconform doctor: a URL target needs --profile")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform doctor: %v\n", err)
		return 2
	}
	cfg.Binary, cfg.Workers = exe, 2
	d, err := runner.Doctor(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform doctor: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "target: %s %s (profile %q)\n", d.Target.Kind, strings.Join(d.Target.URLs, " "), d.Target.Profile)
	for _, f := range d.Findings {
		mark := "ok  "
		if !f.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(stdout, "  %s %s", mark, f.Check)
		if f.Detail != "" {
			fmt.Fprintf(stdout, ": %s", f.Detail)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "capabilities: %s\n", strings.Join(d.Target.Capabilities, ", "))
	fmt.Fprintf(stdout, "highest level it can claim: %s\n", d.Level)
	fmt.Fprintln(stdout, "what run will make of each scenario when nothing fails:")
	for _, g := range d.Groups {
		head := string(g.Verdict)
		if g.Why != "" {
			head += ", " + g.Why
		}
		if g.Level != "" {
			head += fmt.Sprintf(" (level %s)", g.Level)
		}
		fmt.Fprintf(stdout, "  %s: %d", head, len(g.Scenarios))
		if g.Keeping > 0 {
			fmt.Fprintf(stdout, ", %d keep a %s-level run from PASS", g.Keeping, d.Level)
		}
		fmt.Fprintf(stdout, "\n    %s\n", strings.Join(g.Scenarios, " "))
	}
	if !d.OK() {
		return 1
	}
	return 0
}
