package decision

import (
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
)

// The failure domains of every tick (docs/design.md 20): where the
// control planes of the cluster as the tick leaves it are, by the
// policy's failure domain (sabakan's rack without one), and which domain
// takes etcd's quorum with it when it is lost. The decision counts them;
// the status's domains row, the log, the metrics (the gauge behind
// CkegenQuorumAtRisk) and the page say it. A domain at risk is a standing
// state of the cluster, not something a tick found: it is no warning of
// the tick.

// countDomains counts the control planes of the cluster as the decision
// leaves it (its step's when it writes one, else the cluster it read) by
// failure domain, and its worker rate in the rate model.
//
// It is one pass over the machines, with nothing allocated per machine
// (failuredomain.ControlPlanes).
func (d *Decision) countDomains(in generator.Input) {
	c := in.Current
	if d.Step != nil {
		c = d.Step.Cluster
	}
	cen := failuredomain.ControlPlanes(in.Policy.FailureDomain(), in.Machines, c)
	d.Domains = &cen
	d.Rate = generator.RateOf(c, len(d.Gathered.Machines), in.Constraints)
}
