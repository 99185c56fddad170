package liveview_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// chartSummary is a forecast with a retire wave, a purchase arriving,
// and a runway that ends.
func chartSummary() *storage.ForecastSummary {
	return &storage.ForecastSummary{
		At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC),
		RunwayUntil: "2028-05-31", RunwayReason: "WORKERS_BELOW_NEED", NeedWorkers: 90,
		End: time.Date(2028, 6, 1, 0, 0, 0, 0, time.UTC), UnboughtEnd: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC),
		Points: []storage.ForecastPoint{
			{Date: "2026-01-01", Workers: 120, ControlPlanes: 3},
			{Date: "2026-07-01", Workers: 110, ControlPlanes: 3, Retired: 10},
			{Date: "2027-03-01", Workers: 125, ControlPlanes: 3, Retired: 25, Arriving: 40, Bought: 40},
			{Date: "2027-09-01", Workers: 118, ControlPlanes: 5, Retired: 7, Arriving: 2},
			{Date: "2028-06-01", Workers: 60, ControlPlanes: 5, Retired: 58, Fails: true},
			{Date: "2028-09-01", Workers: 55, ControlPlanes: 5, Retired: 5, Fails: true},
		},
		Purchases: []storage.ForecastPurchase{
			{Role: "compute", Product: "r7<x>", Count: 30, Racks: map[string]int{"10": 10, "2": 15, "3": 5}, Needed: "2027-03-01", OrderBy: "2026-12-01", Reason: "workers below the need"},
			{Role: "storage", Count: 10, Racks: map[string]int{"4": 10}, Needed: "2027-03-01", OrderBy: "2025-12-01", Overdue: true, Reason: "workers below the need"},
		},
		OrderBy: "2025-12-01",
	}
}

// element is an element of the parsed SVG.
type element struct {
	name  string
	attr  map[string]string
	title string // its <title> child's text
	text  string
}

// parseChart parses the SVG with encoding/xml (strict: well-formed) and
// returns its elements in document order.
func parseChart(t *testing.T, svg string) []*element {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var out, stack []*element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			out, stack = append(out, e), append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if n := len(stack); n > 0 {
				if stack[n-1].name == "title" && n > 1 {
					stack[n-2].title += string(tok)
				}
				stack[n-1].text += string(tok)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" || out[0].attr["role"] != "img" || out[0].attr["aria-label"] == "" {
		t.Fatalf("the chart's root is not an accessible svg: %+v", out)
	}
	return out
}

