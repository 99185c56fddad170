package liveview

import (
	"cmp"
	"fmt"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// Cause says why ckegen's step is not being run, for the note of a
// status whose host stopped calling it (Silence), from who acts
// and CKE's status key (nil: absent): nothing leads; CKE's server leads
// and runs no ckegen, or keeps no record of it; CKE's server leads with
// ckegen inside but has not reached its operations since (it writes its
// status key, under its lease, only once its infrastructure is set up:
// Vault); CKE has operations to run, in a phase named; or a leader that
// should call and does not.
func (r Actor) Cause(cke *intake.CKEStatus) string {
	switch r.Kind {
	case Nobody:
		return fmt.Sprintf("no server leads: nothing under %s nor %s", storage.KeyLeader, storage.KeyCKEGenLeader)
	case CKENotKnown, CKEWithoutCKEGen:
		return r.Says
	case Daemon:
		return r.Says + "; see its log"
	}
	l := r.CKE
	switch {
	case !l.WroteCKEStatus:
		return fmt.Sprintf("CKE's server %s leads but has written no status of its own (%s) since: it calls ckegen only past the setup of its infrastructure, "+
			"so Vault is not connected (its log says \"vault is not connected\"; ckecli vault config and ckecli vault init), it has no SSH key in Vault, "+
			"or the stored cluster fails CKE's validation (its log says \"invalid cluster configuration\")", l.Name, storage.KeyCKEStatus)
	case cke == nil:
		return fmt.Sprintf("CKE's server %s leads; its status key cannot be read", l.Name)
	case !intake.IsCKEPhase(cke.Phase):
		return fmt.Sprintf("CKE has operations to run: its server %s is in phase %s (written %s), and calls ckegen only when it has none",
			l.Name, cmp.Or(cke.Phase, "(none)"), since(cke.Timestamp, r.Time, "at no time recorded"))
	}
	return fmt.Sprintf("CKE's server %s is in phase %s (written %s), in which it calls ckegen, yet it has not: see its log", l.Name, cke.Phase, since(cke.Timestamp, r.Time, "at no time recorded"))
}
