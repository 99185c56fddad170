package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/storage"
)

// domainRows write the status's failure domains (docs/failure-domains.md):
// an AT RISK row for each domain whose loss breaks etcd's quorum, in the
// status's words, then the quorum and where the control planes are. The
// labels are no wider than the table's others, so that the tables after
// it line up.
func domainRows(tw io.Writer, fd *storage.FailureDomains) {
	if fd == nil {
		return
	}
	for i, w := range fd.Warnings {
		label := ""
		if i == 0 {
			label = "AT RISK"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, w)
	}
	key := failuredomain.Rack()
	if fd.FailureDomain != key.Name() {
		key = failuredomain.ByLabel(fd.FailureDomain)
	}
	where := make([]string, 0, len(fd.Domains))
	for _, d := range fd.Domains {
		where = append(where, fmt.Sprintf("%d in %s", len(d.ControlPlanes), key.Describe(d.Domain)))
	}
	line := quorumWords(fd.Quorum, fd.ControlPlanes)
	if len(where) > 0 {
		line += "; by " + fd.FailureDomain + ": " + strings.Join(where, ", ")
	}
	fmt.Fprintf(tw, "QUORUM\t%s\n", line)
}

// quorumWords say what the quorum is: how many control planes must be
// up for etcd to keep working (not how many are up).
func quorumWords(quorum, controlPlanes int) string {
	up := words.Count(quorum, "control plane is", "control planes are")
	return fmt.Sprintf("quorum %d of %d: etcd keeps working while %s up", quorum, controlPlanes, up)
}

// notInDomainRows are the warnings that domainRows does not say: the
// words of a domain at risk are its AT RISK row.
func notInDomainRows(warnings []string, fd *storage.FailureDomains) []string {
	if fd == nil || len(fd.Warnings) == 0 {
		return warnings
	}
	out := make([]string, 0, len(warnings))
	for _, w := range warnings {
		if !slices.Contains(fd.Warnings, w) {
			out = append(out, w)
		}
	}
	return out
}
