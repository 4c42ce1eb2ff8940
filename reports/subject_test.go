package reports

import (
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSubject(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"vendor", Run{Tool: "mcpconform", Version: "0.1.0", Commit: "0123456789abcdef0123", Started: at,
			Target: Target{Kind: "url", URLs: []string{"https://gw.example/mcp"}, Profile: "acme", ServerName: "acme-gateway", ServerVersion: "2.3.1"}},
			"acme-gateway 2.3.1 at https://gw.example/mcp (profile acme) · mcpconform 0.1.0 commit 0123456789ab · 2026-12-03 12:00 UTC"},
		{"reference, dirty build", Run{Tool: "mcpconform", Version: "0.1.0", Commit: "0123456789abcdef0123-dirty", Started: at,
			Target: Target{Kind: "reference", URLs: []string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"}, ServerName: "mcpconform-reference", ServerVersion: "0.1.0"}},
			"mcpconform-reference 0.1.0 (bundled reference gateway) at http://127.0.0.1:1/mcp, http://127.0.0.1:2/mcp · mcpconform 0.1.0 commit 0123456789ab-dirty · 2026-12-03 12:00 UTC"},
		{"nothing known", Run{Tool: "mcpconform", Version: "0.1.0"}, "unnamed server · mcpconform 0.1.0 commit unknown"},
		{"hostile server name", Run{Tool: "mcpconform", Target: Target{ServerName: "evil\x1b[2J"}}, `evil\x1b[2J · mcpconform commit unknown`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Subject(tc.run); got != tc.want {
				t.Errorf("Subject =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}

// Every output names the harness commit and what was tested.
func TestOutputsNameWhatWasTested(t *testing.T) {
	run := loadFixture(t)
	run.Commit = "0123456789abcdef0123456789abcdef01234567"
	run.Target.ServerName, run.Target.ServerVersion, run.Target.Profile = "acme-gateway", "2.3.1", "acme"
	dir := filepath.Join(t.TempDir(), "out")
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	sum, err := LoadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Commit != run.Commit || sum.Target.ServerName != "acme-gateway" || sum.Target.Profile != "acme" || !sum.Started.Equal(run.Started) {
		t.Errorf("summary.json: commit %q, target %+v, started %v", sum.Commit, sum.Target, sum.Started)
	}
	var suites junitSuites
	if err := xml.Unmarshal(readFile(t, filepath.Join(dir, JUnitFile)), &suites); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range suites.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	for k, v := range map[string]string{"harness.commit": run.Commit, "target.server_name": "acme-gateway",
		"target.server_version": "2.3.1", "target.profile": "acme", "started": "2025-06-01T12:00:00Z"} {
		if props[k] != v {
			t.Errorf("junit property %s = %q, want %q", k, props[k], v)
		}
	}
	html := string(readFile(t, filepath.Join(dir, ReportFile)))
	if !strings.Contains(html, "acme-gateway 2.3.1") || !strings.Contains(html, run.Commit) {
		t.Error("report.html does not name the server and the harness commit")
	}
}
