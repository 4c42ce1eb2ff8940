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
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// invokeOp is a call as the harness makes it: the tool, key, token and
// arguments, and what the model needs to know of it that the wire does not
// say (who sent it, as which principal, the tool's role and price).
func (w *world) invokeOp(c *client, call *wire.Call) judge.Op {
	v := judge.CallValue{Tool: call.Tool, Key: call.IdempotencyKey, Token: tokenOf(call), Arguments: call.Arguments,
		URL: c.url, Credential: c.credential, Wallet: c.wallet, Principal: c.principal, Forged: c.forged, Permit: call.PermitID,
		Dropped: call.DropAfterSend}
	w.mu.Lock()
	if t, ok := w.toolInfo[call.Tool]; ok {
		v.Role, v.Price = t.role, &t.price
	}
	w.mu.Unlock()
	return judge.Op{Process: c.name, Type: judge.Invoke, F: judge.FCall, Value: mustJSON(v)}
}

// outcomeOp classifies an answer: ok with a result, fail for a definite
// refusal, info when the outcome is unknown (transport error, in
// progress). A refusal carries its meaning under the profile's reason
// mappings; a result what the model compares (its digest, resultType,
// content list, and the token whose probe answer it carries).
func outcomeOp(p *target.Profile, c *client, call *wire.Call, inv int, a *answer, err error) judge.Op {
	v := judge.CallValue{Tool: call.Tool, Key: call.IdempotencyKey, Token: tokenOf(call), Call: &inv}
	if c.wire != nil {
		v.Wire = c.wire.Version()
	}
	typ := judge.Info
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
		r := a.ResultValue()
		typ = judge.OK
		v.Receipt, v.Served, v.Digest, v.ResultType, v.NoContent, v.InputRequired = a.Receipt(), r.Served, r.Digest, r.ResultType, r.NoContent, r.InputRequired
		v.Replayed, v.Charged, v.IsError = r.Replayed, r.Charged, r.IsError
	case a.IsRefusal():
		refusalValue(p, a, &v)
		if !v.ReadRetryable() {
			typ = judge.Fail
		}
		v.RetryAfter = retryAfterOf(a, v)
	case a.Status >= 400:
		refusalValue(p, a, &v)
		// An in-progress status (the IETF draft's 409) decides nothing:
		// the outcome stays unknown, as for a retryable JSON-RPC refusal.
		if len(v.Means) > 0 && !slices.Contains(v.Means, judge.ReasonInProgress) {
			typ = judge.Fail
		}
		v.RetryAfter = retryAfterOf(a, v)
	}
	return judge.Op{Process: c.name, Type: typ, F: judge.FCall, Value: mustJSON(v)}
}

// refusalValue fills in what the model reads of a refusal: its reason,
// data.retryable and receipt, its meanings under the profile, and whether
// the mapping of its status makes it retryable. A refusal made before any
// JSON-RPC (an HTTP status the profile maps) has its meanings alone. The
// live checks read retryability from the same value (retryableIs), so a
// refusal is classified once.
func refusalValue(p *target.Profile, a *answer, v *judge.CallValue) {
	v.Means = meanings(p, a)
	if !a.IsRefusal() {
		v.HTTPOnly = true
		return
	}
	v.Reason, v.Retryable, v.Receipt = a.ErrorReason(), a.Retryable(), a.ErrorReceipt()
	v.StatusRetryable = statusRetryable(p, a)
}

// statusRetryable says a JSON-RPC refusal has no data.retryable and the
// profile maps its HTTP status to in progress: the mapping says it is
// retried, as it says for the same status answered in HTTP alone; unless
// its data.reason names another contract answer, whose own retryability
// (outcome_unknown's: never) the status does not change.
func statusRetryable(p *target.Profile, a *answer) bool {
	return p != nil && a.IsRefusal() && !a.HasRetryable() && p.StatusMeans(judge.ReasonInProgress, a.Status, a.Body) &&
		!p.NamesAnother(judge.ReasonInProgress, a.ErrorReason())
}

// retryAfterOf is a refusal's Retry-After header as the history keeps it:
// its value when it has one, "" for an in-progress refusal without one (the
// retry-after check holds that against it), nil otherwise.
func retryAfterOf(a *answer, v judge.CallValue) *string {
	ra := ""
	if a.Header != nil {
		ra = a.Header.Get("Retry-After")
	}
	if ra == "" && !v.MeansReason(judge.ReasonInProgress) {
		return nil
	}
	return &ra
}

// noteEnv records a change the harness made to the target or the probe.
func (w *world) noteEnv(e judge.EnvValue) {
	w.record(judge.Op{Process: "harness", Type: judge.OK, F: judge.FEnv, Value: mustJSON(e)})
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
		if p.MatchesBody(r, a.ErrorReason(), a.ErrorCode(), a.Status, a.Body) {
			out = append(out, r)
		}
	}
	if len(out) == 1 && out[0] == a.ErrorReason() {
		return nil
	}
	return out
}

