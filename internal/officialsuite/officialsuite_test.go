package officialsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBaseline(t *testing.T) {
	good := `# header comment
server:
  # Item 4: not relayed
  # (continued)
  - tools-call-sampling
  - prompts-get-simple # item 3: prompts
  - "server-stateless:sep-2575-x" # item 3
client:
  - auth/dpop
`
	b, err := ParseBaseline(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tools-call-sampling": "Item 4: not relayed (continued)", "prompts-get-simple": "item 3: prompts",
		"server-stateless:sep-2575-x": "item 3"}
	if diff := cmp.Diff(want, b.Reasons); diff != "" {
		t.Fatalf("reasons (-want +got):\n%s", diff)
	}
	bad := []struct{ name, text, want string }{
		{"no reason", "server:\n  - ping\n", "ping has no reason"},
		{"reason of another entry", "server:\n  # why\n  - a\n  - b\n", "b has no reason"},
		{"blank line ends a reason", "server:\n  # why\n\n  - a\n", "a has no reason"},
		{"mapping", "server:\n  - a: b # x\n", "not a scenario"},
		{"twice", "server:\n  - a # x\n  - a # y\n", "listed twice"},
		{"whole and check", "server:\n  - a # x\n  - a:c # y\n", "listed whole and by check"},
		{"unknown section", "servers:\n  - a # x\n", "unknown section"},
		{"outside a section", "  - a # x\n", "outside a section"},
	}
	for _, tc := range bad {
		if _, err := ParseBaseline(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestReadResults(t *testing.T) {
	got, err := ReadResults("testdata/results")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Scenario{
		"ping":       {Checks: 2},
		"tools-list": {Checks: 4, Failed: []string{"tools-list", "wire-schema-valid"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
	if _, err := ReadResults(t.TempDir()); err == nil {
		t.Fatal("an empty results directory read as a run")
	}
}

func TestCompare(t *testing.T) {
	pass := Scenario{Checks: 1}
	fail := func(ids ...string) Scenario { return Scenario{Checks: 3, Failed: ids} }
	alone := map[string]Scenario{"a": pass, "b": pass, "c": pass, "d": pass, "e": fail("x"), "f": pass, "g": pass}
	through := map[string]Scenario{
		"a": pass,             // passes: fine
		"b": fail("b1"),       // listed whole: expected
		"c": fail("c1", "c2"), // c1 listed, c2 not: regression c2
		"d": pass,             // listed but passes: stale
		"e": fail("x", "y"),   // fails alone too: not counted
		"f": fail("f1"),       // not listed: regression
		// g has no result through the gateway: regression
	}
	b := Baseline{Reasons: map[string]string{"b": "r", "c:c1": "r", "d": "r", "zz": "r"}, Order: []string{"b", "c:c1", "d", "zz"}}
	got := Compare(alone, through, b)
	want := Comparison{Scenarios: 7, AlonePassed: 6, GatewayPassed: 2,
		Regressions: map[string][]string{"c": {"c2"}, "f": {"f1"}, "g": {"(no result through the gateway)"}},
		Expected:    []string{"b", "c:c1"}, Stale: []string{"d", "zz"}, AloneFailed: []string{"e"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("comparison (-want +got):\n%s", diff)
	}
	if got.OK() {
		t.Fatal("a comparison with regressions is OK")
	}
	clean := Compare(map[string]Scenario{"a": pass, "b": pass}, map[string]Scenario{"a": pass, "b": fail("b1")}, Baseline{Reasons: map[string]string{"b": "r"}, Order: []string{"b"}})
	if !clean.OK() || clean.GatewayPassed != 1 {
		t.Fatalf("expected failure only: %+v", clean)
	}
}

// TestBaselineFiles: the project's expected-failures files parse, each entry
// with its reason (a file may list none: every scenario passes).
func TestBaselineFiles(t *testing.T) {
	for _, v := range Versions(".") {
		if _, err := parseFile(v.Baseline); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyProxy: each request carries the key current when it is sent (a
// run switches wallets between scenarios), its body and Host unchanged.
func TestKeyProxy(t *testing.T) {
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s|%s|%s", r.Header.Get("Authorization"), r.Host, body)
	}))
	defer gateway.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var key atomic.Value
	proxy, err := KeyProxy(ctx, gateway.URL, func() string { return key.Load().(string) }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mcpk_first", "mcpk_second"} {
		key.Store(k)
		req, _ := http.NewRequest(http.MethodPost, proxy+"/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`))
		req.Host = "localhost:1234"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "Bearer " + k + `|localhost:1234|{"jsonrpc":"2.0"}`; string(got) != want {
			t.Errorf("gateway saw %q, want %q", got, want)
		}
	}
}

// TestRegisterServer: the everything-server is registered whole, and a
// registration that takes no tools is an error, not an empty run.
func TestRegisterServer(t *testing.T) {
	tests := []struct {
		name, answer string
		tools        int
		wantErr      string
	}{
		{"tools", `{"name":"everything","tools":[{"name":"a"},{"name":"b"}]}`, 2, ""},
		{"no tools", `{"name":"everything","tools":[]}`, 0, "no tools registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var posted map[string]any
			control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/control/servers" || r.Header.Get("Authorization") != "Bearer tok" {
					http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
					return
				}
				_ = json.NewDecoder(r.Body).Decode(&posted)
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, tc.answer)
			}))
			defer control.Close()
			n, err := RegisterServer(context.Background(), control.URL, "tok", "http://127.0.0.1:1/mcp")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.tools {
				t.Fatalf("RegisterServer = %d, %v; want %d tools", n, err, tc.tools)
			}
			if posted["url"] != "http://127.0.0.1:1/mcp" || posted["name"] != "everything" {
				t.Errorf("posted %v", posted)
			}
		})
	}
}
