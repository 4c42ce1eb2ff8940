package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpconform/mcpconform/internal/judge"
)

//go:embed report.html.tmpl
var reportTemplateText string

// reportTemplate renders report.html. Every value reaches it as plain data
// and html/template escapes it for its context, in the HTML and in the
// inline SVG alike; nothing is marked safe.
var reportTemplate = template.Must(template.New("report").Parse(reportTemplateText))

// report.html stays light enough to open and scroll for the largest run
// (a hundred scenarios, 64 twins each with a debit and an exchange): what
// it leaves out, the scenario's evidence file has whole, and the report
// says so where it cuts. The caps keep one scenario's section small; the
// budget keeps their sum small.
const (
	maxBodyBytes      = 1 << 10 // each request or response body
	maxShownExchanges = 4       // per scenario: the witnesses, then the tool calls
	maxShownEntries   = 6       // per ledger: the witnesses, then the first
	maxShownFindings  = 3       // violated checks shown with their witness
	maxWitnessLines   = 5       // per finding
	maxShownChecks    = 8       // rows of a check table, checks of one step
	maxCellBytes      = 300     // a check's expected or observed text in a table
	maxLineBytes      = 240     // a FAIL list line, a short section's lead
	maxReasonBytes    = 120     // a reason in the scenario index
	// reportBudget is what report.html may weigh before scenarios lose
	// their details (steps, checks, ledger, timeline, exchanges) to a short
	// form, the ones that fail the run last.
	reportBudget = 384 << 10
)

func renderHTML(run Run, sum Summary, names []string) ([]byte, error) {
	v := buildView(run, sum, names)
	if err := fitBudget(&v, reportBudget); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return nil, err
	}
	return cleanHTML(buf.Bytes()), nil
}

// fitBudget starts every scenario short, then gives scenarios more
// detail while the report stays within budget: first the scenarios that
// did not pass their checks, steps and ledger, then those their timeline
// and exchanges, then the same for those that passed. Within each round
// the ones that fail the run come first, the most harmful first. A section
// too big for what is left stays as it is, and a smaller one after it may
// still fit.
func fitBudget(v *htmlView, budget int) error {
	for i := range v.Scenarios {
		v.Scenarios[i].Detail = detailShort
	}
	var all countingWriter
	if err := reportTemplate.Execute(&all, v); err != nil {
		return err
	}
	size := int(all)
	order := make([]int, len(v.Scenarios))
	for i := range order {
		order[i] = i
	}
	rank := func(sv scenarioView) int {
		if sv.FailsRun {
			return sv.harmRank
		}
		return len(judge.Harms) + 1
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(v.Scenarios[a]) - rank(v.Scenarios[b]) })
	// Each section is weighed once at each detail.
	weights := map[[2]int]int{}
	sized := func(i int) (int, error) {
		k := [2]int{i, v.Scenarios[i].Detail}
		if n, ok := weights[k]; ok {
			return n, nil
		}
		n, err := sectionSize(v.Scenarios[i])
		weights[k] = n
		return n, err
	}
	for _, passed := range []bool{false, true} {
		for _, detail := range []int{detailChecks, detailFull} {
			for _, i := range order {
				sv := &v.Scenarios[i]
				if (sv.VerdictClass == "v-pass") != passed || sv.Detail != detail-1 {
					continue
				}
				before, err := sized(i)
				if err != nil {
					return err
				}
				sv.Detail = detail
				after, err := sized(i)
				if err != nil {
					return err
				}
				if size+after-before > budget {
					sv.Detail = detail - 1
					continue
				}
				size += after - before
			}
		}
	}
	return nil
}

// How much of a scenario's section report.html shows.
const (
	detailShort  = iota // its header, its lead finding and its requirement
	detailChecks        // and its findings, steps, checks and ledger
	detailFull          // and its timeline and exchanges
)

func sectionSize(sv scenarioView) (int, error) {
	var w countingWriter
	err := reportTemplate.ExecuteTemplate(&w, "scenario", sv)
	return int(w), err
}

