// Command mcpconform proves whether a metered MCP gateway makes tools/call
// safe to retry: it runs executable Gherkin scenarios against a gateway and
// writes a report, and it carries a reference gateway to compare against.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `mcpconform: conformance harness for metered MCP gateways (is tools/call safe to retry?)

Usage:
  mcpconform run     [flags]      run the scenarios against a target and write a report
  mcpconform doctor  [flags]      check a target's wiring and say what its missing capabilities cost
  mcpconform bench   [flags]      calls/s, p50/p99 and storms through a target against the bare probe; double dispatches shown
  mcpconform explore [flags]      random scenarios of the suite's steps against a target; a violation shrunk and written out
  mcpconform list    [flags]      list scenario IDs, levels, tags and requirements
  mcpconform gateway [flags]      run the bundled reference gateway
  mcpconform bugs                 list the reference gateway's bug switches
  mcpconform probe   [flags]      run the upstream probe on its own, for gateways that list upstream tools at start-up
  mcpconform idp     [flags]      run the identity provider on its own (JWKS, fresh tokens for repro.sh); 'idp token' signs one
  mcpconform repro ID --out DIR   run one scenario; write its evidence and repro.sh (curl)
  mcpconform selftest [flags]     run the suite once per bug switch and print the catch table
  mcpconform recheck DIR          recompute the verdict and history invariants from a report directory
  mcpconform bundle DIR [flags]   pack a report into a certification bundle (tar.gz, manifest, optional ed25519 signature)
  mcpconform verify ARCHIVE       check a bundle's hashes and signature and recompute its verdict
  mcpconform diff OLD NEW         compare two runs: regressions, fixes, new and removed scenarios (exit 1 on a regression, 3 if NEW was interrupted)
  mcpconform profile check FILE   check a gateway profile and print what it says (docs/profile.md)
  mcpconform version [--json]     print the harness version and the commit it was built from
  mcpconform help [COMMAND]       this text, or a command's flags

Run 'mcpconform <command> -h' for a command's flags.

Exit codes of run: 0 PASS, 1 FAIL, 2 usage or set-up error, 3 INCOMPLETE (a @must check
of the claimed level was not observed), 130 interrupted.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// commands are the command names dispatch knows, for help CMD.
var commands = map[string]bool{"run": true, "bench": true, "explore": true, "list": true, "gateway": true, "probe": true, "idp": true,
	"bugs": true, "repro": true, "doctor": true, "recheck": true, "bundle": true, "verify": true, "diff": true,
	"profile": true, "selftest": true, "version": true}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "explore":
		return exploreCmd(ctx, args[1:], stdout, stderr)
	case "list":
		return listCmd(args[1:], stdout, stderr)
	case "gateway":
		return gatewayCmd(ctx, args[1:], stdout, stderr)
	case "probe":
		return probeCmd(ctx, args[1:], stdout, stderr)
	case "idp":
		return idpCmd(ctx, args[1:], stdout, stderr)
	case "bugs":
		return bugsCmd(args[1:], stdout, stderr)
	case "repro":
		return reproCmd(ctx, args[1:], stdout, stderr)
	case "doctor":
		return doctorCmd(ctx, args[1:], stdout, stderr)
	case "recheck":
		return recheckCmd(args[1:], stdout, stderr)
	case "bundle":
		return bundleCmd(args[1:], stdout, stderr)
	case "verify":
		return verifyCmd(args[1:], stdout, stderr)
	case "diff":
		return diffCmd(args[1:], stdout, stderr)
	case "profile":
		return profileCmd(args[1:], stdout, stderr)
	case "selftest":
		return selftestCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version", "-V":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// help CMD: the command's own help, on stdout as help is.
			if !commands[args[1]] {
				fmt.Fprintf(stderr, "mcpconform help: no command %q (mcpconform help lists them)\n", args[1])
				return 2
			}
			return dispatch(ctx, []string{args[1], "-h"}, stdout, stdout)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcpconform: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
