package wire

import (
	"testing"

	"github.com/mcpconform/mcpconform/internal/wiredoc"
	"github.com/mcpconform/mcpconform/reference/gateway"
)

// TestReasonTablesMatchDocs: docs/wire.md's reason tables list exactly the
// reasons /mcp answers with, each with its default code and retryable flag,
// so a reason added in code without a row (or the reverse) fails here.
func TestReasonTablesMatchDocs(t *testing.T) {
	rows, err := wiredoc.File("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.Name] = true
		if !KnownReason(r.Name) {
			t.Errorf("%s: documented, but no code answers with it", r.Name)
			continue
		}
		if got := toRPCError(refuse(r.Name, "x")); got.Code != r.Code {
			t.Errorf("%s: code %d, documented %d", r.Name, got.Code, r.Code)
		}
		if got := refuse(r.Name, "x").Retryable; got != r.Retryable {
			t.Errorf("%s: retryable %v, documented %v", r.Name, got, r.Retryable)
		}
	}
	for r := range gateway.Codes {
		if !documented[r] {
			t.Errorf("gateway reason %s has no row in docs/wire.md", r)
		}
	}
	for r := range transportReasons {
		if !documented[r] {
			t.Errorf("transport reason %s has no row in docs/wire.md", r)
		}
	}
}
