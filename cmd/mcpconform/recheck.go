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
		fmt.Fprint(stderr, `Usage: mcpconform recheck DIR

Recomputes, from a report directory (mcpconform run --out DIR) alone, the run
verdict from its scenarios and every check it can from the scenario's ndjson
history (probe counts, ledger entries, amounts and balances, the bank
invariant, receipts, replays, refusals), so a reviewer need not take the
run's word for it.

Exit codes: 0 PASS and no history contradicts a check, 1 otherwise, 2 usage
or a directory that is not a complete report.
`)
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
	r := reports.RecheckRun(run)
	for _, line := range r.Contradicted {
		fmt.Fprintln(stdout, line)
	}
	for _, w := range r.Why {
		fmt.Fprintln(stdout, w)
	}
	fmt.Fprintf(stdout, "%d scenarios loaded, %d checks recomputed from histories; verdict ok=%v; %d scenarios contradicted by their history\n", len(run.Scenarios), r.Checks, r.Result == reports.RunPass, r.Scenarios)
	if !r.OK() {
		return 1
	}
	return 0
}
