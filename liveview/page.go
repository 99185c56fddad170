// The page is ckegen's page (at / of its daemon, at /ckegen/ of CKE's
// server with ckegen inside): the rack map as SVG (one element
// per machine, with a tooltip), the last tick's status, the runway (the
// stored forecast, its chart as SVG and its purchases), the pending plan
// and the last history entries. It is rendered on the server with
// html/template and reloads itself; there is no script.

package liveview

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// Source reads what the page shows; *Reader is one.
type Source interface {
	View(ctx context.Context) (*View, error)
}

// PageOptions configure the handler. Zero fields take their defaults.
type PageOptions struct {
	// Refresh is how often the page reloads itself.
	Refresh time.Duration
	// Timeout bounds reading a snapshot.
	Timeout time.Duration
	Log     *slog.Logger
}

// Defaults of PageOptions.
const (
	DefaultPageRefresh = 30 * time.Second
	DefaultPageTimeout = 20 * time.Second
)

// NewHandler returns the handler of the page; mount it at "/".
func NewHandler(src Source, o PageOptions) http.Handler {
	if o.Refresh <= 0 {
		o.Refresh = DefaultPageRefresh
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultPageTimeout
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &handler{src: src, opts: o}
}

type handler struct {
	src  Source
	opts PageOptions
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"time": formatTime,
	"ago":  ago,
}).Parse(pageHTML))

