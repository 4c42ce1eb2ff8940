package reports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Timeline geometry, in SVG user units (px).
const (
	tlLaneLabelW = 150.0 // left column with the lane names
	tlChartW     = 720.0 // the time axis
	tlAxisH      = 28.0  // tick labels on top
	tlRowH       = 22.0  // one row of bars
	tlBarH       = 14.0
	tlLanePad    = 5.0
	tlCharW      = 6.2 // estimated width of one 11px character
	tlMaxText    = 56  // runes of a label shown in the picture
	tlMaxTitle   = 400 // runes of a tooltip
	tlUpstream   = "upstream"
	tlLedger     = "ledger"
)

// timelineView is the laid-out swim-lane picture of one scenario; every
// number is formatted here, the template only places strings.
type timelineView struct {
	Width, Height string
	AriaLabel     string
	Lanes         []tlLane
	Ticks         []tlTick
	Bars          []tlBar
	Marks         []tlMark
	// What the legend explains beyond the outcomes: grouped lanes, the
	// ledger lane, the marks of a violated check's witness.
	Grouped, HasLedger, HasWitness bool
}

type tlLane struct {
	Name                  string
	Y, H, LabelY, Width   string
	Odd, Upstream, Ledger bool
	LabelX, LineX1, LineY string
}

type tlTick struct {
	X, Y1, Y2, LabelY, Label string
}

type tlBar struct {
	X, Y, W, H, TextX, TextY string
	Text, Title, Class       string
}

type tlMark struct {
	Points, TextX, TextY, GuideX, GuideY1, GuideY2 string
	Text, Title, Class                             string
	Guide                                          bool // a crowd's unlabelled marks draw no guide line
}

// wantsTimeline: concurrent scenarios (more than one lane) and those with
// upstream dispatches get a picture.
func wantsTimeline(s Scenario) bool {
	if len(s.Dispatches) > 0 {
		return true
	}
	lanes := map[string]bool{}
	for _, e := range s.Exchanges {
		lanes[e.Lane] = true
	}
	return len(lanes) > 1
}

// tlGroupAbove is the most lanes drawn one by one: beyond it, lanes whose
// exchanges ended alike share one row ("62 lanes"), and only the marks a
// violated check names carry a label, so 64 twins stay readable.
const tlGroupAbove = 8

type tlItem struct {
	start, end time.Time
	x0, x1     float64
	text       string
	title      string
	class      string
	row        int
	textInside bool
}

// laneSrc is one row group of the picture: a client's lane, or several
// lanes whose exchanges ended alike; exs[k] are the k-th exchanges of each.
type laneSrc struct {
	name    string
	lanes   []string
	exs     [][]int
	witness bool
}