func find(es []*element, ok func(*element) bool) []*element {
	var out []*element
	for _, e := range es {
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}

func byClass(es []*element, name, class string) []*element {
	return find(es, func(e *element) bool { return e.name == name && e.attr["class"] == class })
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return f
}

// scale reads a count's ordinate back from the grid lines that carry
// attr (their count), and returns it as a function.
func scale(t *testing.T, es []*element, attr string) func(int) float64 {
	t.Helper()
	lines := find(es, func(e *element) bool { return e.name == "line" && e.attr[attr] != "" })
	if len(lines) < 2 {
		t.Fatalf("fewer than 2 grid lines with %s", attr)
	}
	lo, hi := lines[0], lines[len(lines)-1]
	n0, n1 := atof(t, lo.attr[attr]), atof(t, hi.attr[attr])
	y0, y1 := atof(t, lo.attr["y1"]), atof(t, hi.attr["y1"])
	return func(n int) float64 { return y0 + (y1-y0)*(float64(n)-n0)/(n1-n0) }
}

// steps reads a step path "M x y H x V y ... H x" back: its vertices.
func steps(t *testing.T, d string) (xs, ys []float64) {
	t.Helper()
	f := strings.FieldsFunc(d, func(r rune) bool { return r == ' ' || r == 'M' })
	if len(f) < 1 {
		t.Fatalf("path %q", d)
	}
	rest := f[len(f)-1]
	x0, y0 := atof(t, f[0]), 0.0
	if i := strings.IndexByte(rest, 'H'); i >= 0 {
		y0 = atof(t, rest[:i])
		rest = rest[i:]
	} else {
		y0 = atof(t, rest)
		rest = ""
	}
	xs, ys = []float64{x0}, []float64{y0}
	for _, seg := range strings.Split(rest, "H")[1:] {
		x, y, ok := strings.Cut(seg, "V")
		xs = append(xs, atof(t, x))
		if ok {
			ys = append(ys, atof(t, y))
		}
	}
	return xs, ys
}

func near(a, b float64) bool { return math.Abs(a-b) <= 0.11 }

// TestRunwayChart: the chart of a summary is well-formed SVG whose
// points, lines and marks are the summary's, read back from the drawing.
func TestRunwayChart(t *testing.T) {
	s := chartSummary()
	c := liveview.DrawRunwayChart(s)
	if c.SVG == "" || c.Note != "" || c.Points != len(s.Points) {
		t.Fatalf("chart: note %q, %d points", c.Note, c.Points)
	}
	es := parseChart(t, string(c.SVG))
	if es[1].name != "title" || !strings.HasPrefix(es[1].text, "runway chart: HEALTHY workers and control planes from 2026-01-01 to 2029-01-01, 90 workers needed; the runway ends 2028-06-01; 2 purchases assumed") {
		t.Errorf("the chart's title: %q", es[1].text)
	}

	// The points: one band each, whose data attributes are the point's.
	bands := find(es, func(e *element) bool { return e.name == "rect" && e.attr["data-w"] != "" })
	var got []storage.ForecastPoint
	for _, b := range bands {
		n := func(k string) int {
			if b.attr[k] == "" {
				return 0
			}
			return int(atof(t, b.attr[k]))
		}
		got = append(got, storage.ForecastPoint{Date: b.attr["data-d"], Workers: n("data-w"), ControlPlanes: n("data-c"),
			Retired: n("data-r"), Arriving: n("data-a"), Bought: n("data-b"), Fails: b.attr["data-f"] == "1"})
	}
	if fmt.Sprint(got) != fmt.Sprint(s.Points) {
		t.Errorf("points read back\n got %+v\nwant %+v", got, s.Points)
	}
	if want := "2027-03-01: 125 HEALTHY workers, 3 control planes; 25 machines retire; 40 machines arrive (40 bought)"; len(bands) > 2 && bands[2].title != want {
		t.Errorf("a point's tooltip %q, want %q", bands[2].title, want)
	}

	// The workers' and control planes' steps pass through each point, at
	// its band's left edge, at the height the axis says.
	y, yCP := scale(t, es, "data-count"), scale(t, es, "data-cp")
	for _, line := range []struct {
		class string
		y     func(int) float64
		of    func(storage.ForecastPoint) int
	}{
		{"workers", y, func(p storage.ForecastPoint) int { return p.Workers }},
		{"cps", yCP, func(p storage.ForecastPoint) int { return p.ControlPlanes }},
	} {
		paths := byClass(es, "path", line.class)
		if len(paths) != 1 {
			t.Fatalf("%d %s paths, want 1", len(paths), line.class)
		}
		xs, ys := steps(t, paths[0].attr["d"])
		if len(ys) != len(s.Points) || len(xs) != len(s.Points)+1 {
			t.Fatalf("%s path: %d vertices, %d heights for %d points: %q", line.class, len(xs), len(ys), len(s.Points), paths[0].attr["d"])
		}
		for i, p := range s.Points {
			if !near(ys[i], line.y(line.of(p))) || i < len(bands) && !near(xs[i], atof(t, bands[i].attr["x"])) {
				t.Errorf("%s at point %d (%s, %d): drawn at (%v, %v), want (%v, %v)", line.class, i, p.Date, line.of(p), xs[i], ys[i], bands[i].attr["x"], line.y(line.of(p)))
			}
		}
	}

	// The need: a horizontal line at its count.
	need := find(es, func(e *element) bool { return e.attr["id"] == "need" })
	if len(need) != 1 || need[0].attr["y1"] != need[0].attr["y2"] || !near(atof(t, need[0].attr["y1"]), y(s.NeedWorkers)) ||
		need[0].attr["data-need"] != "90" || need[0].title != "needed: 90 HEALTHY workers" {
		var got []map[string]string
		for _, e := range need {
			got = append(got, e.attr)
		}
		t.Errorf("need lines %v, want one at y %v", got, y(s.NeedWorkers))
	}

	// The retire waves, the bought machines, the purchases, the end.
	var waves, bought []string
	for _, e := range byClass(es, "rect", "retire") {
		if e.attr["data-date"] == "" {
			continue // the legend's
		}
		waves = append(waves, e.attr["data-date"]+" "+e.attr["data-retired"]+" "+e.title)
	}
	for _, e := range byClass(es, "circle", "bought") {
		if e.attr["data-date"] == "" {
			continue // the legend's
		}
		bought = append(bought, e.attr["data-date"]+" "+e.attr["data-bought"]+" "+e.title)
	}
	wantWaves := []string{"2026-07-01 10 2026-07-01: 10 machines retire", "2027-03-01 25 2027-03-01: 25 machines retire",
		"2027-09-01 7 2027-09-01: 7 machines retire", "2028-06-01 58 2028-06-01: 58 machines retire", "2028-09-01 5 2028-09-01: 5 machines retire"}
	if fmt.Sprint(waves) != fmt.Sprint(wantWaves) {
		t.Errorf("retire waves %q, want %q", waves, wantWaves)
	}
	if want := []string{"2027-03-01 40 2027-03-01: 40 bought machines arrive"}; fmt.Sprint(bought) != fmt.Sprint(want) {
		t.Errorf("bought %q, want %q", bought, want)
	}
	var buys []string
	for _, e := range byClass(es, "path", "buy") {
		if e.attr["data-needed"] != "" {
			buys = append(buys, e.title)
		}
	}
	wantBuys := []string{"buy 30 compute (r7<x>) by 2026-12-01; needed 2027-03-01: workers below the need",
		"buy 10 storage by 2025-12-01, overdue; needed 2027-03-01: workers below the need"}
	if fmt.Sprint(buys) != fmt.Sprint(wantBuys) {
		t.Errorf("purchase markers %q, want %q", buys, wantBuys)
	}
	end := find(es, func(e *element) bool { return e.attr["id"] == "runway-end" })
	if len(end) != 1 || end[0].attr["data-date"] != "2028-06-01" || !near(atof(t, end[0].attr["x1"]), atof(t, bands[4].attr["x"])) {
		t.Errorf("%d runway ends, want one at the failing point 2028-06-01", len(end))
	}
	if u := find(es, func(e *element) bool { return e.attr["id"] == "unbought-end" }); len(u) != 1 || u[0].attr["data-date"] != "2027-03-01" {
		t.Errorf("%d ends without the purchases, want one at 2027-03-01", len(u))
	}

	// Same summary, same bytes.
	if again := liveview.DrawRunwayChart(chartSummary()); again.SVG != c.SVG {
		t.Error("two drawings of one summary differ")
	}
	// Nothing fails: no end drawn.
	s.Points[4].Fails, s.Points[5].Fails = false, false
	if es := parseChart(t, string(liveview.DrawRunwayChart(s).SVG)); len(find(es, func(e *element) bool { return e.attr["id"] == "runway-end" })) != 0 {
		t.Error("a runway end drawn where no point fails")
	}
}

// TestRunwayChartWithout: no summary, a failed first forecast, a summary
// without points, and points the chart cannot read: no chart, and a note
// naming what is missing.
func TestRunwayChartWithout(t *testing.T) {
	if c := liveview.DrawRunwayChart(nil); c.SVG != "" || c.Note != "" {
		t.Errorf("no summary: %+v", c)
	}
	failed := &storage.ForecastSummary{Failed: &storage.ForecastFailure{Message: "x"}}
	if c := liveview.DrawRunwayChart(failed); c.SVG != "" || c.Note != "" {
		t.Errorf("no forecast made: %+v", c)
	}
	s := chartSummary()
	s.Points = nil
	if c := liveview.DrawRunwayChart(s); c.SVG != "" || !strings.Contains(c.Note, "has no points") {
		t.Errorf("no points: %+v", c)
	}
	s = chartSummary()
	s.Points[2].Date = "2027/03/01"
	if c := liveview.DrawRunwayChart(s); c.SVG != "" || c.Note != `No runway chart: point 2: date "2027/03/01" is not YYYY-MM-DD.` {
		t.Errorf("a bad date: %+v", c)
	}
	s = chartSummary()
	s.Points[1].Date = "2025-01-01"
	if c := liveview.DrawRunwayChart(s); c.SVG != "" || c.Note != "No runway chart: point 1: date 2025-01-01 is before point 0's 2026-01-01." {
		t.Errorf("points out of order: %+v", c)
	}
	s = chartSummary()
	s.Purchases[1].OrderBy = "soon"
	if c := liveview.DrawRunwayChart(s); c.SVG != "" || c.Note != `No runway chart: purchase 1: order-by date "soon" is not YYYY-MM-DD.` {
		t.Errorf("a bad order-by date: %+v", c)
	}
}

// TestRunwayChartEscapes: text from the summary is text in the SVG, even
// characters XML does not allow.
func TestRunwayChartEscapes(t *testing.T) {
	s := chartSummary()
	s.Purchases[0].Role = `<script>&"'` + "\x01"
	es := parseChart(t, string(liveview.DrawRunwayChart(s).SVG))
	buys := byClass(es, "path", "buy")
	if len(buys) < 2 || buys[1].attr["data-role"] != "<script>&\"'\uFFFD" || !strings.HasPrefix(buys[1].title, "buy 30 <script>&\"'\uFFFD (r7<x>) by") {
		t.Errorf("escaped role: %+v", buys)
	}
}

// TestPurchaseRows: the racks by number, the rows in the summary's order.
func TestPurchaseRows(t *testing.T) {
	s := chartSummary()
	s.Purchases[0].Racks["x"] = 1
	rows := liveview.PurchaseRows(s)
	if len(rows) != 2 || rows[0].RackText != "rack 2: 15, rack 3: 5, rack 10: 10, rack x: 1" || rows[1].RackText != "rack 4: 10" || rows[1].Role != "storage" {
		t.Errorf("rows %+v", rows)
	}
}

// TestRunwayChartSize: daily points over 5 years (about 1,900) draw in a
// chart of a bounded size, in linear time.
func TestRunwayChartSize(t *testing.T) {
	s := bigRunway(1900)
	start := time.Now()
	c := liveview.DrawRunwayChart(s)
	took := time.Since(start)
	es := parseChart(t, string(c.SVG))
	if n := len(find(es, func(e *element) bool { return e.attr["data-w"] != "" })); n != 1900 {
		t.Errorf("%d points drawn, want 1900", n)
	}
	t.Logf("1900 points: %d bytes of SVG, drawn in %v", len(c.SVG), took)
	// About 150 bytes a point (its band, tooltip and data attributes),
	// 20 on each line: at most 200 a point in all.
	if len(c.SVG) > 200*1900 {
		t.Errorf("1900 points: %d bytes of SVG, want at most 200 a point", len(c.SVG))
	}
}

func BenchmarkRunwayChart(b *testing.B) {
	s := bigRunway(1900)
	for b.Loop() {
		c := liveview.DrawRunwayChart(s)
		b.SetBytes(int64(len(c.SVG)))
	}
}

// bigRunway is n daily points of a large cluster, a retire wave every
// 30 days and a purchase each year.
func bigRunway(n int) *storage.ForecastSummary {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &storage.ForecastSummary{At: from, Until: from.AddDate(0, 0, n), NeedWorkers: 15000}
	w := 19000
	for i := range n {
		p := storage.ForecastPoint{Date: from.AddDate(0, 0, i).Format(time.DateOnly), Workers: w, ControlPlanes: 5}
		if i%30 == 29 {
			p.Retired = 300
			w -= 300
		}
		if i%365 == 364 {
			p.Arriving, p.Bought = 2000, 2000
			w += 2000
			s.Purchases = append(s.Purchases, storage.ForecastPurchase{Role: "compute", Count: 2000, Needed: p.Date,
				OrderBy: from.AddDate(0, 0, i-90).Format(time.DateOnly), Racks: map[string]int{"1": 2000}})
		}
		p.Workers = w
		s.Points = append(s.Points, p)
	}
	return s
}
