package soak

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Figures are a soak's measured numbers. Only Violations is a verdict; the
// times are what this machine did once.
type Figures struct {
	Date        time.Time `json:"date"`
	Seed        int64     `json:"seed"`
	Store       string    `json:"store"`
	Processes   int       `json:"processes"`
	Concurrency int       `json:"concurrency"`
	Bugs        []string  `json:"bugs,omitempty"`
	Machine     string    `json:"machine"`
	// Load is the machine's load average when the workload began: the
	// soak shares its cores with whatever else runs.
	Load string `json:"load,omitempty"`

	Target     int `json:"target"` // calls asked for
	Calls      int `json:"calls"`  // calls sent
	Operations int `json:"operations"`
	Keyed      int `json:"keyed"`
	Unkeyed    int `json:"unkeyed"`
	// Retries are the calls of an operation after its first (both twins
	// count as first), for any reason; RetriesAfterResult those sent to an
	// operation that already had its result.
	Retries            int `json:"retries"`
	RetriesAfterResult int `json:"retries_after_result"`
	ClientDrops        int `json:"client_drops"`  // calls the client abandoned
	GatewayDrops       int `json:"gateway_drops"` // operations with drop_response armed
	GatewayDropHits    int `json:"gateway_drop_hits"`
	DropSetupErrors    int `json:"drop_setup_errors,omitempty"`
	// PreDispatchFails are the operations with fail armed at
	// dispatch.before; PreDispatchFailHits the hits the gateways counted,
	// PreDispatchFailAnswers the dispatch_failed answers the client got.
	PreDispatchFails       int `json:"pre_dispatch_fails"`
	PreDispatchFailHits    int `json:"pre_dispatch_fail_hits"`
	PreDispatchFailAnswers int `json:"pre_dispatch_fail_answers"`
	FailSetupErrors        int `json:"fail_setup_errors,omitempty"`
	TwinPairs              int `json:"twin_pairs"`
	Results                int `json:"results"`
	InProgress             int `json:"in_progress"`
	OtherErrors            int `json:"other_errors"` // neither a result, in progress nor a planned fault
	Unsettled              int `json:"unsettled"`

	Wall        time.Duration `json:"wall"` // the workload, set-up and read-back left out
	CallsPerSec float64       `json:"calls_per_sec"`
	P50         time.Duration `json:"p50"` // of the calls that were answered
	P99         time.Duration `json:"p99"`
	// Truncated: the deadline ended the workload before Target calls.
	Truncated bool `json:"truncated,omitempty"`

	Dispatches        int   `json:"dispatches"` // as the probe counted them
	GatewayDispatches int   `json:"gateway_dispatches"`
	Debits            int   `json:"debits"`
	Refunds           int   `json:"refunds"`
	Debited           int64 `json:"debited"` // net of refunds
	Wallets           int   `json:"wallets"`

	Violations int            `json:"violations"`
	ByCheck    map[string]int `json:"by_check,omitempty"`
	// First lists the first violations, for the report.
	First []Violation `json:"first,omitempty"`
}

// firstShown bounds the violations a report lists.
const firstShown = 20

