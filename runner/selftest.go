package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/mcpconform/mcpconform/bugmap"
	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reports"
)

// Catches compares a run's failures with the scenarios listed for its bugs.
// A row is OK when every catcher failed and every failure is a catcher or the
// bug's known collateral: nothing failed for another reason.
func Catches(run reports.Run, names []string) []reports.Catch {
	var rows []reports.Catch
	for _, b := range names {
		rows = append(rows, catchRow(run, b, bugmap.Catchers[b], bugmap.Collateral[b]))
	}
	return rows
}

// catchRow holds one bug's run to its listed catchers and collateral.
func catchRow(run reports.Run, bug string, catchers, collateral []string) reports.Catch {
	var failed []string
	for _, s := range run.Scenarios {
		if s.Verdict == reports.Failed || s.Verdict == reports.Undefined {
			failed = append(failed, s.ID)
		}
	}
	sort.Strings(failed)
	want := slices.Clone(catchers)
	sort.Strings(want)
	ok := true
	for _, id := range want {
		ok = ok && slices.Contains(failed, id)
	}
	for _, id := range failed {
		ok = ok && (slices.Contains(want, id) || slices.Contains(collateral, id))
	}
	return reports.Catch{Bug: bug, Expected: want, CaughtBy: failed, OK: ok}
}

// SelfTest runs the suite once per bug switch, each on the store where its
// bug lives, and returns the catch table. cfg is the template of every run.
func SelfTest(ctx context.Context, cfg Config, progress func(reports.Catch)) ([]reports.Catch, error) {
	var table []reports.Catch
	for _, b := range bugs.All {
		c := cfg
		if c.Workers == 0 {
			c.Workers = 2 // twins-04 splits its twins across two processes
		}
		c.Bugs = []string{b.Name}
		c.Strict = false
		if b.Store != "" {
			c.Store = b.Store
		}
		if c.Out != "" {
			c.Out = cfg.Out + "/" + b.Name
		}
		out, err := Run(ctx, c)
		if err != nil {
			return table, fmt.Errorf("self-test %s: %w", b.Name, err)
		}
		row := Catches(out.Run, []string{b.Name})[0]
		table = append(table, row)
		if progress != nil {
			progress(row)
		}
	}
	return table, nil
}
