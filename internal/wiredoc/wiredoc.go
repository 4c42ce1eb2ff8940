// Package wiredoc reads the reason tables of docs/wire.md, so that the code
// that answers with reasons (reference/wire) and the code that lets a vendor
// profile map them (drivers/target) are both tested against the one
// document, without drivers importing the reference gateway.
package wiredoc

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Reason is one documented data.reason with its default JSON-RPC code and
// whether a client may retry.
type Reason struct {
	Name      string
	Code      int64
	Retryable bool
}

// row is a reason-table row: "| `a` | -32000 | yes |", or several reasons
// sharing a row as "`a` / `b`". Other lines, other tables' rows included,
// do not match.
var row = regexp.MustCompile("^\\| (`[a-z_]+`(?: / `[a-z_]+`)*) \\| (-?\\d+) \\| (yes|no) \\|")

// Reasons returns every reason of every reason table in md (the text of
// docs/wire.md), in document order. A reason with two rows is an error:
// which code it has would depend on which row a reader stops at.
func Reasons(md string) ([]Reason, error) {
	var out []Reason
	seen := map[string]bool{}
	for i, line := range strings.Split(md, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		code, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: code %s: %w", i+1, m[2], err)
		}
		for _, name := range strings.Split(m[1], " / ") {
			name = strings.Trim(name, "`")
			if seen[name] {
				return nil, fmt.Errorf("line %d: %s has a second row", i+1, name)
			}
			seen[name] = true
			out = append(out, Reason{Name: name, Code: code, Retryable: m[3] == "yes"})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no reason table found")
	}
	return out, nil
}

// File reads the reasons of the docs/wire.md at path (a test's package
// directory is its working directory, so each passes its own way there).
func File(path string) ([]Reason, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wire reasons: %w", err)
	}
	rs, err := Reasons(string(b))
	if err != nil {
		return nil, fmt.Errorf("wire reasons: %s: %w", path, err)
	}
	return rs, nil
}
