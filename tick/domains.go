package tick

import (
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/storage"
)

// domainsStatus is what the status says of the failure domains of
// decision d acted on with o: the decision's count when it was made and
// the tick wrote what it decided; the last status's when the tick did
// not get to read the inventory or its write failed; nothing while the
// integration does not run.
func domainsStatus(d *decision.Decision, o Outcome, last *storage.FailureDomains) *storage.FailureDomains {
	switch {
	case d.Idle():
		return nil
	case d.Domains == nil || o.Err != nil:
		return last
	}
	cen := d.Domains
	fd := &storage.FailureDomains{FailureDomain: cen.Key.Name(), ControlPlanes: cen.ControlPlanes, Quorum: cen.Quorum(),
		Domains: make([]storage.DomainControlPlanes, 0, len(cen.Domains)), AtRisk: []string{}}
	for _, dom := range cen.Domains {
		lost := failuredomain.BreaksQuorum(dom.Held(), cen.ControlPlanes)
		fd.Domains = append(fd.Domains, storage.DomainControlPlanes{Domain: dom.Name, ControlPlanes: dom.Addresses, QuorumLost: lost})
		if lost {
			fd.AtRisk = append(fd.AtRisk, dom.Name)
			fd.Warnings = append(fd.Warnings, cen.Words(dom))
		}
	}
	return fd
}