// countingWriter weighs a rendering without keeping it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// cleanHTML replaces what html/template lets through but an HTML document
// must not contain (control characters other than tab, newline and
// carriage return; invalid UTF-8) with U+FFFD. The template has none of
// these, so all of them came from data.
func cleanHTML(b []byte) []byte {
	return bytes.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0xFFFE || r == 0xFFFF:
			return '\uFFFD'
		}
		return r
	}, b)
}

type htmlView struct {
	Tool, Version, Commit          string
	Subject                        string // what was tested, in one line
	TargetKind, Store, Profile     string
	URLs, Bugs, Capabilities       []string
	Seed                           int64
	Tags                           string
	Started, Finished, RunDuration string
	OK                             bool
	Result, Level, Server          string
	// Problems are the reasons the run is not a PASS, each linked to its
	// scenario's section (Why has them whole).
	Problems []problemLine
	// Harms are the failing scenarios' harms, most harmful first.
	Harms                   []harmLine
	Total                   int
	Passed, Failed, Skipped int // the totals of PrintSummary's last line
	Counts                  []countCell
	ByLevel                 []levelRow
	Catch                   []catchRow
	Scenarios               []scenarioView
}

type problemLine struct {
	Anchor, ID, Text string // Text follows the ID; no Anchor: a line of the run's own
}

type harmLine struct {
	Harm  string
	N     int
	Shown []scenarioLink
	More  int
}

type scenarioLink struct{ Anchor, ID string }

type countCell struct {
	Verdict, Class string
	N              int
}

type levelRow struct {
	Level string
	Cells []countCell
}

type catchRow struct {
	Bug                      string
	Expected, CaughtBy, Miss []string
	OK                       bool
}

type scenarioView struct {
	Anchor, ID, Title, Feature, Level string
	// Detail is how much of the section the budget left (detailShort...);
	// the evidence file has the rest.
	Detail                    int
	harmRank                  int // of the lead finding; past every harm when none
	Tags                      []string
	Verdict, VerdictClass     string
	FailsRun                  bool
	Reason, ReasonLine        string
	Requirement, Source       string
	Expected, Actual          string // shown when no violated check says more
	Duration                  string
	EvidenceHref, HistoryHref string
	HistoryOps                int
	// Findings are the violated checks, each with its witness; when there
	// is one, it stands in for the reason (which says the same).
	Findings                  []checkView
	MoreFindings              int
	Lead                      string // the lead finding in a line, for the short form
	Steps                     []stepView
	ModelChecks               checkTable // the model's checks of the whole history, made once the scenario ended
	OtherChecks               checkTable // checks of no recorded step
	LedgerBefore, LedgerAfter *ledgerView
	LedgerDelta               string
	Exchanges                 []exchangeView
	ExchangeCount             int // all of them; Exchanges is a selection
	Timeline                  *timelineView
}

// checkTable is a selection of checks and what the rest were.
type checkTable struct {
	Rows []checkView
	More string // "", or how many more checks and their states
}

// stepView is one Gherkin step with how it ended and the checks it made.
type stepView struct {
	Keyword, Text, Status, Class string
	Error                        string // shown when no check of the step says it better
	Checks                       checkTable
}

type checkView struct {
	Mark, MarkClass           string
	Step, Capability          string
	Expected, Actual, Finding string
	Witness                   []string
	MoreWitness               int
}

type ledgerView struct {
	WalletID string
	Balance  int64
	Entries  []entryView
	Kinds    string // how many entries of each kind, when not all are shown
	More     int
	Evidence string
}

type entryView struct {
	ID, Kind, Receipt, Tool, At string
	Amount                      int64
	Witness                     bool // named by a violated check
}

type exchangeView struct {
	N                       int
	Label, Lane             string
	Method, URL             string
	RequestHeaders          []header
	RequestBody, ReqNote    string
	Status                  string
	ResponseHeaders         []header
	ResponseBody, RespNote  string
	Error                   string
	Started, Took           string
	Outcome, OutcomeClass   string
	HasRequest, HasResponse bool
	Witness                 bool // named by a violated check
}

type header struct{ Name, Value string }

