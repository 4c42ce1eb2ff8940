package steps

import (
	"encoding/json"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// The settled result's members are read as the history's digest reads
// them: a replay that adds "structuredContent": null, or spells an absent
// isError false, replays the operator's result, live and recomputed alike.
func TestSettledMembersAsTheDigestReadsThem(t *testing.T) {
	settled := json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)
	for _, tc := range []struct {
		name   string
		replay string
		same   bool
	}{
		{"the same", `{"content":[{"type":"text","text":"done"}]}`, true},
		{"a null structuredContent added", `{"content":[{"type":"text","text":"done"}],"structuredContent":null}`, true},
		{"isError false spelled out", `{"content":[{"type":"text","text":"done"}],"isError":false}`, true},
		{"other content", `{"content":[{"type":"text","text":"other"}]}`, false},
		{"isError true", `{"content":[{"type":"text","text":"done"}],"isError":true}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &wire.Answer{Response: &wire.Response{Result: settled}}
			a := &wire.Answer{Response: &wire.Response{Result: json.RawMessage(tc.replay)}}
			live := true
			for _, f := range []string{"isError", "content", "structuredContent"} {
				live = live && s.ResultMember(f) == a.ResultMember(f)
			}
			recomputed := s.ResultValue().Digest == a.ResultValue().Digest
			if live != tc.same || recomputed != tc.same {
				t.Errorf("live %v, recomputed %v, want %v", live, recomputed, tc.same)
			}
		})
	}
}
