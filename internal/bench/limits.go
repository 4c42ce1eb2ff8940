package bench

import (
	"fmt"
	"math"
)

// StoreRound is the store alone in one interleaved round: a keyed first
// call's durable work, a replay's reads and an unkeyed call's durable work
// (StoreAlone), at the load's concurrency.
type StoreRound struct {
	First   Stats `json:"first"`
	Replay  Stats `json:"replay"`
	Unkeyed Stats `json:"unkeyed"`
}

// Ideal is the rate of a call that does the bare server's work and the
// store's one after the other, each at its own measured rate, with nothing
// else in between: 1 / (1/bare + 1/store), the times per call added. 0
// when either rate is missing (not measured, or nothing answered).
func Ideal(bare, store float64) float64 {
	if bare <= 0 || store <= 0 || math.IsNaN(bare) || math.IsNaN(store) || math.IsInf(bare, 0) || math.IsInf(store, 0) {
		return 0
	}
	return 1 / (1/bare + 1/store)
}

// Limit is one call kind's same-run limit in one round: the bare server,
// the store alone, their ideal composition and the gateway, with the
// gateway's rate as a fraction of each.
type Limit struct {
	Phase   string  // the gateway phase: PhaseKeyedFirst, PhaseKeyedReplay, PhaseUnkeyed
	Bare    float64 // calls/s
	Store   float64 // the store alone's calls/s
	Ideal   float64 // Ideal(Bare, Store)
	Gateway float64 // calls/s
}

// OfBare is the gateway's rate over the bare server's (RateRatio's
// figure), 0 when either is missing.
func (l Limit) OfBare() float64 { return frac(l.Gateway, l.Bare) }

// OfIdeal is the gateway's rate over the ideal composition's, 0 when
// either is missing.
func (l Limit) OfIdeal() float64 { return frac(l.Gateway, l.Ideal) }

func frac(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// Limits are the round's same-run limits, by call kind: keyed first calls,
// replays (whose store part is a replay's reads) and unkeyed calls; nil
// when the store alone was not measured.
func (r Round) Limits() []Limit {
	if r.Store == nil {
		return nil
	}
	rate := func(s Stats) float64 {
		if s.Calls == 0 {
			return 0
		}
		return s.Rate
	}
	bare := rate(r.Baseline)
	mk := func(phase string, store, gw Stats) Limit {
		l := Limit{Phase: phase, Bare: bare, Store: rate(store), Gateway: rate(gw)}
		l.Ideal = Ideal(l.Bare, l.Store)
		return l
	}
	return []Limit{
		mk(PhaseKeyedFirst, r.Store.First, r.First),
		mk(PhaseKeyedReplay, r.Store.Replay, r.Replay),
		mk(PhaseUnkeyed, r.Store.Unkeyed, r.Unkeyed),
	}
}

// medianLimit is, for phase, the median over the rounds of each figure of
// its Limit (each column's own median, so the row is not one round's), and
// the median of the two fractions.
func medianLimit(rounds []Round, phase string) (l Limit, ofBare, ofIdeal float64, n int) {
	var bare, store, ideal, gw, ob, oi []float64
	for _, r := range rounds {
		for _, x := range r.Limits() {
			if x.Phase != phase {
				continue
			}
			bare, store, ideal, gw = append(bare, x.Bare), append(store, x.Store), append(ideal, x.Ideal), append(gw, x.Gateway)
			ob, oi = append(ob, x.OfBare()), append(oi, x.OfIdeal())
		}
	}
	l = Limit{Phase: phase, Bare: Median(bare), Store: Median(store), Ideal: Median(ideal), Gateway: Median(gw)}
	return l, Median(ob), Median(oi), len(gw)
}

// limitStoreWork says what the store alone does for phase's call kind.
func limitStoreWork(phase string) string {
	switch phase {
	case PhaseKeyedReplay:
		return "the API key and the record read"
	case PhaseUnkeyed:
		return "ReserveSlot, then Finish"
	}
	return "Reserve with its charge, then Finish"
}

// renderLimits writes, per store, the same-run limits table: each gateway
// phase against the bare server and against the ideal composition of the
// bare server and the store alone, measured in the same rounds.
func renderLimits(p func(string, ...any), r Results) {
	for _, st := range r.Stores {
		if !roundsHaveStore(st.Rounds) {
			continue
		}
		p("\n## Same-run limits (%s)\n\n", st.Store)
		p("In every round, right after the bare server, the store alone ran each call kind's store work through the store package, at the same concurrency, " +
			"with no MCP, HTTP or JSON-RPC in between, on a fresh database of the same kind: a keyed first call's durable work (the reservation with its auto permit and charge, then the outcome with its dispatch row), " +
			"an unkeyed call's (ReserveSlot, then the outcome), and a replay's reads (the tool, then the stored record); a first call's reads before it reserves are left out. " +
			"*Ideal* is the rate of a call that does the bare server's work and the store's one after the other with nothing else: 1 / (1/bare + 1/store). " +
			"*× ideal* is the gateway's rate over that: what is left to win by a cheaper composition, not by a faster store or MCP stack. " +
			"Each round's figures are its own; the median row takes each column's median, the fractions' too (the median of the rounds' fractions, not the medians' fraction).\n\n")
		p("| call | round | bare server | store alone | store work | ideal | gateway | × bare | × ideal |\n|---|---:|---:|---:|---|---:|---:|---:|---:|\n")
		for _, phase := range []string{PhaseKeyedFirst, PhaseKeyedReplay, PhaseUnkeyed} {
			for i, rd := range st.Rounds {
				for _, l := range rd.Limits() {
					if l.Phase == phase {
						p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", phase, i+1, fmtRateOr(l.Bare), fmtRateOr(l.Store), limitStoreWork(phase),
							fmtRateOr(l.Ideal), fmtRateOr(l.Gateway), fmtFrac(l.OfBare()), fmtFrac(l.OfIdeal()))
					}
				}
			}
			if l, ob, oi, n := medianLimit(st.Rounds, phase); n > 1 {
				p("| %s | median of %d | %s | %s | | %s | %s | **%s** | **%s** |\n", phase, n, fmtRateOr(l.Bare), fmtRateOr(l.Store),
					fmtRateOr(l.Ideal), fmtRateOr(l.Gateway), fmtFrac(ob), fmtFrac(oi))
			}
		}
		var errs []string
		seen := map[string]bool{}
		for _, rd := range st.Rounds {
			if rd.Store == nil {
				continue
			}
			for _, ph := range []Stats{rd.Store.First, rd.Store.Replay, rd.Store.Unkeyed} {
				if ph.FirstError != "" && !seen[ph.Name] {
					seen[ph.Name] = true
					errs = append(errs, fmt.Sprintf("- %s, %s: %d error(s), first: %s\n", st.Store, ph.Name, ph.Errors, cell(ph.FirstError)))
				}
			}
		}
		if len(errs) > 0 {
			p("\n")
			for _, e := range errs {
				p("%s", e)
			}
		}
	}
}

func roundsHaveStore(rounds []Round) bool {
	for _, r := range rounds {
		if r.Store != nil {
			return true
		}
	}
	return false
}

// fmtRateOr is a rate, or "–" when there is none.
func fmtRateOr(r float64) string {
	if r <= 0 || math.IsNaN(r) {
		return "–"
	}
	return fmtRate(r)
}

// fmtFrac is a ratio, or "–" when there is none (0).
func fmtFrac(r float64) string {
	if r <= 0 {
		return "–"
	}
	return fmtRatio(r)
}