func buildView(run Run, sum Summary, names []string) htmlView {
	v := htmlView{
		Tool:         orDash(run.Tool),
		Version:      orDash(run.Version),
		Commit:       run.Commit,
		Subject:      Subject(run),
		TargetKind:   orDash(run.Target.Kind),
		Store:        orDash(run.Target.Store),
		Profile:      run.Target.Profile,
		URLs:         run.Target.URLs,
		Bugs:         run.Target.Bugs,
		Capabilities: run.Target.Capabilities,
		Seed:         run.Seed,
		Tags:         run.Tags,
		Started:      fmtTime(run.Started),
		Finished:     fmtTime(run.Finished),
		RunDuration:  fmtDuration(time.Duration(sum.Duration)),
		OK:           sum.OK,
		Result:       sum.Result,
		Level:        ClaimedLevel(run),
		Server:       strings.TrimSpace(run.Target.ServerName + " " + run.Target.ServerVersion),
		Total:        sum.Total,
	}
	anchors := make([]string, len(names))
	for i, n := range names {
		anchors[i] = anchorOf(n)
	}
	ps := problems(run)
	for i, why := range sum.Why {
		if i >= len(ps) {
			v.Problems = append(v.Problems, problemLine{Text: clip(why, maxLineBytes)})
			continue
		}
		id := displayID(run.Scenarios[ps[i].index].ID)
		rest := strings.TrimPrefix(why, id)
		v.Problems = append(v.Problems, problemLine{Anchor: anchors[ps[i].index], ID: id, Text: clip(rest, maxLineBytes)})
	}
	for _, g := range harmGroups(run) {
		h := harmLine{Harm: string(g.Harm), N: len(g.Scenarios)}
		for _, i := range g.Scenarios[:min(len(g.Scenarios), harmShown)] {
			h.Shown = append(h.Shown, scenarioLink{anchors[i], displayID(run.Scenarios[i].ID)})
		}
		h.More = h.N - len(h.Shown)
		v.Harms = append(v.Harms, h)
	}
	t := computeTotals(run)
	v.Passed, v.Failed, v.Skipped = t.passed, t.failed, t.skipped
	v.Counts = countCells(sum.Counts)
	for _, l := range slices.Sorted(maps.Keys(sum.ByLevel)) {
		v.ByLevel = append(v.ByLevel, levelRow{Level: l, Cells: countCells(sum.ByLevel[l])})
	}
	for _, c := range run.CatchTable {
		row := catchRow{Bug: c.Bug, Expected: c.Expected, CaughtBy: c.CaughtBy, OK: c.OK}
		if len(c.Checks) > 0 {
			// The named checks, each "scenario: step": a catch is its check.
			row.Expected = nil
			for _, ch := range c.Checks {
				named := ch.Scenario + ": " + ch.Step
				row.Expected = append(row.Expected, named)
				if !ch.Violated {
					row.Miss = append(row.Miss, named)
				}
			}
		}
		for _, id := range c.Expected {
			if len(c.Checks) == 0 && !slices.Contains(c.CaughtBy, id) {
				row.Miss = append(row.Miss, id)
			}
		}
		v.Catch = append(v.Catch, row)
	}
	for i, s := range run.Scenarios {
		v.Scenarios = append(v.Scenarios, buildScenarioView(s, names[i], sum.Scenarios[i]))
	}
	return v
}

func countCells(m map[string]int) []countCell {
	var out []countCell
	for _, k := range knownVerdicts {
		out = append(out, countCell{Verdict: string(k), Class: verdictClass(k), N: m[string(k)]})
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !isKnownVerdict(k) {
			out = append(out, countCell{Verdict: k, Class: verdictClass(judge.Verdict(k)), N: m[k]})
		}
	}
	return out
}

