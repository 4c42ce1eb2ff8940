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

// maxBodyBytes bounds each body shown in report.html; the evidence file has
// it whole.
const maxBodyBytes = 64 << 10

func renderHTML(run Run, sum Summary, names []string) ([]byte, error) {
	v := buildView(run, sum, names)
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, v); err != nil {
		return nil, err
	}
	return cleanHTML(buf.Bytes()), nil
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
	Strict                         bool
	Started, Finished, RunDuration string
	OK                             bool
	Result, Level, Server          string
	Why                            []string
	Total                          int
	Passed, Failed, Skipped        int // the totals of PrintSummary's last line
	Counts                         []countCell
	ByLevel                        []levelRow
	Catch                          []catchRow
	Scenarios                      []scenarioView
}

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
	Tags                              []string
	Verdict, VerdictClass             string
	FailsRun                          bool
	Reason, ReasonLine                string
	Requirement, Source               string
	Expected, Actual                  string // shown when no violated check says more
	Duration                          string
	EvidenceHref, HistoryHref         string
	HistoryOps                        int
	// Findings are the violated checks, each with its witness; when there
	// is one, it stands in for the reason (which says the same).
	Findings                  []checkView
	Steps                     []stepView
	ModelChecks               []checkView // the model's checks of the whole history, made once the scenario ended
	OtherChecks               []checkView // checks of no recorded step
	LedgerBefore, LedgerAfter *ledgerView
	LedgerDelta               string
	Exchanges                 []exchangeView
	Timeline                  *timelineView
}

// stepView is one Gherkin step with how it ended and the checks it made.
type stepView struct {
	Keyword, Text, Status, Class string
	Error                        string // shown when no check of the step says it better
	Checks                       []checkView
}

type checkView struct {
	Mark, MarkClass           string
	Step, Capability          string
	Expected, Actual, Finding string
	Witness                   []string
}

