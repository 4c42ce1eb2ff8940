package effects

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
)

// TestCountIn: a count is a number or a list's length; an error, a tool
// error, a missing member or anything else is an error, never zero (a
// "not dispatched" check must not pass on a read that saw nothing).
func TestCountIn(t *testing.T) {
	for _, tc := range []struct {
		name, msg, path string
		want            int
		err             string
	}{
		{"number", `{"result":{"structuredContent":{"count":2}}}`, "result.structuredContent.count", 2, ""},
		{"list", `{"result":{"structuredContent":{"messages":[{},{},{}]}}}`, "result.structuredContent.messages", 3, ""},
		{"empty list", `{"result":{"structuredContent":{"messages":[]}}}`, "result.structuredContent.messages", 0, ""},
		{"missing", `{"result":{"structuredContent":{}}}`, "result.structuredContent.count", 0, "nothing at"},
		{"json-rpc error", `{"error":{"code":-32602,"message":"no"}}`, "result.x", 0, "refused"},
		{"tool error", `{"result":{"isError":true,"content":[]}}`, "result.x", 0, "tool error"},
		{"fraction", `{"result":{"n":1.5}}`, "result.n", 0, "not a count"},
		{"string", `{"result":{"n":"2"}}`, "result.n", 0, "neither a number nor a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countIn(json.RawMessage(tc.msg), wire.MustParsePath(tc.path), "list_messages")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("countIn = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestCountSettles: a count is taken once two reads in a row agree, so a
// read tool that shows a write a moment late is read right; one that never
// settles within the bound, or fails, gives an error (the steps make it a
// check not observed), never a count.
func TestCountSettles(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		reads []any // each read's count, or its error
		want  int
		err   error
		calls int
	}{
		{"steady", []any{1, 1}, 1, nil, 2},
		{"none yet, steady", []any{0, 0}, 0, nil, 2},
		{"shown late", []any{0, 1, 1}, 1, nil, 3},
		{"a duplicate shown late", []any{1, 2, 2}, 2, nil, 3},
		{"flapping", []any{0, 1, 0, 1, 0, 1}, 0, ErrUnstable, stableReads},
		{"still rising", []any{1, 2, 3, 4, 5}, 0, ErrUnstable, stableReads},
		{"read fails", []any{boom}, 0, boom, 1},
		{"read fails after one", []any{1, boom}, 0, boom, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			r := &Reader{fx: target.Effects{Read: target.EffectsRead{Tool: "list_messages"}}, read: func(context.Context, string) (int, error) {
				v := tc.reads[min(calls, len(tc.reads)-1)]
				calls++
				if err, ok := v.(error); ok {
					return 0, err
				}
				return v.(int), nil
			}}
			got, err := r.Count(context.Background(), "tok")
			if !errors.Is(err, tc.err) || (tc.err == nil && got != tc.want) {
				t.Errorf("Count = %d, %v; want %d, %v", got, err, tc.want, tc.err)
			}
			if calls != tc.calls {
				t.Errorf("%d reads, want %d", calls, tc.calls)
			}
		})
	}
}

// TestCountAtLeastLag: a read tool that lags its writes (a replica, a
// queue) shows an answered write late. A count below the writes answered
// is read again until the lag has passed since the last answer: shown
// within it, the write is counted; never shown, and steady, it is a lost
// write (the count below); never settling, it is no count at all.
func TestCountAtLeastLag(t *testing.T) {
	const lag = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		shows   time.Duration // when, after the answer, the effect shows; <0 never
		flaps   bool          // the count keeps moving, never settling
		want    int
		got     int
		err     error
		atLeast time.Duration // the count is not given before this
	}{
		{"shown at once", 0, false, 1, 1, nil, 0},
		{"shown within the lag", 150 * time.Millisecond, false, 1, 1, nil, 150 * time.Millisecond},
		{"never shown, steady", -1, false, 1, 0, nil, lag},
		{"never settles", -1, true, 1, 0, ErrUnstable, lag},
		{"none answered", -1, false, 0, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answered := time.Now()
			flip := 0
			r := &Reader{fx: target.Effects{Read: target.EffectsRead{Tool: "list_messages"}}, gap: 10 * time.Millisecond, lag: lag,
				read: func(context.Context, string) (int, error) {
					if tc.flaps {
						flip++
						return flip % 2, nil
					}
					if tc.shows >= 0 && time.Since(answered) >= tc.shows {
						return 1, nil
					}
					return 0, nil
				}}
			got, err := r.CountAtLeast(context.Background(), "tok", tc.want, answered)
			took := time.Since(answered)
			if !errors.Is(err, tc.err) || (tc.err == nil && got != tc.got) {
				t.Errorf("CountAtLeast = %d, %v; want %d, %v", got, err, tc.got, tc.err)
			}
			if took < tc.atLeast || took > lag+time.Second {
				t.Errorf("took %v, want at least %v and about the lag at most", took, tc.atLeast)
			}
		})
	}
}
