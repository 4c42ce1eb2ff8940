package judge

import (
	"encoding/json"
	"testing"
)

func call(typ string, v CallValue) Op {
	b, _ := json.Marshal(v)
	return Op{Process: "workload", F: FCall, Type: typ, Value: b}
}

// ran is one operation answered with a receipt and its effects.
func ran(token, key, receipt string) []Op {
	return []Op{
		call("invoke", CallValue{Token: token, Key: key}),
		call("ok", CallValue{Token: token, Key: key, Receipt: receipt}),
	}
}

func cat(parts ...[]Op) []Op {
	var out []Op
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestOperationsAccountedFor(t *testing.T) {
	disp := func(tok string) []Op { return []Op{effect(FDispatch, EffectValue{Token: tok})} }
	debit := func(rc string, n int64) []Op { return []Op{effect(FDebit, EffectValue{Amount: n, Receipt: rc})} }
	refund := func(rc string, n int64) []Op { return []Op{effect(FRefund, EffectValue{Amount: n, Receipt: rc})} }
	refused := func(token, key, reason string) []Op {
		return []Op{call("invoke", CallValue{Token: token, Key: key}), call("fail", CallValue{Token: token, Key: key, Reason: reason})}
	}
	for _, tc := range []struct {
		name           string
		ops            []Op
		answered, bank bool
	}{
		{"two operations, each once", cat(ran("a", "k1", "r1"), ran("b", "", "r2"), ran("a", "k1", "r1"), disp("a"), disp("b"), debit("r1", 3), debit("r2", 3)), true, true},
		{"a refunded attempt, then the run", cat(ran("a", "k1", "r2"), disp("a"), debit("r1", 3), refund("r1", 3), debit("r2", 3)), true, true},
		{"a reused key refused, nothing charged", cat(ran("a", "k1", "r1"), refused("c", "k1", "idempotency_key_reused"), disp("a"), debit("r1", 3)), true, true},
		{"A debited twice and B never (the total is right)", cat(ran("a", "k1", "r1"), ran("b", "k2", "r2"), disp("a"), disp("b"), debit("r1", 3), debit("r1", 3)), true, false},
		{"every call refused", cat(refused("a", "k1", "internal_error"), refused("b", "k2", "internal_error")), false, true},
		{"one operation's result served for another", cat(ran("a", "k1", "r1"), ran("c", "k1", "r1"), disp("a"), debit("r1", 3)), false, false},
		{"a retry with a fresh receipt, run twice", cat(ran("a", "", "r1"), ran("a", "", "r2"), disp("a"), disp("a"), debit("r1", 3), debit("r2", 3)), false, false},
		{"a refusal charged", cat(ran("a", "k1", "r1"), refused("b", "", "idempotency_key_required"), disp("a"), debit("r1", 3), debit("", 5)), true, false},
		{"nothing happened", nil, false, true},
		{"another operation's content under this one's own receipt", cat(ran("a", "k1", "r1"), []Op{
			call("invoke", CallValue{Token: "b", Key: "k2"}), call("ok", CallValue{Token: "b", Key: "k2", Receipt: "r2", Served: "a"}),
		}, disp("a"), disp("b"), debit("r1", 3), debit("r2", 3)), false, true},
		{"a reused key refused with HTTP 500", cat(ran("a", "k1", "r1"), []Op{
			call("invoke", CallValue{Token: "c", Key: "k1"}), call("fail", CallValue{Token: "c", Key: "k1", Reason: "idempotency_key_reused", Status: 500}),
		}, disp("a"), debit("r1", 3)), false, true},
		{"an unkeyed operation refused for want of a key, every time", cat(ran("a", "k1", "r1"), refused("b", "", ReasonKeyRequired), refused("b", "", ReasonKeyRequired), disp("a"), debit("r1", 3)), true, true},
		{"an unkeyed operation refused with another reason", cat(ran("a", "k1", "r1"), refused("b", "", "insufficient_funds"), disp("a"), debit("r1", 3)), false, true},
		{"a reused key refused with another reason", cat(ran("a", "k1", "r1"), refused("c", "k1", "invalid_arguments"), disp("a"), debit("r1", 3)), false, true},
		{"an unkeyed refusal in the vendor's own code the profile maps", cat(ran("a", "k1", "r1"), []Op{
			call("invoke", CallValue{Token: "b"}), call("fail", CallValue{Token: "b", Reason: "E_NO_KEY", Status: 400, Means: []string{ReasonKeyRequired}}),
		}, disp("a"), debit("r1", 3)), true, true},
		{"an unkeyed refusal the profile maps to another reason", cat(ran("a", "k1", "r1"), []Op{
			call("invoke", CallValue{Token: "b"}), call("fail", CallValue{Token: "b", Reason: ReasonKeyRequired, Status: 400, Means: []string{"unauthenticated"}}),
		}, disp("a"), debit("r1", 3)), false, true},
		// A 409 answered in HTTP alone (an RFC 9457 problem) that the
		// profile maps to in progress is retried, as a retryable JSON-RPC
		// refusal is: no outcome lost; mapped to nothing, it is one.
		{"an HTTP-only in-progress answer, then the result", cat([]Op{call("invoke", CallValue{Token: "a", Key: "k1"}),
			call("info", CallValue{Token: "a", Key: "k1", Status: 409, HTTPOnly: true, Means: []string{ReasonInProgress}})},
			ran("a", "k1", "r1"), disp("a"), debit("r1", 3)), true, true},
		{"an HTTP-only answer mapped to nothing, then the result", cat([]Op{call("invoke", CallValue{Token: "a", Key: "k1"}),
			call("info", CallValue{Token: "a", Key: "k1", Status: 409, HTTPOnly: true})},
			ran("a", "k1", "r1"), disp("a"), debit("r1", 3)), false, true},
		{"a fee of another kind beside the right debit", cat(ran("a", "k1", "r1"), disp("a"), debit("r1", 3),
			[]Op{effect(FEntry, EffectValue{Kind: "service", Amount: 1, Receipt: "r1"})}), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, exp, act := EveryOperationAnswered(tc.ops, "workload"); ok != tc.answered {
				t.Errorf("EveryOperationAnswered = %v, want %v\n  expected: %s\n  observed: %s", ok, tc.answered, exp, act)
			}
			if ok, exp, act := BankInvariant(tc.ops, 3); ok != tc.bank {
				t.Errorf("BankInvariant = %v, want %v\n  expected: %s\n  observed: %s", ok, tc.bank, exp, act)
			}
		})
	}
}
