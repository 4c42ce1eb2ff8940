package steps

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// TestRefusalMeaningInHistory: a refusal's outcome in the history carries
// what it means under the profile's mappings (the vendor's own spelling
// of idempotency_key_required), so a check judged from the history reads
// it as isReason does; without mappings the spelling is the meaning.
func TestRefusalMeaningInHistory(t *testing.T) {
	mapped := &target.Profile{Reasons: map[string][]target.Reason{
		judge.ReasonKeyRequired: {{Reason: "E_NO_KEY"}, {Code: -32099, IsCode: true}},
	}}
	for _, tc := range []struct {
		name   string
		p      *target.Profile
		reason string
		means  []string
	}{
		{"no profile", nil, "E_NO_KEY", nil},
		{"no mappings", &target.Profile{}, judge.ReasonKeyRequired, nil},
		{"the vendor's spelling", mapped, "E_NO_KEY", []string{judge.ReasonKeyRequired}},
		{"a reason the profile leaves alone", mapped, judge.ReasonKeyReused, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := outcomeOp(tc.p, &client{name: "workload"}, &wire.Call{}, 0, refusalAnswer(tc.reason), nil)
			var v judge.CallValue
			if err := json.Unmarshal(op.Value, &v); err != nil {
				t.Fatal(err)
			}
			if op.Type != "fail" || v.Reason != tc.reason || !slices.Equal(v.Means, tc.means) {
				t.Errorf("%s reason %q means %q, want fail %q means %q", op.Type, v.Reason, v.Means, tc.reason, tc.means)
			}
		})
	}
}
