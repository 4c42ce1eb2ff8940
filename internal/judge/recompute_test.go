package judge

import (
	"encoding/json"
	"testing"
)

// A refusal check redone from the history judges what the step judged: a
// refusal made in HTTP alone has no data.retryable, so its flag is held
// against it in neither; a JSON-RPC refusal's flag is held in both.
func TestRecomputeRefusedFlag(t *testing.T) {
	step := 0
	outcome := func(v CallValue, typ string) []Op {
		b, _ := json.Marshal(v)
		return []Op{{Process: "A", Type: typ, F: FCall, Value: b, Step: &step}}
	}
	check := func(retryable string) Check {
		return Check{StepIndex: 0, Kind: KindRefused, Args: map[string]string{"client": "A", "reason": ReasonInProgress, "retryable": retryable}}
	}
	for _, tc := range []struct {
		name      string
		v         CallValue
		typ       string
		retryable string
		want      bool
	}{
		{"HTTP 409 mapped to in progress", CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{ReasonInProgress}}, Info, "true", true},
		{"JSON-RPC in progress, retryable", CallValue{Tool: "w", Reason: ReasonInProgress, Retryable: true}, Info, "true", true},
		{"JSON-RPC in progress, not retryable", CallValue{Tool: "w", Reason: ReasonInProgress}, Fail, "true", false},
		{"JSON-RPC in progress without data.retryable, its 409 mapped to in progress", CallValue{Tool: "w", Status: 409, Reason: "acme_busy", Means: []string{ReasonInProgress}, StatusRetryable: true}, Info, "true", true},
		{"JSON-RPC in progress without data.retryable, no status mapping", CallValue{Tool: "w", Status: 200, Reason: "acme_busy", Means: []string{ReasonInProgress}}, Fail, "true", false},
		{"HTTP 409 mapped to something else", CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{"idempotency_key_reused"}}, Fail, "true", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(check(tc.retryable), outcome(tc.v, tc.typ))
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}

// A retry-after check redone from the history looks at the answers its
// step looked at (the last one, those of its own step, or the crowd's) and
// holds each in-progress one to a readable Retry-After, as the step does;
// a history that did not record the header, or a check that does not name
// its answers, cannot be redone.
func TestRecomputeRetryAfter(t *testing.T) {
	s0, s1 := 0, 1
	ra := func(v string) *string { return &v }
	busy := func(retryAfter *string) CallValue {
		return CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{ReasonInProgress}, RetryAfter: retryAfter}
	}
	outcome := func(process string, step *int, v CallValue, typ string) Op {
		b, _ := json.Marshal(v)
		return Op{Process: process, Type: typ, F: FCall, Value: b, Step: step}
	}
	result := CallValue{Tool: "w", Receipt: "r1"}
	check := func(client, answers string, step int) Check {
		args := map[string]string{"client": client}
		if answers != "" {
			args["answers"] = answers
		}
		return Check{StepIndex: step, Kind: KindRetryAfter, Args: args}
	}
	for _, tc := range []struct {
		name  string
		c     Check
		ops   []Op
		wantK bool
		want  bool
	}{
		{"last answer with delay-seconds", check("A", RetryAfterLast, 0), []Op{outcome("A", &s0, busy(ra("2")), Info)}, true, true},
		{"last answer with an HTTP-date", check("A", RetryAfterLast, 0), []Op{outcome("A", &s0, busy(ra("Wed, 21 Oct 2015 07:28:00 GMT")), Info)}, true, true},
		{"last answer without one", check("A", RetryAfterLast, 0), []Op{outcome("A", &s0, busy(ra("")), Info)}, true, false},
		{"last answer with an unreadable one", check("A", RetryAfterLast, 0), []Op{outcome("A", &s0, busy(ra("soon")), Info)}, true, false},
		{"a history that did not record it", check("A", RetryAfterLast, 0), []Op{outcome("A", &s0, busy(nil), Info)}, false, false},
		{"a check that names no answers", check("A", "", 0), []Op{outcome("A", &s0, busy(ra("1")), Info)}, false, false},
		{"the step's retries: one without, then a result", check("A", RetryAfterStep, 1), []Op{
			outcome("A", &s0, busy(ra("")), Info), // an earlier step's: not this check's
			outcome("A", &s1, busy(ra("1")), Info), outcome("A", &s1, busy(ra("")), Info), outcome("A", &s1, result, OK)}, true, false},
		{"the step's retries, each with one", check("A", RetryAfterStep, 1), []Op{
			outcome("A", &s0, busy(ra("")), Info),
			outcome("A", &s1, busy(ra("1")), Info), outcome("A", &s1, result, OK)}, true, true},
		{"the crowd, one without", check("the crowd", RetryAfterCrowd, 1), []Op{
			outcome("twin-00", &s0, result, OK), outcome("twin-01", &s0, busy(ra("0")), Info), outcome("twin-02", &s0, busy(ra("")), Info)}, true, false},
		{"the crowd, each with one", check("the crowd", RetryAfterCrowd, 1), []Op{
			outcome("twin-00", &s0, result, OK), outcome("twin-01", &s0, busy(ra("0")), Info)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(tc.c, tc.ops)
			if known != tc.wantK || (known && r.OK != tc.want) {
				t.Errorf("Recompute = %+v, known %v; want known %v, OK %v", r, known, tc.wantK, tc.want)
			}
		})
	}
}

