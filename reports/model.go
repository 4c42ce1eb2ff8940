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
)

// Verdicts. Nothing is "passed" unless its checks were observed.
const (
	Passed = "passed" // every check observed and held, at least one
	Failed = "failed" // a check was observed and violated
	// Incomplete: nothing violated, but some check could not be observed
	// (the target lacks the capability that would observe it).
	Incomplete = "incomplete"
	// Skipped: the situation could not be created at all (no clock to move,
	// no fault point to pause at); Reason and Missing say which capability.
	Skipped   = "skipped"
	Undefined = "undefined" // a step without a definition (a harness defect)
	// NotApplicable: the scenario is for another unkeyed policy than the
	// one the target declares; it does not count towards the run.
	NotApplicable   = "not-applicable"
	Interrupted     = "interrupted" // the run was stopped before it finished
	ExpectedFailure = "expected-failure"
	UnexpectedPass  = "unexpected-pass" // listed as an expected failure but passed: fails the run
)

// Check states.
const (
	Held        = "held"
	Violated    = "violated"
	NotObserved = "not-observed"
)

// Run is one `mcpconform run`.
type Run struct {
	Tool    string `json:"tool"` // "mcpconform"
	Version string `json:"version"`
	Target  Target `json:"target"`
	Seed    int64  `json:"seed"`
	Tags    string `json:"tags,omitempty"`
	Strict  bool   `json:"strict"`
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
	ID          string   `json:"id"` // stable tag, e.g. "retry-01"
	Title       string   `json:"title"`
	Feature     string   `json:"feature"`
	File        string   `json:"file,omitempty"` // the feature file, and the scenario's line in it
	Line        int64    `json:"line,omitempty"`
	Level       string   `json:"level"` // "must" or "should"
	Tags        []string `json:"tags"`
	Requirement string   `json:"requirement"` // the quoted requirement
	Source      string   `json:"source"`      // where it comes from
	Verdict     string   `json:"verdict"`
	Reason      string   `json:"reason,omitempty"` // failure message or skip reason
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
	History      []Op       `json:"history,omitempty"`
	Dispatches   []Dispatch `json:"dispatches,omitempty"`
	// Checks lists every assertion the scenario made, in order, whatever its state.
	Checks []Check `json:"checks,omitempty"`
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

// Check is one assertion of a Then step: held, violated, or not observed
// because the target lacks the capability that would observe it.
type Check struct {
	Step string `json:"step"`
	// State is Held, Violated or NotObserved; OK is State == Held (kept for
	// readers of older files, where State is absent).
	State      string `json:"state,omitempty"`
	OK         bool   `json:"ok"`
	Capability string `json:"capability,omitempty"` // what observes it: upstream, ledger, wire...
	// StepIndex is the index in Scenario.Steps of the step that made it.
	StepIndex int    `json:"step_index"`
	Expected  string `json:"expected"`
	// Actual is what was observed; for a check not observed, why not.
	Actual string `json:"actual"`
	// Witness names the requests, dispatches and ledger entries the check
	// looked at, in this scenario's record.
	Witness *Witness `json:"witness,omitempty"`
}

// Status is the check's state, also for files written before State existed.
func (c Check) Status() string {
	switch {
	case c.State != "":
		return c.State
	case c.OK:
		return Held
	}
	return Violated
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
	WalletID string        `json:"wallet_id"`
	Balance  int64         `json:"balance"`
	Entries  []LedgerEntry `json:"entries"`
}

// LedgerEntry mirrors the control API's ledger entry.
type LedgerEntry struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Amount  int64     `json:"amount"`
	Receipt string    `json:"receipt,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	At      time.Time `json:"at"`
}

// Op is one history event, Jepsen style: each operation is recorded as
// invoke, then ok, fail or info (outcome unknown), with a value unique to it.
type Op struct {
	Index   int             `json:"index"`
	Process string          `json:"process"` // the client lane
	Type    string          `json:"type"`    // invoke | ok | fail | info
	F       string          `json:"f"`       // e.g. "tools/call"
	Value   json.RawMessage `json:"value"`   // operation token, key, receipt, reason...
	Time    time.Time       `json:"time"`
	// Step is the index in Scenario.Steps of the step that was running when
	// the event was recorded, so a check (Check.StepIndex) can be recomputed
	// from the events it saw; nil in files written before it existed.
	Step *int `json:"step,omitempty"`
}

// Dispatch is one call the upstream probe received.
type Dispatch struct {
	Token string    `json:"token"`
	Tool  string    `json:"tool"`
	At    time.Time `json:"at"`
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
