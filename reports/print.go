package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpconform/mcpconform/internal/buildinfo"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// maxReasonRunes bounds the reason column of PrintSummary.
const maxReasonRunes = 100

// PrintSummary writes a compact table for the terminal (ID, level,
// verdict, first line of the reason), a line with the count per verdict,
// the overall verdict with its reasons, and last a line of exactly the form
//
//	N passed, N failed, N skipped
//
// which CI tooling parses, with JUnit's counts (see Outcomes): failed counts
// the scenarios that fail the run (failed, unexpected passes, undefined
// steps), passed the clean passes, skipped all the rest (skipped,
// incomplete, not applicable, expected failures, interrupted). The three
// add up to the number of scenarios. Whether the skipped ones leave the run
// INCOMPLETE is said by the verdict line above it and the exit code.
//
// Each finding is shown once: a scenario that keeps the run from a PASS
// has its reason in the verdict's list, not also in the table (a twins
// failure's summarised receipts would otherwise fill two long lines).
//
// Control characters from IDs and reasons (a target's answers end up in
// reasons) are shown escaped, so nothing reaches the terminal as an escape
// sequence.
func PrintSummary(w io.Writer, run Run) {
	listed := map[int]bool{}
	for _, p := range problems(run) {
		listed[p.index] = true
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tVERDICT\tREASON")
	for i, s := range run.Scenarios {
		reason := ""
		if !listed[i] {
			reason = termText(firstLine(s.Reason), maxReasonRunes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n",
			termText(displayID(s.ID), 0),
			termText(levelKey(s.Level), 0),
			termText(verdictKey(s.Verdict), 0),
			reason)
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}

	fmt.Fprintf(w, "\n%s\n", verdictCounts(run))
	if h := HarmSummary(run); h != "" {
		fmt.Fprintf(w, "harms: %s\n", h)
	}

	result, why := Judge(run)
	fmt.Fprintf(w, "%s\n", RunLine(run, result))
	for _, y := range why {
		fmt.Fprintf(w, "  %s\n", termText(y, 0))
	}
	fmt.Fprintln(w, ciTotals(run))
}

// verdictCounts is "N scenarios: N passed, N failed, ...", every known
// verdict in report order, zero or not, then any unknown one.
func verdictCounts(run Run) string {
	counts := countVerdicts(run.Scenarios)
	parts := make([]string, 0, len(counts))
	for _, v := range knownVerdicts {
		parts = append(parts, fmt.Sprintf("%d %s", counts[string(v)], v))
	}
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		if !isKnownVerdict(v) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], termText(v, 0)))
		}
	}
	return fmt.Sprintf("%d scenarios: %s", len(run.Scenarios), strings.Join(parts, ", "))
}

// ciTotals is the line CI tooling parses: "N passed, N failed, N skipped".
func ciTotals(run Run) string {
	t := computeTotals(run)
	return fmt.Sprintf("%d passed, %d failed, %d skipped", t.passed, t.failed, t.skipped)
}

// isKnownVerdict says a count's key (a verdict as shown) is a known verdict.
func isKnownVerdict(v string) bool { return slices.Contains(knownVerdicts, judge.Verdict(v)) }

// termText makes s safe for one table cell: control characters (tabs,
// newlines, ESC, C1 codes, bidi overrides), invalid UTF-8 and DEL are
// escaped as Go would quote them; max > 0 cuts the result to max runes
// with an ellipsis.
func termText(s string, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029':
			q := fmt.Sprintf("%+q", string(r))
			piece = q[1 : len(q)-1]
		default:
			piece = s[i : i+size]
		}
		i += size
		n += utf8.RuneCountInString(piece)
		if max > 0 && n > max {
			b.WriteString("…")
			break
		}
		b.WriteString(piece)
	}
	return b.String()
}

// RunLine is the run's verdict (Judge's result) in one line: "PASS (level
// wire)", or the verdict with how many scenarios keep it from a PASS. It
// counts them itself: Judge's why has a line more on an interrupted run,
// one that is not a scenario.
func RunLine(run Run, result string) string {
	level := ClaimedLevel(run)
	if result == RunPass {
		// A PASS at a level says what it leaves out, so nobody reads a
		// wire-level PASS as the whole suite.
		beyond, na, waived := 0, 0, 0
		for _, s := range run.Scenarios {
			if s.Verdict == judge.ExpectedFailure {
				waived++ // a known gap accepted by the operator, @must or not
			}
			if !isMust(s.Level) {
				continue
			}
			switch s.Verdict {
			case judge.Skipped, judge.Incomplete:
				beyond++
			case judge.NotApplicable:
				na++
			}
		}
		var notes []string
		if beyond > 0 {
			notes = append(notes, fmt.Sprintf("%d @must scenarios not fully observed beyond it", beyond))
		}
		if na > 0 {
			notes = append(notes, fmt.Sprintf("%d not applicable", na))
		}
		if waived > 0 {
			notes = append(notes, fmt.Sprintf("%d waived as expected failures", waived))
		}
		if len(notes) > 0 {
			return fmt.Sprintf("%s (level %s; %s)", RunPass, level, strings.Join(notes, ", "))
		}
		return fmt.Sprintf("%s (level %s)", RunPass, level)
	}
	return fmt.Sprintf("%s (level %s): %d of %d scenarios keep the run from a PASS:", result, level, len(problems(run)), len(run.Scenarios))
}