// recordEffects appends the effects to the history: every dispatch of this
// scenario's tokens the history does not hold yet, on every call (the one
// the scenario ends with, after the observer was quiet, adds a dispatch
// that came after a step read them: a late duplicate the model then
// judges), and once every debit and refund of its wallet (later ones are
// the final read's).
func (w *world) recordEffects(ctx context.Context) error {
	if obs, observer := w.env.observer(); obs != nil {
		tokens := w.tokenList()
		ds, err := obs.Dispatches(ctx, tokens)
		switch {
		case err != nil && observer == judge.CapEffects:
			// The target's own read tool failed or never settled: its
			// counts are not observed (the model says so), which is no
			// failure of the target's and no error of the harness's.
			for _, t := range tokens {
				w.noteEnv(judge.EnvValue{Kind: judge.EnvUnread, Token: t, Action: err.Error()})
			}
			ds = nil
		case err != nil:
			return fmt.Errorf("read the %s for the history: %w", observerName(observer), err)
		}
		w.mu.Lock()
		late := unrecorded(w.history, ds)
		ended, past := w.ended, w.stepIdx+1
		w.mu.Unlock()
		for _, d := range late {
			op := dispatchOp(d)
			if ended {
				// Past every step: a step's check recomputed from the
				// history sees what it saw, not this late one (the
				// model's to judge).
				op.Step = &past
			}
			w.record(op)
		}
	}
	w.mu.Lock()
	done := w.effectsRecorded
	w.effectsRecorded = true
	w.mu.Unlock()
	if done {
		return nil
	}
	if w.walletID == "" || !w.has(judge.CapLedger) {
		return nil
	}
	l, err := w.ledger(ctx)
	if err != nil {
		return fmt.Errorf("read the ledger for the history: %w", err)
	}
	for _, e := range w.scenarioEntries(l) {
		f := map[string]string{judge.EntryDebit: judge.FDebit, judge.EntryRefund: judge.FRefund}[e.Kind]
		if f == "" {
			f = judge.FEntry
		}
		w.record(judge.Op{Process: "ledger", Type: "ok", F: f, Time: e.At,
			Value: mustJSON(judge.EffectValue{Amount: e.Amount, Receipt: e.Receipt, Kind: e.Kind, Tool: e.Tool})})
	}
	return nil
}

// dispatchOp is the history's event of a dispatch the observer saw.
func dispatchOp(d judge.Dispatch) judge.Op {
	return judge.Op{Process: "upstream", Type: judge.OK, F: judge.FDispatch, Time: d.At,
		Value: mustJSON(judge.EffectValue{Token: d.Token, Tool: d.Tool})}
}

// unrecorded are the dispatches of ds the history does not hold: per
// token, those past the count it holds. Counted, not matched by time: the
// read tool's dispatches carry the time of the read, not of the effect.
func unrecorded(history []judge.Op, ds []judge.Dispatch) []judge.Dispatch {
	have := map[string]int{}
	for _, op := range history {
		var v judge.EffectValue
		if op.F == judge.FDispatch && json.Unmarshal(op.Value, &v) == nil {
			have[v.Token]++
		}
	}
	var out []judge.Dispatch
	for _, d := range ds {
		if have[d.Token] > 0 {
			have[d.Token]--
			continue
		}
		out = append(out, d)
	}
	return out
}

// dispatchesIn are the history's dispatch events of some tokens.
func dispatchesIn(ops []judge.Op, tokens []string) []judge.Dispatch {
	var out []judge.Dispatch
	for _, op := range ops {
		var v judge.EffectValue
		if op.F == judge.FDispatch && json.Unmarshal(op.Value, &v) == nil && slices.Contains(tokens, v.Token) {
			out = append(out, judge.Dispatch{Token: v.Token, At: op.Time})
		}
	}
	return out
}

// The probe's stall, unstall and wait, recorded with the control calls as
// the requests its observation API takes (/probe/v1/...), so repro replays
// them against a probe of its own.

func (w *world) probeStall(ctx context.Context, token string) error {
	w.noteEnv(judge.EnvValue{Kind: judge.EnvHold, Token: token})
	return w.probeAction(ctx, "stall", map[string]any{"token": token}, func() error { return w.env.Probe.Stall(ctx, token) })
}

func (w *world) probeUnstall(ctx context.Context, token string) error {
	err := w.probeAction(ctx, "unstall", map[string]any{"token": token}, func() error { return w.env.Probe.Unstall(ctx, token) })
	w.noteEnv(judge.EnvValue{Kind: judge.EnvLetGo, Token: token})
	return err
}

// probeFail makes the probe fail tok's next dispatch; only a call that
// reaches the probe can be failed there.
func (w *world) probeFail(ctx context.Context, tok, how string) error {
	if !w.has(judge.CapUpstream) {
		return w.cannot(judge.CapUpstream, "only calls that reach the probe can be failed there")
	}
	token := w.expand(tok)
	w.noteEnv(judge.EnvValue{Kind: judge.EnvUpstreamFail, Token: token, Action: how})
	return w.probeAction(ctx, "fail", map[string]any{"token": token, "how": how}, func() error { return w.env.Probe.Fail(ctx, token, how) })
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
