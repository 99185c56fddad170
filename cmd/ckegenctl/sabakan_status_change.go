package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// changeStatusRows writes change management's rows of the status table:
// the trigger and what holds writes.
func changeStatusRows(tw io.Writer, c storage.ChangeStatus) {
	if c.Trigger != "" {
		fmt.Fprintf(tw, "TRIGGER\t%s\n", c.Trigger)
	}
	if q := c.Quiet; q != nil && q.QuietTime != "0s" {
		if q.Remaining != "" {
			fmt.Fprintf(tw, "QUIET TIME\t%s: %s left\n", q.QuietTime, q.Remaining)
		} else {
			fmt.Fprintf(tw, "QUIET TIME\t%s: quiet (the same machines since %s)\n", q.QuietTime, ts(q.InventorySince))
		}
		if len(q.LastMoved) > 0 {
			fmt.Fprintf(tw, "LAST MOVED\t%s\n", strings.Join(q.LastMoved, ", "))
		}
	}
	if u := c.Unhealthy; u != nil {
		fmt.Fprintf(tw, "UNHEALTHY\t%d of %d nodes (max-unhealthy %s: %d)\n", u.Count, u.Nodes, u.MaxUnhealthy, u.Limit)
	}
	if c.Release != "" {
		fmt.Fprintf(tw, "RELEASED BY\t%s\n", c.Release)
	}
}

// statusLabelWidth is the width of the status table's first column
// ("LAST SUCCESS" and the padding), so that a table written after another
// lines up with it.
const statusLabelWidth = len("LAST SUCCESS") + 2

// pendingTable writes the pending plan and its next step's changes.
func pendingTable(w io.Writer, p *storage.PlanSummary) error {
	if p == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, statusLabelWidth, 4, 2, ' ', 0)
	ending := p.Result
	if p.Reason != "" {
		ending += " " + p.Reason
	}
	if p.Error != "" {
		ending += ": " + p.Error
	}
	if p.Steps == 0 {
		fmt.Fprintf(tw, "PENDING\tnothing (%s)\n", ending)
	} else {
		fmt.Fprintf(tw, "PENDING\t%s (%s)\n", words.Count(p.Steps, "step", "steps"), ending)
		next := fmt.Sprintf("%s (%s)", p.NextOp, words.Count(p.NextChangeCount, "change", "changes"))
		if p.NextWait != "" {
			next += ", " + planreport.WaitWords(p.NextWait, p.NextUntil)
		}
		fmt.Fprintf(tw, "NEXT STEP\t%s\n", next)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Steps == 0 {
		return nil
	}
	return changesTable(w, p.NextChanges, p.NextChangeCount)
}