// PrintLine writes one scenario's line as it finishes: ID, verdict and
// time. Its reason waits for the summary, which shows each finding once.
func PrintLine(w io.Writer, s Scenario) {
	fmt.Fprintf(w, "%-10s %-14s %7s\n", termText(displayID(s.ID), 0), termText(verdictKey(s.Verdict), 0),
		time.Duration(s.Duration).Round(time.Millisecond))
}

// Subject says in one line what a run tested and with what: the server
// (its serverInfo), where, the profile, the harness and its commit, and
// when, e.g.
//
//	acme-gateway 2.3.1 at https://gw.example/mcp (profile acme) · mcpconform 0.1.0 commit 1a2b3c4d5e6f · 2026-12-03 12:00 UTC
func Subject(run Run) string {
	server := strings.TrimSpace(run.Target.ServerName + " " + run.Target.ServerVersion)
	if server == "" {
		server = "unnamed server"
	}
	var where []string
	if run.Target.Kind == "reference" {
		where = append(where, "(bundled reference gateway)")
	}
	if len(run.Target.URLs) > 0 {
		where = append(where, "at "+strings.Join(run.Target.URLs, ", "))
	}
	if run.Target.Profile != "" {
		where = append(where, "(profile "+run.Target.Profile+")")
	}
	harness := strings.TrimSpace(run.Tool + " " + run.Version)
	if run.Commit != "" {
		harness += " commit " + buildinfo.Short(run.Commit)
	} else {
		harness += " commit unknown"
	}
	parts := []string{strings.Join(append([]string{server}, where...), " "), harness}
	if !run.Started.IsZero() {
		parts = append(parts, run.Started.UTC().Format("2006-01-02 15:04 MST"))
	}
	return termText(strings.Join(parts, " · "), 0)
}

// harmShown is how many scenario IDs a harm's summary names before it
// only counts the rest.
const harmShown = 4

// harmGroup is one harm the failing scenarios lead with and those
// scenarios, as indices into run.Scenarios in run order.
type harmGroup struct {
	Harm      judge.Harm
	Scenarios []int
}

// harmGroups groups the failing scenarios by the harm of the check their
// failure leads with, the most harmful first.
func harmGroups(run Run) []harmGroup {
	byHarm := map[judge.Harm][]int{}
	for i, o := range Outcomes(run) {
		if o != OutcomeFailed {
			continue
		}
		s := run.Scenarios[i]
		byHarm[leadHarm(s)] = append(byHarm[leadHarm(s)], i)
	}
	var out []harmGroup
	for _, h := range append(slices.Clone(judge.Harms), "other") {
		if ix := byHarm[h]; len(ix) > 0 {
			out = append(out, harmGroup{h, ix})
		}
	}
	return out
}

// HarmSummary says which harms the failing scenarios show, the most
// harmful first, each with how many scenarios lead with it and their IDs
// ("double-dispatch in 2 (lock-01, twins-02); wrong-amount in 1 (retry-04)");
// "" when none failed. A scenario counts under the harm of the check its
// failure leads with.
func HarmSummary(run Run) string {
	var parts []string
	for _, g := range harmGroups(run) {
		var shown []string
		for _, i := range g.Scenarios[:min(len(g.Scenarios), harmShown)] {
			shown = append(shown, termText(displayID(run.Scenarios[i].ID), 0))
		}
		if more := len(g.Scenarios) - len(shown); more > 0 {
			shown = append(shown, fmt.Sprintf("… %d more", more))
		}
		parts = append(parts, fmt.Sprintf("%s in %d (%s)", g.Harm, len(g.Scenarios), strings.Join(shown, ", ")))
	}
	return strings.Join(parts, "; ")
}

// leadHarm is the harm of the check a scenario's failure leads with.
func leadHarm(s Scenario) judge.Harm {
	if f := judge.Finding(s.Checks); f >= 0 && s.Checks[f].Harm != "" {
		return s.Checks[f].Harm
	}
	return "other"
}
