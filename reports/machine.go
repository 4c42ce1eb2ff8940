package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Console formats of `mcpconform run --format`.
const (
	FormatText   = "text"   // the table, the counts and the verdict (PrintSummary)
	FormatJSONL  = "jsonl"  // one JSON object a line: each scenario, then the run (PrintJSONL)
	FormatGitHub = "github" // GitHub Actions annotations, then the text (PrintGitHub)
)

// Formats lists the values --format accepts.
var Formats = []string{FormatText, FormatJSONL, FormatGitHub}

// jsonlScenario is a scenario's line: its summary.json entry, and where it
// is written.
type jsonlScenario struct {
	Type string `json:"type"` // "scenario"
	SummaryScenario
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// jsonlRun is the last line: summary.json without its scenarios, with the
// CI counts and the subject line.
type jsonlRun struct {
	Type string `json:"type"` // "summary"
	Summary
	Scenarios []SummaryScenario `json:"scenarios,omitempty"` // hides Summary's: they came one a line
	Passed    int               `json:"passed"`
	Failed    int               `json:"failed"`
	Skipped   int               `json:"skipped"`
	Subject   string            `json:"subject"`
}

// PrintJSONL writes the run as JSON lines: one {"type":"scenario",...} per
// scenario in run order (its summary.json entry plus file and line), then
// one {"type":"summary",...} with the run's verdict, counts and why, the
// same values summary.json holds.
func PrintJSONL(w io.Writer, run Run) error {
	sum := buildSummary(run, fileNames(run.Scenarios))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, s := range sum.Scenarios {
		sc := run.Scenarios[i]
		if err := enc.Encode(jsonlScenario{Type: "scenario", SummaryScenario: s, File: sc.File, Line: sc.Line}); err != nil {
			return err
		}
	}
	t := computeTotals(run)
	return enc.Encode(jsonlRun{Type: "summary", Summary: sum, Passed: t.passed, Failed: t.failed, Skipped: t.skipped, Subject: Subject(run)})
}

// PrintGitHub writes a GitHub Actions annotation for every scenario that
// keeps the run from a PASS, at its line in its feature file (dir is the
// feature files' directory in the repository, e.g. "features"): an error
// when it fails the run, a warning when it is only not fully observed; an
// incomplete scenario that does not hold the run back is a warning too.
// Then the run's verdict as an error or a notice, and the text summary.
func PrintGitHub(w io.Writer, run Run, dir string) {
	why := map[int]problem{}
	for _, p := range problems(run) {
		why[p.index] = p
	}
	for i, s := range run.Scenarios {
		p, isProblem := why[i]
		var cmd, msg string
		switch {
		case isProblem && p.fails:
			cmd, msg = "error", p.why
		case isProblem:
			cmd, msg = "warning", p.why
		case s.Verdict == judge.Incomplete:
			cmd, msg = "warning", withReason(displayID(s.ID)+": incomplete", s.Reason)
		default:
			continue
		}
		if _, rest, ok := strings.Cut(s.Reason, "\n"); ok {
			msg += "\n" + rest // the why line has only the first
		}
		props := []string{}
		if s.File != "" {
			props = append(props, "file="+ghProperty(path.Join(dir, s.File)))
			if s.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", s.Line))
			}
		}
		props = append(props, "title="+ghProperty(displayID(s.ID)+": "+s.Title))
		fmt.Fprintf(w, "::%s %s::%s\n", cmd, strings.Join(props, ","), ghData(msg))
	}
	result, problems := Judge(run)
	cmd := "notice"
	if result != RunPass {
		cmd = "error"
	}
	fmt.Fprintf(w, "::%s title=mcpconform %s::%s\n", cmd, ghProperty(result), ghData(RunLine(run, result, len(problems))+" "+Subject(run)))
	PrintSummary(w, run)
}

// PrintJSONLError is the one line of a run that never reached its
// scenarios: {"type":"error","result":"ERROR","error":"..."}.
func PrintJSONLError(w io.Writer, result, msg string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Type   string `json:"type"`
		Result string `json:"result"`
		Error  string `json:"error"`
	}{"error", result, msg})
}

// PrintGitHubError is the annotation of a run that never reached its
// scenarios.
func PrintGitHubError(w io.Writer, result, msg string) {
	fmt.Fprintf(w, "::error title=mcpconform %s::%s\n", ghProperty(result), ghData(msg))
}

// ghData escapes an annotation's message as the Actions runner decodes it.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a property value, where ':' and ',' are separators.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