func buildScenarioView(s Scenario, name string, line SummaryScenario) scenarioView {
	sv := scenarioView{
		Anchor:       anchorOf(name),
		ID:           displayID(s.ID),
		Title:        s.Title,
		Feature:      s.Feature,
		Level:        levelKey(s.Level),
		Tags:         s.Tags,
		Verdict:      verdictKey(s.Verdict),
		VerdictClass: verdictClass(s.Verdict),
		FailsRun:     line.FailsRun,
		Reason:       s.Reason,
		ReasonLine:   clip(firstLine(s.Reason), maxReasonBytes),
		Requirement:  s.Requirement,
		Source:       s.Source,
		Expected:     s.Expected,
		Actual:       s.Actual,
		Duration:     fmtDuration(time.Duration(s.Duration)),
		EvidenceHref: line.Evidence,
		HistoryHref:  line.History,
		HistoryOps:   len(s.History),
	}
	offEx, _, offLedger := Offending(s)
	sv.LedgerBefore = buildLedger(s.LedgerBefore, offLedger, line.Evidence)
	sv.LedgerAfter = buildLedger(s.LedgerAfter, offLedger, line.Evidence)
	if s.LedgerBefore != nil && s.LedgerAfter != nil {
		sv.LedgerDelta = fmt.Sprintf("%+d", s.LedgerAfter.Balance-s.LedgerBefore.Balance)
	}
	sv.ExchangeCount = len(s.Exchanges)
	for _, i := range pick(len(s.Exchanges), maxShownExchanges, exchangeRank(s.Exchanges, offEx)) {
		ev := buildExchange(i+1, s.Exchanges[i], line.Evidence)
		ev.Witness = offEx[i]
		sv.Exchanges = append(sv.Exchanges, ev)
	}
	sv.Timeline = buildTimeline(s)
	lead := judge.Finding(s.Checks)
	var violated []int
	byStep := map[int][]judge.Check{}
	var model, other []judge.Check
	for i, c := range s.Checks {
		if c.Status() == judge.Violated {
			violated = append(violated, i)
		}
		switch {
		case c.Model:
			model = append(model, c)
		case c.StepIndex >= 0 && c.StepIndex < len(s.Steps):
			byStep[c.StepIndex] = append(byStep[c.StepIndex], c)
		default:
			other = append(other, c)
		}
	}
	for _, k := range pick(len(violated), maxShownFindings, firstIf(func(k int) bool { return violated[k] == lead })) {
		sv.Findings = append(sv.Findings, buildCheck(s, s.Checks[violated[k]]))
	}
	sv.MoreFindings = len(violated) - len(sv.Findings)
	sv.harmRank = len(judge.Harms)
	if lead >= 0 {
		c := s.Checks[lead]
		sv.harmRank = c.Harm.Rank()
		sv.Lead = clip(firstLine(c.Step)+": observed "+firstLine(c.Actual), maxLineBytes)
	}
	sv.ModelChecks, sv.OtherChecks = buildCheckTable(s, model), buildCheckTable(s, other)
	for i, st := range s.Steps {
		checks := byStep[i]
		v := stepView{Keyword: strings.TrimSpace(st.Keyword), Text: st.Text, Checks: buildCheckTable(s, checks)}
		v.Status, v.Class = stepStatus(st.Status, checks)
		if !slices.ContainsFunc(checks, func(c judge.Check) bool { return c.Status() == judge.Violated }) {
			v.Error = st.Error
		}
		sv.Steps = append(sv.Steps, v)
	}
	return sv
}

// anchorOf is a scenario section's id: its file name, the stable scenario
// ID made safe.
func anchorOf(name string) string { return "s-" + name }

// pick chooses at most max of n items, those of the lowest rank first and
// of one rank the earliest; the indices come back in their order.
func pick(n, max int, rank func(int) int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int { return rank(a) - rank(b) })
	out = out[:min(n, max)]
	slices.Sort(out)
	return out
}

// firstIf ranks what keep says first.
func firstIf(keep func(int) bool) func(int) int {
	return func(i int) int {
		if keep(i) {
			return 0
		}
		return 1
	}
}

// exchangeRank puts a violation's witnesses first, then the tool calls the
// scenario is about, then the handshakes and notifications around them.
func exchangeRank(exs []Exchange, witness map[int]bool) func(int) int {
	return func(i int) int {
		if witness[i] {
			return 0
		}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(exs[i].RequestBody, &m) == nil && m.Method == "tools/call" {
			return 1
		}
		return 2
	}
}

