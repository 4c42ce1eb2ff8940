package wire

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// TestReasonTablesMatchDocs: docs/wire.md's reason tables list exactly the
// reasons /mcp answers with, each with its default code and retryable flag,
// so a reason added in code without a row (or the reverse) fails here.
func TestReasonTablesMatchDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| (`[a-z_]+`(?: / `[a-z_]+`)*) \\| (-?\\d+) \\| (yes|no) \\|")
	documented := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		code, _ := strconv.ParseInt(m[2], 10, 64)
		for _, r := range strings.Split(m[1], " / ") {
			r = strings.Trim(r, "`")
			if documented[r] {
				t.Errorf("%s: two rows", r)
			}
			documented[r] = true
			if !KnownReason(r) {
				t.Errorf("%s: documented, but no code answers with it", r)
				continue
			}
			if got := toRPCError(refuse(r, "x")); got.Code != code {
				t.Errorf("%s: code %d, documented %d", r, got.Code, code)
			}
			if got := refuse(r, "x").Retryable; got != (m[3] == "yes") {
				t.Errorf("%s: retryable %v, documented %s", r, got, m[3])
			}
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
