// Package reports turns the evidence a run collected into the files a vendor
// hands in, a CI gates on and a reviewer reruns: summary.json, report.html,
// one ndjson history and one evidence file per scenario, junit.xml,
// cucumber.json, and the console's text, JSON lines and GitHub annotations:
// every one rendered from this one model.
package reports

import (
	"encoding/json"
	"math"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Run is one `mcpconform run`.
type Run struct {
	Tool    string `json:"tool"` // "mcpconform"
	Version string `json:"version"`
	Target  Target `json:"target"`
	Seed    int64  `json:"seed"`
	Tags    string `json:"tags,omitempty"`
	// Level is the certification level the run claims (wire, metered,
	// full): PASS means every @must check of that level held.
	Level string `json:"level,omitempty"`
	// Concurrency is the most clients one concurrent step used.
	Concurrency int `json:"concurrency,omitempty"`
	// Commit is the harness's VCS revision (buildinfo), "" when unknown.
	Commit string `json:"commit,omitempty"`
	// Interrupted: the run was stopped (SIGINT, SIGTERM) before it finished.
	Interrupted bool       `json:"interrupted,omitempty"`
	Started     time.Time  `json:"started"`
	Finished    time.Time  `json:"finished"`
	Scenarios   []Scenario `json:"scenarios"`
	// CatchTable, when present, is printed in the report (bug -> scenarios that caught it).
	CatchTable []Catch `json:"catch_table,omitempty"`
	// Baseline, when set, is an earlier run's summary that summary.md
	// lists this run's regressions against. It is the operator's choice of
	// comparison, not part of what was tested, so no other file records it.
	Baseline *Summary `json:"-"`
}

// Target says what was tested.
type Target struct {
	Kind         string   `json:"kind"` // "reference" or "url"
	URLs         []string `json:"urls"`
	Store        string   `json:"store,omitempty"`
	Profile      string   `json:"profile,omitempty"` // the profile's name
	Bugs         []string `json:"bugs,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// ServerName and ServerVersion are the target's serverInfo.
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	Protocol      string `json:"protocol,omitempty"` // the MCP version the run spoke
	UnkeyedPolicy string `json:"unkeyed_policy,omitempty"`
	// Args are the command-line flags, as given, that chose the target and
	// its peers (--target, --profile, --probe-url, --bug, ...): a scenario
	// runs again the same way only with them (RerunCommand).
	Args []string `json:"args,omitempty"`
}

// Catch is one row of the self-test's catch table.
type Catch struct {
	Bug      string   `json:"bug"`
	Expected []string `json:"expected"`  // scenario IDs listed for the bug
	CaughtBy []string `json:"caught_by"` // every scenario that failed
	// Checks are the checks named for the bug, each with whether the run
	// violated it: a catch counts only when its named check failed, not
	// when its scenario failed for another reason.
	Checks []CatchCheck `json:"checks,omitempty"`
	// Contradicted are scenarios whose recorded checks their own history
	// contradicts (Recheck): recheck must agree with the run, bug or not.
	Contradicted []string `json:"contradicted,omitempty"`
	OK           bool     `json:"ok"`
}

// CatchCheck is one check a bug switch names: its scenario and the step
// that makes it, as the feature file writes it.
type CatchCheck struct {
	Scenario string `json:"scenario"`
	Step     string `json:"step"`
	Violated bool   `json:"violated"`
	// Observed is what the violated check saw, or why it was not caught:
	// the scenario passed, or failed at other checks.
	Observed string `json:"observed,omitempty"`
}

// Scenario is the verdict and evidence of one scenario.
type Scenario struct {
	ID          string        `json:"id"` // stable tag, e.g. "retry-01"
	Title       string        `json:"title"`
	Feature     string        `json:"feature"`
	File        string        `json:"file,omitempty"` // the feature file, and the scenario's line in it
	Line        int64         `json:"line,omitempty"`
	Level       string        `json:"level"` // "must" or "should"
	Tags        []string      `json:"tags"`
	Requirement string        `json:"requirement"` // the quoted requirement
	Source      string        `json:"source"`      // where it comes from
	Verdict     judge.Verdict `json:"verdict"`
	Reason      string        `json:"reason,omitempty"` // failure message or skip reason
	// Concurrency is how many clients its concurrent step used, if any.
	Concurrency int `json:"concurrency,omitempty"`
	// Missing is the capability whose absence skipped the scenario.
	Missing   string     `json:"missing,omitempty"`
	Expected  string     `json:"expected,omitempty"`
	Actual    string     `json:"actual,omitempty"`
	Duration  Duration   `json:"duration"`
	Exchanges []Exchange `json:"exchanges,omitempty"`
	// Control are the calls the harness made beside the MCP exchanges, in
	// order: the control API's (fixtures, clock, faults, reads) and the
	// upstream probe's (stall, unstall, wait). repro replays them between
	// the exchanges, by time.
	Control      []Exchange `json:"control,omitempty"`
	LedgerBefore *Ledger    `json:"ledger_before,omitempty"`
	LedgerAfter  *Ledger    `json:"ledger_after,omitempty"`
	History      []judge.Op `json:"history,omitempty"`
	// Ending is how the scenario's steps ended besides its checks (not
	// applicable, skipped, interrupted, a step error): with the checks, what
	// the verdict rule decides from, so recheck can apply it again.
	Ending     *judge.Ending    `json:"ending,omitempty"`
	Dispatches []judge.Dispatch `json:"dispatches,omitempty"`
	// Checks lists every assertion the scenario made, in order, whatever its state.
	Checks []judge.Check `json:"checks,omitempty"`
	// Steps are the scenario's steps as godog ran them, in order.
	Steps []StepResult `json:"steps,omitempty"`
}

// StepResult is one Gherkin step and how it ended (godog's status names:
// passed, failed, skipped, undefined, pending, ambiguous).
type StepResult struct {
	Keyword string `json:"keyword,omitempty"` // "Given ", "When ", "Then ", "And "
	Text    string `json:"text"`
	Line    int64  `json:"line,omitempty"`
	Status  string `json:"status"` // "not run" for a step godog never reached
	Error   string `json:"error,omitempty"`
}

// Exchange is one raw HTTP request and its answer, as sent and received.
type Exchange struct {
	Label           string            `json:"label"` // e.g. "call A", "retry"
	Lane            string            `json:"lane"`  // swim lane in the timeline (client name)
	Method          string            `json:"method"`
	URL             string            `json:"url"`
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	RequestBody     json.RawMessage   `json:"request_body,omitempty"`
	RequestBodyText string            `json:"request_body_text,omitempty"` // a body that is not JSON, as sent; see Write
	Status          int               `json:"status"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	ResponseBody    string            `json:"response_body,omitempty"`
	Error           string            `json:"error,omitempty"` // transport error, e.g. connection dropped
	Started         time.Time         `json:"started"`
	Finished        time.Time         `json:"finished"`
}

// Ledger is a wallet's balance and entries at one moment.
type Ledger struct {
	WalletID string              `json:"wallet_id"`
	Balance  int64               `json:"balance"`
	Entries  []judge.LedgerEntry `json:"entries"`
}

// Duration marshals as seconds with a fraction.
type Duration time.Duration

// MarshalJSON writes seconds as a float.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

// UnmarshalJSON reads seconds as a float.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	// Round, not truncate: 1.234567891 s is 1234567890.9999998 ns as a float.
	*d = Duration(math.Round(s * float64(time.Second)))
	return nil
}
