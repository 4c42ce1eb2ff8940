package soak

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Events is the soak as the one model of the retry contract reads every
// history (a scenario's, an exploration's): what the harness knows of the
// gateways, the wallets and the tool, each fault armed for an operation's
// first call, every call and its answer at the times they were sent and
// answered, the probe's dispatches and each wallet's ledger read back.
func (h History) Events() []judge.Op {
	type event struct {
		at  time.Time
		seq int
		op  judge.Op
	}
	var evs []event
	add := func(at time.Time, process, typ, f string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("soak: history event %T: %v", v, err)) // values of this package's own types
		}
		evs = append(evs, event{at, len(evs), judge.Op{Process: process, Type: typ, F: f, Value: b, Time: at}})
	}
	start, end := h.span()
	harness := func(v judge.EnvValue) { add(start, "harness", judge.OK, judge.FEnv, v) }
	add(start, "harness", judge.OK, judge.FTarget, judge.Facts{Policy: judge.PolicyDerived,
		WindowSeconds: h.WindowSeconds, StaleLockSeconds: h.StaleLockSeconds, Wires: []string{wire.V20260728},
		Capabilities: []string{judge.CapWire, judge.CapUpstream, judge.CapLedger, judge.CapFaults}})
	price := h.Price
	harness(judge.EnvValue{Kind: judge.EnvTool, Tool: h.Tool, Role: "write", Price: &price})
	for _, w := range h.Wallets {
		b := w.credits()
		harness(judge.EnvValue{Kind: judge.EnvWallet, Wallet: w.ID, Balance: &b})
	}
	// Calls are paired with their answers by the invoke's index, which is
	// only known once the events are in time order: a call's place is
	// recorded here and its answer's Call filled in below.
	type pair struct{ inv, out int }
	var pairs []pair
	for _, o := range h.Ops {
		if f, ok := ownFaults[o.Shape]; ok && len(o.Attempts) > 0 {
			// Armed just before the first call, for the operation's own
			// wallet; spent by it when its answer is the fault's (a fault
			// the first call never reached stays armed for the next).
			first := o.Attempts[0]
			add(first.Start.Add(-time.Nanosecond), "harness", judge.OK, judge.FEnv,
				judge.EnvValue{Kind: judge.EnvFault, Tool: h.Tool, Wallet: o.Wallet, Point: f.point, Action: f.action})
			if planned(&o, 0) {
				add(first.End, "harness", judge.OK, judge.FEnv, judge.EnvValue{Kind: judge.EnvRelease, Wallet: o.Wallet, Point: f.point})
			}
		}
		for j, a := range o.Attempts {
			process := fmt.Sprintf("op%d.%d", o.Index, j)
			v := judge.CallValue{Tool: h.Tool, Key: o.Key, Token: o.Token, Arguments: map[string]any{"token": o.Token},
				Wire: wire.V20260728, URL: a.Proc + 1, Credential: o.Wallet, Wallet: o.Wallet, Role: "write", Price: &price}
			add(a.Start, process, judge.Invoke, judge.FCall, v)
			typ, out := a.outcome(o.Token)
			add(a.End, process, typ, judge.FCall, out)
			pairs = append(pairs, pair{len(evs) - 2, len(evs) - 1})
		}
	}
	for _, tok := range sortedKeys(h.Probe) {
		for range h.Probe[tok] {
			add(end, "upstream", judge.OK, judge.FDispatch, judge.EffectValue{Token: tok})
		}
	}
	for _, w := range h.Wallets {
		r := judge.LedgerRead{Wallet: w.ID, Baseline: w.credits(), Balance: w.Balance, Prices: map[string]int64{h.Tool: h.Price}, Final: true}
		for _, e := range w.Ledger {
			if e.Kind != "credit" {
				r.Entries = append(r.Entries, judge.EffectValue{Kind: e.Kind, Amount: e.Amount, Receipt: e.Receipt, Tool: e.Tool})
			}
		}
		add(end, "ledger", judge.OK, judge.FLedgerRead, r)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	place := make([]int, len(evs)) // event's sequence number -> its index in time order
	for i, e := range evs {
		place[e.seq] = i
	}
	ops := make([]judge.Op, len(evs))
	for i, e := range evs {
		e.op.Index = i
		ops[i] = e.op
	}
	for _, p := range pairs {
		inv, out := place[p.inv], place[p.out]
		var v judge.CallValue
		if err := json.Unmarshal(ops[out].Value, &v); err == nil {
			v.Call = &inv
			ops[out].Value, _ = json.Marshal(v)
		}
	}
	return ops
}

// outcome is the answer as the history records it.
func (a Attempt) outcome(token string) (string, judge.CallValue) {
	v := judge.CallValue{Token: token, Status: a.Status, Wire: wire.V20260728}
	switch a.Kind {
	case KindResult:
		v.Digest, v.ResultType, v.NoContent, v.InputRequired = a.Result.Digest, a.Result.ResultType, a.Result.NoContent, a.Result.InputRequired
		v.Replayed, v.Charged = a.Result.Replayed, a.Result.Charged
		v.Receipt, v.Served = a.Receipt, a.Token
		return judge.OK, v
	case KindInProgress, KindError:
		v.Reason, v.Retryable, v.Receipt = a.Reason, a.Retryable, a.Receipt
		if a.Kind == KindError && a.Reason == "" {
			// An answer that is neither a result nor a refusal with a
			// reason: the model holds it to the contract as such.
			v.Reason = "unreadable: " + a.Detail
		}
		if a.Retryable {
			return judge.Info, v
		}
		return judge.Fail, v
	case KindAbandoned:
		v.Error, v.Dropped = a.Detail, true
	default:
		v.Error = a.Detail
	}
	return judge.Info, v
}

// span is the first call's start and the last answer's end (the read-back
// comes after both).
func (h History) span() (start, end time.Time) {
	for _, o := range h.Ops {
		for _, a := range o.Attempts {
			if start.IsZero() || a.Start.Before(start) {
				start = a.Start
			}
			if a.End.After(end) {
				end = a.End
			}
		}
	}
	return start.Add(-time.Millisecond), end.Add(time.Millisecond)
}

// credits is what the wallet was given: its balance before the soak.
func (w Wallet) credits() int64 {
	var n int64
	for _, e := range w.Ledger {
		if e.Kind == "credit" {
			n += e.Amount
		}
	}
	return n
}

// Judge holds a finished soak to the model: every violated check, most
// harmful first.
func Judge(h History) []Violation {
	var vs []Violation
	for _, c := range judge.Model(h.Events(), judge.Options{Decided: true}) {
		if c.State != judge.Violated {
			continue
		}
		vs = append(vs, Violation{Check: c.Kind, Harm: string(c.Harm), Step: c.Step, Op: c.Arg("token"), Wallet: c.Arg("wallet"),
			Expected: c.Expected, Actual: c.Actual})
	}
	sort.SliceStable(vs, func(i, j int) bool { return judge.Harm(vs[i].Harm).Rank() < judge.Harm(vs[j].Harm).Rank() })
	return vs
}
