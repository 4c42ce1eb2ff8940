package main

import (
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/reports"
)

const diffUsage = `Usage: mcpconform diff OLD NEW

Compares two runs, each a report directory (mcpconform run --out DIR) or its
summary.json, scenario by scenario: regressions (passed in OLD, not in NEW,
also when NEW did not run it), fixes, other verdict changes, new and removed
scenarios, and, when NEW was interrupted, the passes it did not finish.

Exit codes: 0 no regression, 1 a regression (a pass lost, or the run
verdict worse: PASS to INCOMPLETE or FAIL, INCOMPLETE to FAIL), 2 usage or
unreadable report, 3 inconclusive (NEW was interrupted; nothing it finished
regressed).
`

func diffCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", diffUsage, stderr)
	pos, code, ok := cli.ParseArgs(fs, args, 2)
	if !ok {
		return code
	}
	var sums [2]reports.Summary
	for i, p := range pos {
		s, err := reports.ReadSummary(p)
		if err != nil {
			fmt.Fprintf(stderr, "mcpconform diff: %v\n", err)
			return 2
		}
		sums[i] = s
	}
	d := reports.Compare(sums[0], sums[1])
	reports.PrintDiff(stdout, d)
	switch {
	case d.Regressed():
		return 1
	case d.Inconclusive():
		return 3
	}
	return 0
}
