package steps

import (
	"testing"
	"time"
)

func TestShortOfWindow(t *testing.T) {
	got, err := shortOfWindow(120*time.Second, "500ms")
	if err != nil || got != 119500*time.Millisecond {
		t.Fatalf("500ms short of 120s = %v, %v; want 119.5s", got, err)
	}
	for _, bad := range []string{"0s", "-1s", "120s", "2m1s", "soon"} {
		if got, err := shortOfWindow(120*time.Second, bad); err == nil {
			t.Errorf("%q short of 120s = %v, want an error", bad, got)
		}
	}
}