func (r *runner) figures(h History, vs []Violation, wall time.Duration) Figures {
	f := Figures{
		Date: time.Now().UTC().Truncate(time.Second), Seed: r.cfg.Seed, Store: storeName(r.cfg.Store),
		Processes: len(r.tg.URLs), Concurrency: r.cfg.Concurrency, Bugs: r.cfg.Bugs,
		Machine: fmt.Sprintf("%s %s/%s, %d CPUs", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Target:  r.cfg.Calls,
		Calls:   int(r.calls.Load()),
		Wall:    wall,
		Load:    r.load,
	}
	if c := r.faults[ShapeGatewayDrop]; c != nil {
		f.GatewayDropHits, f.DropSetupErrors = int(c.hits.Load()), int(c.setupErrs.Load())
	}
	if c := r.faults[ShapeFailBefore]; c != nil {
		f.PreDispatchFailHits, f.FailSetupErrors = int(c.hits.Load()), int(c.setupErrs.Load())
	}
	f.Truncated = f.Calls < f.Target
	if wall > 0 {
		f.CallsPerSec = float64(f.Calls) / wall.Seconds()
	}
	tally(&f, h)
	f.Violations = len(vs)
	for _, v := range vs {
		if f.ByCheck == nil {
			f.ByCheck = map[string]int{}
		}
		f.ByCheck[v.Check]++
	}
	f.First = vs[:min(len(vs), firstShown)]
	return f
}

// tally counts what the history holds: operations, calls by kind, latency,
// dispatches and ledger entries.
func tally(f *Figures, h History) {
	var lats []time.Duration
	f.Operations = len(h.Ops)
	for _, o := range h.Ops {
		if o.Key != "" {
			f.Keyed++
		} else {
			f.Unkeyed++
		}
		first := 1
		switch o.Shape {
		case ShapeTwins:
			f.TwinPairs++
			first = 2
		case ShapeGatewayDrop:
			f.GatewayDrops++
		case ShapeFailBefore:
			f.PreDispatchFails++
		}
		f.Retries += max(0, len(o.Attempts)-first)
		answered := false
		for j, a := range o.Attempts {
			if answered && j >= first {
				f.RetriesAfterResult++
			}
			switch {
			case planned(&o, j):
				if o.Shape == ShapeFailBefore {
					f.PreDispatchFailAnswers++
				}
			case a.Kind == KindResult:
				f.Results++
				answered = true
			case a.Kind == KindInProgress:
				f.InProgress++
			case a.Kind == KindAbandoned:
				f.ClientDrops++
			default:
				f.OtherErrors++
			}
			if a.Kind != KindAbandoned {
				lats = append(lats, a.Latency)
			}
		}
		if !o.Settled() {
			f.Unsettled++
		}
	}
	slices.Sort(lats)
	f.P50, f.P99 = percentile(lats, 50), percentile(lats, 99)
	f.Dispatches = sumCounts(h.Probe)
	f.GatewayDispatches = h.GatewayDispatches
	f.Wallets = len(h.Wallets)
	for _, w := range h.Wallets {
		for _, e := range w.Ledger {
			switch e.Kind {
			case "debit":
				f.Debits++
				f.Debited += e.Amount
			case "refund":
				f.Refunds++
				f.Debited -= e.Amount
			}
		}
	}
}

// percentile is the nearest-rank p-th percentile of sorted values, 0 for none.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(n·p/100)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Summary is the figures on one line, for logs.
func (f Figures) Summary() string {
	return fmt.Sprintf("seed %d: %d calls (%d operations: %d keyed, %d unkeyed; %d retries, %d client drops, %d/%d gateway drops fired, %d/%d pre-dispatch failures fired, %d twin pairs, %d in progress, %d other errors) in %v, %.0f calls/s, p50 %v, p99 %v; %d dispatches, %d debits, %d refunds; %d violations",
		f.Seed, f.Calls, f.Operations, f.Keyed, f.Unkeyed, f.Retries, f.ClientDrops, f.GatewayDropHits, f.GatewayDrops,
		f.PreDispatchFailHits, f.PreDispatchFails, f.TwinPairs, f.InProgress, f.OtherErrors, f.Wall.Round(time.Millisecond),
		f.CallsPerSec, round(f.P50), round(f.P99), f.Dispatches, f.Debits, f.Refunds, f.Violations)
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

// Markdown writes the figures as the page bench/soak.md.
func (f Figures) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# %s soak\n\n", f.Store)
	p("Written by `make soak` (`go run ./cmd/mcpsoak`); do not edit by hand.\n")
	p("One run on one machine: the times are what it did once, not a bound.\n\n")
	p("- date: %s\n- machine: %s\n", f.Date.Format(time.RFC3339), f.Machine)
	if f.Load != "" {
		p("- load average (1, 5, 15 min) when the workload began: %s\n", f.Load)
	}
	replay := fmt.Sprintf("go run ./cmd/mcpsoak -seed %d", f.Seed)
	if f.Store == storeName("sqlite") {
		replay += " -store sqlite"
	}
	p("- seed: `%d` (replay the same operations: `%s`)\n", f.Seed, replay)
	p("- %d reference gateway processes on one %s store, %d operations in flight", f.Processes, f.Store, f.Concurrency)
	if len(f.Bugs) > 0 {
		p(", bug switches `%s`", strings.Join(f.Bugs, "`, `"))
	}
	p("\n\n## Workload\n\n| figure | value |\n|---|---|\n")
	row := func(name string, v any) { p("| %s | %v |\n", name, v) }
	row("calls sent (asked for)", fmt.Sprintf("%d (%d)", f.Calls, f.Target))
	row("operations", f.Operations)
	row("keyed / unkeyed", fmt.Sprintf("%d / %d", f.Keyed, f.Unkeyed))
	row("retries (of them after the result)", fmt.Sprintf("%d (%d)", f.Retries, f.RetriesAfterResult))
	row("client drops (calls abandoned)", f.ClientDrops)
	row("gateway drops (drop_response armed / fired)", fmt.Sprintf("%d / %d", f.GatewayDrops, f.GatewayDropHits))
	if f.DropSetupErrors > 0 {
		row("gateway drops that could not be armed", f.DropSetupErrors)
	}
	row("pre-dispatch failures (fail armed / fired / answered `dispatch_failed`)",
		fmt.Sprintf("%d / %d / %d", f.PreDispatchFails, f.PreDispatchFailHits, f.PreDispatchFailAnswers))
	if f.FailSetupErrors > 0 {
		row("pre-dispatch failures that could not be armed", f.FailSetupErrors)
	}
	row("twin pairs", f.TwinPairs)
	row("results", f.Results)
	row("in-progress answers (retried)", f.InProgress)
	row("other errors", f.OtherErrors)
	row("operations left without a result", f.Unsettled)
	row("wall time (workload)", f.Wall.Round(time.Millisecond))
	row("calls/s", fmt.Sprintf("%.0f", f.CallsPerSec))
	row("latency p50 / p99 (answered calls)", fmt.Sprintf("%v / %v", round(f.P50), round(f.P99)))
	row("dispatches (probe / gateway log)", fmt.Sprintf("%d / %d", f.Dispatches, f.GatewayDispatches))
	row("debits / refunds (net debited)", fmt.Sprintf("%d / %d (%d)", f.Debits, f.Refunds, f.Debited))
	row("wallets", f.Wallets)
	if f.Truncated {
		p("\nThe deadline ended the workload before the calls asked for.\n")
	}
	p("\n## Invariants\n\n**%d violations.**\n\n| check | what it requires | violations |\n|---|---|---|\n", f.Violations)
	for _, c := range checks {
		p("| `%s` | %s | %d |\n", c.name, c.what, f.ByCheck[c.name])
	}
	if len(f.First) > 0 {
		p("\nFirst violations:\n\n")
		for _, v := range f.First {
			p("- %s\n", v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checks describes the model's kinds of check, in the report's order.
var checks = []struct{ name, what string }{
	{"answer", "every answer one the contract allows at its point: a result of its own operation (the same receipt on every result of it), an honest in-progress, or a refusal its situation explains (the planned `dispatch_failed` of a first call)"},
	{"shape", "every answer a 2026-07-28 result as that revision's schema writes one"},
	{"dispatches", "each operation's probe token dispatched at most once, and at least once when a result carries the probe's answer"},
	{"ledger", "each wallet: one debit of the price per operation that ran, under its receipt; a refused call's debit refunded; nothing else; the balance moved by the entries, never below zero"},
	{"decided", "every operation ends with a result, or a refusal that says nothing ran"},
}

// storeName is how the figures name a store.
func storeName(store string) string {
	if store == "sqlite" {
		return "SQLite"
	}
	return "PostgreSQL"
}
