package gateway_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// TestDispatchPanic: a dispatch that panics may have done its work before
// it crashed, so it is finished as a call whose outcome is unknown: charged
// once, its dispatch logged, an isError result stored for retries to replay.
// The caller is answered internal_error, never left with a record in
// progress (charged, so never taken over) that every retry is told to wait
// for.
func TestDispatchPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    req
	}{
		{"client key", req{key: "panic-1"}},
		{"unkeyed", req{args: `{"text":"crash"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			each(t, func(t *testing.T, e *env) {
				// Read once the call is answered: the gateway logs a
				// dispatch's panic before it answers.
				logs := &bytes.Buffer{}
				g, err := gateway.New(gateway.Options{Store: e.st, Clock: e.clk, Faults: e.faults, Dispatcher: e.disp,
					Settings: gateway.DefaultSettings(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
				e.must(err)
				e.g = g
				e.disp.mu.Lock()
				e.disp.panics = 1
				e.disp.mu.Unlock()

				_, err = e.call(tc.r)
				var ref *gateway.Refusal
				if !errors.As(err, &ref) || ref.Reason != gateway.ReasonInternal || ref.Code != gateway.Codes[gateway.ReasonInternal] {
					t.Fatalf("the call whose dispatch panicked: %v, want refusal %s", err, gateway.ReasonInternal)
				}
				receipt, _ := ref.Data["receipt"].(string)
				if receipt == "" {
					t.Errorf("refusal data %v: want the receipt the outcome is stored under", ref.Data)
				}
				if got := logs.String(); !strings.Contains(got, "crashed") || !strings.Contains(got, "level=ERROR") {
					t.Errorf("log %q: want the panic logged as an error", got)
				}
				crashed := e.ledger()

				resp, err := e.call(tc.r)
				if err != nil {
					t.Fatalf("retry: %v, want the stored outcome replayed", err)
				}
				rc, res, err := receiptOf(resp)
				if err != nil {
					t.Fatal(err)
				}
				n, derr := e.dispatches(e.write)
				if derr != nil {
					t.Fatal(derr)
				}
				for _, c := range []struct {
					what     string
					got, exp any
				}{
					{"debits after the panic", crashed.debits, 1},
					{"refunds after the panic", crashed.refunds, 0},
					{"retry replayed", rc.Replayed, true},
					{"retry receipt", rc.ID, receipt},
					{"retry charged", rc.Charged, int64(price)},
					{"replayed isError", res.IsError, true},
					{"dispatches", n, 1},
					{"debits after the retry", e.ledger().debits, 1},
				} {
					if err := want(c.what, c.got, c.exp); err != nil {
						t.Error(err)
					}
				}
			})
		})
	}
}