// The one-operation check redone from the history reads the twins' answers
// as the step does: a 409 made in HTTP alone (an RFC 9457 problem, no
// JSON-RPC error) that the profile maps to in progress is retryable, as
// a JSON-RPC refusal marked so is; one mapped to another reason is not.
func TestRecomputeOneOperationHTTPOnly(t *testing.T) {
	s0 := 0
	outcome := func(process string, v CallValue, typ string) Op {
		b, _ := json.Marshal(v)
		return Op{Process: process, Type: typ, F: FCall, Value: b, Step: &s0}
	}
	result := CallValue{Tool: "w", Receipt: "r1"}
	c := Check{StepIndex: 0, Kind: KindOneOperation, Args: map[string]string{"reason": ReasonInProgress}}
	for _, tc := range []struct {
		name  string
		means string
		want  bool
	}{
		{"409 mapped to in progress", ReasonInProgress, true},
		{"409 mapped to another reason", ReasonKeyReused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy := CallValue{Tool: "w", Status: 409, HTTPOnly: true, Means: []string{tc.means}}
			r, known := Recompute(c, []Op{outcome("twin-00", result, OK), outcome("twin-01", busy, Info), outcome("twin-02", busy, Info)})
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}

// The at-most-once check redone from the history sees the dispatches its
// step saw: a duplicate the re-read at the scenario's end (placed past
// every step) or at the run's end (placed at none) added came after it,
// and is the model's to judge; a history that places no event cannot tell,
// so every dispatch counts.
func TestRecomputeAtMostOnceSeesItsStep(t *testing.T) {
	at := func(i int) *int { return &i }
	dispatch := func(step *int) Op {
		b, _ := json.Marshal(EffectValue{Token: "op1"})
		return Op{Process: "upstream", Type: OK, F: FDispatch, Value: b, Step: step}
	}
	check := Check{StepIndex: 2, Kind: KindAtMostOnce}
	for _, tc := range []struct {
		name string
		ops  []Op
		want bool
	}{
		{"once, by the step", []Op{dispatch(at(1))}, true},
		{"twice, by the step", []Op{dispatch(at(1)), dispatch(at(2))}, false},
		{"once by the step, again at the scenario's end", []Op{dispatch(at(1)), dispatch(at(3))}, true},
		{"once by the step, again at the run's end", []Op{dispatch(at(1)), dispatch(nil)}, true},
		{"a history that places nothing", []Op{dispatch(nil), dispatch(nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(check, tc.ops)
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}

// The replay-marker check redone from the history: a result that says it
// is a replay holds, one that says it is a first answer fails, one from a
// target that marks neither is not held to a marker it never writes, and
// a refusal is no replay.
func TestRecomputeMarkedReplay(t *testing.T) {
	yes, no := true, false
	step := 0
	outcome := func(v CallValue, typ string) []Op {
		b, _ := json.Marshal(v)
		return []Op{{Process: "A", Type: typ, F: FCall, Value: b, Step: &step}}
	}
	check := Check{StepIndex: 0, Kind: KindMarkedReplay, Args: map[string]string{"client": "A"}}
	for _, tc := range []struct {
		name string
		v    CallValue
		typ  string
		want bool
	}{
		{"marked a replay", CallValue{Tool: "w", Receipt: "r1", Replayed: &yes}, OK, true},
		{"marked a first answer", CallValue{Tool: "w", Receipt: "r1", Replayed: &no}, OK, false},
		{"no marker at all", CallValue{Tool: "w", Receipt: "r1"}, OK, true},
		{"a refusal", CallValue{Tool: "w", Reason: ReasonInProgress, Retryable: true}, Info, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(check, outcome(tc.v, tc.typ))
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}

// The tool's-own-result check redone from the history: a result carrying
// the probe's answer to its call's token holds; one carrying none (what a
// gateway made of an upstream call it cut short), another token's, or a
// refusal does not.
func TestRecomputeToolResult(t *testing.T) {
	step := 0
	check := Check{StepIndex: 0, Kind: KindToolResult, Args: map[string]string{"client": "A"}}
	for _, tc := range []struct {
		name string
		v    CallValue
		typ  string
		want bool
	}{
		{"the probe's answer to its token", CallValue{Tool: "w", Token: "op1", Receipt: "r1", Served: "op1"}, OK, true},
		{"no probe answer", CallValue{Tool: "w", Token: "op1", Receipt: "r1", IsError: true}, OK, false},
		{"another token's answer", CallValue{Tool: "w", Token: "op1", Receipt: "r1", Served: "op2"}, OK, false},
		{"a refusal", CallValue{Tool: "w", Token: "op1", Reason: ReasonInProgress, Retryable: true}, Info, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.v)
			r, known := Recompute(check, []Op{{Process: "A", Type: tc.typ, F: FCall, Value: b, Step: &step}})
			if !known || r.OK != tc.want {
				t.Errorf("Recompute = %+v, known %v; want OK %v", r, known, tc.want)
			}
		})
	}
}

// The settled-replay check redone from the history: the client's last
// answer against the operator's completed settlement (its receipt and the
// digest of its content), as the live step holds it.
func TestRecomputeSettledReplay(t *testing.T) {
	yes, no := true, false
	step := 0
	settle := func(outcome string) Op {
		b, _ := json.Marshal(EnvValue{Kind: EnvSettle, Outcome: outcome, Receipt: "r1", Digest: "d1", Client: "A"})
		return Op{Process: "harness", Type: OK, F: FEnv, Value: b, Step: &step}
	}
	outcome := func(v CallValue, typ string) Op {
		b, _ := json.Marshal(v)
		return Op{Process: "A", Type: typ, F: FCall, Value: b, Step: &step}
	}
	check := Check{StepIndex: 0, Kind: KindSettledReplay, Args: map[string]string{"client": "A"}}
	for _, tc := range []struct {
		name      string
		ops       []Op
		want      bool
		wantKnown bool
	}{
		{"the settled result, marked", []Op{settle(SettleCompleted), outcome(CallValue{Receipt: "r1", Digest: "d1", Replayed: &yes}, OK)}, true, true},
		{"the settled result, no marker", []Op{settle(SettleCompleted), outcome(CallValue{Receipt: "r1", Digest: "d1"}, OK)}, true, true},
		{"marked a first answer", []Op{settle(SettleCompleted), outcome(CallValue{Receipt: "r1", Digest: "d1", Replayed: &no}, OK)}, false, true},
		{"a fresh receipt", []Op{settle(SettleCompleted), outcome(CallValue{Receipt: "r2", Digest: "d1"}, OK)}, false, true},
		{"the tool's content, not the operator's", []Op{settle(SettleCompleted), outcome(CallValue{Receipt: "r1", Digest: "d9"}, OK)}, false, true},
		{"a refusal", []Op{settle(SettleCompleted), outcome(CallValue{Reason: ReasonInProgress, Retryable: true}, Info)}, false, true},
		{"settled refunded: not this check's", []Op{settle(SettleRefunded), outcome(CallValue{Receipt: "r1", Digest: "d1"}, OK)}, false, false},
		{"no settlement in the history", []Op{outcome(CallValue{Receipt: "r1", Digest: "d1"}, OK)}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, known := Recompute(check, tc.ops)
			if known != tc.wantKnown || (known && r.OK != tc.want) {
				t.Errorf("Recompute = %+v, known %v; want OK %v, known %v", r, known, tc.want, tc.wantKnown)
			}
		})
	}
}
