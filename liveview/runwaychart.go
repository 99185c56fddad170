package liveview

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/storage"
)

// Geometry of the runway chart, in the drawing's units. From the top: the
// legend, the main plot (HEALTHY workers, the need, the purchases), the
// control planes' strip (a scale of its own: a few machines beside
// hundreds), the retire waves' strip, the dates.
const (
	chartW       = 960
	chartLeft    = 52 // room for the counts
	chartRight   = 16
	chartPlotW   = chartW - chartLeft - chartRight
	chartTop     = 26
	chartPlotH   = 200
	chartCPTop   = chartTop + chartPlotH + 20
	chartCPH     = 40
	chartRetTop  = chartCPTop + chartCPH + 18
	chartRetH    = 24
	chartDatesY  = chartRetTop + chartRetH + 14
	chartH       = chartDatesY + 6
	chartBottom  = chartTop + chartPlotH
	chartRetBase = chartRetTop + chartRetH
)

// chartStyle is the chart's own: the drawing does not depend on the
// page's style sheet (beyond its size).
var chartStyle = fmt.Sprintf(`#runway-chart .pts rect{y:%dpx;height:%dpx}`, chartTop, chartRetBase-chartTop) + `#runway-chart text{font-size:11px;fill:#374151;text-anchor:start}` +
	`#runway-chart .ya{text-anchor:end}#runway-chart .xa{text-anchor:middle}` +
	`#runway-chart .grid{stroke:#e5e7eb;stroke-width:1}` +
	`#runway-chart .axis{stroke:#9ca3af;stroke-width:1}` +
	`#runway-chart .workers{fill:none;stroke:#2563eb;stroke-width:2}` +
	`#runway-chart .need{stroke:#dc2626;stroke-width:1.5;stroke-dasharray:6 3}` +
	`#runway-chart .cps{fill:none;stroke:#7c3aed;stroke-width:2}` +
	`#runway-chart .retire{fill:#6b7280}` +
	`#runway-chart .bought{fill:#16a34a;stroke:#fff;stroke-width:1}` +
	`#runway-chart .buy{fill:#fff;stroke:#16a34a;stroke-width:2}` +
	`#runway-chart .lead{stroke:#16a34a;stroke-width:1.5}` +
	`#runway-chart .end{stroke:#b91c1c;stroke-width:2}` +
	`#runway-chart .unbought{stroke:#b91c1c;stroke-width:1;stroke-dasharray:3 3}` +
	`#runway-chart text.endl{fill:#b91c1c}` +
	`#runway-chart .pts rect{fill:transparent}` +
	`#runway-chart .pts rect:hover{fill:rgba(37,99,235,.12)}`

// RunwayChart is the runway chart of a stored forecast summary: an SVG
// drawn from its points, or why there is none. It draws what is stored,
// never a forecast made again.
type RunwayChart struct {
	// SVG is the drawing ("" when there is none), Note why there is
	// none.
	SVG  template.HTML
	Note string
	// Points is how many points it draws.
	Points int
}

// DrawRunwayChart draws the summary's points as an SVG: HEALTHY workers
// (steps: an event's figure holds until the next), the need, the control
// planes, the retire waves, the bought machines' arrivals, the purchases
// (at their needed date, a line back to their order-by date) and the
// runway's end (the first point that fails). The same summary gives the
// same bytes.
func DrawRunwayChart(s *storage.ForecastSummary) RunwayChart {
	switch {
	case s == nil || s.At.IsZero():
		return RunwayChart{}
	case len(s.Points) == 0:
		return RunwayChart{Note: "No runway chart: the stored forecast has no points (one stored by a ckegen before the chart has none)."}
	}
	c, err := newChartScale(s)
	if err != nil {
		return RunwayChart{Note: "No runway chart: " + err.Error() + "."}
	}
	var b strings.Builder
	b.Grow(1024 + 160*len(s.Points))
	c.draw(&b, s)
	return RunwayChart{SVG: template.HTML(b.String()), Points: len(s.Points)}
}

// chartScale maps dates and counts to the drawing.
type chartScale struct {
	from, to     time.Time
	days         float64
	dates        []time.Time // the points'
	yTop, yStep  int
	cpTop        int
	retMax       int
	needed       []time.Time // the purchases'
	orderBy      []time.Time // zero: none, or not a date
	unboughtEnd  time.Time
	firstFailure int // -1: none
}