// ContentSecurityPolicy is the page's: nothing but its own inline style.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	code := http.StatusOK
	snap, err := h.src.View(ctx)
	var p *page
	if err != nil {
		h.opts.Log.Warn("page: cannot read the state", "error", err)
		code = http.StatusServiceUnavailable
		p = &page{Refresh: int(h.opts.Refresh.Seconds()), Err: err.Error()}
	} else {
		p = newPage(snap, h.opts.Refresh)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		h.opts.Log.Error("page: rendering failed", "error", err)
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page needs its own inline style and nothing else: no script, no
	// request anywhere, no framing.
	w.Header().Set("Content-Security-Policy", ContentSecurityPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	if r.Method == http.MethodGet {
		_, _ = w.Write(buf.Bytes())
	}
}

// Geometry of the SVG map, in the drawing's units (pixels at zoom 1).
// The page shows the drawing as wide as the window, up to maxZoom times
// its size: a rack column is wider when there are few racks, so that a
// small data center spreads over a wide window without becoming too tall.
const (
	cellW      = 12 // a cell's width at the narrowest pitch
	cellH      = 8
	minPitchX  = cellW + cellGap // a rack column: the cell and a gap
	maxPitchX  = 64
	cellGap    = 4
	pitchY     = 10
	bandHeader = 16 // the rack numbers above a band
	bandGap    = 14
	marginX    = 4
	// rowLabels is the room left of the racks for the index in rack.
	rowLabels = 28
	// drawWidth is the width the racks of a band spread over: racksPerBand
	// racks at the narrowest pitch.
	drawWidth    = racksPerBand * minPitchX
	racksPerBand = 72
	maxZoom      = 3
)

// maxTickWarnings bounds the tick's warnings listed on the page.
const maxTickWarnings = 10

// page is what the template renders.
type page struct {
	Refresh int
	Err     string // the state could not be read at all
	Time    time.Time
	Cluster string

	Status *storage.Status
	// Acting says who leads now (nil: not read, with no status), Writes
	// who writes the cluster ("": not read).
	Acting *Actor
	Writes string
	// Silence says that the status's host stopped calling ckegen.
	Silence  string
	History  []storage.HistoryEntry
	NextStep *NextStep
	// NextChanges are the first maxNextChanges of the next step's.
	NextChanges []rackmapChange
	// Runway is the leader's last forecast, as stored; RunwayChart draws
	// its points, Purchases lists its purchases.
	Runway      Runway
	RunwayChart RunwayChart
	Purchases   []PurchaseRow

	MapErr  string
	Notes   []string
	Map     *Map
	Summary string
	// Model is the model of the workers in force ("" when the constraints
	// could not be read), ModelText what it means, with the rate model's
	// figure, and RatesBelow whether that figure keeps RETIRED workers.
	Model      string
	ModelText  string
	RatesBelow bool
	SVG        svg
	Roles      []string // worker roles, columns of the rack table
	CPRoles    []string
	Racks      []rackRow
	Warnings   []string
	// TickWarnings are the first maxTickWarnings of the last tick's
	// warnings, MoreTickWarnings how many more there are.
	TickWarnings     []string
	MoreTickWarnings int
	// SettingsNotes are the last status's notes: what the settings ask
	// that their model ignores.
	SettingsNotes []string
}

// maxNextChanges bounds the changes of the next step listed.
const maxNextChanges = 100

type rackmapChange = HighlightedChange

type svg struct {
	// Width and Height are the drawing's; the page shows it as wide as the
	// window, up to DisplayWidth (maxZoom times its width).
	Width, Height               int
	DisplayWidth, DisplayHeight int
	// CellWidth is the width of a machine's cell (its height is cellH).
	CellWidth int
	Cells     []svgCell
	Labels    []svgLabel
	// Risks outline the rack columns that hold control planes of a
	// failure domain whose loss breaks etcd's quorum.
	Risks []svgRisk
	// Rows label each band's rows with the index in rack.
	Rows []svgLabel
}

type svgCell struct {
	X, Y  int
	Class string
	Title string
}

type svgLabel struct {
	X, Y  int
	Text  string
	Title string
	Class string
}

// svgRisk is the outline of a rack at risk, with what it risks.
type svgRisk struct {
	X, Y, Width, Height int
	Rack                int
	Title               string
}

type rackRow struct {
	Number  int
	Counts  Counts
	Workers []int // by Roles
	CPs     []int // by CPRoles
	TotalCP int
	TotalW  int
}

func newPage(s *View, refresh time.Duration) *page {
	p := &page{
		Refresh:  int(refresh.Seconds()),
		Time:     s.Time,
		Cluster:  s.ClusterName,
		Status:   s.Status,
		Acting:   s.Acting,
		Writes:   s.Writes,
		Silence:  s.Silence,
		History:  s.History,
		NextStep: s.NextStep,
		Notes:    s.Notes,
		Runway:   s.Runway,
	}
	p.RunwayChart = DrawRunwayChart(s.Runway.Summary)
	p.Purchases = PurchaseRows(s.Runway.Summary)
	if s.Status != nil {
		w := s.Status.Warnings
		p.TickWarnings = w[:min(len(w), maxTickWarnings)]
		p.MoreTickWarnings = len(w) - len(p.TickWarnings)
		p.SettingsNotes = s.Status.SettingsNotes
	}
	if s.NextStep != nil {
		for _, c := range s.NextStep.Changes[:min(len(s.NextStep.Changes), maxNextChanges)] {
			p.NextChanges = append(p.NextChanges, rackmapChange{Action: c.Action, Address: c.Address, Serial: c.Serial, Reason: c.Reason})
		}
	}
	if s.MapErr != nil {
		p.MapErr = s.MapErr.Error()
	}
	m := s.Map
	if m == nil {
		return p
	}
	p.Map = m
	p.Summary = strings.Join(m.SummaryItems(), " ")
	p.Model = m.Model
	p.ModelText, p.RatesBelow = modelText(m)
	p.Warnings = m.Warnings
	p.Roles, p.CPRoles = m.WorkerRoles(), m.ControlPlaneRoles()
	p.SVG = drawSVG(m)
	p.Racks = make([]rackRow, len(m.Racks))
	for i, r := range m.Racks {
		row := rackRow{Number: r.Number, Counts: r.Counts, TotalCP: r.Counts.TotalControlPlanes(), TotalW: r.Counts.TotalWorkers()}
		for _, role := range p.Roles {
			row.Workers = append(row.Workers, r.Counts.Workers[role])
		}
		for _, role := range p.CPRoles {
			row.CPs = append(row.CPs, r.Counts.ControlPlanes[role])
		}
		p.Racks[i] = row
	}
	return p
}

// modelText says what the model in force means and, in the rate model
// with a cluster, its figure and what it allows now; below reports that
// the figure keeps RETIRED workers in the cluster.
func modelText(m *Map) (text string, below bool) {
	switch m.Model {
	case constraints.CountModel:
		return "count: minimum-workers and maximum-workers bound the number of workers", false
	case constraints.RateModel:
		text = "rate: every HEALTHY machine a worker template accepts is a worker"
		r := m.Rate
		if r == nil {
			return text, false
		}
		text += "; workers " + r.String()
		if r.CanRemove() {
			return text + ": a RETIRED worker past the retire wait may leave", false
		}
		return text + ": RETIRED workers stay", true
	}
	return "", false
}

// drawSVG places the racks in bands, like the terminal map: one column
// per rack (numbered above), one row per index in rack (numbered on the
// left). Few racks get wider columns, up to maxPitchX, so that the
// drawing is wide rather than tall.
func drawSVG(m *Map) svg {
	var out svg
	out.Cells = make([]svgCell, 0, m.Totals.Machines)
	out.Labels = make([]svgLabel, 0, len(m.Racks))
	bands := m.Bands(racksPerBand)
	widest := 1
	for _, b := range bands {
		widest = max(widest, len(b.Racks))
	}
	pitchX := min(maxPitchX, max(minPitchX, drawWidth/widest))
	out.CellWidth = pitchX - cellGap
	words := make(map[string]string, len(m.QuorumAtRisk))
	for _, d := range m.QuorumAtRisk {
		words[d.Domain] = d.Words
	}
	y := 0
	for _, b := range bands {
		out.Rows = append(out.Rows, svgLabel{X: rowLabels - 4, Y: y + bandHeader - 4, Text: "rack", Title: "rack number; below, the index in rack of each row"})
		for row, index := range b.Rows {
			out.Rows = append(out.Rows, svgLabel{X: rowLabels - 4, Y: y + bandHeader + row*pitchY + cellH,
				Text: strconv.Itoa(index), Title: "index in rack " + strconv.Itoa(index)})
		}
		for k, r := range b.Racks {
			x := marginX + rowLabels + k*pitchX
			out.Width = max(out.Width, x+pitchX)
			label := svgLabel{X: x + out.CellWidth/2, Y: y + bandHeader - 4, Text: strconv.Itoa(r.Number), Title: rackTitle(&r)}
			if len(r.QuorumAtRisk) > 0 {
				risk := svgRisk{X: x - cellGap/2, Y: y, Width: pitchX, Height: bandHeader + len(b.Rows)*pitchY, Rack: r.Number, Title: riskTitle(&r, words)}
				out.Risks = append(out.Risks, risk)
				label.Class, label.Title = "risk", label.Title+"; "+risk.Title
			}
			out.Labels = append(out.Labels, label)
			for j := range r.Cells {
				c := &r.Cells[j]
				out.Cells = append(out.Cells, svgCell{
					X: x, Y: y + bandHeader + b.CellRow[k][j]*pitchY,
					Class: cellClass(c), Title: cellTitle(r.Number, c),
				})
			}
		}
		y += bandHeader + len(b.Rows)*pitchY + bandGap
	}
	out.Width += marginX
	out.Height = max(y-bandGap, 1)
	out.DisplayWidth, out.DisplayHeight = out.Width*maxZoom, out.Height*maxZoom
	return out
}

var kindClass = map[Kind]string{
	KindControlPlane: "c",
	KindWorker:       "w",
	KindUnused:       "u",
	KindUnusable:     "x",
}

// cellClass: the kind, the state when it is not HEALTHY, rb when
// rebooting, nx when the next step changes it.
func cellClass(c *Cell) string {
	cls := kindClass[c.Kind]
	if c.State != machine.StateHealthy && c.State.Valid() {
		cls += " " + strings.ToLower(string(c.State))
	}
	if c.Rebooting {
		cls += " rb"
	}
	if c.Change != "" {
		cls += " nx"
	}
	return cls
}

func cellTitle(rack int, c *Cell) string {
	var b strings.Builder
	b.Grow(96)
	b.WriteString(c.Serial)
	b.WriteByte(' ')
	b.WriteString(c.Address)
	b.WriteString(": ")
	b.WriteString(string(c.State))
	b.WriteString(", role ")
	if c.Role == "" {
		b.WriteString("(none)")
	} else {
		b.WriteString(c.Role)
	}
	b.WriteString(", ")
	switch c.Kind {
	case KindUnused:
		b.WriteString("unused candidate")
	case KindUnusable:
		b.WriteString("not usable")
	default:
		b.WriteString(c.Kind.NodeRole())
	}
	b.WriteString(", rack ")
	b.WriteString(strconv.Itoa(rack))
	b.WriteString(" #")
	b.WriteString(strconv.Itoa(c.Index))
	// The state and rebooting are said once: Why repeats them for a
	// machine that is not HEALTHY or rebooting.
	if c.Why != "" && c.Why != "state "+string(c.State) && (c.Why != "rebooting" || !c.Rebooting) {
		b.WriteString("; ")
		b.WriteString(c.Why)
	}
	if c.Rebooting {
		b.WriteString("; rebooting")
	}
	if c.Change != "" {
		b.WriteString("; next: ")
		b.WriteString(c.Change)
	}
	return b.String()
}

func rackTitle(r *Rack) string {
	c := r.Counts
	var roles []string
	for _, role := range sortedKeys(c.Workers) {
		roles = append(roles, fmt.Sprintf("%s %d", role, c.Workers[role]))
	}
	s := fmt.Sprintf("rack %d: %s, %s, %s", r.Number, words.Count(c.Machines, "machine", "machines"),
		words.Count(c.TotalControlPlanes(), "control plane", "control planes"), words.Count(c.TotalWorkers(), "worker", "workers"))
	if len(roles) > 0 {
		s += " (" + strings.Join(roles, ", ") + ")"
	}
	return s + fmt.Sprintf(", %d unused, %d not usable", c.Unused, c.Unusable)
}

// riskTitle says what a rack at risk risks: the words of each failure
// domain at risk whose control planes it holds.
func riskTitle(r *Rack, words map[string]string) string {
	ws := make([]string, 0, len(r.QuorumAtRisk))
	for _, d := range r.QuorumAtRisk {
		ws = append(ws, words[d])
	}
	return strings.Join(ws, "; ")
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return stamp(t)
}

// ago says how long before now t was, in one unit.
func ago(now, t time.Time) string {
	switch {
	case t.IsZero():
		return ""
	case t.After(now):
		return "in the future"
	}
	return ageText(now.Sub(t)) + " ago"
}
