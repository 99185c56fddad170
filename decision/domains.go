package decision

import (
	"strings"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
)

// The failure domains of every tick (docs/design.md 20): where the
// control planes of the cluster as the tick leaves it are, by the
// policy's failure domain (sabakan's rack without one), and which domain
// takes etcd's quorum with it when it is lost. The decision counts them;
// the status, the warnings, the log and the metrics say it.

// countDomains counts the control planes of the cluster as the decision
// leaves it (its step's when it writes one, else the cluster it read) by
// failure domain, and its worker rate in the rate model, and warns of each domain whose loss breaks etcd's
// quorum, once: a warning of the generator that begins with the same
// words (spread: quorum says why it stays so) says it already. With
// fewer than 3 control planes every domain that holds one breaks the
// quorum, wherever they are: the count says so, and no warning repeats
// it for each (the number of control planes is the fix, not their
// place).
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
	if cen.Limit() == 0 {
		return
	}
	for _, w := range cen.Warnings() {
		if !saysAlready(d.Warnings, w) {
			d.Warnings = append(d.Warnings, w)
		}
	}
}

// saysAlready reports whether a warning of ws is w, or w followed by more
// ("...: losing it breaks etcd's quorum; spread quorum moves one control
// plane per tick").
func saysAlready(ws []string, w string) bool {
	for _, s := range ws {
		if s == w || strings.HasPrefix(s, w+";") {
			return true
		}
	}
	return false
}
