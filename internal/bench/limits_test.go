package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestIdeal(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bare, store float64
		want        float64
	}{
		{"equal rates halve", 1000, 1000, 500},
		{"times per call add", 3000, 1500, 1000}, // 1/3000 + 1/1500 = 1/1000
		{"a fast store costs little", 2000, 1e9, 2000 * 1e9 / (2000 + 1e9)},
		{"symmetric", 1500, 3000, 1000},
		{"no bare figure", 0, 1000, 0},
		{"no store figure", 1000, 0, 0},
		{"negative", -1, 1000, 0},
		{"NaN", math.NaN(), 1000, 0},
		{"Inf", math.Inf(1), 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ideal(tc.bare, tc.store); math.Abs(got-tc.want) > 1e-9*math.Max(1, tc.want) {
				t.Errorf("Ideal(%v, %v) = %v, want %v", tc.bare, tc.store, got, tc.want)
			}
		})
	}
}

func TestRoundLimits(t *testing.T) {
	st := func(name string, rate float64) Stats {
		calls := int(rate)
		return Stats{Name: name, Calls: calls, Rate: rate, Elapsed: time.Second}
	}
	full := Round{Baseline: st(PhaseBaseline, 3000), First: st(PhaseKeyedFirst, 600), Replay: st(PhaseKeyedReplay, 1800),
		Unkeyed: st(PhaseUnkeyed, 500),
		Store:   &StoreRound{First: st(PhaseStoreFirst, 1500), Replay: st(PhaseStoreReplay, 6000), Unkeyed: st(PhaseStoreUnkeyed, 1000)}}
	nothing := full
	nothing.First = Stats{Name: PhaseKeyedFirst, Rate: 12} // a rate with no counted call is no rate
	nothing.Store = &StoreRound{First: full.Store.First, Replay: Stats{Name: PhaseStoreReplay}, Unkeyed: full.Store.Unkeyed}
	type want struct {
		phase                string
		ideal, ofBare, ofIdl float64
	}
	for _, tc := range []struct {
		name  string
		round Round
		want  []want
	}{
		{"no store alone", Round{Baseline: full.Baseline, First: full.First}, nil},
		{"every kind", full, []want{
			{PhaseKeyedFirst, 1000, 0.2, 0.6},  // 1/(1/3000+1/1500)
			{PhaseKeyedReplay, 2000, 0.6, 0.9}, // the bare server plus a replay's reads
			{PhaseUnkeyed, 750, 500.0 / 3000, 500.0 / 750},
		}},
		{"missing figures give none", nothing, []want{
			{PhaseKeyedFirst, 1000, 0, 0},
			{PhaseKeyedReplay, 0, 0.6, 0},
			{PhaseUnkeyed, 750, 500.0 / 3000, 500.0 / 750},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.round.Limits()
			if len(got) != len(tc.want) {
				t.Fatalf("%d limits, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Phase != w.phase || !near(g.Ideal, w.ideal) || !near(g.OfBare(), w.ofBare) || !near(g.OfIdeal(), w.ofIdl) {
					t.Errorf("limit %d = %+v (× bare %v, × ideal %v), want %+v", i, g, g.OfBare(), g.OfIdeal(), w)
				}
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

func TestMedianLimit(t *testing.T) {
	st := func(rate float64) Stats { return Stats{Calls: 1, Rate: rate} }
	round := func(bare, store, gw float64) Round {
		return Round{Baseline: st(bare), First: st(gw), Store: &StoreRound{First: st(store)}}
	}
	// Ideals 1000, 1200, 750; fractions of ideal 0.5, 0.75, 0.8: the
	// median fraction (0.75) is not the medians' (600/1000); × bare 0.25, 0.45, 0.4.
	rounds := []Round{round(2000, 2000, 500), round(2000, 3000, 900), round(1500, 1500, 600), {Baseline: st(9999)}}
	l, ofBare, ofIdeal, n := medianLimit(rounds, PhaseKeyedFirst)
	if n != 3 || l.Bare != 2000 || l.Store != 2000 || l.Ideal != 1000 || l.Gateway != 600 || !near(ofBare, 0.4) || !near(ofIdeal, 0.75) {
		t.Errorf("medianLimit = %+v, × bare %v, × ideal %v, n %d", l, ofBare, ofIdeal, n)
	}
}

func TestRenderLimits(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	if err := Render(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
	}{
		{"section", "## Same-run limits (SQLite)"},
		{"first call row", "| keyed first calls | 1 | 1800/s | 900/s | Reserve with its charge, then Finish | 600/s | 500/s | 0.28× | 0.83× |"},
		{"replay's ideal: bare plus reads", "| keyed replays | 1 | 1800/s | 9000/s | the API key and the record read | 1500/s | 1700/s | 0.94× | 1.13× |"},
		{"median row", "| keyed first calls | median of 3 |"},
		{"store-alone error", "- SQLite, store alone: unkeyed calls: 2 error(s), first: reserve slot: store busy"},
		{"round databases", "Every round runs on a fresh database file."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("rendered page lacks %q", tc.want)
			}
		})
	}
	// A store measured without the store alone has no such section.
	if strings.Count(b.String(), "## Same-run limits") != 1 {
		t.Errorf("want one same-run limits section:\n%s", b.String())
	}
}
