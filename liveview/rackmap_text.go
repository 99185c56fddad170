package liveview

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/machine"
)

// TextOptions shape the terminal rendering.
type TextOptions struct {
	// Width is the terminal's width in columns; racks wrap into bands that
	// fit. 0 or less means DefaultWidth.
	Width int
	// Color draws each cell in its machine state's colour and the next
	// step's cells in reverse video (ANSI escapes).
	Color bool
}

// DefaultWidth is the width when none is known.
const DefaultWidth = 80

// maxLabel bounds the row label column (long role names are cut).
const maxLabel = 16

// stateColors are the ANSI foreground colours of machine states.
var stateColors = map[machine.State]string{
	machine.StateHealthy:       "32",
	machine.StateUnhealthy:     "33",
	machine.StateUnreachable:   "31",
	machine.StateUpdating:      "36",
	machine.StateRetiring:      "35",
	machine.StateRetired:       "90",
	machine.StateUninitialized: "34",
}

const (
	ansiReset     = "\x1b[0m"
	ansiHighlight = "1;7"
)

// countRow is one row of per-rack counts: control planes or workers of a
// role.
type countRow struct {
	label string
	count func(Counts) int
}

// WriteText renders the map for a terminal: one column per rack, wrapped
// into bands that fit the width, one cell per machine in index order, the
// per-rack counts under each band, then a summary and a legend.
func (m *Map) WriteText(w io.Writer, o TextOptions) error {
	width := o.Width
	if width <= 0 {
		width = DefaultWidth
	}
	rows := m.countRows()

	field := 1
	labelW := len("rack")
	for _, r := range m.Racks {
		field = max(field, len(strconv.Itoa(r.Number)))
		for _, row := range rows {
			field = max(field, len(strconv.Itoa(row.count(r.Counts))))
		}
		for _, c := range r.Cells {
			labelW = max(labelW, len(strconv.Itoa(c.Index)))
		}
	}
	for _, row := range rows {
		labelW = max(labelW, len(row.label))
	}
	labelW = min(labelW, maxLabel)
	colW := field + 2 // a space, the field, the marker
	perBand := max(1, (width-labelW)/colW)

	bw := bufio.NewWriter(w)
	t := &textWriter{w: bw, color: o.Color, field: field, labelW: labelW}
	for i, b := range m.Bands(perBand) {
		if i > 0 {
			bw.WriteByte('\n')
		}
		t.band(b, rows)
	}
	if len(m.Racks) == 0 {
		bw.WriteString("no machines\n")
	}
	bw.WriteByte('\n')
	m.writeSummary(t, width)
	writeLegend(t, width, len(m.QuorumAtRisk) > 0)
	return bw.Flush()
}

// countRows are the count rows: control planes by role, then workers by
// role; a kind without any node gets one row of zeros.
func (m *Map) countRows() []countRow {
	var rows []countRow
	for _, kind := range []struct {
		symbol string
		roles  []string
		get    func(Counts) map[string]int
	}{
		{"C", m.ControlPlaneRoles(), func(c Counts) map[string]int { return c.ControlPlanes }},
		{"w", m.WorkerRoles(), func(c Counts) map[string]int { return c.Workers }},
	} {
		if len(kind.roles) == 0 {
			rows = append(rows, countRow{label: kind.symbol, count: func(Counts) int { return 0 }})
			continue
		}
		for _, role := range kind.roles {
			label := kind.symbol + " " + role
			if role == "" {
				label = kind.symbol + " (no role)"
			}
			if len(label) > maxLabel {
				label = label[:maxLabel-1] + "~"
			}
			rows = append(rows, countRow{label: label, count: func(c Counts) int { return kind.get(c)[role] }})
		}
	}
	return rows
}

type textWriter struct {
	w      *bufio.Writer
	color  bool
	field  int
	labelW int
	line   strings.Builder
}

// endLine writes the line without trailing spaces.
func (t *textWriter) endLine() {
	t.w.WriteString(strings.TrimRight(t.line.String(), " "))
	t.w.WriteByte('\n')
	t.line.Reset()
}

func (t *textWriter) label(s string) {
	t.line.WriteString(s)
	t.line.WriteString(strings.Repeat(" ", t.labelW-len(s)))
}

// value writes a right-aligned field with an empty marker slot.
func (t *textWriter) value(s string) {
	t.line.WriteString(strings.Repeat(" ", 1+max(0, t.field-len(s))))
	t.line.WriteString(s)
	t.line.WriteByte(' ')
}