// buildCheckTable shows the checks that did not hold before those that
// did, up to maxShownChecks, and counts the rest by state.
func buildCheckTable(s Scenario, checks []judge.Check) checkTable {
	var t checkTable
	shown := pick(len(checks), maxShownChecks, firstIf(func(i int) bool { return checks[i].Status() != judge.Held }))
	for _, i := range shown {
		t.Rows = append(t.Rows, buildCheck(s, checks[i]))
	}
	if len(shown) == len(checks) {
		return t
	}
	rest := map[string]int{}
	for i, c := range checks {
		if !slices.Contains(shown, i) {
			rest[c.Status()]++
		}
	}
	var parts []string
	for _, st := range []string{judge.Violated, judge.NotObserved, judge.Held} {
		if rest[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", rest[st], strings.ReplaceAll(st, "-", " ")))
		}
	}
	t.More = fmt.Sprintf("%d more checks (%s)", len(checks)-len(shown), strings.Join(parts, ", "))
	return t
}

// stepStatus is how a step ended as the report shows it: godog passes a
// step whose check was violated or could not be observed, as the scenario
// goes on past it, but such a step did not pass.
func stepStatus(status string, checks []judge.Check) (string, string) {
	if status == "passed" {
		switch {
		case slices.ContainsFunc(checks, func(c judge.Check) bool { return c.Status() == judge.Violated }):
			status = "failed"
		case slices.ContainsFunc(checks, func(c judge.Check) bool { return c.Status() == judge.NotObserved }):
			return "not observed", "v-skip"
		}
	}
	return status, stepClass(status)
}

func buildCheck(s Scenario, c judge.Check) checkView {
	cv := checkView{Step: c.Step, Capability: c.Capability, Expected: clip(c.Expected, maxCellBytes), Actual: clip(c.Actual, maxCellBytes)}
	switch c.Status() {
	case judge.Held:
		cv.Mark, cv.MarkClass = "✓", "ok-mark"
	case judge.NotObserved:
		cv.Mark, cv.MarkClass = "not observed", "muted"
	default:
		cv.Mark, cv.MarkClass = "✗", "bad-mark"
		cv.Finding = Finding(c)
		// A finding shows its texts whole, as the witness explains them.
		cv.Expected, cv.Actual = c.Expected, c.Actual
		w := WitnessLines(s, c)
		cv.Witness = w[:min(len(w), maxWitnessLines)]
		cv.MoreWitness = len(w) - len(cv.Witness)
	}
	return cv
}

// stepClass colours a step's status as its verdict would be.
func stepClass(status string) string {
	switch status {
	case "passed":
		return "v-pass"
	case "failed":
		return "v-fail"
	case "undefined", "ambiguous", "pending":
		return "v-undef"
	}
	return "v-skip"
}

func buildLedger(l *Ledger, witness map[string]bool, evidence string) *ledgerView {
	if l == nil {
		return nil
	}
	lv := &ledgerView{WalletID: l.WalletID, Balance: l.Balance, Evidence: evidence}
	for _, i := range pick(len(l.Entries), maxShownEntries, firstIf(func(i int) bool { return witness[l.Entries[i].ID] })) {
		e := l.Entries[i]
		lv.Entries = append(lv.Entries, entryView{ID: e.ID, Kind: e.Kind, Amount: e.Amount, Receipt: e.Receipt, Tool: e.Tool, At: fmtTime(e.At), Witness: witness[e.ID]})
	}
	if lv.More = len(l.Entries) - len(lv.Entries); lv.More > 0 {
		kinds := map[string]int{}
		for _, e := range l.Entries {
			kinds[e.Kind]++
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
		}
		lv.Kinds = strings.Join(parts, ", ")
	}
	return lv
}

