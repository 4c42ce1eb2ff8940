package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

func invokeOp(process string, c *wire.Call) reports.Op {
	return reports.Op{Process: process, Type: "invoke", F: reports.FCall,
		Value: mustJSON(reports.CallValue{Tool: c.Tool, Key: c.IdempotencyKey, Token: tokenOf(c), Arguments: c.Arguments})}
}

// outcomeOp classifies an answer: ok with a receipt, fail for a definite
// refusal, info when the outcome is unknown (transport error, in progress).
// A refusal carries its meaning under the profile's reason mappings.
func outcomeOp(p *target.Profile, process string, c *wire.Call, a *answer, err error) reports.Op {
	v := reports.CallValue{Tool: c.Tool, Key: c.IdempotencyKey, Token: tokenOf(c)}
	typ := "info"
	if a != nil {
		v.Status = a.Status
	}
	switch {
	case a == nil || a.TransportError != "":
		if err != nil {
			v.Error = err.Error()
		} else if a != nil {
			v.Error = a.TransportError
		}
	case a.IsResult():
		typ, v.Receipt = "ok", a.Receipt()
		v.Served = tokenIn(a.ResultField("structuredContent"))
	case a.IsRefusal():
		v.Reason, v.Retryable = a.ErrorReason(), a.Retryable()
		v.Means = meanings(p, a)
		if !a.Retryable() {
			typ = "fail"
		}
	}
	return reports.Op{Process: process, Type: typ, F: reports.FCall, Value: mustJSON(v)}
}

// meanings are the reasons of docs/wire.md a refusal means under the
// profile's reason mappings, as isReason reads it; nil when the profile
// maps none or data.reason is the refusal's only meaning, which the
// history has already.
func meanings(p *target.Profile, a *answer) []string {
	if p == nil || len(p.Reasons) == 0 {
		return nil
	}
	var out []string
	for _, r := range target.KnownReasons {
		if p.Matches(r, a.ErrorReason(), a.ErrorCode(), a.Status) {
			out = append(out, r)
		}
	}
	if len(out) == 1 && out[0] == a.ErrorReason() {
		return nil
	}
	return out
}

// recordEffects appends the effects to the history once: every probe
// dispatch of this scenario's tokens and every debit and refund of its
// wallet, each an event traced to its operation.
func (w *world) recordEffects(ctx context.Context) error {
	w.mu.Lock()
	done := w.effectsRecorded
	w.effectsRecorded = true
	w.mu.Unlock()
	if done {
		return nil
	}
	if w.env.Probe != nil && w.has(reports.CapUpstream) {
		mine := w.tokenSet()
		ds, err := w.env.Probe.Dispatches(ctx, w.env.RunID)
		if err != nil {
			return fmt.Errorf("read the probe for the history: %w", err)
		}
		for _, d := range ds {
			if mine[d.Token] {
				w.record(reports.Op{Process: "upstream", Type: "ok", F: reports.FDispatch, Time: d.At,
					Value: mustJSON(reports.EffectValue{Token: d.Token})})
			}
		}
	}
	if w.walletID == "" || !w.has(reports.CapLedger) {
		return nil
	}
	l, err := w.ledger(ctx)
	if err != nil {
		return fmt.Errorf("read the ledger for the history: %w", err)
	}
	for _, e := range w.scenarioEntries(l) {
		f := map[string]string{reports.EntryDebit: reports.FDebit, reports.EntryRefund: reports.FRefund}[e.Kind]
		if f == "" {
			f = reports.FEntry
		}
		w.record(reports.Op{Process: "ledger", Type: "ok", F: f, Time: e.At,
			Value: mustJSON(reports.EffectValue{Amount: e.Amount, Receipt: e.Receipt, Kind: e.Kind, Tool: e.Tool})})
	}
	return nil
}

// dispatchesIn are the history's dispatch events of some tokens.
func dispatchesIn(ops []reports.Op, tokens []string) []reports.Dispatch {
	var out []reports.Dispatch
	for _, op := range ops {
		var v reports.EffectValue
		if op.F == reports.FDispatch && json.Unmarshal(op.Value, &v) == nil && slices.Contains(tokens, v.Token) {
			out = append(out, reports.Dispatch{Token: v.Token, At: op.Time})
		}
	}
	return out
}

// The probe's stall, unstall and wait, recorded with the control calls as
// the requests its observation API takes (/probe/v1/...), so repro replays
// them against a probe of its own.

func (w *world) probeStall(ctx context.Context, token string) error {
	return w.probeAction(ctx, "stall", map[string]any{"token": token}, func() error { return w.env.Probe.Stall(ctx, token) })
}

func (w *world) probeUnstall(ctx context.Context, token string) error {
	return w.probeAction(ctx, "unstall", map[string]any{"token": token}, func() error { return w.env.Probe.Unstall(ctx, token) })
}

func (w *world) probeWait(ctx context.Context, token string, n int) error {
	return w.probeAction(ctx, "wait", map[string]any{"token": token, "n": n, "timeout": "60s"}, func() error { return w.env.Probe.WaitFor(ctx, token, n) })
}

func (w *world) probeAction(ctx context.Context, action string, body map[string]any, do func() error) error {
	ex := reports.Exchange{Label: "probe " + action, Lane: "probe", Method: "POST",
		URL: strings.TrimSuffix(w.env.Probe.URL(), "/mcp") + "/probe/v1/" + action, RequestBody: mustJSON(body), Started: time.Now().UTC()}
	err := do()
	ex.Finished = time.Now().UTC()
	if err != nil {
		ex.Error = err.Error()
	}
	w.addControl(ex)
	return err
}
