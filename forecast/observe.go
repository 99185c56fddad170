package forecast

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
)

// observe records the cluster the event's plan left (in.Current, with
// in.Machines the event's inventory): its control planes by domain, its
// HEALTHY workers against the need, the domains at risk, and whether the
// event ends the runway and why.
func (r *run) observe(ev *Event, in generator.Input) error {
	cen := failuredomain.ControlPlanes(r.f.key, in.Machines, in.Current)
	ev.ControlPlanes = []ControlPlane{}
	for _, d := range cen.Domains {
		for _, a := range d.Addresses {
			ev.ControlPlanes = append(ev.ControlPlanes, ControlPlane{Address: a, Domain: d.Name})
		}
	}
	for _, d := range cen.AtRisk() {
		ev.AtRisk = append(ev.AtRisk, d.Name)
		if w := cen.Words(d); !slices.Contains(ev.Warnings, w) {
			ev.Warnings = append(ev.Warnings, w)
		}
	}
	bad := r.count(ev, in)
	if len(in.Machines) > 0 {
		ev.WorkersRate = float64(ev.Workers*1000/len(in.Machines)) / 10
	}
	ev.BelowMinimum = r.f.NeedWorkers > 0 && ev.Workers < r.f.NeedWorkers
	switch {
	case ev.Result == generator.PlanHeld:
		ev.failure, ev.hold, ev.words = Held, ev.Reason, "the daemon holds: "+ev.Message
	case ev.Refusal != nil:
		ev.failure, ev.words = ev.Refusal.Reason, "the daemon refuses: "+ev.Refusal.Message
	case len(bad) > 0:
		can, err := generator.CanAddControlPlane(in)
		if err != nil {
			return err
		}
		if !can {
			ev.failure, ev.words = NoControlPlaneCandidate, badWords(bad)+" with nothing to replace it"
		}
	}
	switch {
	case ev.failure != "":
	case len(ev.AtRisk) > 0:
		ev.failure, ev.words = QuorumAtRisk, cen.Words(cen.AtRisk()[0])
	case ev.BelowMinimum:
		ev.failure, ev.words = WorkersBelowNeed, fmt.Sprintf("%s HEALTHY workers remain (needed %s)", thousands(ev.Workers), thousands(r.f.NeedWorkers))
	}
	return nil
}

// count counts the HEALTHY workers of in.Current and returns its control
// planes that are not HEALTHY (nor UPDATING or UNINITIALIZED, which a
// control plane may be), or not in the inventory, with what they are.
func (r *run) count(ev *Event, in generator.Input) []string {
	var bad []string
	if in.Current == nil {
		return nil
	}
	byAddr := make(map[string]*machine.Machine, len(in.Machines))
	for _, m := range in.Machines {
		byAddr[m.Address()] = m
	}
	for _, n := range in.Current.Nodes {
		m := byAddr[n.Address]
		if !n.ControlPlane {
			if m != nil && m.Status.State == machine.StateHealthy {
				ev.Workers++
			}
			continue
		}
		switch {
		case m == nil:
			bad = append(bad, n.Address+" is not in sabakan")
		case !m.Status.State.Sound():
			bad = append(bad, n.Address+" is "+string(m.Status.State))
		}
	}
	return bad
}

// badWords is "control plane 10.0.1.2 is RETIRING", or "control planes
// 10.0.1.2 is RETIRING, 10.0.3.4 is not in sabakan".
func badWords(bad []string) string {
	if len(bad) == 1 {
		return "control plane " + bad[0]
	}
	return "control planes " + strings.Join(bad, ", ")
}

// thousands writes n with a comma every three digits: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