func newChartScale(s *storage.ForecastSummary) (*chartScale, error) {
	c := &chartScale{firstFailure: -1}
	c.dates = make([]time.Time, len(s.Points))
	maxY, maxCP := s.NeedWorkers, 1
	for i, p := range s.Points {
		d, err := time.Parse(time.DateOnly, p.Date)
		if err != nil {
			return nil, fmt.Errorf("point %d: date %q is not YYYY-MM-DD", i, p.Date)
		}
		if i > 0 && d.Before(c.dates[i-1]) {
			return nil, fmt.Errorf("point %d: date %s is before point %d's %s", i, p.Date, i-1, s.Points[i-1].Date)
		}
		c.dates[i] = d
		maxY, maxCP, c.retMax = max(maxY, p.Workers), max(maxCP, p.ControlPlanes), max(c.retMax, p.Retired)
		if p.Fails && c.firstFailure < 0 {
			c.firstFailure = i
		}
	}
	c.from, c.to = c.dates[0], c.dates[len(c.dates)-1]
	if until := s.Until.UTC().Truncate(24 * time.Hour); until.After(c.to) {
		c.to = until
	}
	for i, p := range s.Purchases {
		d, err := time.Parse(time.DateOnly, p.Needed)
		if err != nil {
			return nil, fmt.Errorf("purchase %d: needed date %q is not YYYY-MM-DD", i, p.Needed)
		}
		var o time.Time
		if p.OrderBy != "" {
			if o, err = time.Parse(time.DateOnly, p.OrderBy); err != nil {
				return nil, fmt.Errorf("purchase %d: order-by date %q is not YYYY-MM-DD", i, p.OrderBy)
			}
		}
		c.needed, c.orderBy = append(c.needed, d), append(c.orderBy, o)
		c.to = maxTime(c.to, d)
	}
	if !s.UnboughtEnd.IsZero() && len(s.Purchases) > 0 {
		c.unboughtEnd = s.UnboughtEnd.UTC().Truncate(24 * time.Hour)
	}
	if !c.to.After(c.from) {
		c.to = c.from.Add(24 * time.Hour)
	}
	c.days = c.to.Sub(c.from).Hours() / 24
	c.yStep = niceStep(max(maxY, 1) / 4)
	c.yTop = (max(maxY, 1) + c.yStep - 1) / c.yStep * c.yStep
	if float64(c.yTop) < 1.05*float64(maxY) {
		c.yTop += c.yStep
	}
	c.cpTop = maxCP + 1
	return c, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// niceStep is the smallest of 1, 2, 5 times a power of ten at least v.
func niceStep(v int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p >= v {
				return m * p
			}
		}
	}
}

// x is a date's abscissa; dates outside the chart are at its edges.
func (c *chartScale) x(d time.Time) float64 {
	f := d.Sub(c.from).Hours() / 24 / c.days
	return chartLeft + chartPlotW*min(1, max(0, f))
}

// y is a count's ordinate in the main plot.
func (c *chartScale) y(n int) float64 {
	return chartBottom - chartPlotH*float64(n)/float64(c.yTop)
}

// yCP is a count's ordinate in the control planes' strip.
func (c *chartScale) yCP(n int) float64 {
	return chartCPTop + chartCPH - chartCPH*float64(n)/float64(c.cpTop)
}

// num is a coordinate to one decimal: short and the same every time.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// chartText escapes text for the SVG inside HTML; characters XML does
// not allow become U+FFFD.
func chartText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0xFFFE || r == 0xFFFF {
			return 0xFFFD
		}
		return r
	}, s)
	return template.HTMLEscapeString(s)
}