// rackHeader writes a rack's number, marked # (and red, in colour) when
// the rack holds control planes of a failure domain whose loss breaks
// etcd's quorum.
func (t *textWriter) rackHeader(r *Rack) {
	if len(r.QuorumAtRisk) == 0 {
		t.value(strconv.Itoa(r.Number))
		return
	}
	s := strconv.Itoa(r.Number)
	t.line.WriteString(strings.Repeat(" ", 1+max(0, t.field-len(s))))
	if t.color {
		s = "\x1b[" + riskColor + "m" + s + ansiReset
	}
	t.line.WriteString(s)
	t.line.WriteByte(riskMarker)
}

// riskMarker marks a rack at risk, a mark of its own (the cells' are
// troubleMarker, '~' and the next step's); riskColor colours its number.
const (
	riskMarker = '#'
	riskColor  = "1;31"
)

func (t *textWriter) cell(c *Cell) {
	t.line.WriteString(strings.Repeat(" ", t.field))
	text := string([]byte{c.Kind.Symbol(), c.Marker()})
	if !t.color {
		t.line.WriteString(text)
		return
	}
	code, ok := stateColors[c.State]
	if c.Change != "" {
		code = ansiHighlight + ";" + code
		if !ok {
			code = ansiHighlight
		}
		ok = true
	}
	if !ok {
		t.line.WriteString(text)
		return
	}
	if text[1] == ' ' {
		// The empty marker stays outside the colour, so that a line's
		// trailing spaces can be trimmed.
		fmt.Fprintf(&t.line, "\x1b[%sm%c%s ", code, text[0], ansiReset)
		return
	}
	fmt.Fprintf(&t.line, "\x1b[%sm%s%s", code, text, ansiReset)
}

// band writes racks side by side: a header, one row per index (a row per
// machine when a rack has two machines of one index), the counts.
func (t *textWriter) band(b Band, rows []countRow) {
	t.label("rack")
	for k := range b.Racks {
		t.rackHeader(&b.Racks[k])
	}
	t.endLine()

	next := make([]int, len(b.Racks)) // the next cell of each rack
	for row, index := range b.Rows {
		s := strconv.Itoa(index)
		t.line.WriteString(strings.Repeat(" ", max(0, t.labelW-len(s))))
		t.line.WriteString(s)
		for k, r := range b.Racks {
			if next[k] < len(r.Cells) && b.CellRow[k][next[k]] == row {
				t.cell(&r.Cells[next[k]])
				next[k]++
			} else {
				t.value("")
			}
		}
		t.endLine()
	}

	for _, row := range rows {
		t.label(row.label)
		for _, r := range b.Racks {
			t.value(strconv.Itoa(row.count(r.Counts)))
		}
		t.endLine()
	}
}

// wrapped writes items separated by sep, starting a new line (indented by
// indent) when the next item would pass the width.
func (t *textWriter) wrapped(first string, items []string, sep string, width int, indent string) {
	t.line.WriteString(first)
	col := len(first)
	for i, it := range items {
		vis := visibleLen(it)
		if i == 0 && col > len(indent) && col+vis > width {
			// A long first item goes to the next line, if that helps.
			t.endLine()
			t.line.WriteString(indent)
			col = len(indent)
		}
		if i > 0 {
			if col+len(sep)+vis > width {
				t.line.WriteString(strings.TrimRight(sep, " "))
				t.endLine()
				t.line.WriteString(indent)
				col = len(indent)
			} else {
				t.line.WriteString(sep)
				col += len(sep)
			}
		}
		t.line.WriteString(it)
		col += vis
	}
	t.endLine()
}

// visibleLen is the width of s on a terminal: escapes take none.
func visibleLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		n++
	}
	return n
}

// maxListed bounds the orphans and changes listed under the map.
const maxListed = 10

