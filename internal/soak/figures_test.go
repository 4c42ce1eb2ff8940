package soak

import "testing"

// The planned faults are counted as such, never as other errors, and a
// fault's answer on a later call is not counted as planned.
func TestTally(t *testing.T) {
	type counts struct {
		gatewayDrops, fails, failAnswers, otherErrors, results, debits, refunds int
		debited                                                                 int64
	}
	clean := counts{gatewayDrops: 1, fails: 1, failAnswers: 1, results: 8, debits: 7, refunds: 2, debited: 15}
	oneOther := clean
	oneOther.otherErrors = 1
	cases := []struct {
		name string
		edit func(h *History)
		want counts
	}{
		{"clean", func(*History) {}, clean},
		{"dispatch_failed on a retry", func(h *History) {
			o := &h.Ops[4]
			o.Attempts = append(o.Attempts, failedBefore(3))
		}, oneOther},
		{"broken connection on a gateway drop's retry", func(h *History) {
			o := &h.Ops[2]
			o.Attempts = append(o.Attempts, Attempt{Proc: 0, Kind: KindTransport, Detail: "EOF"})
		}, oneOther},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := cleanHistory()
			c.edit(&h)
			var f Figures
			tally(&f, h)
			got := counts{f.GatewayDrops, f.PreDispatchFails, f.PreDispatchFailAnswers, f.OtherErrors,
				f.Results, f.Debits, f.Refunds, f.Debited}
			if got != c.want {
				t.Errorf("tally: got %+v, want %+v", got, c.want)
			}
		})
	}
}
