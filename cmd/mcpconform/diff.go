package main

import (
	"fmt"
	"io"

	"github.com/mcpconform/mcpconform/reports"
)

const diffUsage = `Usage: mcpconform diff OLD NEW

Compares two runs, each a report directory (mcpconform run --out DIR) or its
summary.json, scenario by scenario: regressions (passed in OLD, not in NEW),
fixes, other verdict changes, new and removed scenarios.

Exit codes: 0 no regression, 1 a regression, 2 usage or unreadable report.
`

func diffCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", diffUsage, stderr)
	pos, code, ok := parseArgs(fs, args, 2)
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
	if d.Regressed() {
		return 1
	}
	return 0
}