func buildTimeline(s Scenario) *timelineView {
	if !wantsTimeline(s) {
		return nil
	}
	offEx, offDisp, offLedger := Offending(s)
	// The time span over everything the harness timed.
	var t0, t1 time.Time
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t0.IsZero() || t.Before(t0) {
			t0 = t
		}
		if t1.IsZero() || t.After(t1) {
			t1 = t
		}
	}
	for _, e := range s.Exchanges {
		see(e.Started)
		see(e.Finished)
	}
	for _, d := range s.Dispatches {
		see(d.At)
	}
	if t0.IsZero() {
		return nil // nothing was timed: no picture rather than a wrong one
	}
	// Ledger entries carry the gateway's clock, which a scenario may move:
	// only those within the span the harness timed are drawn.
	var entries []judge.LedgerEntry
	if s.LedgerAfter != nil {
		for _, e := range s.LedgerAfter.Entries {
			if (e.Kind == "debit" || e.Kind == "refund") && !e.At.Before(t0) && !e.At.After(t1) {
				entries = append(entries, e)
			}
		}
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Millisecond
	}
	xOf := func(t time.Time) float64 {
		return tlLaneLabelW + float64(t.Sub(t0))/float64(span)*tlChartW
	}
	rel := func(t time.Time) string { return "+" + fmtMillis(t.Sub(t0)) }

	// Lanes in order of first appearance; exchanges without a start time
	// cannot be placed and are left to the exchange list.
	var laneNames []string
	laneExs := map[string][]int{}
	for i, e := range s.Exchanges {
		if e.Started.IsZero() {
			continue
		}
		lane := laneOf(e)
		if _, ok := laneExs[lane]; !ok {
			laneNames = append(laneNames, lane)
		}
		laneExs[lane] = append(laneExs[lane], i)
	}
	srcs := groupLanes(s.Exchanges, laneNames, laneExs, offEx)
	laneItems := make([][]*tlItem, len(srcs))
	for li, src := range srcs {
		for _, ixs := range src.exs {
			laneItems[li] = append(laneItems[li], exchangeItem(s.Exchanges, ixs, src, offEx, xOf, rel))
		}
	}
	crowded := len(laneNames) > tlGroupAbove
	var marks []*tlItem
	var markOff []bool
	for _, d := range s.Dispatches {
		if d.At.IsZero() {
			continue
		}
		off := offDisp[dispatchKey(d)]
		text := d.Tool
		if d.Token != "" {
			text = strings.TrimSpace(d.Tool + " " + d.Token)
		}
		if crowded && !off {
			text = "" // the tooltip still names it
		}
		x := xOf(d.At)
		marks = append(marks, &tlItem{
			start: d.At, end: d.At, x0: x - 5, x1: x + 5,
			text:  svgText(text, tlMaxText),
			title: svgText(fmt.Sprintf("dispatch %s of %s at %s%s", d.Token, d.Tool, rel(d.At), offNote(off)), tlMaxTitle),
		})
		markOff = append(markOff, off)
	}
	var debits []*tlItem
	var debitOff []bool
	for _, e := range entries {
		off := offLedger[e.ID]
		text := fmt.Sprintf("%s %d", e.Kind, e.Amount)
		if crowded && !off {
			text = ""
		}
		x := xOf(e.At)
		debits = append(debits, &tlItem{
			start: e.At, end: e.At, x0: x - 5, x1: x + 5, class: e.Kind,
			text:  svgText(text, tlMaxText),
			title: svgText(fmt.Sprintf("%s %s of %d credits, receipt %s, at %s%s", e.Kind, e.ID, e.Amount, e.Receipt, rel(e.At), offNote(off)), tlMaxTitle),
		})
		debitOff = append(debitOff, off)
	}

	maxX := tlLaneLabelW + tlChartW
	place := func(items []*tlItem, bars bool) int {
		sort.SliceStable(items, func(i, j int) bool { return items[i].start.Before(items[j].start) })
		var rowEnd []float64
		// Marks without a label (a crowd's) overlap on the first row; the
		// labelled ones stack below it.
		shared := !bars && slices.ContainsFunc(items, func(it *tlItem) bool { return it.text == "" })
		if shared {
			rowEnd = append(rowEnd, math.Inf(1))
		}
		for _, it := range items {
			if shared && it.text == "" {
				it.row = 0
				continue
			}
			if it.x1-it.x0 < 2 {
				it.x1 = it.x0 + 2
			}
			textW := float64(utf8.RuneCountInString(it.text)) * tlCharW
			extent := it.x1 + 4 + textW
			if bars && it.x1-it.x0 >= textW+8 {
				it.textInside = true
				extent = it.x1
			}
			extent += 6
			maxX = math.Max(maxX, extent)
			row := -1
			for r, endX := range rowEnd {
				if endX <= it.x0 {
					row = r
					break
				}
			}
			if row < 0 {
				row = len(rowEnd)
				rowEnd = append(rowEnd, 0)
			}
			rowEnd[row] = extent
			it.row = row
		}
		return max(len(rowEnd), 1)
	}

	v := &timelineView{}
	y := tlAxisH
	addLane := func(name string, rows int, kind string) float64 {
		h := float64(rows)*tlRowH + 2*tlLanePad
		v.Lanes = append(v.Lanes, tlLane{
			Name: svgText(name, 20), Y: px(y), H: px(h), LabelY: px(y + h/2 + 4),
			LabelX: px(8), LineX1: px(tlLaneLabelW), LineY: px(y + h),
			Odd: len(v.Lanes)%2 == 1, Upstream: kind == tlUpstream, Ledger: kind == tlLedger,
		})
		top := y
		y += h
		return top
	}
	for li, src := range srcs {
		items := laneItems[li]
		top := addLane(src.name, place(items, true), "")
		for _, it := range items {
			by := top + tlLanePad + float64(it.row)*tlRowH + (tlRowH-tlBarH)/2
			tx := it.x1 + 4
			if it.textInside {
				tx = it.x0 + 4
			}
			v.Bars = append(v.Bars, tlBar{
				X: px(it.x0), Y: px(by), W: px(it.x1 - it.x0), H: px(tlBarH),
				TextX: px(tx), TextY: px(by + tlBarH - 3.5),
				Text: it.text, Title: it.title, Class: it.class,
			})
		}
	}
	addMarks := func(name string, items []*tlItem, off []bool) {
		if len(items) == 0 {
			return
		}
		for i, it := range items {
			if off[i] {
				it.class = strings.TrimSpace(it.class + " offending")
			}
		}
		top := addLane(name, place(items, false), name)
		for _, m := range items {
			cx := (m.x0 + m.x1) / 2
			cy := top + tlLanePad + float64(m.row)*tlRowH + tlRowH/2
			v.Marks = append(v.Marks, tlMark{
				Points: fmt.Sprintf("%s,%s %s,%s %s,%s %s,%s",
					px(cx), px(cy-6), px(cx+5), px(cy), px(cx), px(cy+6), px(cx-5), px(cy)),
				TextX: px(cx + 9), TextY: px(cy + 4),
				GuideX: px(cx), GuideY1: px(tlAxisH), Guide: m.text != "",
				Text: m.text, Title: m.title, Class: markClass(name, m.class),
			})
		}
	}
	addMarks(tlUpstream, marks, markOff)
	addMarks(tlLedger, debits, debitOff)
	bottom := y
	for i := range v.Marks {
		v.Marks[i].GuideY2 = px(bottom)
	}
	width := math.Ceil(maxX + 4)
	for i := range v.Lanes {
		v.Lanes[i].Width = px(width)
	}
	for _, tk := range ticks(span) {
		x := tlLaneLabelW + float64(tk)/float64(span)*tlChartW
		v.Ticks = append(v.Ticks, tlTick{X: px(x), Y1: px(tlAxisH - 4), Y2: px(bottom), LabelY: px(tlAxisH - 9), Label: fmtMillis(tk)})
	}
	v.Width = px(width)
	v.Height = px(math.Ceil(bottom + 6))
	v.AriaLabel = fmt.Sprintf("timeline of %s over %s: lanes %d, exchanges %d, dispatches %d, ledger entries %d, marked as a violation's witness %d",
		svgText(displayID(s.ID), tlMaxTitle), fmtMillis(span), len(laneNames), len(s.Exchanges), len(marks), len(debits), len(offEx)+len(offDisp)+len(offLedger))
	v.Grouped = len(srcs) < len(laneNames)
	v.HasLedger = len(debits) > 0
	v.HasWitness = len(offEx)+len(offDisp)+len(offLedger) > 0
	return v
}

