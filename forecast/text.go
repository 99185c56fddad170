package forecast

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ckegen/ckegen/generator"
)

// runway is the first event that fails, in words; None when none does.
func (f *Forecast) runway() Runway {
	for k := range f.Events {
		if f.Events[k].failure != "" {
			return f.runwayAt(k, &f.Events[k])
		}
	}
	return Runway{Reason: None, Message: "the cluster meets its constraints until " + f.Until.UTC().Format(dateLayout) +
		", the end of the forecast: nothing fails before"}
}

// runwayAt is the runway that ends at ev, the k-th event, which fails.
func (f *Forecast) runwayAt(k int, ev *Event) Runway {
	date, _ := time.Parse(dateLayout, ev.Date)
	last := date.AddDate(0, 0, -1).Format(dateLayout)
	head := "the cluster meets its constraints until " + last
	if k == 0 {
		head = "the cluster does not meet its constraints now"
	}
	on := "on " + ev.Date + ", "
	if n := ev.Retiring + ev.Retired; n > 0 {
		verb := " retire and "
		if n == 1 {
			verb = " retires and "
		}
		on += plural(n, "machine") + verb
	}
	return Runway{Until: last, Reason: ev.failure, Hold: ev.hold, Message: head + "; " + on + ev.words}
}

// Text is the forecast for people: the runway's line, what it was made
// with, then a table of the events and the warnings of each.
func (f *Forecast) Text() []byte { return f.TextWith(nil) }