func (m *Map) writeSummary(t *textWriter, width int) {
	items := m.SummaryItems()
	t.wrapped("", items, " ", width, "  ")
	if line := m.ModelText(); line != "" {
		t.wrapped("", strings.SplitAfter(line, ", "), "", width, "  ")
	}

	for _, d := range m.QuorumAtRisk {
		t.wrapped("quorum at risk"+m.riskMark(d)+": ", strings.SplitAfter(d.Words, " "), "", width, "  ")
	}
	if len(m.Orphans) > 0 {
		items = nil
		for i, o := range m.Orphans {
			if i == maxListed {
				items = append(items, fmt.Sprintf("and %d more", len(m.Orphans)-maxListed))
				break
			}
			s := o.Address + " (" + o.Kind.NodeRole()
			if o.Rebooting {
				s += ", rebooting"
			}
			if o.Change != "" {
				s += ", next: " + o.Change
			}
			items = append(items, s+")")
		}
		t.wrapped(words.Count(len(m.Orphans), "node", "nodes")+" without a machine in the inventory: ", items, ", ", width, "  ")
	}
	if len(m.Next) > 0 {
		t.line.WriteString("next step: " + words.Count(len(m.Next), "change", "changes"))
		t.endLine()
		for i, c := range m.Next {
			if i == maxListed {
				fmt.Fprintf(&t.line, "  and %d more", len(m.Next)-maxListed)
				t.endLine()
				break
			}
			serial := c.Serial
			if serial == "" {
				serial = "-"
			}
			fmt.Fprintf(&t.line, "  %c %s %s (%s)", ChangeMarker(c.Action), c.Action, c.Address, serial)
			t.endLine()
		}
	}
	if len(m.Warnings) > 0 {
		t.line.WriteString(words.Count(len(m.Warnings), "warning", "warnings") + " about the inventory: machines or labels the daemon ignores")
		t.endLine()
	}
}

// riskMark says where a domain at risk is marked: " (#)" when it is the
// rack marked, " (# over racks 4, 11)" when its control planes are in
// those racks, "" when none of them is a machine of the map.
func (m *Map) riskMark(d DomainAtRisk) string {
	switch {
	case len(d.Racks) == 0:
		return ""
	case m.FailureDomain == failuredomain.Rack().Name():
		return " (" + string(riskMarker) + ")"
	}
	racks := make([]string, len(d.Racks))
	for i, r := range d.Racks {
		racks[i] = strconv.Itoa(r)
	}
	noun := " over rack "
	if len(racks) > 1 {
		noun = " over racks "
	}
	return " (" + string(riskMarker) + noun + strings.Join(racks, ", ") + ")"
}

// SummaryItems are the words of the one-line summary of the totals.
func (m *Map) SummaryItems() []string {
	tot := m.Totals
	return []string{
		words.Count(tot.Machines, "machine", "machines") + " in " + words.Count(len(m.Racks), "rack:", "racks:"),
		words.Count(tot.TotalControlPlanes(), "control plane", "control planes") + byRole(tot.ControlPlanes, m.ControlPlaneRoles()) + ",",
		words.Count(tot.TotalWorkers(), "worker", "workers") + byRole(tot.Workers, m.WorkerRoles()) + ",",
		words.Count(tot.Unused, "unused candidate,", "unused candidates,"),
		fmt.Sprintf("%d not usable,", tot.Unusable),
		fmt.Sprintf("%d rebooting", tot.Rebooting),
	}
}

func byRole(counts map[string]int, roles []string) string {
	if len(roles) == 0 || (len(roles) == 1 && roles[0] == "") {
		return ""
	}
	parts := make([]string, len(roles))
	for i, r := range roles {
		name := r
		if name == "" {
			name = "(no role)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, counts[r])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeLegend says what the cells and marks mean; atRisk: a rack is
// marked at risk.
func writeLegend(t *textWriter, width int, atRisk bool) {
	t.wrapped("cells: ", []string{"C control plane", "w worker", ". unused candidate", "- not usable"}, "  ", width, "       ")
	marks := []string{"~ rebooting", string(troubleMarker) + " node on a machine not HEALTHY or filtered out"}
	if atRisk {
		marks = append(marks, string(riskMarker)+" rack whose loss breaks etcd's quorum")
	}
	t.wrapped("marks: ", marks, "  ", width, "       ")
	t.wrapped("next:  ", []string{"+ added", "^ promoted", "v demoted", "x removed", "* re-rendered"}, "  ", width, "       ")
	if !t.color {
		return
	}
	states := make([]string, 0, len(machine.States)+1)
	for _, s := range machine.States {
		states = append(states, fmt.Sprintf("\x1b[%sm%s%s", stateColors[s], s, ansiReset))
	}
	states = append(states, "\x1b["+ansiHighlight+"mnext step"+ansiReset)
	t.wrapped("state: ", states, "  ", width, "       ")
}
