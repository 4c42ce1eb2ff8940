// Package officialsuite runs the official MCP conformance suite (npm
// @modelcontextprotocol/conformance) against go-sdk's everything-server alone
// and against the reference gateway fronting it, and compares the two: a
// scenario the everything-server passes alone must pass through the gateway,
// unless the expected-failures file lists it with a reason.
package officialsuite

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Baseline is an expected-failures file in the suite's own format (YAML: a
// "server:" list of scenario names, or "scenario:check-id" for one check),
// where this project requires a reason for each entry: the comment lines
// just above it, or a comment after it on its line.
type Baseline struct {
	// Reasons maps each server entry to its reason.
	Reasons map[string]string
	// Order is the entries in file order.
	Order []string
}

// ParseBaseline reads the subset of YAML the suite's baselines use: top-level
// "server:" and "client:" keys, each a list of plain strings, and comments.
// Client entries are ignored (this suite runs servers only).
func ParseBaseline(r io.Reader) (Baseline, error) {
	b := Baseline{Reasons: map[string]string{}}
	sc := bufio.NewScanner(r)
	section := ""
	var comment []string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			comment = nil
		case strings.HasPrefix(trimmed, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			section = strings.TrimSuffix(trimmed, ":")
			if section != "server" && section != "client" {
				return Baseline{}, fmt.Errorf("line %d: unknown section %q (want server or client)", n, section)
			}
			comment = nil
		case strings.HasPrefix(trimmed, "- "):
			if section == "" {
				return Baseline{}, fmt.Errorf("line %d: a list entry outside a section", n)
			}
			entry, trailing, _ := strings.Cut(strings.TrimPrefix(trimmed, "- "), " #")
			entry = strings.Trim(strings.TrimSpace(entry), `"'`)
			reason := strings.TrimSpace(trailing)
			if reason == "" {
				reason = strings.Join(comment, " ")
			}
			comment = nil
			if section != "server" {
				continue
			}
			if strings.Contains(entry, ": ") || entry == "" {
				return Baseline{}, fmt.Errorf("line %d: %q is not a scenario or scenario:check-id", n, entry)
			}
			if reason == "" {
				return Baseline{}, fmt.Errorf("line %d: %s has no reason (a comment above it or after it)", n, entry)
			}
			if _, dup := b.Reasons[entry]; dup {
				return Baseline{}, fmt.Errorf("line %d: %s listed twice", n, entry)
			}
			b.Reasons[entry] = reason
			b.Order = append(b.Order, entry)
		default:
			return Baseline{}, fmt.Errorf("line %d: cannot read %q", n, trimmed)
		}
	}
	if err := sc.Err(); err != nil {
		return Baseline{}, err
	}
	for e := range b.Reasons {
		if s, _, ok := strings.Cut(e, ":"); ok {
			if _, whole := b.Reasons[s]; whole {
				return Baseline{}, fmt.Errorf("%s is listed whole and by check (%s)", s, e)
			}
		}
	}
	return b, nil
}

// excuses reports whether the baseline lists scenario whole, and which of its
// checks it lists.
func (b Baseline) excuses(scenario string) (whole bool, checks map[string]bool) {
	checks = map[string]bool{}
	for e := range b.Reasons {
		if e == scenario {
			whole = true
		}
		if s, c, ok := strings.Cut(e, ":"); ok && s == scenario {
			checks[c] = true
		}
	}
	return whole, checks
}

// parseFile parses the baseline file at path.
func parseFile(path string) (Baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return Baseline{}, err
	}
	defer f.Close()
	b, err := ParseBaseline(f)
	if err != nil {
		return Baseline{}, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// LoadBaseline reads the expected-failures file of a version.
func LoadBaseline(v Version) (Baseline, error) { return parseFile(v.Baseline) }
