package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Load reads back a run that Write wrote into dir, so its verdict can be
// rechecked from the files alone: Verdict(run) of the result is computed
// from the evidence, not copied from summary.json.
//
// Run metadata and the catch table come from summary.json, each scenario
// from the evidence file summary.json lists for it, in summary order.
// Load refuses files that contradict each other: an evidence file whose ID
// or verdict differs from its summary line, or a history ndjson whose ops
// differ from the evidence's History. It reads nothing outside dir.
func Load(dir string) (Run, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Run{}, fmt.Errorf("reports: %w", err)
	}
	defer root.Close()
	sum, err := readSummary(root)
	if err != nil {
		return Run{}, err
	}
	run := Run{
		Tool:        sum.Tool,
		Version:     sum.Version,
		Commit:      sum.Commit,
		Target:      sum.Target,
		Seed:        sum.Seed,
		Tags:        sum.Tags,
		Level:       sum.Level,
		Concurrency: sum.Concurrency,
		Interrupted: sum.Interrupted,
		Started:     sum.Started,
		Finished:    sum.Finished,
		Scenarios:   make([]Scenario, 0, len(sum.Scenarios)),
		CatchTable:  sum.CatchTable,
	}
	for i, line := range sum.Scenarios {
		s, err := loadScenario(root, line)
		if err != nil {
			return Run{}, fmt.Errorf("reports: %s: scenario %d (%q): %w", SummaryFile, i, line.ID, err)
		}
		run.Scenarios = append(run.Scenarios, s)
	}
	return run, nil
}

// LoadSummary reads summary.json from dir as written, including the OK and
// Why recorded at the time, e.g. to compare them with Verdict(Load(dir)).
func LoadSummary(dir string) (Summary, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("reports: %w", err)
	}
	defer root.Close()
	return readSummary(root)
}

func readSummary(root *os.Root) (Summary, error) { return readSummaryFile(root, SummaryFile) }

func readSummaryFile(root *os.Root, name string) (Summary, error) {
	var sum Summary
	b, err := root.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := root.Stat(ErrorFile); serr == nil {
				return sum, fmt.Errorf("reports: no %s in %s: that run wrote no report (see its %s)", SummaryFile, root.Name(), ErrorFile)
			}
			return sum, fmt.Errorf("reports: no %s in %s (not a report directory, or an interrupted write)", SummaryFile, root.Name())
		}
		return sum, fmt.Errorf("reports: %w", err)
	}
	if err := decodeOne(b, &sum); err != nil {
		return sum, fmt.Errorf("reports: %s: %w", name, err)
	}
	if sum.Format != SummaryFormat {
		return sum, fmt.Errorf("reports: %s: format %q, want %q", name, sum.Format, SummaryFormat)
	}
	return sum, nil
}

func loadScenario(root *os.Root, line SummaryScenario) (Scenario, error) {
	var s Scenario
	evPath, err := localPath(line.Evidence, EvidenceDir, ".json")
	if err != nil {
		return s, fmt.Errorf("evidence: %w", err)
	}
	histPath, err := localPath(line.History, HistoryDir, ".ndjson")
	if err != nil {
		return s, fmt.Errorf("history: %w", err)
	}
	b, err := root.ReadFile(evPath)
	if err != nil {
		return s, err
	}
	if err := decodeOne(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", line.Evidence, err)
	}
	if s.ID != line.ID {
		return s, fmt.Errorf("%s has id %q, summary says %q", line.Evidence, s.ID, line.ID)
	}
	if s.Verdict != line.Verdict {
		return s, fmt.Errorf("%s has verdict %q, summary says %q", line.Evidence, s.Verdict, line.Verdict)
	}
	hb, err := root.ReadFile(histPath)
	if err != nil {
		return s, err
	}
	ops, err := decodeHistory(hb)
	if err != nil {
		return s, fmt.Errorf("%s: %w", line.History, err)
	}
	if err := sameHistory(ops, s.History); err != nil {
		return s, fmt.Errorf("%s disagrees with %s: %w", line.History, line.Evidence, err)
	}
	return s, nil
}

// localPath checks that p is a slash-separated path of a file directly in
// dir with the extension ext, and returns it in the platform's form.
func localPath(p, dir, ext string) (string, error) {
	if path.Dir(p) != dir || path.Ext(p) != ext || !filepath.IsLocal(filepath.FromSlash(p)) || strings.Contains(p, `\`) {
		return "", fmt.Errorf("path %q is not %s/<name>%s", p, dir, ext)
	}
	return filepath.FromSlash(p), nil
}

// decodeOne decodes exactly one JSON value from b.
func decodeOne(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func decodeHistory(b []byte) ([]judge.Op, error) {
	var ops []judge.Op
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var op judge.Op
		if err := decodeOne(line, &op); err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// sameHistory compares two histories by their canonical encoding.
func sameHistory(got, want []judge.Op) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d ops, evidence has %d", len(got), len(want))
	}
	for i := range got {
		g, err := encodeHistory(got[i : i+1])
		if err != nil {
			return err
		}
		w, err := encodeHistory(want[i : i+1])
		if err != nil {
			return err
		}
		if !bytes.Equal(g, w) {
			return fmt.Errorf("op %d differs", i)
		}
	}
	return nil
}