func laneOf(e Exchange) string {
	if e.Lane == "" {
		return "(no lane)"
	}
	return e.Lane
}

func offNote(off bool) string {
	if off {
		return " — witness of a violated check"
	}
	return ""
}

func markClass(lane, class string) string {
	if lane == tlUpstream {
		return strings.TrimSpace("dispatch " + class)
	}
	return strings.TrimSpace("entry " + class)
}

// groupLanes keeps up to tlGroupAbove lanes apart; beyond, lanes whose
// exchanges ended alike (the same labels, and the same outcome but for
// the receipt) share a row. A lane holding a violation's witness is
// always drawn alone.
func groupLanes(exs []Exchange, names []string, laneExs map[string][]int, witness map[int]bool) []laneSrc {
	var out []laneSrc
	if len(names) <= tlGroupAbove {
		for _, n := range names {
			src := laneSrc{name: n, lanes: []string{n}}
			for _, ix := range laneExs[n] {
				src.exs = append(src.exs, []int{ix})
				src.witness = src.witness || witness[ix]
			}
			out = append(out, src)
		}
		return out
	}
	at := map[string]int{}
	for _, n := range names {
		var key []string
		alone := false
		for _, ix := range laneExs[n] {
			kind, _ := outcomeKind(exs[ix])
			key = append(key, shortLabel(exs[ix])+"\x00"+kind)
			alone = alone || witness[ix]
		}
		k := strings.Join(key, "\x01")
		if alone {
			k = "\x02" + n
		}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, laneSrc{witness: alone})
		}
		src := &out[i]
		src.lanes = append(src.lanes, n)
		for p, ix := range laneExs[n] {
			if p == len(src.exs) {
				src.exs = append(src.exs, nil)
			}
			src.exs[p] = append(src.exs[p], ix)
		}
	}
	for i := range out {
		if len(out[i].lanes) == 1 {
			out[i].name = out[i].lanes[0]
		} else {
			out[i].name = fmt.Sprintf("%d lanes (%s…)", len(out[i].lanes), out[i].lanes[0])
		}
	}
	return out
}

