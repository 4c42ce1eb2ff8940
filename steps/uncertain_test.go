package steps

import (
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// TestHeldRefusal: a retry of an operation whose holder waits at a pause is
// held to in progress only while the record cannot be stale, to
// outcome_unknown only once it must be, and to either where the threshold
// or the age cannot say.
func TestHeldRefusal(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name              string
		least, most, lock time.Duration
		known             bool
		want              string
	}{
		{"past the threshold since the holder waited", 121 * s, 122 * s, 120 * s, true, judge.ReasonOutcomeUnknown},
		{"exactly the threshold since the holder waited", 120 * s, 121 * s, 120 * s, true, judge.ReasonOutcomeUnknown},
		{"short of the threshold since the holder began", 61 * s, 62 * s, 120 * s, true, judge.ReasonInProgress},
		{"straddling the threshold", 119 * s, 121 * s, 120 * s, true, ""},
		{"the threshold unknown", 121 * s, 122 * s, 0, true, ""},
		{"no holder seen waiting", 0, 0, 120 * s, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldRefusal(tc.least, tc.most, tc.lock, tc.known); got != tc.want {
				t.Errorf("heldRefusal(%v, %v, %v, %v) = %q, want %q", tc.least, tc.most, tc.lock, tc.known, got, tc.want)
			}
		})
	}
}

// TestHolderAge: the record's age is bounded below by the holder's wait at
// its pause and above by its call's start, on the gateway clock the
// history's clock events set.
func TestHolderAge(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	later := at(3*time.Millisecond + 121*time.Second)
	ops := []judge.Op{
		{Process: "A", Type: judge.Invoke, F: judge.FCall, Time: at(time.Millisecond), Value: mustJSON(judge.CallValue{Tool: "write"})},
		{Process: "harness", Type: judge.OK, F: judge.FEnv, Time: at(2 * time.Millisecond), Value: mustJSON(judge.EnvValue{Kind: judge.EnvWaiting, Client: "A"})},
		{Process: "harness", Type: judge.OK, F: judge.FEnv, Time: at(3 * time.Millisecond), Value: mustJSON(judge.EnvValue{Kind: judge.EnvClock, Now: &later, Frozen: true})},
		{Process: "B", Type: judge.Invoke, F: judge.FCall, Time: at(4 * time.Millisecond), Value: mustJSON(judge.CallValue{Tool: "write"})},
		{Process: "B", Type: judge.Fail, F: judge.FCall, Time: at(5 * time.Millisecond), Value: mustJSON(judge.CallValue{Reason: judge.ReasonInProgress})},
	}
	w := &world{history: ops}
	least, most, known := w.holderAge("A", "B")
	if !known || least != 121*time.Second+time.Millisecond || most != 121*time.Second+2*time.Millisecond {
		t.Errorf("holderAge = %v, %v, %v; want 121.001s, 121.002s, true", least, most, known)
	}
	if _, _, known := w.holderAge("C", "B"); known {
		t.Error("holderAge of a holder that made no call is known")
	}
}
