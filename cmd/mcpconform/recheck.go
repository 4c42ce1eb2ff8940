package main

import (
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/reports"
)

// recheckCmd recomputes what can be recomputed from a report directory alone:
// the run verdict from the stored scenarios, and every check it can from
// each scenario's history (probe counts, ledger entries, amounts and
// balances, the bank invariant, receipts, replays, refusals), so a reviewer
// need not trust the run's own word.
func recheckCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "Usage: mcpconform recheck DIR\n\nRecomputes the verdict and every check it can from the histories of a report directory (mcpconform run --out DIR).")
		if len(args) == 1 {
			return 0
		}
		return 2
	}
	run, err := reports.Load(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform recheck: %v\n", err)
		return 2
	}
	bad, rechecked := 0, 0
	for _, s := range run.Scenarios {
		checks, mismatch := reports.Recheck(s)
		rechecked += len(checks)
		if mismatch {
			bad++
			for _, c := range checks {
				fmt.Fprintf(stdout, "%s (%s): %s: ok=%v, expected %s, history shows %s\n", s.ID, s.Verdict, c.Step, c.OK, c.Expected, c.Actual)
			}
		}
	}
	ok, why := reports.Verdict(run)
	for _, w := range why {
		fmt.Fprintln(stdout, w)
	}
	fmt.Fprintf(stdout, "%d scenarios loaded, %d checks recomputed from histories; verdict ok=%v; %d scenarios contradicted by their history\n", len(run.Scenarios), rechecked, ok, bad)
	if !ok || bad > 0 {
		return 1
	}
	return 0
}
