package steps

import (
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// TestLastOperation: the operation a settlement names is the client's last
// call (its token and wallet, for the model), and the receipt the debit in
// question goes by is the one its last answer named, a refusal's
// data.receipt included; a client that made no call names none.
func TestLastOperation(t *testing.T) {
	call := func(who, token string) judge.Op {
		return judge.Op{Process: who, Type: judge.Invoke, F: judge.FCall, Value: mustJSON(judge.CallValue{Tool: "write", Token: token, Wallet: "w1"})}
	}
	answer := func(who, typ, receipt string) judge.Op {
		return judge.Op{Process: who, Type: typ, F: judge.FCall, Value: mustJSON(judge.CallValue{Reason: judge.ReasonOutcomeUnknown, Receipt: receipt})}
	}
	for _, tc := range []struct {
		name           string
		ops            []judge.Op
		token, receipt string
		wantErr        bool
	}{
		{"an outcome_unknown answer's receipt", []judge.Op{call("A", "op1"), call("B", "op1"), answer("B", judge.Fail, "r1")}, "op1", "r1", false},
		{"the last call, not an earlier one", []judge.Op{call("B", "op0"), answer("B", judge.OK, "r0"), call("B", "op1"), answer("B", judge.Fail, "r1")}, "op1", "r1", false},
		{"a call not answered yet names no receipt", []judge.Op{call("B", "op0"), answer("B", judge.OK, "r0"), call("B", "op1")}, "op1", "", false},
		{"another client's answers are not its own", []judge.Op{call("B", "op1"), answer("A", judge.Fail, "r9")}, "op1", "", false},
		{"no call", []judge.Op{call("A", "op1")}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{history: tc.ops}
			v, receipt, err := w.lastOperation("B")
			if (err != nil) != tc.wantErr || v.Token != tc.token || receipt != tc.receipt {
				t.Errorf("lastOperation = %q, %q, %v; want %q, %q, error %v", v.Token, receipt, err, tc.token, tc.receipt, tc.wantErr)
			}
			if err == nil && v.Wallet != "w1" {
				t.Errorf("lastOperation's wallet %q, want w1", v.Wallet)
			}
		})
	}
}
