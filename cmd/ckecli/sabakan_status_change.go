package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ckegen/ckegen/storage"
)

// changeStatusTable writes change management's part of the status: the
// trigger, what holds writes, and the pending plan's next step.
func changeStatusTable(w io.Writer, c storage.ChangeStatus) error {
	if c.Trigger == "" && c.Pending == nil && c.Quiet == nil && c.Unhealthy == nil {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if c.Trigger != "" {
		fmt.Fprintf(tw, "TRIGGER\t%s\n", c.Trigger)
	}
	if q := c.Quiet; q != nil && q.QuietTime != "0s" {
		switch {
		case q.Remaining != "":
			fmt.Fprintf(tw, "QUIET TIME\t%s: %s left\n", q.QuietTime, q.Remaining)
			if len(q.LastMoved) > 0 {
				fmt.Fprintf(tw, "LAST MOVED\t%s\n", strings.Join(q.LastMoved, ", "))
			}
		default:
			fmt.Fprintf(tw, "QUIET TIME\t%s: quiet (machines unchanged since %s)\n", q.QuietTime, ts(q.InventorySince))
		}
	}
	if u := c.Unhealthy; u != nil {
		fmt.Fprintf(tw, "UNHEALTHY\t%d of %d nodes (max-unhealthy %s: %d)\n", u.Count, u.Nodes, u.MaxUnhealthy, u.Limit)
	}
	if c.Release != "" {
		fmt.Fprintf(tw, "RELEASED BY\t%s\n", c.Release)
	}
	p := c.Pending
	if p != nil {
		switch {
		case p.Steps == 0 && p.Result == "settled":
			fmt.Fprintf(tw, "PENDING\tnothing (settled)\n")
		case p.Steps == 0:
			fmt.Fprintf(tw, "PENDING\tnothing (%s: %s)\n", p.Result, p.Error)
		default:
			ending := p.Result
			if p.Error != "" {
				ending += ": " + p.Error
			}
			fmt.Fprintf(tw, "PENDING\t%s (%s)\n", steps(p.Steps), ending)
			fmt.Fprintf(tw, "NEXT STEP\t%s (%d changes)\n", p.NextOp, p.NextChangeCount)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p != nil && p.Steps > 0 {
		return changesTable(w, p.NextChanges)
	}
	return nil
}

func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
