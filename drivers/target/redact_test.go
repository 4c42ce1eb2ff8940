package target

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestRedactedHidesEveryCredential(t *testing.T) {
	b, err := os.ReadFile("testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(p.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"ct_example", "mcpk_k1_example", "mcpk_k2_example", "mcpk_k9_example", "eyJhbGciOiJFUzI1NiJ9"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("redacted profile still holds %q", secret)
		}
	}
	for _, kept := range []string{"Acme MCP gateway 4.2", "probe.write", "w-2", "alice@acme.example", "idempotencyKey"} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("redacted profile lost %q", kept)
		}
	}
	// The original is untouched.
	if p.ControlToken != "ct_example" || p.Credentials.APIKeys[0] != "mcpk_k1_example" || p.Credentials.OtherWallet.APIKey != "mcpk_k9_example" ||
		p.Credentials.PrincipalTokens["alice"] == RedactedSecret {
		t.Error("Redacted changed the profile it was called on")
	}
}
