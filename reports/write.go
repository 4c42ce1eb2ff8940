package reports

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// File names inside an output directory.
const (
	SummaryFile = "summary.json"
	ReportFile  = "report.html"
	HistoryDir  = "history"  // history/<name>.ndjson, one Op per line
	EvidenceDir = "evidence" // evidence/<name>.json, the whole Scenario
)

// SummaryFormat names the layout of summary.json; it changes only when a
// reader of an older file would misread a newer one.
const SummaryFormat = "mcpconform.summary/v1"

// Summary is the content of summary.json.
type Summary struct {
	Format   string    `json:"format"` // SummaryFormat
	Tool     string    `json:"tool"`
	Version  string    `json:"version"`
	Commit   string    `json:"commit,omitempty"` // the harness's VCS revision
	Target   Target    `json:"target"`
	Seed     int64     `json:"seed"`
	Tags     string    `json:"tags,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Duration Duration  `json:"duration"` // Finished - Started
	// Level is the level the run claims; Result, OK and Why are Judge(run)
	// at the time of writing (OK is Result == PASS).
	Level       string   `json:"level"`
	Concurrency int      `json:"concurrency,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Result      string   `json:"result"`
	OK          bool     `json:"ok"`
	Why         []string `json:"why"`
	// Total is the number of scenarios; Counts has one entry per verdict (all
	// known verdicts, zero or not); ByLevel the same per level ("must",
	// "should", "(none)" for a scenario without one).
	Total   int                       `json:"total"`
	Counts  map[string]int            `json:"counts"`
	ByLevel map[string]map[string]int `json:"by_level"`
	// Scenarios are in run order.
	Scenarios  []SummaryScenario `json:"scenarios"`
	CatchTable []Catch           `json:"catch_table,omitempty"`
}

// SummaryScenario is one scenario's line in summary.json.
type SummaryScenario struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Feature  string        `json:"feature,omitempty"`
	Level    string        `json:"level"`
	Tags     []string      `json:"tags,omitempty"`
	Verdict  judge.Verdict `json:"verdict"`
	Reason   string        `json:"reason,omitempty"`
	Duration Duration      `json:"duration"`
	// FailsRun is true when this scenario is one of the reasons in Why.
	FailsRun bool `json:"fails_run"`
	// Evidence and History are slash-separated paths relative to the output
	// directory: evidence/<name>.json and history/<name>.ndjson.
	Evidence string `json:"evidence"`
	History  string `json:"history"`
}

// Write writes the files of a run as the directory dir: summary.json,
// summary.md, report.html, junit.xml, cucumber.json, history/<name>.ndjson and
// evidence/<name>.json per scenario, where <name> is the scenario ID made
// safe as a file name (see summary.json for the mapping when an ID is not).
//
// Everything is rendered in memory first, so invalid data writes nothing;
// then the files go into a fresh directory beside dir, which replaces dir
// only once it is complete (see publish). dir therefore never mixes two
// runs: files of scenarios from an earlier run are gone. An existing dir
// that does not hold a report is refused (CheckOut).
//
// A request body that is not valid JSON cannot be carried by
// Exchange.RequestBody (json.RawMessage); Write stores it in
// Exchange.RequestBodyText of the evidence instead. run itself is not
// modified.
func Write(dir string, run Run) error { return WriteWith(dir, run, nil) }

// File is a file written into a report directory beside the report's own,
// at Path (slash-separated, relative to the directory): explore's found
// scenarios, say. It is published with the report, never apart from it.
type File struct {
	Path string
	Data []byte
}

