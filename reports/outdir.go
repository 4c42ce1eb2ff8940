package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrorFile is the whole content of an output directory whose run never got
// past set-up, beside a junit.xml with one errored test case.
const ErrorFile = "error.txt"

// CheckOut says whether dir may be replaced by a new report: it does not
// exist, is empty, or holds an earlier report (its summary.json or its
// error.txt). Anything else is refused, so a mistyped --out never deletes a
// directory that is not the harness's.
func CheckOut(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reports: %w", err)
	case len(entries) == 0:
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() && (e.Name() == SummaryFile || e.Name() == ErrorFile) {
			return nil
		}
	}
	return fmt.Errorf("reports: %s is not empty and holds no %s or %s: not replacing a directory that is not a report", dir, SummaryFile, ErrorFile)
}

// publish writes files into a fresh directory beside dir and then puts it
// in dir's place, so dir holds one whole run: the previous one until the
// new one is complete, never a mixture (no evidence of scenarios that are
// not in the run, no report.html beside a newer junit.xml).
func publish(dir string, files []outFile) (err error) {
	if err := CheckOut(dir); err != nil {
		return err
	}
	clean := filepath.Clean(dir)
	parent, base := filepath.Split(clean)
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeLeftovers(parent, base, time.Now())
	fresh, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(fresh)
		}
	}()
	if err := os.Chmod(fresh, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		name := filepath.Join(fresh, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := writeAtomic(name, f.data); err != nil {
			return err
		}
	}
	killedAt("written")
	// Two renames: the old directory steps aside, the new one takes its
	// name; a crash between them leaves no dir at all, never a stale one.
	old := ""
	if _, err := os.Stat(clean); err == nil {
		old = fresh + ".old"
		if err := os.Rename(clean, old); err != nil {
			return err
		}
	}
	killedAt("aside")
	if err := os.Rename(fresh, clean); err != nil {
		if old != "" {
			os.Rename(old, clean)
		}
		return err
	}
	syncDir(parent)
	if old != "" {
		// The new report is in place: failing to delete the old one (a
		// hidden sibling) must not turn a complete run into an error.
		os.RemoveAll(old)
	}
	return nil
}

// leftoverAge is how old a hidden sibling of the report directory must be
// before publish deletes it: far longer than any publish takes, so only a
// killed run's debris goes, never another run's directory being written.
const leftoverAge = 10 * time.Minute

// removeLeftovers deletes what killed runs left beside dir: the hidden
// ".base.new-*" directories (and their ".old" halves) that publish renames
// and removes when it is not interrupted.
func removeLeftovers(parent, base string, now time.Time) {
	matches, _ := filepath.Glob(filepath.Join(parent, "."+base+".new-*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.IsDir() && now.Sub(fi.ModTime()) > leftoverAge {
			os.RemoveAll(m)
		}
	}
}

// WriteFileAtomic writes name so that a reader, or a run killed meanwhile,
// sees the old file or the whole new one, never a part (a bundle archive,
// beside the report directory).
func WriteFileAtomic(name string, data []byte) error { return writeAtomic(name, data) }

// killPoint, set by tests, stands for the process being killed at a stage
// of publish: it panics, so none of publish's own clean-up runs.
var killPoint func(stage string)

func killedAt(stage string) {
	if killPoint != nil {
		killPoint(stage)
	}
}

// SetupFailure is a run that never got to its scenarios: unreachable
// target, refused credentials, a bad selection, an interrupt during set-up.
type SetupFailure struct {
	Tool    string
	Version string
	Target  string // what was asked for: "reference" or a URL
	Profile string // the profile file, if any
	At      time.Time
	Err     string
	// Interrupted: SIGINT or SIGTERM stopped the set-up.
	Interrupted bool
}

// WriteError replaces dir with the record of a set-up failure: error.txt,
// a junit.xml whose one test case is an <error>, and summary.md saying so. There is no
// summary.json, so nothing reads the directory as a verdict on the target,
// and no earlier report survives to look current.
func WriteError(dir string, f SetupFailure) error {
	verdict, what := "ERROR", "the set-up failed"
	if f.Interrupted {
		verdict, what = RunInterrupted, "it was interrupted during set-up"
	}
	note := "This is not a verdict on the target; fix the set-up and run again."
	return writeRecord(dir, verdict, what, note, f)
}

// WriteRunning replaces dir, as a run starts, with the record of a run
// under way, which the finished report (or WriteError) replaces in turn.
// A run killed before it writes anything (SIGKILL, a CI timeout, a power
// cut) thus leaves this record, never the earlier run's verdict looking
// like its own.
func WriteRunning(dir string, f SetupFailure) error {
	f.Err = fmt.Sprintf("a run started at %s (process %d) has not written its report: while that process runs it is under way; if it is gone, it was killed before it finished",
		time.Now().UTC().Format(time.RFC3339), os.Getpid())
	note := "A run started here and has not finished, so there is no verdict yet. This is not a verdict on the target: wait for it, or run again if it was stopped."
	return writeRecord(dir, "UNFINISHED", "it is under way, or was stopped before writing its report", note, f)
}

func writeRecord(dir, verdict, what, note string, f SetupFailure) error {
	var txt bytes.Buffer
	fmt.Fprintf(&txt, "%s: %s %s did not run the scenarios: %s.\n\n", verdict, f.Tool, f.Version, what)
	fmt.Fprintf(&txt, "error:   %s\n", f.Err)
	fmt.Fprintf(&txt, "target:  %s\n", f.Target)
	if f.Profile != "" {
		fmt.Fprintf(&txt, "profile: %s\n", f.Profile)
	}
	fmt.Fprintf(&txt, "at:      %s\n\n%s\n", f.At.UTC().Format(time.RFC3339), note)
	msg := junitMessage{Message: firstLine(f.Err), Type: "setup", Body: txt.String()}
	tc := junitCase{Name: "set-up", Classname: "mcpconform", Time: "0.000", Error: &msg}
	suite := junitSuite{Name: "mcpconform", Tests: 1, Errors: 1, Time: "0.000",
		Timestamp:  f.At.UTC().Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{{"verdict", verdict}, {"target", f.Target}, {"harness", strings.TrimSpace(f.Tool + " " + f.Version)}},
		Cases:      []junitCase{tc}}
	all := junitSuites{Name: "mcpconform", Tests: 1, Errors: 1, Time: "0.000", Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: junit: %w", err)
	}
	junit := append([]byte(xml.Header), append(b, '\n')...)
	// A CI summary reads summary.md whatever happened, so a set-up failure
	// says there what it is, never leaving an earlier run's words.
	md := fmt.Sprintf("## mcpconform: %s\n\n%s %s did not run the scenarios: %s.\n\n%s\n\n%s\n",
		verdict, mdText(f.Tool, 0), mdText(f.Version, 0), what, mdText(firstLine(f.Err), mdMaxHeader), note)
	if err := publish(dir, []outFile{{ErrorFile, txt.Bytes()}, {JUnitFile, junit}, {MarkdownFile, []byte(md)}}); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