type ledgerView struct {
	WalletID string
	Balance  int64
	Entries  []entryView
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
		Strict:       run.Strict,
		Started:      fmtTime(run.Started),
		Finished:     fmtTime(run.Finished),
		RunDuration:  fmtDuration(time.Duration(sum.Duration)),
		OK:           sum.OK,
		Result:       sum.Result,
		Level:        ClaimedLevel(run),
		Server:       strings.TrimSpace(run.Target.ServerName + " " + run.Target.ServerVersion),
		Why:          sum.Why,
		Total:        sum.Total,
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
		out = append(out, countCell{Verdict: k, Class: verdictClass(k), N: m[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !isKnownVerdict(k) {
			out = append(out, countCell{Verdict: k, Class: verdictClass(k), N: m[k]})
		}
	}
	return out
}

func buildScenarioView(s Scenario, name string, line SummaryScenario) scenarioView {
	sv := scenarioView{
		Anchor:       "s-" + name,
		ID:           displayID(s.ID),
		Title:        s.Title,
		Feature:      s.Feature,
		Level:        levelKey(s.Level),
		Tags:         s.Tags,
		Verdict:      verdictKey(s.Verdict),
		VerdictClass: verdictClass(s.Verdict),
		FailsRun:     line.FailsRun,
		Reason:       s.Reason,
		ReasonLine:   firstLine(s.Reason),
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
	sv.LedgerBefore, sv.LedgerAfter = buildLedger(s.LedgerBefore, offLedger), buildLedger(s.LedgerAfter, offLedger)
	if s.LedgerBefore != nil && s.LedgerAfter != nil {
		sv.LedgerDelta = fmt.Sprintf("%+d", s.LedgerAfter.Balance-s.LedgerBefore.Balance)
	}
	for i, e := range s.Exchanges {
		ev := buildExchange(i+1, e)
		ev.Witness = offEx[i]
		sv.Exchanges = append(sv.Exchanges, ev)
	}
	sv.Timeline = buildTimeline(s)
	byStep := map[int][]checkView{}
	for _, c := range s.Checks {
		cv := buildCheck(s, c)
		if c.Status() == judge.Violated {
			sv.Findings = append(sv.Findings, cv)
		}
		switch {
		case c.Model:
			sv.ModelChecks = append(sv.ModelChecks, cv)
		case c.StepIndex >= 0 && c.StepIndex < len(s.Steps):
			byStep[c.StepIndex] = append(byStep[c.StepIndex], cv)
		default:
			sv.OtherChecks = append(sv.OtherChecks, cv)
		}
	}
	for i, st := range s.Steps {
		v := stepView{Keyword: strings.TrimSpace(st.Keyword), Text: st.Text, Status: st.Status, Class: stepClass(st.Status), Checks: byStep[i]}
		if !slices.ContainsFunc(v.Checks, func(c checkView) bool { return c.Finding != "" }) {
			v.Error = st.Error
		}
		sv.Steps = append(sv.Steps, v)
	}
	return sv
}

func buildCheck(s Scenario, c judge.Check) checkView {
	cv := checkView{Step: c.Step, Capability: c.Capability, Expected: c.Expected, Actual: c.Actual}
	switch c.Status() {
	case judge.Held:
		cv.Mark, cv.MarkClass = "✓", "ok-mark"
	case judge.NotObserved:
		cv.Mark, cv.MarkClass = "not observed", "muted"
	default:
		cv.Mark, cv.MarkClass = "✗", "bad-mark"
		cv.Finding = Finding(c)
		cv.Witness = WitnessLines(s, c)
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

func buildLedger(l *Ledger, witness map[string]bool) *ledgerView {
	if l == nil {
		return nil
	}
	lv := &ledgerView{WalletID: l.WalletID, Balance: l.Balance}
	for _, e := range l.Entries {
		lv.Entries = append(lv.Entries, entryView{ID: e.ID, Kind: e.Kind, Amount: e.Amount, Receipt: e.Receipt, Tool: e.Tool, At: fmtTime(e.At), Witness: witness[e.ID]})
	}
	return lv
}

func buildExchange(n int, e Exchange) exchangeView {
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
		ev.RequestBody, ev.ReqNote = showBody(string(e.RequestBody))
	case e.RequestBodyText != "":
		ev.RequestBody, ev.ReqNote = showBody(e.RequestBodyText)
		ev.ReqNote = strings.TrimPrefix(ev.ReqNote+"; not valid JSON", "; ")
	}
	ev.ResponseBody, ev.RespNote = showBody(e.ResponseBody)
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
// says what was done to it.
func showBody(b string) (text, note string) {
	if b == "" {
		return "", ""
	}
	if json.Valid([]byte(b)) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(b), "", "  "); err == nil {
			b = buf.String()
		}
	}
	if len(b) > maxBodyBytes {
		cut := maxBodyBytes
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		note = fmt.Sprintf("%d more bytes not shown; the evidence file has the whole body", len(b)-cut)
		b = b[:cut]
	}
	return b, note
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
	if m, ok := rpcMessage(e.ResponseBody); ok {
		switch {
		case m.Error != nil:
			why := m.Error.reason()
			return status + " · " + why, "o-rpcerr"
		case m.Result != nil:
			if r := m.Result.receipt(); r != nil && r.ID != "" {
				if r.Replayed {
					return status + " · " + r.ID + " (replay)", "o-replay"
				}
				return status + " · " + r.ID, "o-ok"
			}
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

type rpcMsg struct {
	Result *rpcResult `json:"result"`
	Error  *rpcError  `json:"error"`
}

type rpcResult struct {
	Meta map[string]json.RawMessage `json:"_meta"`
}

type rpcReceipt struct {
	ID       string `json:"id"`
	Replayed bool   `json:"replayed"`
}

func (r *rpcResult) receipt() *rpcReceipt {
	raw, ok := r.Meta["io.mcpconform/receipt"]
	if !ok {
		return nil
	}
	var rc rpcReceipt
	if json.Unmarshal(raw, &rc) != nil {
		return nil
	}
	return &rc
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) reason() string {
	var d struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(e.Data, &d) == nil && d.Reason != "" {
		return d.Reason
	}
	return "rpc error " + strconv.Itoa(e.Code)
}

// rpcMessage finds the JSON-RPC answer in a body: the body itself, or for
// an SSE stream the last event whose data is an answer.
func rpcMessage(body string) (rpcMsg, bool) {
	try := func(s string) (rpcMsg, bool) {
		var m rpcMsg
		if json.Unmarshal([]byte(s), &m) != nil || (m.Result == nil && m.Error == nil) {
			return rpcMsg{}, false
		}
		return m, true
	}
	if m, ok := try(body); ok {
		return m, true
	}
	var found rpcMsg
	ok := false
	for event := range strings.SplitSeq(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		var data []string
		for line := range strings.SplitSeq(event, "\n") {
			if rest, isData := strings.CutPrefix(line, "data:"); isData {
				data = append(data, strings.TrimPrefix(rest, " "))
			}
		}
		if m, good := try(strings.Join(data, "\n")); good {
			found, ok = m, true
		}
	}
	return found, ok
}

func verdictClass(v string) string {
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