// WriteWith is Write with extra files in the same directory, swapped in
// with the report as one.
func WriteWith(dir string, run Run, extra []File) error {
	run = prepare(run)
	names := fileNames(run.Scenarios)
	files, summaryBytes, err := render(run, names)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	for _, f := range extra {
		if !fs.ValidPath(f.Path) || f.Path == SummaryFile {
			return fmt.Errorf("reports: extra file %q: not a path inside the report", f.Path)
		}
		files = append(files, outFile{f.Path, f.Data})
	}
	if err := publish(dir, append(files, outFile{SummaryFile, summaryBytes})); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

type outFile struct {
	path string // slash-separated, relative to the output directory
	data []byte
}

// prepare returns a copy of run whose exchanges can be marshalled: an
// invalid RequestBody moves to RequestBodyText. Slices that change are
// copied, so the caller's run is untouched.
func prepare(run Run) Run {
	run.Scenarios = append([]Scenario(nil), run.Scenarios...)
	for i := range run.Scenarios {
		s := &run.Scenarios[i]
		copied := false
		for j, e := range s.Exchanges {
			if len(e.RequestBody) == 0 || json.Valid(e.RequestBody) {
				continue
			}
			if !copied {
				s.Exchanges = append([]Exchange(nil), s.Exchanges...)
				copied = true
			}
			if e.RequestBodyText == "" {
				e.RequestBodyText, e.RequestBody = string(e.RequestBody), nil
			} else {
				// Both set: keep both, the invalid one as a JSON string.
				e.RequestBody, _ = json.Marshal(string(e.RequestBody))
			}
			s.Exchanges[j] = e
		}
	}
	return run
}

func render(run Run, names []string) ([]outFile, []byte, error) {
	var files []outFile
	for i, s := range run.Scenarios {
		hist, err := encodeHistory(s.History)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %q: history: %w", s.ID, err)
		}
		ev, err := marshalIndent(s)
		if err != nil {
			return nil, nil, fmt.Errorf("scenario %q: evidence: %w", s.ID, err)
		}
		files = append(files,
			outFile{historyPath(names[i]), hist},
			outFile{evidencePath(names[i]), ev},
		)
	}
	sum := buildSummary(run, names)
	html, err := renderHTML(run, sum, names)
	if err != nil {
		return nil, nil, fmt.Errorf("report.html: %w", err)
	}
	files = append(files, outFile{ReportFile, html})
	junit, err := JUnit(run)
	if err != nil {
		return nil, nil, err
	}
	files = append(files, outFile{JUnitFile, junit})
	cucumber, err := Cucumber(run)
	if err != nil {
		return nil, nil, err
	}
	files = append(files, outFile{CucumberFile, cucumber}, outFile{MarkdownFile, Markdown(run)})
	sumBytes, err := marshalIndent(sum)
	if err != nil {
		return nil, nil, fmt.Errorf("summary.json: %w", err)
	}
	return files, sumBytes, nil
}

func historyPath(name string) string  { return path.Join(HistoryDir, name+".ndjson") }
func evidencePath(name string) string { return path.Join(EvidenceDir, name+".json") }

// encodeHistory writes one Op per line; encoding/json compacts Value, so an
// Op never spans lines.
func encodeHistory(ops []judge.Op) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			return nil, fmt.Errorf("op %d: %w", op.Index, err)
		}
	}
	return buf.Bytes(), nil
}

func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func buildSummary(run Run, names []string) Summary {
	result, why := Judge(run)
	ok := result == RunPass
	if why == nil {
		why = []string{}
	}
	failing := make(map[int]bool)
	for _, p := range problems(run) {
		failing[p.index] = true
	}
	sum := Summary{
		Format:      SummaryFormat,
		Tool:        run.Tool,
		Version:     run.Version,
		Commit:      run.Commit,
		Target:      run.Target,
		Seed:        run.Seed,
		Tags:        run.Tags,
		Started:     run.Started,
		Finished:    run.Finished,
		Level:       run.Level,
		Concurrency: run.Concurrency,
		Interrupted: run.Interrupted,
		Result:      result,
		OK:          ok,
		Why:         why,
		Total:       len(run.Scenarios),
		Counts:      countVerdicts(run.Scenarios),
		ByLevel:     map[string]map[string]int{},
		Scenarios:   make([]SummaryScenario, 0, len(run.Scenarios)),
		CatchTable:  run.CatchTable,
	}
	if !run.Started.IsZero() && !run.Finished.IsZero() {
		sum.Duration = Duration(run.Finished.Sub(run.Started))
	}
	byLevel := map[string][]Scenario{}
	for i, s := range run.Scenarios {
		byLevel[levelKey(s.Level)] = append(byLevel[levelKey(s.Level)], s)
		sum.Scenarios = append(sum.Scenarios, SummaryScenario{
			ID:       s.ID,
			Title:    s.Title,
			Feature:  s.Feature,
			Level:    s.Level,
			Tags:     s.Tags,
			Verdict:  s.Verdict,
			Reason:   s.Reason,
			Duration: s.Duration,
			FailsRun: failing[i],
			Evidence: evidencePath(names[i]),
			History:  historyPath(names[i]),
		})
	}
	for _, l := range []string{"must", "should"} {
		if _, ok := byLevel[l]; !ok {
			byLevel[l] = nil // always reported, zero or not
		}
	}
	for l, ss := range byLevel {
		sum.ByLevel[l] = countVerdicts(ss)
	}
	return sum
}

// writeAtomic writes data to a temporary file beside name, flushes it to
// disk and renames it over name, so a reader sees the old file or the new
// one, never a part.
func writeAtomic(name string, data []byte) (err error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, name); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable where the platform allows; failure to do
// so (Windows cannot open a directory for sync) is not an error.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
