package judge

import (
	"strings"
	"testing"
)

// TestModelOutcomeUnknown: outcome_unknown is an answer only for an
// operation that may have run and is uncertain (an earlier call of it was
// not told nothing ran, and no result of it came back first); it is final,
// never retryable, and ends an explored operation as decided.
func TestModelOutcomeUnknown(t *testing.T) {
	lost := func(h *hist, v CallValue) {
		inv := h.call("A", v)
		h.answer("A", inv, Info, CallValue{Token: v.Token, Error: "EOF"})
	}
	for _, tc := range []struct {
		name    string
		build   func(h *hist)
		decided bool
		want    string // kind/harm of each violation, comma-joined
	}{
		{"after a call whose answer was lost", func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonOutcomeUnknown, false)
		}, false, ""},
		{"after an in-progress answer, then again", func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonInProgress, true)
			h.refused("B", write, ReasonOutcomeUnknown, false)
			h.refused("B", write, ReasonOutcomeUnknown, false)
		}, false, ""},
		{"unkeyed, after a call whose answer was lost", func(h *hist) {
			lost(h, unkeyed(write))
			h.refused("B", unkeyed(write), ReasonOutcomeUnknown, false)
		}, false, ""},
		{"then the owner finishes and the retry replays", func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonOutcomeUnknown, false)
			h.dispatch("op1")
			h.result("B", write, "r1", "d1")
		}, false, ""},
		{"ends an explored operation decided", func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonOutcomeUnknown, false)
		}, true, ""},
		{"marked retryable", func(h *hist) {
			lost(h, write)
			h.refused("B", write, ReasonOutcomeUnknown, true)
		}, false, "answer/wrong-refusal"},
		{"for the first call of an operation", func(h *hist) {
			h.refused("A", write, ReasonOutcomeUnknown, false)
		}, false, "answer/wrong-refusal"},
		{"for an operation whose result came back", func(h *hist) {
			h.result("A", write, "r1", "d1")
			h.dispatch("op1")
			h.refused("A", write, ReasonOutcomeUnknown, false)
		}, false, "answer/wrong-refusal"},
		{"for an operation only ever told nothing ran", func(h *hist) {
			h.refused("A", write, ReasonFunds, false)
			h.refused("A", write, ReasonOutcomeUnknown, false)
		}, false, "answer/wrong-refusal"},
		{"for an operation that must be refused", func(h *hist) {
			ro := with(unkeyed(write), func(v *CallValue) { v.Role = RoleReadOnly })
			lost(h, ro)
			h.refused("A", ro, ReasonOutcomeUnknown, false)
		}, false, "answer/wrong-refusal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist(full)
			tc.build(h)
			got := violations(Model(h.ops, Options{Decided: tc.decided}))
			if strings.Join(got, ",") != tc.want {
				t.Errorf("violations %q, want %q\n%s", got, tc.want, dump(Model(h.ops, Options{Decided: tc.decided})))
			}
		})
	}
}
