package soak

import (
	"math"
	"testing"
)

// A seed decides each operation on its own, whatever ran before it: that is
// what lets a failing run be replayed from the seed its report names.
func TestPlanIsTheSeeds(t *testing.T) {
	m := DefaultMix()
	for _, i := range []int{0, 1, 17, 4096} {
		a, b := planOp(42, i, 4, 8, m), planOp(42, i, 4, 8, m)
		a.rng, b.rng = nil, nil
		if a.keyed != b.keyed || a.wallet != b.wallet || a.shape != b.shape || a.first != b.first ||
			a.twin != b.twin || a.dropAfter != b.dropAfter || a.pause != b.pause || len(a.retries) != len(b.retries) {
			t.Errorf("op %d: two plans from one seed differ: %+v and %+v", i, a, b)
		}
	}
}

func TestPlanMix(t *testing.T) {
	const n = 20_000
	cases := []struct {
		name  string
		procs int
		mix   Mix
	}{
		{"default, 4 processes", 4, DefaultMix()},
		{"default, 2 processes", 2, DefaultMix()},
		{"only twins", 3, Mix{Twins: 1}},
		{"one process: no twins", 1, Mix{Twins: 1, Keyed: 1}},
		{"only pre-dispatch failures", 4, Mix{FailBefore: 1}},
		{"every shape at once", 4, Mix{Twins: 0.25, ClientDrop: 0.25, GatewayDrop: 0.25, FailBefore: 0.25}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			count := map[Shape]int{}
			keyed, retries := 0, 0
			for i := range n {
				p := planOp(7, i, c.procs, 8, c.mix)
				count[p.shape]++
				if p.keyed {
					keyed++
				}
				retries += len(p.retries)
				if p.shape == ShapeTwins && p.twin == p.first {
					t.Fatalf("op %d: twins on one process %d", i, p.first)
				}
				if p.first < 0 || p.first >= c.procs || p.wallet < 0 || p.wallet >= 8 {
					t.Fatalf("op %d: process %d or wallet %d out of range", i, p.first, p.wallet)
				}
			}
			twins := c.mix.Twins
			if c.procs < 2 {
				twins = 0
			}
			near := func(what string, got int, p float64) {
				if math.Abs(float64(got)/n-p) > 0.02 {
					t.Errorf("%s: %d of %d, want about %.0f%%", what, got, n, p*100)
				}
			}
			near("twins", count[ShapeTwins], twins)
			near("client drops", count[ShapeClientDrop], c.mix.ClientDrop)
			near("gateway drops", count[ShapeGatewayDrop], c.mix.GatewayDrop)
			near("pre-dispatch failures", count[ShapeFailBefore], c.mix.FailBefore)
			near("keyed", keyed, c.mix.Keyed)
			near("retries after the result", retries, c.mix.Retry1+2*c.mix.Retry2)
		})
	}
}
