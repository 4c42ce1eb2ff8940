package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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
}

type tlLane struct {
	Name                  string
	Y, H, LabelY, Width   string
	Odd, Upstream         bool
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
	Text, Title                                    string
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

type tlItem struct {
	start, end time.Time
	x0, x1     float64
	text       string
	title      string
	class      string
	row        int
	textInside bool
}

func buildTimeline(s Scenario) *timelineView {
	if !wantsTimeline(s) {
		return nil
	}
	// The time span over everything that has a time.
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
	laneItems := map[string][]*tlItem{}
	for _, e := range s.Exchanges {
		if e.Started.IsZero() {
			continue
		}
		lane := e.Lane
		if lane == "" {
			lane = "(no lane)"
		}
		if _, ok := laneItems[lane]; !ok {
			laneNames = append(laneNames, lane)
			laneItems[lane] = nil
		}
		end := e.Finished
		open := end.IsZero() || end.Before(e.Started)
		if open {
			end = e.Started
		}
		out, class := outcome(e)
		label := e.Label
		if label == "" {
			label = e.Method
		}
		took := "no finish time"
		if !open {
			took = "took " + fmtMillis(end.Sub(e.Started))
		}
		it := &tlItem{
			start: e.Started, end: end,
			x0: xOf(e.Started), x1: xOf(end),
			text:  svgText(label+" · "+out, tlMaxText),
			title: svgText(fmt.Sprintf("%s — lane %s, started %s, %s: %s", label, lane, rel(e.Started), took, out), tlMaxTitle),
			class: class,
		}
		laneItems[lane] = append(laneItems[lane], it)
	}
	var marks []*tlItem
	for _, d := range s.Dispatches {
		if d.At.IsZero() {
			continue
		}
		text := d.Tool
		if d.Token != "" {
			text = strings.TrimSpace(d.Tool + " " + d.Token)
		}
		x := xOf(d.At)
		marks = append(marks, &tlItem{
			start: d.At, end: d.At, x0: x - 5, x1: x + 5,
			text:  svgText(text, tlMaxText),
			title: svgText(fmt.Sprintf("dispatch %s of %s at %s", d.Token, d.Tool, rel(d.At)), tlMaxTitle),
		})
	}

	maxX := tlLaneLabelW + tlChartW
	place := func(items []*tlItem, bars bool) int {
		sort.SliceStable(items, func(i, j int) bool { return items[i].start.Before(items[j].start) })
		var rowEnd []float64
		for _, it := range items {
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
	addLane := func(name string, rows int, upstream bool) float64 {
		h := float64(rows)*tlRowH + 2*tlLanePad
		v.Lanes = append(v.Lanes, tlLane{
			Name: svgText(name, 20), Y: px(y), H: px(h), LabelY: px(y + h/2 + 4),
			LabelX: px(8), LineX1: px(tlLaneLabelW), LineY: px(y + h),
			Odd: len(v.Lanes)%2 == 1, Upstream: upstream,
		})
		top := y
		y += h
		return top
	}
	for _, lane := range laneNames {
		items := laneItems[lane]
		top := addLane(lane, place(items, true), false)
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
	if len(s.Dispatches) > 0 {
		top := addLane(tlUpstream, place(marks, false), true)
		for _, m := range marks {
			cx := (m.x0 + m.x1) / 2
			cy := top + tlLanePad + float64(m.row)*tlRowH + tlRowH/2
			v.Marks = append(v.Marks, tlMark{
				Points: fmt.Sprintf("%s,%s %s,%s %s,%s %s,%s",
					px(cx), px(cy-6), px(cx+5), px(cy), px(cx), px(cy+6), px(cx-5), px(cy)),
				TextX: px(cx + 9), TextY: px(cy + 4),
				GuideX: px(cx), GuideY1: px(tlAxisH),
				Text: m.text, Title: m.title,
			})
		}
	}
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
	v.AriaLabel = fmt.Sprintf("timeline of %s over %s: lanes %d, exchanges %d, dispatches %d",
		svgText(displayID(s.ID), tlMaxTitle), fmtMillis(span), len(v.Lanes), len(v.Bars), len(v.Marks))
	return v
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