// TextWith is Text with lines (what the forecast was made under) after
// the runway's line, before the machines it assumed new.
func (f *Forecast) TextWith(lines []string) []byte {
	var b bytes.Buffer
	f.writeBuy(&b)
	fmt.Fprintf(&b, "runway: %s\n", f.Runway.Message)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	f.writeMadeUp(&b)
	need := "no worker need (rate model)"
	if f.NeedWorkers > 0 {
		need = "needed workers " + thousands(f.NeedWorkers)
	}
	fmt.Fprintf(&b, "from %s to %s by %s, RETIRING %s before the retire date; %s; failure domain: %s\n\n",
		f.Now.UTC().Format(dateLayout), f.Until.UTC().Format(dateLayout), f.Resolution, leadText(f.RetireLead), need, f.FailureDomain)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DATE\tRETIRING\tRETIRED\tPLAN\tCONTROL PLANES\tWORKERS\tAT RISK")
	for k := range f.Events {
		ev := &f.Events[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", ev.Date, ev.Retiring, ev.Retired, planText(ev), f.cpText(ev), f.workersText(ev), f.atRiskText(ev))
	}
	_ = tw.Flush()
	f.writeWarnings(&b)
	return b.Bytes()
}

// writeWarnings writes each event's refusal and warnings, a line that
// later events repeat once, at its first event, with how many later
// events have it.
func (f *Forecast) writeWarnings(b *bytes.Buffer) {
	type seen struct {
		first string
		later int
	}
	var order []string
	at := map[string]*seen{}
	for k := range f.Events {
		lines := f.Events[k].Warnings
		switch ev := &f.Events[k]; ev.Result {
		case generator.PlanRefused, generator.PlanHeld:
			lines = append([]string{ev.Result + " (" + ev.Reason + "): " + ev.Message}, lines...)
		}
		for _, w := range lines {
			if s, ok := at[w]; ok {
				s.later++
				continue
			}
			at[w] = &seen{first: f.Events[k].Date}
			order = append(order, w)
		}
	}
	for _, w := range order {
		s := at[w]
		when := s.first
		if s.later > 0 {
			when += " and " + plural(s.later, "later event")
		}
		if !strings.HasPrefix(w, generator.PlanRefused+" (") && !strings.HasPrefix(w, generator.PlanHeld+" (") {
			w = "warning: " + w
		}
		fmt.Fprintf(b, "%s: %s\n", when, w)
	}
}

func leadText(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d%(24*time.Hour) != 0 {
		return s
	}
	return plural(int(d/(24*time.Hour)), "day")
}

// planText is what the event's plan does: "settled", or its steps, their
// operations and changes, and how it ends when not settled.
func planText(ev *Event) string {
	s := "nothing to do"
	if ev.Steps > 0 {
		s = plural(ev.Steps, "step") + " (" + plural(ev.Changes, "change") + "): " + opsText(ev.Ops)
	}
	switch {
	case ev.Refusal != nil && ev.Steps == 0:
		s = "REFUSED " + ev.Refusal.Reason
	case ev.Refusal != nil:
		s += "; then REFUSED " + ev.Refusal.Reason
	case ev.Result == generator.PlanHeld && ev.Steps == 0:
		s = "HELD " + ev.Reason
	case ev.Result == generator.PlanHeld:
		s += "; then HELD " + ev.Reason
	case ev.Result == generator.PlanMaxSteps:
		s += "; not settled"
	}
	return s
}

// opsText lists operations, a run of the same one once with its count:
// "remove non-existent node, replace control plane x2".
func opsText(ops []string) string {
	var parts []string
	for i := 0; i < len(ops); {
		j := i
		for j < len(ops) && ops[j] == ops[i] {
			j++
		}
		p := ops[i]
		if j-i > 1 {
			p += " x" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, ", ")
}

// cpText is the control planes' count and domains: "3 (racks 1, 5, 9)",
// a domain holding several with its count: "3 (racks 4 x2, 9)".
func (f *Forecast) cpText(ev *Event) string {
	if len(ev.ControlPlanes) == 0 {
		return "0"
	}
	var names []string
	for i := 0; i < len(ev.ControlPlanes); {
		j := i
		for j < len(ev.ControlPlanes) && ev.ControlPlanes[j].Domain == ev.ControlPlanes[i].Domain {
			j++
		}
		n := ev.ControlPlanes[i].Domain
		if j-i > 1 {
			n += " x" + strconv.Itoa(j-i)
		}
		names = append(names, n)
		i = j
	}
	return strconv.Itoa(len(ev.ControlPlanes)) + " (" + f.key.DescribeAll(names) + ")"
}

// workersText is the HEALTHY workers against the need ("9,890 / 10,000",
// with BELOW under it) and their share of the machines.
func (f *Forecast) workersText(ev *Event) string {
	s := thousands(ev.Workers)
	if f.NeedWorkers > 0 {
		s += " / " + thousands(f.NeedWorkers)
	}
	s += fmt.Sprintf(" (%.1f%%)", ev.WorkersRate)
	if ev.BelowMinimum {
		s += " BELOW"
	}
	return s
}

func (f *Forecast) atRiskText(ev *Event) string {
	if len(ev.AtRisk) == 0 {
		return "-"
	}
	return f.key.DescribeAll(ev.AtRisk)
}

// plural is n things in English, n with thousands' commas: "1 machine",
// "1,200 machines".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}

// PlanText is what the event's plan does, in the words of the text's
// PLAN column.
func (ev *Event) PlanText() string { return planText(ev) }

// Fails reports whether the runway ends at this event.
func (ev *Event) Fails() bool { return ev.failure != "" }

// writeBuy writes, with Options.Buy, the purchases (one line each) and
// the runway if nothing were bought.
func (f *Forecast) writeBuy(b *bytes.Buffer) {
	if f.Unbought != nil {
		switch len(f.Purchases) {
		case 0:
			b.WriteString("purchases: none needed\n")
		default:
			fmt.Fprintf(b, "purchases: %s, first order by %s\n", plural(len(f.Purchases), "purchase"), f.FirstOrderBy())
			tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ORDER BY\tNEEDED\tROLE\tPRODUCT\tCOUNT\tRACKS\tREASON")
			for _, p := range f.Purchases {
				by := p.OrderBy
				if p.Overdue {
					by += " (overdue)"
				}
				product := p.Product
				if product == "" {
					product = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", by, p.Needed, p.Role, product, p.Count, racksShort(p.Racks), p.Reason)
			}
			_ = tw.Flush()
		}
		fmt.Fprintf(b, "if nothing is bought: %s\n", f.Unbought.Message)
	}
}

// writeMadeUp writes the machines assumed new that were not bought.
func (f *Forecast) writeMadeUp(b *bytes.Buffer) {
	for _, a := range f.MadeUp {
		if !a.Bought {
			fmt.Fprintf(b, "assumed new: %s of role %s in rack %d from %s, retiring %s (made up: %s to %s)\n",
				plural(a.Count, "machine"), a.Role, a.Rack, a.Date, a.Retire, a.First, a.Last)
		}
	}
}

// racksText is a purchase's racks in their numbers' order: "12:4,13:3".
func racksText(racks map[string]int, sep string) string {
	keys := make([]string, 0, len(racks))
	for k := range racks {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return cmp.Compare(x, y)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.Itoa(racks[k])
	}
	return strings.Join(parts, sep)
}

// shownRacks is how many racks a purchase's line names (JSON and CSV
// name them all).
const shownRacks = 6

// racksShort is racksText for a line: the first racks, then how many
// more.
func racksShort(racks map[string]int) string {
	s := racksText(racks, ",")
	if len(racks) <= shownRacks {
		return s
	}
	parts := strings.SplitN(s, ",", shownRacks+1)
	return strings.Join(parts[:shownRacks], ",") + fmt.Sprintf(" and %d more racks", len(racks)-shownRacks)
}

// WriteCSV writes the purchases as CSV, a header then one row each, for
// the spreadsheets where budgets are made.
func (f *Forecast) WriteCSV(w io.Writer) error {
	c := csv.NewWriter(w)
	_ = c.Write([]string{"order_by", "overdue", "needed", "role", "product", "count", "racks", "reason"})
	for _, p := range f.Purchases {
		_ = c.Write([]string{p.OrderBy, strconv.FormatBool(p.Overdue), p.Needed, p.Role, p.Product, strconv.Itoa(p.Count), racksText(p.Racks, " "), p.Reason})
	}
	c.Flush()
	return c.Error()
}