// exchangeItem is one bar: an exchange, or the same exchange of several
// grouped lanes, spanning the first start to the last finish, with its
// outcome counted per receipt.
func exchangeItem(all []Exchange, ixs []int, src laneSrc, witness map[int]bool, xOf func(time.Time) float64, rel func(time.Time) string) *tlItem {
	first := all[ixs[0]]
	start, end := first.Started, time.Time{}
	open := false
	marked := false
	var receipts []string
	for _, ix := range ixs {
		e := all[ix]
		if !e.Started.IsZero() && e.Started.Before(start) {
			start = e.Started
		}
		if e.Finished.IsZero() || e.Finished.Before(e.Started) {
			open = true
		} else if e.Finished.After(end) {
			end = e.Finished
		}
		if _, r := outcomeKind(e); r != "" {
			receipts = append(receipts, r)
		}
		marked = marked || witness[ix]
	}
	if end.IsZero() {
		end = start
	}
	out, class := outcome(first)
	if marked {
		class += " witness"
	}
	if len(ixs) == 1 {
		label := first.Label
		if label == "" {
			label = first.Method
		}
		took := "no finish time"
		if !open {
			took = "took " + fmtMillis(end.Sub(start))
		}
		return &tlItem{
			start: start, end: end, x0: xOf(start), x1: xOf(end), class: class,
			text:  svgText(label+" · "+out, tlMaxText),
			title: svgText(fmt.Sprintf("#%d %s — lane %s, started %s, %s: %s%s", ixs[0]+1, label, laneOf(first), rel(start), took, out, offNote(marked)), tlMaxTitle),
		}
	}
	kind, _ := outcomeKind(first)
	detail := kind
	if len(receipts) > 0 {
		status, _, _ := strings.Cut(out, " · ")
		detail = status + " · receipts " + Tally(receipts, 3)
		if n := len(slices.Compact(slices.Sorted(slices.Values(receipts)))); n == 1 {
			kind = status + " · " + receipts[0]
		} else {
			kind = fmt.Sprintf("%s · %d receipts", status, n)
		}
	}
	label := shortLabel(first)
	lanes := src.lanes[0] + " … " + src.lanes[len(src.lanes)-1]
	return &tlItem{
		start: start, end: end, x0: xOf(start), x1: xOf(end), class: class,
		text:  svgText(fmt.Sprintf("%d× %s · %s", len(ixs), label, kind), tlMaxText),
		title: svgText(fmt.Sprintf("%s, %d lanes (%s), from %s to %s: %s", label, len(src.lanes), lanes, rel(start), rel(end), detail), tlMaxTitle),
	}
}

// shortLabel is an exchange's label without its lane ("twin-07: write"
// is "write"), so the twins' exchanges compare equal.
func shortLabel(e Exchange) string {
	l := e.Label
	if l == "" {
		l = e.Method
	}
	if rest, ok := strings.CutPrefix(l, e.Lane+": "); ok {
		return rest
	}
	return l
}

// outcomeKind is how an exchange ended, without its receipt (which every
// operation has its own of), and the receipt.
func outcomeKind(e Exchange) (kind, receipt string) {
	out, class := outcome(e)
	if r := receiptOf(e); r != "" {
		return class, r
	}
	return out, ""
}

func receiptOf(e Exchange) string {
	if e.Error != "" {
		return ""
	}
	return readAnswer(e).Receipt
}

// ticks returns about six round offsets from 0 to span inclusive.
func ticks(span time.Duration) []time.Duration {
	raw := float64(span) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	st := time.Duration(math.Max(step, 1))
	var out []time.Duration
	for t := time.Duration(0); t <= span; t += st {
		out = append(out, t)
	}
	return out
}

// fmtMillis writes a duration in milliseconds, at most 3 decimals.
func fmtMillis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	return strconv.FormatFloat(math.Round(ms*1000)/1000, 'f', -1, 64) + " ms"
}

func px(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// svgText makes s fit for a line of SVG text: control characters (which
// XML does not allow even as references) and invalid UTF-8 become U+FFFD,
// and text longer than max runes is cut with an ellipsis. Escaping is
// html/template's job.
func svgText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || r == utf8.RuneError || r == 0xFFFE || r == 0xFFFF {
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
