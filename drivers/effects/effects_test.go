package effects

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// TestCountIn: a count is a number or a list's length; an error, a tool
// error, a missing member or anything else is an error, never zero (a
// "not dispatched" check must not pass on a read that saw nothing).
func TestCountIn(t *testing.T) {
	for _, tc := range []struct {
		name, msg, path string
		want            int
		err             string
	}{
		{"number", `{"result":{"structuredContent":{"count":2}}}`, "result.structuredContent.count", 2, ""},
		{"list", `{"result":{"structuredContent":{"messages":[{},{},{}]}}}`, "result.structuredContent.messages", 3, ""},
		{"empty list", `{"result":{"structuredContent":{"messages":[]}}}`, "result.structuredContent.messages", 0, ""},
		{"missing", `{"result":{"structuredContent":{}}}`, "result.structuredContent.count", 0, "nothing at"},
		{"json-rpc error", `{"error":{"code":-32602,"message":"no"}}`, "result.x", 0, "refused"},
		{"tool error", `{"result":{"isError":true,"content":[]}}`, "result.x", 0, "tool error"},
		{"fraction", `{"result":{"n":1.5}}`, "result.n", 0, "not a count"},
		{"string", `{"result":{"n":"2"}}`, "result.n", 0, "neither a number nor a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countIn(json.RawMessage(tc.msg), wire.MustParsePath(tc.path), "list_messages")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("countIn = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
