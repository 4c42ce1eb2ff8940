package officialsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Scenario is one scenario's outcome in a run of the suite.
type Scenario struct {
	Checks int
	// Failed are the ids of its checks with status FAILURE, sorted.
	Failed []string
}

// Passed reports whether no check failed.
func (s Scenario) Passed() bool { return len(s.Failed) == 0 }

// dirName is a result directory the suite writes per scenario:
// server-<scenario>-<timestamp>.
var dirName = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// ReadResults reads the checks.json of every scenario under dir (the
// suite's --output-dir).
func ReadResults(dir string) (map[string]Scenario, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	out := map[string]Scenario{}
	for _, e := range entries {
		m := dirName.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("results of %s: %w", m[1], err)
		}
		var checks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(raw, &checks); err != nil {
			return nil, fmt.Errorf("results of %s: %w", m[1], err)
		}
		s := out[m[1]]
		s.Checks += len(checks)
		for _, c := range checks {
			if c.Status == "FAILURE" && !slices.Contains(s.Failed, c.ID) {
				s.Failed = append(s.Failed, c.ID)
			}
		}
		slices.Sort(s.Failed)
		out[m[1]] = s
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("results: no scenario results under %s", dir)
	}
	return out, nil
}
