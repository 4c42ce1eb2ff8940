package reports

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// MarkdownFile is the run in Markdown, for $GITHUB_STEP_SUMMARY and a pull
// request comment.
const MarkdownFile = "summary.md"

// Bounds of summary.md: GitHub refuses a step summary over 1 MiB, and a
// comment is read, not searched; report.html has the rest.
const (
	mdMaxRows   = 50  // scenarios, and regressions, listed
	mdMaxCell   = 200 // runes of a headline or a reason
	mdMaxHeader = 300 // runes of the subject line
)

// Markdown renders the run for a CI summary: the verdict line and the
// totals line exactly as the console closes with them, the counts, what
// was tested, the harms the failures show, a table of the scenarios that
// keep the run from a PASS (each with its headline and the command that
// runs it again), and, when the run has a Baseline, what regressed against
// it. Everything a target or a file supplied is escaped, so an answer
// cannot inject Markdown or HTML, and the length is bounded whatever the
// run.
func Markdown(run Run) []byte {
	var b strings.Builder
	result, _ := Judge(run)
	fmt.Fprintf(&b, "## mcpconform: %s\n\n", mdText(strings.TrimSuffix(RunLine(run, result), ":"), 0))
	fmt.Fprintf(&b, "**%s**\n\n", ciTotals(run))
	fmt.Fprintf(&b, "%s\n\n", mdText(verdictCounts(run), 0))
	fmt.Fprintf(&b, "Tested: %s\n", mdText(Subject(run), mdMaxHeader))

	if groups := harmGroups(run); len(groups) > 0 {
		b.WriteString("\n### Harms\n\n")
		for _, g := range groups {
			ids := make([]string, 0, min(len(g.Scenarios), harmShown+1))
			for i, si := range g.Scenarios {
				if i == harmShown {
					ids = append(ids, fmt.Sprintf("… %d more", len(g.Scenarios)-i))
					break
				}
				ids = append(ids, mdCode(displayID(run.Scenarios[si].ID), false))
			}
			fmt.Fprintf(&b, "- **%s** in %d %s: %s\n", g.Harm, len(g.Scenarios), plural(len(g.Scenarios), "scenario"), strings.Join(ids, ", "))
		}
	}

	if ps := problems(run); len(ps) > 0 {
		fmt.Fprintf(&b, "\n### Keeping the run from a PASS (%d)\n\n", len(ps))
		b.WriteString("| scenario | verdict | headline | run it again |\n|---|---|---|---|\n")
		for i, p := range ps {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n… %d more, see report.html\n", len(ps)-i)
				break
			}
			s := run.Scenarios[p.index]
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCode(displayID(s.ID), true), mdText(verdictKey(s.Verdict), 0),
				mdText(headline(s, p), mdMaxCell), mdCode(RerunCommand(run, s.ID), true))
		}
	}

	if run.Baseline != nil {
		writeRegressions(&b, Compare(*run.Baseline, buildSummary(run, fileNames(run.Scenarios))))
	}
	return []byte(b.String())
}

// writeRegressions is the baseline section: the verdicts before and now,
// what makes the comparison weaker, the regressions, and the count line of
// `mcpconform diff`.
func writeRegressions(b *strings.Builder, d Diff) {
	fmt.Fprintf(b, "\n### Against the baseline: %s → %s\n\n", mdText(orDash(d.OldResult), 0), mdText(orDash(d.NewResult), 0))
	for _, n := range d.Notes {
		fmt.Fprintf(b, "- note: %s\n", mdText(n, mdMaxCell))
	}
	if len(d.Notes) > 0 {
		b.WriteString("\n")
	}
	if len(d.Regressions) > 0 {
		b.WriteString("| regression | before | now | reason |\n|---|---|---|---|\n")
		for i, c := range d.Regressions {
			if i == mdMaxRows {
				fmt.Fprintf(b, "\n… %d more, see `mcpconform diff`\n", len(d.Regressions)-i)
				break
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", mdCode(displayID(c.ID), true), mdText(orDash(string(c.Old)), 0), mdText(orDash(string(c.New)), 0), mdText(c.Reason, mdMaxCell))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "%d regressions, %d fixed, %d changed, %d new, %d removed\n",
		len(d.Regressions), len(d.Fixes), len(d.Changed), len(d.New), len(d.Removed))
}

// headline is a scenario's finding in one line: the harm and what was
// observed of the check it leads with, else why it keeps the run from a
// PASS.
func headline(s Scenario, p problem) string {
	if i := judge.Finding(s.Checks); i >= 0 {
		return string(leadHarm(s)) + ": " + Finding(s.Checks[i])
	}
	if r := firstLine(s.Reason); r != "" {
		return r
	}
	return p.why
}

// RerunCommand is the one command that runs scenario id again as the run
// ran it: `mcpconform run` with the flags that chose its target, and --id.
// A report written before runs recorded their flags gets what its target
// says of itself (a URL target's profile file is not known then).
func RerunCommand(run Run, id string) string {
	words := []string{"mcpconform", "run"}
	t := run.Target
	switch {
	case len(t.Args) > 0:
		words = append(words, t.Args...)
	case t.Kind == "url" && len(t.URLs) > 0:
		words = append(words, "--target", t.URLs[0], "--profile", "PROFILE.json")
	default:
		if t.Store != "" && t.Store != "sqlite" {
			words = append(words, "--store", t.Store)
		}
		for _, bug := range t.Bugs {
			words = append(words, "--bug", bug)
		}
	}
	words = append(words, "--id", id)
	for i, w := range words {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " ")
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellWord quotes w for a POSIX shell only when it needs it, so the usual
// command reads as typed.
func shellWord(w string) string {
	if plainWord.MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// mdText makes s safe as Markdown text in a table cell or a line: control
// characters escaped as on the console (termText, which also cuts it to
// max runes), HTML's specials as entities, and Markdown's own punctuation
// with a backslash.
func mdText(s string, max int) string {
	s = termText(s, max)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode is s as a code span: a fence longer than any run of backticks
// inside it. In a table cell the pipe is escaped, which GitHub's tables
// require even inside code; anywhere else the backslash would show.
func mdCode(s string, cell bool) string {
	s = termText(s, 0)
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
