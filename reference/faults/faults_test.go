package faults

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestArmRejectsBadSpecs(t *testing.T) {
	r := New()
	for _, tc := range []struct {
		spec Spec
		want error
	}{
		{Spec{Point: "nowhere", Action: Pause}, ErrUnknownPoint},
		{Spec{Point: FenceRead, Action: "explode"}, ErrUnknownAction},
		{Spec{Point: FenceRead, Action: DropResponse}, ErrUnknownAction},
		{Spec{Point: LockAcquired, Action: Fail}, ErrUnknownAction},
	} {
		if _, err := r.Arm(tc.spec); !errors.Is(err, tc.want) {
			t.Errorf("Arm(%+v) = %v, want %v", tc.spec, err, tc.want)
		}
	}
}

func TestPauseHoldsUntilRelease(t *testing.T) {
	r := New()
	st, err := r.Arm(Spec{Point: FenceRead, Action: Pause, Match: Match{Tool: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Hit(context.Background(), FenceRead, Match{Tool: "other"}); got != "" {
		t.Fatalf("non-matching hit = %q, want no action", got)
	}
	done := make(chan string)
	go func() { done <- r.Hit(context.Background(), FenceRead, Match{Tool: "t"}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.Await(ctx, st.ID, 1)
	if err != nil || got.Waiting != 1 || got.Hits != 1 {
		t.Fatalf("await = %+v, %v; want one waiting hit", got, err)
	}
	select {
	case a := <-done:
		t.Fatalf("hit returned %q before release", a)
	default:
	}
	if _, err := r.Release(st.ID); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a != Pause {
		t.Fatalf("hit = %q, want %q", a, Pause)
	}
	// A released fault takes no more hits.
	if a := r.Hit(context.Background(), FenceRead, Match{Tool: "t"}); a != "" {
		t.Fatalf("hit after release = %q, want none", a)
	}
}

func TestCountLimitsHitsAndOldestWins(t *testing.T) {
	r := New()
	first, _ := r.Arm(Spec{Point: DispatchBefore, Action: Fail, Count: 2})
	r.Arm(Spec{Point: DispatchBefore, Action: Pause})
	for i := 0; i < 2; i++ {
		if a := r.Hit(context.Background(), DispatchBefore, Match{}); a != Fail {
			t.Fatalf("hit %d = %q, want fail", i, a)
		}
	}
	st, _ := r.Get(first.ID)
	if st.Hits != 2 {
		t.Fatalf("hits = %d, want 2", st.Hits)
	}
	r.Reset()
	if len(r.List()) != 0 {
		t.Fatal("reset left faults")
	}
}

func TestAwaitTimesOut(t *testing.T) {
	r := New()
	st, _ := r.Arm(Spec{Point: ReserveDone, Action: Pause})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Await(ctx, st.ID, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("await = %v, want deadline exceeded", err)
	}
}

// TestArmed: a fault is armed for a hit it would take, and no longer once
// its hits are used up or it is released.
func TestArmed(t *testing.T) {
	r := New()
	if r.Armed(ClaimHeld, Match{Tool: "t"}) {
		t.Fatal("armed with no fault")
	}
	held, err := r.Arm(Spec{Point: ClaimHeld, Action: Pause, Match: Match{Tool: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		point string
		m     Match
		want  bool
	}{
		{ClaimHeld, Match{Tool: "t", WalletID: "w"}, true},
		{ClaimHeld, Match{Tool: "other"}, false},
		{FenceRead, Match{Tool: "t"}, false},
	} {
		if got := r.Armed(tc.point, tc.m); got != tc.want {
			t.Errorf("Armed(%s, %+v) = %v, want %v", tc.point, tc.m, got, tc.want)
		}
	}
	if _, err := r.Release(held.ID); err != nil {
		t.Fatal(err)
	}
	if r.Armed(ClaimHeld, Match{Tool: "t"}) {
		t.Error("armed after release")
	}
	if _, err := r.Arm(Spec{Point: DispatchBefore, Action: Fail}); err != nil {
		t.Fatal(err)
	}
	if got := r.Hit(context.Background(), DispatchBefore, Match{Tool: "t"}); got != Fail {
		t.Fatalf("hit = %q", got)
	}
	if r.Armed(DispatchBefore, Match{Tool: "t"}) {
		t.Error("armed after its one hit")
	}
}

// A crash is carried out by Kill at the point, once, for a matching call
// only; the real Kill (KillSelf) would end the test process.
func TestCrashKillsAtThePoint(t *testing.T) {
	r := New()
	kills := 0
	r.Kill = func() { kills++ }
	if _, err := r.Arm(Spec{Point: ReserveDone, Action: Crash, Match: Match{Tool: "t"}}); err != nil {
		t.Fatal(err)
	}
	if !r.Armed(ReserveDone, Match{Tool: "t"}) {
		t.Fatal("a crash armed at reserve.done is not Armed there")
	}
	if got := r.Hit(context.Background(), ReserveDone, Match{Tool: "other"}); got != "" || kills != 0 {
		t.Fatalf("another tool's call met the crash: %q, %d kills", got, kills)
	}
	if got := r.Hit(context.Background(), ReserveDone, Match{Tool: "t"}); got != Crash || kills != 1 {
		t.Fatalf("Hit = %q with %d kills, want crash and 1", got, kills)
	}
	if got := r.Hit(context.Background(), ReserveDone, Match{Tool: "t"}); got != "" || kills != 1 {
		t.Fatalf("a second hit met the spent crash: %q, %d kills", got, kills)
	}
}