func buildExchange(n int, e Exchange, evidence string) exchangeView {
	ev := exchangeView{
		N:               n,
		Label:           e.Label,
		Lane:            e.Lane,
		Method:          e.Method,
		URL:             e.URL,
		RequestHeaders:  sortedHeaders(e.RequestHeaders),
		ResponseHeaders: sortedHeaders(e.ResponseHeaders),
		Error:           e.Error,
		Started:         fmtTime(e.Started),
	}
	if !e.Started.IsZero() && !e.Finished.IsZero() {
		ev.Took = fmtDuration(e.Finished.Sub(e.Started))
	}
	switch {
	case len(e.RequestBody) > 0:
		ev.RequestBody, ev.ReqNote = showBody(string(e.RequestBody), evidence)
	case e.RequestBodyText != "":
		ev.RequestBody, ev.ReqNote = showBody(e.RequestBodyText, evidence)
		ev.ReqNote = strings.TrimPrefix(ev.ReqNote+"; not valid JSON", "; ")
	}
	ev.ResponseBody, ev.RespNote = showBody(e.ResponseBody, evidence)
	if e.Status != 0 {
		ev.Status = strconv.Itoa(e.Status)
	}
	ev.HasRequest = e.Method != "" || e.URL != "" || len(ev.RequestHeaders) > 0 || ev.RequestBody != ""
	ev.HasResponse = e.Status != 0 || len(ev.ResponseHeaders) > 0 || ev.ResponseBody != ""
	ev.Outcome, ev.OutcomeClass = outcome(e)
	return ev
}

func sortedHeaders(h map[string]string) []header {
	var out []header
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, header{k, h[k]})
	}
	return out
}

// showBody indents a JSON body and cuts any body to maxBodyBytes; note
// says what was done to it, and where the body is whole.
func showBody(b, evidence string) (text, note string) {
	if b == "" {
		return "", ""
	}
	if json.Valid([]byte(b)) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(b), "", "  "); err == nil {
			b = buf.String()
		}
	}
	if cut := cutBytes(b, maxBodyBytes); len(cut) < len(b) {
		note = fmt.Sprintf("%d more bytes not shown; %s has the whole body", len(b)-len(cut), evidence)
		b = cut
	}
	return b, note
}

// cutBytes cuts s to at most n bytes, at a rune's start.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clip cuts s to about n bytes with an ellipsis, for a text the report
// shows in a line or a cell; the evidence file has it whole.
func clip(s string, n int) string {
	if cut := cutBytes(s, n); len(cut) < len(s) {
		return cut + "…"
	}
	return s
}

// outcome sums up how an exchange ended, for the exchange list and the
// timeline: a transport error, the JSON-RPC error reason, the receipt (and
// whether it was a replay), or the HTTP status.
func outcome(e Exchange) (text, class string) {
	if e.Error != "" {
		return "error: " + firstLine(e.Error), "o-err"
	}
	status := "no response"
	if e.Status != 0 {
		status = "HTTP " + strconv.Itoa(e.Status)
	}
	a := readAnswer(e)
	switch a.Kind() {
	case AnswerRefusal:
		return status + " · " + a.Reason, "o-rpcerr"
	case AnswerReplay:
		return status + " · " + a.Receipt + " (replay)", "o-replay"
	case AnswerResult:
		if a.Receipt != "" {
			return status + " · " + a.Receipt, "o-ok"
		}
	}
	switch {
	case e.Status == 0:
		return status, "o-err"
	case e.Status >= 200 && e.Status < 300:
		return status, "o-ok"
	default:
		return status, "o-bad"
	}
}

func verdictClass(v judge.Verdict) string {
	switch v {
	case judge.Passed:
		return "v-pass"
	case judge.Failed:
		return "v-fail"
	case judge.Skipped, judge.Incomplete, judge.NotApplicable, judge.Interrupted:
		return "v-skip"
	case judge.Undefined:
		return "v-undef"
	case judge.ExpectedFailure:
		return "v-xfail"
	case judge.UnexpectedPass:
		return "v-xpass"
	default:
		return "v-unknown"
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// fmtTime shows a time in UTC to the millisecond, "" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// fmtDuration rounds to a precision that suits the size.
func fmtDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond && d > -time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second && d > -time.Second:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
