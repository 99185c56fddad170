package resilience

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ckegen/ckegen/failuredomain"
)

// Text is the report for people: a line on the cluster, a line for each
// domain at risk, then a table of the domains, those at risk first, the
// others in the key's order.
func (r *Report) Text() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "failure domain: %s; %s, quorum %d; %s\n", r.FailureDomain, plural(r.ControlPlanes, "control plane"), r.Quorum, r.modelText())
	if r.Generated {
		b.WriteString("cluster: the one Generate would make (no current cluster)\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "at risk: %s\n", w)
	}
	if len(r.AtRisk) == 0 {
		fmt.Fprintf(&b, "at risk: none (no %s holds more than %s)\n", r.FailureDomain, plural(failuredomain.Limit(r.ControlPlanes), "control plane"))
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DOMAIN\tMACHINES\tCONTROL PLANES\tWORKERS\tQUORUM\tWORKERS LEFT\tRECOVERY")
	order := slices.Clone(r.Domains)
	slices.SortStableFunc(order, func(a, b Domain) int {
		switch {
		case a.QuorumLost == b.QuorumLost:
			return 0
		case a.QuorumLost:
			return -1
		}
		return 1
	})
	for _, d := range order {
		quorum := "kept"
		if d.QuorumLost {
			quorum = "LOST"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.key.Describe(d.Domain), d.Machines, list(d.ControlPlanes), workersText(d.Workers),
			quorum, r.leftText(&d), recoveryText(d.Recovery))
	}
	_ = tw.Flush()
	return b.Bytes()
}

func (r *Report) modelText() string {
	if r.MinimumWorkersRate != nil {
		return fmt.Sprintf("rate model, minimum-workers-rate %d%% of %s", *r.MinimumWorkersRate, plural(r.Machines, "machine"))
	}
	return fmt.Sprintf("count model, minimum-workers %d", r.MinimumWorkers)
}

// leftText is the HEALTHY workers left, their share in the rate model,
// and what they fall below.
func (r *Report) leftText(d *Domain) string {
	s := strconv.Itoa(d.WorkersLeft)
	if d.WorkersLeftPercent != nil {
		s += fmt.Sprintf(" (%.1f%%)", *d.WorkersLeftPercent)
	}
	if d.BelowMinimum {
		if r.MinimumWorkersRate != nil {
			s += fmt.Sprintf(" BELOW %d%%", *r.MinimumWorkersRate)
		} else {
			s += fmt.Sprintf(" BELOW %d", r.MinimumWorkers)
		}
	}
	return s
}

func list(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return strings.Join(ss, ", ")
}

// workersText is "compute 2, gpu 1" (roles sorted; "no role" for an empty
// one), "-" for none.
func workersText(ws map[string]int) string {
	if len(ws) == 0 {
		return "-"
	}
	roles := make([]string, 0, len(ws))
	for r := range ws {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	parts := make([]string, len(roles))
	for i, role := range roles {
		name := role
		if name == "" {
			name = "no role"
		}
		parts[i] = name + " " + strconv.Itoa(ws[role])
	}
	return strings.Join(parts, ", ")
}

func recoveryText(rc Recovery) string {
	s := plural(rc.Steps, "step") + ", " + rc.Result
	if rc.Error != "" {
		s += ": " + rc.Error
	}
	return s
}

func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
