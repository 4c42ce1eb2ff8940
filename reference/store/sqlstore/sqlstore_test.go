package sqlstore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// codeError stands for a driver error that carries a code.
type codeError struct{ code int }

func (e codeError) Error() string { return fmt.Sprintf("driver error %d", e.code) }

var dialect = sqlstore.Dialect{Sentinel: func(err error) error {
	var ce codeError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.code {
	case 1:
		return store.ErrBusy
	case 2:
		return store.ErrExists
	}
	return nil
}}

func TestClassify(t *testing.T) {
	busy := fmt.Errorf("exec: %w", codeError{1})
	tests := []struct {
		name   string
		err    error
		want   error // nil: no sentinel
		driver bool  // the driver's error stays in the chain
	}{
		{"nil", nil, nil, false},
		{"no rows", fmt.Errorf("scan: %w", sql.ErrNoRows), store.ErrNotFound, false},
		{"busy code", busy, store.ErrBusy, true},
		{"exists code", codeError{2}, store.ErrExists, true},
		{"other code", codeError{3}, nil, true},
		{"already classified", dialect.Classify(busy), store.ErrBusy, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dialect.Classify(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("Classify(nil) = %v, want nil", got)
				}
				return
			}
			for _, s := range []error{store.ErrBusy, store.ErrExists, store.ErrNotFound} {
				if is, want := errors.Is(got, s), s == tc.want; is != want {
					t.Errorf("Classify(%v) = %v: errors.Is(%v) = %v, want %v", tc.err, got, s, is, want)
				}
			}
			var ce codeError
			if kept := errors.As(got, &ce); kept != tc.driver {
				t.Errorf("Classify(%v) = %v: driver error kept = %v, want %v", tc.err, got, kept, tc.driver)
			}
		})
	}
}

// Classifying twice must not stack the sentinel: an inner step may classify
// early and the outer Wrap classifies again.
func TestWrapClassifiesOnce(t *testing.T) {
	err := dialect.Wrap("outer", dialect.Wrap("inner", codeError{1}))
	want := "outer: inner: store busy: lock timeout: driver error 1"
	if err == nil || err.Error() != want {
		t.Errorf("Wrap twice = %v, want %q", err, want)
	}
	if dialect.Wrap("op", nil) != nil {
		t.Error("Wrap of nil is not nil")
	}
}

func TestNanos(t *testing.T) {
	local := time.FixedZone("x", 3600)
	tests := []struct {
		name string
		in   time.Time
		n    int64
		back time.Time
	}{
		{"zero time is 0", time.Time{}, 0, time.Time{}},
		{"UTC", time.Unix(0, 1_700_000_000_123_456_789).UTC(), 1_700_000_000_123_456_789, time.Unix(0, 1_700_000_000_123_456_789).UTC()},
		{"other zone comes back in UTC", time.Unix(5, 6).In(local), 5_000_000_006, time.Unix(5, 6).UTC()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := sqlstore.Nanos(tc.in)
			if n != tc.n {
				t.Fatalf("Nanos(%v) = %d, want %d", tc.in, n, tc.n)
			}
			if back := sqlstore.FromNanos(n); back != tc.back {
				t.Errorf("FromNanos(%d) = %v, want %v", n, back, tc.back)
			}
		})
	}
}
