package wire

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/gateway"
)

// sdkOwnCodes are the JSON-RPC codes a major MCP SDK reads as an error of
// its own transport (docs/wire.md, "Why these codes"): a refusal answered
// with one may reach a stock client's caller without its code and data.
var sdkOwnCodes = map[int64]string{
	-32000: "TypeScript ConnectionClosed, Python CONNECTION_CLOSED",
	-32001: "TypeScript RequestTimeout, go-sdk unknown error",
	-32003: "go-sdk client is closing",
	-32004: "go-sdk server is closing",
	-32005: "go-sdk rejected by transport",
	-31001: "go-sdk internal",
}

// mcpCodes are the codes MCP gives a meaning of its own, each with the
// reasons that have that meaning; no other reason may answer with one.
var mcpCodes = map[int64][]string{
	-32002: nil, // resource not found (before SEP-2164)
	-32020: {ReasonProtocolHeadersMissing, ReasonProtocolHeadersDiffer},
	-32021: {ReasonCapabilitiesMissing},
	-32022: {ReasonProtocolUnsupported},
	-32042: nil, // URL elicitation required
}

// codeClashes lists the reasons of a code table whose code a stock client
// would misread: an SDK's own transport error, or MCP's code for something
// else.
func codeClashes(codes map[string]int64) []string {
	var out []string
	for reason, code := range codes {
		if sdk, ok := sdkOwnCodes[code]; ok {
			out = append(out, fmt.Sprintf("%s: %d (%s)", reason, code, sdk))
		}
		if meant, ok := mcpCodes[code]; ok && !slices.Contains(meant, reason) {
			out = append(out, fmt.Sprintf("%s: %d (MCP's code for %v)", reason, code, meant))
		}
	}
	sort.Strings(out)
	return out
}

// TestDefaultCodesAreNoSDKsOwn: no default code, the gateway's or a
// transport reason's, is one an SDK keeps for its transport or one MCP
// means otherwise. TestStockClientRefusals sees only go-sdk's misreadings;
// this covers the TypeScript and Python SDKs' too. The seed gateway's codes
// are the case that shows the check fails: they are why the defaults differ.
func TestDefaultCodesAreNoSDKsOwn(t *testing.T) {
	transport := map[string]int64{}
	for reason, tr := range transportReasons {
		transport[reason] = tr.code
	}
	tests := []struct {
		name   string
		codes  map[string]int64
		clash  bool
		reason string // one reason that must be listed when clash
	}{
		{"default", gateway.Codes, false, ""},
		{"transport reasons", transport, false, ""},
		{"seed codes", gateway.SeedCodes, true, gateway.ReasonKeyReused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := codeClashes(tt.codes)
			if !tt.clash && len(got) > 0 {
				t.Errorf("codes a stock client misreads:\n%v", got)
			}
			if tt.clash && !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, tt.reason+":") }) {
				t.Errorf("clashes %v, want %s among them", got, tt.reason)
			}
		})
	}
}
