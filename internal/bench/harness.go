package bench

import (
	"context"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/internal/runner"
)

// SuiteRun is one timed runner.Run against the reference gateway.
type SuiteRun struct {
	Label       string        `json:"label"`
	Store       string        `json:"store"`
	Scenarios   int           `json:"scenarios"`   // scenarios the run reported
	Concurrency int           `json:"concurrency"` // --concurrency
	Wall        time.Duration `json:"wall"`        // runner.Run, start to return (target start-up and report included)
	Passed      int           `json:"passed"`
	Failed      int           `json:"failed"`
	Skipped     int           `json:"skipped"` // skipped, undefined and the rest
	Err         string        `json:"err,omitempty"`
}

// ScenarioIDs lists every scenario ID of the suite, sorted.
func ScenarioIDs() ([]string, error) {
	entries, err := catalog.Load(features.FS)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// Stride picks n of ids spread evenly over the sorted list (every
// len/n-th), so a subset mixes the feature areas instead of taking the
// first file's scenarios.
func Stride(ids []string, n int) []string {
	if n >= len(ids) {
		return append([]string(nil), ids...)
	}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, ids[i*len(ids)/n])
	}
	return out
}

// SuiteSpec says what one timed suite run selects.
type SuiteSpec struct {
	Label       string
	Store       string   // "sqlite" or "postgres"
	DSN         string   // postgres
	IDs         []string // nil: the full suite
	Concurrency int      // 0: the command's default, 64
}

// TimeSuite runs the suite as `mcpconform run --target reference` does, with
// a report written to a scratch directory, and times it.
func TimeSuite(ctx context.Context, binary string, spec SuiteSpec) SuiteRun {
	conc := spec.Concurrency
	if conc == 0 {
		conc = 64 // mcpconform run's default
	}
	sr := SuiteRun{Label: spec.Label, Store: DisplayStore(spec.Store), Concurrency: conc}
	out, err := os.MkdirTemp("", "mcpbench-report-*")
	if err != nil {
		sr.Err = err.Error()
		return sr
	}
	defer os.RemoveAll(out)
	start := time.Now()
	o, err := runner.Run(ctx, runner.Config{
		Target: "reference", Store: spec.Store, DSN: spec.DSN, Workers: 1, Binary: binary,
		IDs: spec.IDs, Concurrency: conc, Out: out, Progress: io.Discard,
	})
	sr.Wall = time.Since(start)
	if err != nil {
		sr.Err = oneLine(err.Error())
	}
	sr.Scenarios = len(o.Run.Scenarios)
	for _, s := range o.Run.Scenarios {
		switch s.Verdict {
		case judge.Passed, judge.ExpectedFailure:
			sr.Passed++
		case judge.Failed, judge.UnexpectedPass:
			sr.Failed++
		default:
			sr.Skipped++
		}
	}
	return sr
}

// DisplayStore names a runner store ("sqlite", "postgres") as the page does.
func DisplayStore(s string) string {
	switch s {
	case "sqlite":
		return SQLite
	case "postgres":
		return PostgreSQL
	}
	return s
}

// Fit is the least-squares line wall = Fixed + PerUnit·x over runs.
type Fit struct {
	Fixed   time.Duration `json:"fixed"`
	PerUnit time.Duration `json:"per_unit"`
	OK      bool          `json:"ok"` // at least two distinct x
}

// FitLine fits y = a + b·x.
func FitLine(xs []float64, ys []time.Duration) Fit {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return Fit{}
	}
	var sx, sy, sxx, sxy float64
	for i, x := range xs {
		y := ys[i].Seconds()
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return Fit{}
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	return Fit{Fixed: secs(a), PerUnit: secs(b), OK: true}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
