package steps

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

func TestReceiptsElsewhere(t *testing.T) {
	result := func(token, receipt string) judge.Op {
		b, _ := json.Marshal(judge.CallValue{Tool: "write", Token: token, Receipt: receipt})
		return judge.Op{Process: "A", Type: judge.OK, F: judge.FCall, Value: b}
	}
	results := []reports.Scenario{
		{ID: "a", History: []judge.Op{result("a-op1", "r1"), result("a-op1", "r1"), result("a-op2", "r2")}},
		{ID: "b", History: []judge.Op{result("b-op1", "r1"), result("b-op1", "r3")}},
		{ID: "c", History: []judge.Op{result("c-op1", "r3"), result("c-op1", "r4")}},
	}
	got := receiptsElsewhere(results)
	want := map[int][]judge.EnvValue{
		0: {{Kind: judge.EnvReceiptElsewhere, Receipt: "r1", Token: "b-op1", Elsewhere: "b"}},
		1: {{Kind: judge.EnvReceiptElsewhere, Receipt: "r1", Token: "a-op1", Elsewhere: "a"},
			{Kind: judge.EnvReceiptElsewhere, Receipt: "r3", Token: "c-op1", Elsewhere: "c"}},
		2: {{Kind: judge.EnvReceiptElsewhere, Receipt: "r3", Token: "b-op1", Elsewhere: "b"}},
	}
	if len(got) != len(want) {
		t.Fatalf("receiptsElsewhere = %+v, want %+v", got, want)
	}
	for i, w := range want {
		if len(got[i]) != len(w) {
			t.Fatalf("scenario %d: %+v, want %+v", i, got[i], w)
		}
		for j := range w {
			if !reflect.DeepEqual(got[i][j], w[j]) {
				t.Errorf("scenario %d event %d: %+v, want %+v", i, j, got[i][j], w[j])
			}
		}
	}
}
