package reports

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// JUnitFile is written beside summary.json.
const JUnitFile = "junit.xml"

// The JUnit XML that Jenkins, GitLab and the common readers load: one
// <testsuite> of one <testcase> per scenario, named "ID: title".
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// JUnit renders the run as JUnit XML, from the same model as every other
// output, each test case by its Outcome: a scenario that fails the run is a
// <failure> with expected and observed (a harness defect, an undefined
// step, an <error>); skipped, incomplete, not-applicable, waived and
// interrupted ones are <skipped> with the reason (for incomplete, the
// checks not observed). Suite properties name the target, the harness and
// the seed.
func JUnit(run Run) ([]byte, error) {
	result, _ := Judge(run)
	suite := junitSuite{
		Name:  "mcpconform",
		Tests: len(run.Scenarios),
		Time:  seconds(run.Finished.Sub(run.Started)),
		Properties: []junitProperty{
			{"verdict", strings.TrimSuffix(RunLine(run, result), ":")},
			{"level", ClaimedLevel(run)},
			{"target.kind", run.Target.Kind},
			{"target.urls", strings.Join(run.Target.URLs, " ")},
			{"target.profile", run.Target.Profile},
			{"target.server_name", run.Target.ServerName},
			{"target.server_version", run.Target.ServerVersion},
			{"target.protocol", run.Target.Protocol},
			{"target.capabilities", strings.Join(run.Target.Capabilities, " ")},
			{"harness", run.Tool + " " + run.Version},
			{"harness.commit", run.Commit},
			{"started", run.Started.UTC().Format(time.RFC3339)},
			{"seed", fmt.Sprint(run.Seed)},
		},
	}
	if !run.Started.IsZero() {
		suite.Timestamp = run.Started.UTC().Format("2006-01-02T15:04:05")
	}
	outcomes := Outcomes(run)
	reasons := map[int]string{}
	for _, p := range problems(run) {
		reasons[p.index] = p.why
	}
	for i, s := range run.Scenarios {
		tc := junitCase{
			Name:      displayID(s.ID) + ": " + s.Title,
			Classname: "mcpconform." + strings.TrimSuffix(featureName(s), ".feature"),
			Time:      seconds(time.Duration(s.Duration)),
		}
		switch outcomes[i] {
		case OutcomePassed:
		case OutcomeFailed:
			suite.Failures++
			tc.Failure = &junitMessage{Message: failureMessage(s, reasons[i]), Type: verdictKey(s.Verdict), Body: checkLines(s)}
		case OutcomeError:
			suite.Errors++
			tc.Error = &junitMessage{Message: failureMessage(s, reasons[i]), Type: string(s.Verdict), Body: s.Reason}
		default:
			suite.Skipped++
			msg := strings.ToUpper(string(s.Verdict)) + ": " + firstLine(s.Reason)
			tc.Skipped = &junitMessage{Message: msg, Body: checkLines(s)}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	all := junitSuites{Name: "mcpconform", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// failureMessage is the scenario's reason, or, when it has none (a verdict
// its checks contradict), why it fails the run.
func failureMessage(s Scenario, why string) string {
	if r := firstLine(s.Reason); r != "" && s.Verdict != judge.Passed {
		return r
	}
	return why
}

// checkLines lists a scenario's checks, one a line, with their state.
func checkLines(s Scenario) string {
	var b strings.Builder
	for _, c := range s.Checks {
		fmt.Fprintf(&b, "[%s] %s\n  expected: %s\n  observed: %s\n", c.Status(), c.Step, c.Expected, c.Actual)
	}
	if b.Len() == 0 {
		return s.Reason
	}
	return b.String()
}

func featureName(s Scenario) string {
	if s.Feature == "" {
		return "suite"
	}
	return strings.ReplaceAll(strings.ToLower(s.Feature), " ", "_")
}

func seconds(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%.3f", d.Seconds())
}
