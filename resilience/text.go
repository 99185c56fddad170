package resilience

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/words"
)

// Text is the report for people: a line on the cluster it is made on
// when the input has a pending plan, a line on the cluster, a line for
// each domain at risk, then a table of the domains, those at risk first,
// the others in the key's order.
func (r *Report) Text() []byte {
	var b bytes.Buffer
	if s := r.basisText(); s != "" {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "failure domain: %s; %s, quorum %d; %s\n", r.FailureDomain, words.Count(r.ControlPlanes, "control plane", "control planes"), r.Quorum, r.modelText())
	if r.Generated {
		b.WriteString("cluster: the one Generate would make (no current cluster)\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "at risk: %s\n", w)
	}
	if len(r.AtRisk) == 0 {
		fmt.Fprintf(&b, "at risk: none (no %s holds more than %s)\n", r.FailureDomain, words.Count(failuredomain.Limit(r.ControlPlanes), "control plane", "control planes"))
	}
	for _, w := range r.WarningsNow {
		fmt.Fprintf(&b, "at risk now, until the pending plan is applied: %s\n", w)
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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.key.Describe(d.Domain), d.Machines, list(d.ControlPlanes), workersText(d.Workers),
			quorumText(&d), r.leftText(&d), r.recoveryText(d.Recovery))
	}
	_ = tw.Flush()
	return b.Bytes()
}

// basisText is the line that says which cluster the report is made on,
// when the input's plan is not settled at once ("" when it is).
func (r *Report) basisText() string {
	switch {
	case r.Basis == BasisPendingPlanSettled:
		return fmt.Sprintf("the cluster has a pending plan of %s: each domain's loss is planned on the cluster it settles on", words.Count(r.PendingSteps, "step", "steps"))
	case r.PendingRefused != nil && r.PendingSteps == 0:
		return fmt.Sprintf("the cluster's plan is refused at its first step (%s: %s): each domain's loss is planned on the cluster as it is now",
			r.PendingRefused.Reason, r.PendingRefused.Message)
	case r.PendingRefused != nil:
		return fmt.Sprintf("the cluster has a pending plan that is refused after %s (%s: %s): each domain's loss is planned on the cluster as it is now",
			words.Count(r.PendingSteps, "step", "steps"), r.PendingRefused.Reason, r.PendingRefused.Message)
	case r.PendingHeld != nil:
		return fmt.Sprintf("the leader holds after %s (%s: %s): each domain's loss is planned on the cluster as it is now",
			words.Count(r.PendingSteps, "step", "steps"), r.PendingHeld.Reason, r.PendingHeld.Message)
	case r.PendingMaxSteps:
		return fmt.Sprintf("the cluster has a pending plan that does not settle within %s: the report is on the cluster as it is now, and no domain's loss is planned",
			words.Count(r.PendingSteps, "step", "steps"))
	}
	return ""
}

// quorumText is whether losing d keeps etcd's quorum, and what it does to
// the cluster as it is now when that differs.
func quorumText(d *Domain) string {
	s := map[bool]string{false: "kept", true: "LOST"}
	if d.QuorumLost == d.QuorumLostNow {
		return s[d.QuorumLost]
	}
	return s[d.QuorumLost] + " (" + s[d.QuorumLostNow] + " now)"
}

func (r *Report) modelText() string {
	if r.MinimumWorkersRate != nil {
		return fmt.Sprintf("rate model, minimum-workers-rate %d%% of %s", *r.MinimumWorkersRate, words.Count(r.Machines, "machine", "machines"))
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

// recoveryText is a recovery's steps and end, with its refusal: in a
// word when it is the input's own plan's, which the first line gives.
func (r *Report) recoveryText(rc Recovery) string {
	var s string
	switch rc.Result {
	case NoQuorum:
		s = noQuorumText(rc)
	case NotPlanned:
		s = "not planned: the cluster's own plan does not settle"
	default:
		s = words.Count(rc.Steps, "step", "steps") + ", " + rc.Result
	}
	switch {
	case rc.Message == "":
	case r.PendingRefused != nil && rc.Message == r.PendingRefused.Message, r.PendingHeld != nil && rc.Message == r.PendingHeld.Message:
		s += " as the cluster's plan is"
	default:
		s += ": " + rc.Reason + ": " + rc.Message
	}
	return s
}

// noQuorumText says that none of the plan's steps can be applied, and how
// the plan would end (a refusal's message follows it).
func noQuorumText(rc Recovery) string {
	var s string
	switch {
	case rc.Planned == NotPlanned:
		return "no quorum: CKE can apply nothing until enough of its control planes return; not planned: the cluster's own plan does not settle"
	case rc.Steps == 0:
		s = "no quorum: CKE can apply nothing until enough of its control planes return"
	case rc.Steps == 1:
		s = "no quorum: CKE cannot apply the 1 step the planner would make until enough of its control planes return"
	default:
		s = fmt.Sprintf("no quorum: CKE can apply none of the %d steps the planner would make until enough of its control planes return", rc.Steps)
	}
	if rc.Planned != "" && rc.Planned != generator.PlanSettled {
		s += "; the plan then ends " + rc.Planned
	}
	return s
}