// draw writes the SVG: its label (what a screen reader says), legend,
// axes, lines, marks and the points' bands.
func (c *chartScale) draw(b *strings.Builder, s *storage.ForecastSummary) {
	first, until := s.Points[0].Date, c.to.Format(time.DateOnly)
	label := fmt.Sprintf("runway chart: HEALTHY workers and control planes from %s to %s", first, until)
	if s.NeedWorkers > 0 {
		label += fmt.Sprintf(", %s needed", words.Count(s.NeedWorkers, "worker", "workers"))
	}
	if c.firstFailure >= 0 {
		label += "; the runway ends " + s.Points[c.firstFailure].Date
	} else {
		label += "; nothing fails before " + until
	}
	if len(s.Purchases) > 0 {
		label += "; " + words.Count(len(s.Purchases), "purchase", "purchases") + " assumed"
	}
	fmt.Fprintf(b, `<svg id="runway-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, chartText(label))
	fmt.Fprintf(b, "\n<title>%s</title>\n<style>%s</style>\n", chartText(label), chartStyle)
	c.drawLegend(b)
	c.drawAxes(b)
	c.drawLines(b, s)
	c.drawMarks(b, s)
	c.drawEnds(b, s)
	c.drawPoints(b, s)
	b.WriteString("</svg>")
}

// drawLines draws the workers and the control planes as steps (an
// event's figure holds until the next), and the need.
func (c *chartScale) drawLines(b *strings.Builder, s *storage.ForecastSummary) {
	c.stepPath(b, "workers", s.Points, func(p storage.ForecastPoint) float64 { return c.y(p.Workers) })
	c.stepPath(b, "cps", s.Points, func(p storage.ForecastPoint) float64 { return c.yCP(p.ControlPlanes) })
	if s.NeedWorkers > 0 {
		y := num(c.y(s.NeedWorkers))
		fmt.Fprintf(b, `<line id="need" class="need" x1="%d" y1="%s" x2="%d" y2="%s" data-need="%d"><title>needed: %s</title></line>`+"\n",
			chartLeft, y, chartLeft+chartPlotW, y, s.NeedWorkers, words.Count(s.NeedWorkers, "HEALTHY worker", "HEALTHY workers"))
		fmt.Fprintf(b, `<text class="ya" x="%d" y="%s" style="fill:#dc2626">need %d</text>`+"\n", chartLeft+chartPlotW, num(c.y(s.NeedWorkers)-4), s.NeedWorkers)
	}
}

// stepPath is one path through the points' figures.
func (c *chartScale) stepPath(b *strings.Builder, class string, points []storage.ForecastPoint, y func(storage.ForecastPoint) float64) {
	b.WriteString(`<path class="` + class + `" d="M`)
	for i, p := range points {
		if i > 0 {
			b.WriteString("H" + num(c.x(c.dates[i])) + "V" + num(y(p)))
		} else {
			b.WriteString(num(c.x(c.dates[i])) + " " + num(y(p)))
		}
	}
	b.WriteString("H" + num(c.x(c.to)) + "\"/>\n")
}

// drawMarks draws the retire waves, the bought machines' arrivals and the
// purchases.
func (c *chartScale) drawMarks(b *strings.Builder, s *storage.ForecastSummary) {
	// The retire waves: a bar each, as high as its share of the largest.
	b.WriteString(`<g id="retire-waves">`)
	for i, p := range s.Points {
		if p.Retired <= 0 {
			continue
		}
		h := max(3, chartRetH*float64(p.Retired)/float64(c.retMax))
		fmt.Fprintf(b, `<rect class="retire" x="%s" y="%s" width="3" height="%s" data-date="%s" data-retired="%d"><title>%s: %s</title></rect>`,
			num(c.x(c.dates[i])-1), num(chartRetBase-h), num(h), chartText(p.Date), p.Retired, chartText(p.Date),
			words.Count(p.Retired, "machine retires", "machines retire"))
	}
	b.WriteString("</g>\n")

	// The bought machines' arrivals, on the workers' line.
	b.WriteString(`<g id="bought">`)
	for i, p := range s.Points {
		if p.Bought <= 0 {
			continue
		}
		fmt.Fprintf(b, `<circle class="bought" cx="%s" cy="%s" r="4" data-date="%s" data-bought="%d"><title>%s: %s</title></circle>`,
			num(c.x(c.dates[i])), num(c.y(p.Workers)), chartText(p.Date), p.Bought, chartText(p.Date),
			words.Count(p.Bought, "bought machine arrives", "bought machines arrive"))
	}
	b.WriteString("</g>\n")

	// The purchases: a diamond at the needed date, a line back to the
	// order-by date; those needed the same day stack downwards.
	b.WriteString(`<g id="purchases">`)
	stacked := make(map[time.Time]int, len(s.Purchases))
	for i, p := range s.Purchases {
		k := stacked[c.needed[i]]
		stacked[c.needed[i]]++
		x, y := c.x(c.needed[i]), float64(chartTop+8+12*k)
		if !c.orderBy[i].IsZero() {
			fmt.Fprintf(b, `<line class="lead" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(c.x(c.orderBy[i])), num(y), num(x), num(y))
		}
		fmt.Fprintf(b, `<path class="buy" d="M%s %sl5 5l-5 5l-5 -5z" data-needed="%s" data-count="%d" data-role="%s"><title>%s</title></path>`,
			num(x), num(y-5), chartText(p.Needed), p.Count, chartText(p.Role), chartText(purchaseTitle(p)))
	}
	b.WriteString("</g>\n")

}

// drawEnds marks the runway's end and, with purchases, where it would
// end without them.
func (c *chartScale) drawEnds(b *strings.Builder, s *storage.ForecastSummary) {
	// Without the purchases, the runway would end here.
	if !c.unboughtEnd.IsZero() {
		x := num(c.x(c.unboughtEnd))
		d := c.unboughtEnd.Format(time.DateOnly)
		fmt.Fprintf(b, `<line id="unbought-end" class="unbought" x1="%s" y1="%d" x2="%s" y2="%d" data-date="%s"><title>without the purchases, the runway would end %s</title></line>`+"\n",
			x, chartTop, x, chartRetBase, d, d)
	}
	// The runway's end: the first point that fails.
	if i := c.firstFailure; i >= 0 {
		x, d := c.x(c.dates[i]), chartText(s.Points[i].Date)
		fmt.Fprintf(b, `<line id="runway-end" class="end" x1="%s" y1="%d" x2="%s" y2="%d" data-date="%s"><title>the runway ends %s: the first event where the cluster no longer meets its constraints</title></line>`+"\n",
			num(x), chartTop, num(x), chartRetBase, d, d)
		anchor := "end"
		if x < chartLeft+120 {
			anchor = "start"
		}
		fmt.Fprintf(b, `<text class="endl" x="%s" y="%d" style="text-anchor:%s">runway ends %s</text>`+"\n", num(x-3), chartTop+10, anchor, d)
	}

}

// drawPoints draws the points' bands.
func (c *chartScale) drawPoints(b *strings.Builder, s *storage.ForecastSummary) {
	// A band per point, as wide as its figures hold: a tooltip, and the
	// figures as data attributes named as the stored point's fields
	// (d, w, c, r, a, b, f; a zero is left out).
	b.WriteString(`<g class="pts">` + "\n")
	for i, p := range s.Points {
		x0 := c.x(c.dates[i])
		x1 := c.x(c.to)
		if i+1 < len(s.Points) {
			x1 = c.x(c.dates[i+1])
		}
		fmt.Fprintf(b, `<rect x="%s" width="%s" data-d="%s" data-w="%d" data-c="%d"`, num(x0), num(x1-x0), chartText(p.Date), p.Workers, p.ControlPlanes)
		attr(b, "data-r", p.Retired)
		attr(b, "data-a", p.Arriving)
		attr(b, "data-b", p.Bought)
		if p.Fails {
			b.WriteString(` data-f="1"`)
		}
		b.WriteString("><title>")
		b.WriteString(chartText(pointTitle(p)))
		b.WriteString("</title></rect>")
	}
	b.WriteString("\n</g>\n")
}

func attr(b *strings.Builder, name string, n int) {
	if n != 0 {
		b.WriteString(" " + name + `="` + strconv.Itoa(n) + `"`)
	}
}

// pointTitle is a point's figures in words.
func pointTitle(p storage.ForecastPoint) string {
	t := p.Date + ": " + words.Count(p.Workers, "HEALTHY worker", "HEALTHY workers") + ", " +
		words.Count(p.ControlPlanes, "control plane", "control planes")
	if p.Retired > 0 {
		t += "; " + words.Count(p.Retired, "machine retires", "machines retire")
	}
	if p.Arriving > 0 {
		t += "; " + words.Count(p.Arriving, "machine arrives", "machines arrive")
		if p.Bought > 0 {
			t += fmt.Sprintf(" (%d bought)", p.Bought)
		}
	}
	if p.Fails {
		t += "; the runway ends here"
	}
	return t
}

// purchaseTitle: buy N ROLE by ORDERBY, and what else is known.
func purchaseTitle(p storage.ForecastPurchase) string {
	t := fmt.Sprintf("buy %d %s", p.Count, p.Role)
	if p.Product != "" {
		t += " (" + p.Product + ")"
	}
	if p.OrderBy != "" {
		t += " by " + p.OrderBy
	}
	if p.Overdue {
		t += ", overdue"
	}
	t += "; needed " + p.Needed
	if p.Reason != "" {
		t += ": " + p.Reason
	}
	return t
}

func (c *chartScale) drawLegend(b *strings.Builder) {
	type item struct{ mark, text string }
	items := []item{
		{`<line class="workers" x1="0" y1="-4" x2="16" y2="-4"/>`, "HEALTHY workers"},
		{`<line class="need" x1="0" y1="-4" x2="16" y2="-4"/>`, "need"},
		{`<line class="cps" x1="0" y1="-4" x2="16" y2="-4"/>`, "control planes"},
		{`<rect class="retire" x="7" y="-10" width="2" height="10"/>`, "machines retire"},
		{`<circle class="bought" cx="8" cy="-4" r="4"/>`, "bought machines arrive"},
		{`<path class="buy" d="M8 -9l5 5l-5 5l-5 -5z"/>`, "buy: order by, needed"},
		{`<line class="end" x1="8" y1="-10" x2="8" y2="2"/>`, "runway ends"},
	}
	b.WriteString(`<g id="runway-legend">`)
	x := chartLeft
	for _, it := range items {
		fmt.Fprintf(b, `<g transform="translate(%d 14)">%s<text x="20" y="0">%s</text></g>`, x, it.mark, it.text)
		x += 20 + 6*len(it.text) + 12
	}
	b.WriteString("</g>\n")
}

func (c *chartScale) drawAxes(b *strings.Builder) {
	b.WriteString(`<g id="runway-axes">`)
	// Counts: the main plot's grid, the control planes' 0 and top.
	for n := 0; n <= c.yTop; n += c.yStep {
		y := num(c.y(n))
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s" data-count="%d"/><text class="ya" x="%d" y="%s">%d</text>`,
			chartLeft, y, chartLeft+chartPlotW, y, n, chartLeft-4, num(c.y(n)+4), n)
	}
	for _, n := range []int{0, c.cpTop} {
		y := num(c.yCP(n))
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s" data-cp="%d"/><text class="ya" x="%d" y="%s">%d</text>`,
			chartLeft, y, chartLeft+chartPlotW, y, n, chartLeft-4, num(c.yCP(n)+4), n)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d">control planes</text>`, chartLeft+4, chartCPTop-4)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/><text x="%d" y="%d">retire waves</text>`,
		chartLeft, chartRetBase, chartLeft+chartPlotW, chartRetBase, chartLeft+4, chartRetTop-4)
	// Dates: the first of a month every few months, about six of them.
	months := int(c.days/30) + 1
	step := 1
	for _, s := range []int{1, 2, 3, 6, 12, 24, 60, 120} {
		step = s
		if months/s <= 6 {
			break
		}
	}
	// The first label's month is a multiple of step from January.
	d := time.Date(c.from.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	if step < 12 {
		d = d.AddDate(0, (int(c.from.Month())-1)/step*step, 0)
	}
	for ; !d.After(c.to); d = d.AddDate(0, step, 0) {
		if d.Before(c.from) {
			continue
		}
		x := num(c.x(d))
		if c.x(d) < chartLeft+50 || c.x(d) > chartLeft+chartPlotW-50 {
			continue // the first and last dates are said in full
		}
		text := d.Format("2006-01")
		if step >= 12 {
			text = d.Format("2006")
		}
		fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%d" x2="%s" y2="%d"/><text class="xa" x="%s" y="%d">%s</text>`,
			x, chartRetBase, x, chartRetBase+4, x, chartDatesY, text)
	}
	fmt.Fprintf(b, `<text class="xa" x="%d" y="%d" style="text-anchor:start">%s</text>`, chartLeft, chartDatesY, c.from.Format(time.DateOnly))
	fmt.Fprintf(b, `<text class="xa" x="%d" y="%d" style="text-anchor:end">%s</text>`, chartLeft+chartPlotW, chartDatesY, c.to.Format(time.DateOnly))
	b.WriteString("</g>\n")
}

// PurchaseRow is one purchase as the page's table lists it.
type PurchaseRow struct {
	storage.ForecastPurchase
	// RackText is the racks and the count in each, by rack number.
	RackText string
}

// PurchaseRows are the summary's purchases, in its order.
func PurchaseRows(s *storage.ForecastSummary) []PurchaseRow {
	if s == nil {
		return nil
	}
	rows := make([]PurchaseRow, len(s.Purchases))
	for i, p := range s.Purchases {
		racks := make([]string, 0, len(p.Racks))
		for r := range p.Racks {
			racks = append(racks, r)
		}
		slices.SortFunc(racks, compareRacks)
		parts := make([]string, len(racks))
		for j, r := range racks {
			parts[j] = fmt.Sprintf("rack %s: %d", r, p.Racks[r])
		}
		rows[i] = PurchaseRow{ForecastPurchase: p, RackText: strings.Join(parts, ", ")}
	}
	return rows
}

// compareRacks orders rack numbers as numbers, anything else after them
// as text: a total order.
func compareRacks(a, b string) int {
	na, ea := strconv.Atoi(a)
	nb, eb := strconv.Atoi(b)
	switch {
	case ea == nil && eb == nil && na != nb:
		return na - nb
	case ea == nil && eb != nil:
		return -1
	case ea != nil && eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}
