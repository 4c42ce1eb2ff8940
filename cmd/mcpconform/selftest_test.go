package main

import (
	"context"
	"testing"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/internal/runner"
	"github.com/mcpconform/mcpconform/reports"
)

// TestSelfTestCatchesEveryBug turns each bug switch on in turn and holds the
// suite to bugmap: the run fails, and its failures are exactly the scenarios
// listed for that bug. A conformance suite is only worth the bugs it catches.
func TestSelfTestCatchesEveryBug(t *testing.T) {
	t.Parallel()
	exe := harnessBinary(t, "self-test runs the suite once per bug switch")
	table, err := runner.SelfTest(context.Background(), runner.Config{
		Target: "reference", Store: "sqlite", Binary: exe, Seed: 7, Concurrency: 64,
	}, nil, func(c reports.Catch) {
		t.Logf("%-26s caught by %v", c.Bug, c.CaughtBy)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range table {
		if !row.OK {
			t.Errorf("bug %s: failures %v, want every one of %v and nothing outside them and %v; named checks %+v", row.Bug, row.CaughtBy, row.Expected, bugmap.Collateral[row.Bug], row.Checks)
		}
	}
}
