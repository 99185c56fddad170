package decision

import (
	"cmp"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// The hold ladder: what keeps a tick from writing the cluster it would
// write, rung by rung, in the order Decide climbs it. Each rung is
// decided here once; the status, the log, ckegenctl's plan notes and
// owner, and the page show the rung a Decision holds on.

// Rung names one rung of the hold ladder.
type Rung string

// The rungs, in the order Decide climbs them.
const (
	// RungSwitch: the integration's switch is off (result disabled).
	RungSwitch Rung = "switch"
	// RungOwner: another integration writes the cluster, or both would
	// (docs/beside-cke.md; result held).
	RungOwner Rung = "owner"
	// RungPace: beside a CKE server that is busy or silent, ckegen keeps
	// CKE's pace (result held).
	RungPace Rung = "pace"
	// RungSettings: a setting without which nothing runs was never
	// stored (result waiting).
	RungSettings Rung = "settings"
	// RungModel: the constraints name no model and the last status says
	// the count model was in force (result held, CONSTRAINTS_UNCHOSEN):
	// an upgrade does not change the model by itself.
	RungModel Rung = "model"
	// RungQuiet: the inventory has not been still for the quiet time
	// (result planning).
	RungQuiet Rung = "quiet-time"
	// RungTrigger: the trigger is planning (result planning).
	RungTrigger Rung = "trigger"
	// RungBreaker: more nodes are unhealthy than max-unhealthy allows;
	// only state taints are written.
	RungBreaker Rung = "breaker"
)

// Modes of a step (the status's mode).
const (
	// ModeStandalone: ckegen's daemon, and no CKE server holds leader/:
	// ckegen writes the cluster.
	ModeStandalone = "standalone"
	// ModeBesideCKE: ckegen's daemon beside a CKE server; sabakan/owner
	// says which integration writes the cluster.
	ModeBesideCKE = "beside-cke"
	// ModeInsideCKE: the step is CKE's server's own sabakan integration.
	ModeInsideCKE = "inside-cke"
)

// Hold is why a tick writes less than it would: its rung, its reason
// code and what the status says.
type Hold struct {
	Rung            Rung
	Reason, Message string
	// Writer, on the gate's rungs, is who writes the cluster while the
	// gate holds (ckegenctl sabakan owner says it).
	Writer string
}

// ModeOf is the mode of a step of mode (ModeInsideCKE, or "" for
// ckegen's daemon) given the ownership read.
func ModeOf(mode string, own intake.Ownership) string {
	switch {
	case mode != "":
		return mode
	case own.CKEServer:
		return ModeBesideCKE
	}
	return ModeStandalone
}

// Gate is the first rungs of the ladder, decided from the ownership keys
// alone (docs/beside-cke.md): it holds when a CKE server owns the
// integration or it was handed back to CKE (an explicit sabakan/owner:
// cke, even with no CKE server running: a server that restarts, upgrades
// or exits after its first Generate leaves leader/ empty for a while, and
// ckegen must not write then), when CKE's own integration was re-enabled
// while ckegen owns it, and beside a CKE server while that server is not
// at rest; the switch in force is ckegen's own while ckegen owns the
// integration, CKE's sabakan/disabled otherwise. Inside CKE's server,
// election and pace are CKE's, and its switch is CKE's. hasCluster: a
// cluster is stored (with none, ckegen may Generate whatever CKE's phase,
// as CKE's integration does).
func Gate(own intake.Ownership, mode string, hasCluster bool, now time.Time, maxAge time.Duration) *Hold {
	disabled := func(writer string) *Hold {
		return &Hold{Rung: RungSwitch, Reason: reason.DisabledFlag, Message: "sabakan integration is disabled", Writer: "none: " + writer}
	}
	if mode == ModeInsideCKE {
		if own.CKEDisabled {
			return disabled("CKE's sabakan/disabled is true (inside CKE's server, the switch of ckegen too)")
		}
		return nil
	}
	switch {
	case own.OwnedByCKEGen() && !own.CKEDisabled:
		return &Hold{RungOwner, reason.CKEIntegrationActive, "ckegen owns the integration (sabakan/owner: ckegen), but CKE's own integration is enabled again " +
			"(sabakan/disabled is not true): both would write the cluster, so ckegen writes nothing; " +
			"run ckegenctl sabakan takeover to stop CKE's, or ckegenctl sabakan handback to give the integration back",
			"none from ckegen: CKE's sabakan/disabled is false although ckegen owns the integration (CKE_INTEGRATION_ACTIVE); " +
				"run ckegenctl sabakan takeover to stop CKE's integration again, or ckegenctl sabakan handback"}
	case own.OwnedByCKEGen():
		if own.Disabled() {
			return disabled("ckegen owns the integration but its switch sabakan/ckegen/disabled is true (ckegenctl sabakan enable)")
		}
	case own.CKEServer || own.HandedBack():
		return ownedByCKE(own)
	case own.Disabled():
		return disabled("standalone (no CKE server) and sabakan/disabled is true")
	}
	if !own.CKEServer || !hasCluster {
		return nil
	}
	if msg := ckePace(own.CKEStatus, now, maxAge); msg != "" {
		return &Hold{RungPace, reason.CKENotReady, msg, "ckegen, once CKE's server is at rest (ckegen holds now, CKE_NOT_READY: " + msg + ")"}
	}
	return nil
}

// ownedByCKE holds while CKE's integration owns the cluster: a CKE server
// runs and sabakan/owner is not ckegen, or it was handed back.
func ownedByCKE(own intake.Ownership) *Hold {
	h := &Hold{RungOwner, reason.OwnedByCKE, "a CKE server holds leader/ and its own sabakan integration owns the cluster " +
		"(sabakan/owner is cke or not set), so ckegen writes nothing; " +
		"see what ckegen would do with ckegenctl sabakan takeover --dry-run, then take over with ckegenctl sabakan takeover",
		"CKE's own integration (ckegen holds, OWNED_BY_CKE; ckegenctl sabakan takeover hands it to ckegen)"}
	if !own.CKEServer {
		h.Message = "the integration was handed back to CKE (sabakan/owner: cke), so ckegen writes nothing, " +
			"also while no CKE server holds leader/ (it may be restarting); take over again with ckegenctl sabakan takeover"
		h.Writer = "CKE's own integration once its server runs (handed back; ckegen holds, OWNED_BY_CKE, also while no CKE server holds leader/)"
	}
	if own.CKEDisabled {
		h.Writer = "none: CKE owns the integration (ckegen holds, OWNED_BY_CKE) and CKE's sabakan/disabled is true"
	}
	return h
}

// ckePace is why ckegen waits while CKE's server is not at rest ("": it
// is): as CKE's own integration, ckegen changes the cluster only while
// CKE's status says one of intake.CKEPhases, and only while that status
// is fresh.
func ckePace(st *intake.CKEStatus, now time.Time, maxAge time.Duration) string {
	if st == nil {
		return "CKE's server has written no status yet: ckegen waits for it to reach phase completed"
	}
	age := now.Sub(st.Timestamp).Truncate(time.Second)
	if !intake.IsCKEPhase(st.Phase) {
		return fmt.Sprintf("CKE's server is in phase %s (status written %s ago): ckegen writes only in phase %s, as CKE's own integration does",
			cmp.Or(st.Phase, "(none)"), age, intake.CKEPhases())
	}
	if age > maxAge {
		return fmt.Sprintf("CKE's status (phase %s) is %s old, over --cke-status-max-age %s: its server may be stuck", st.Phase, age, maxAge)
	}
	return ""
}

// breaker is the circuit breaker (docs/design.md 11.4) on the world of a
// tick (world.Breaker): the unhealthy nodes of the cluster counted
// against max-unhealthy (nil without a limit or a cluster) and, when
// there are more than it allows, what the status says of them ("":
// within the limit).
func breaker(w *world.World) (*storage.UnhealthyStatus, string) {
	bad, limit, over := w.Breaker(w.In)
	if limit < 0 {
		return nil, ""
	}
	return &storage.UnhealthyStatus{Count: len(bad), Nodes: len(w.In.Current.Nodes), MaxUnhealthy: w.MaxUnhealthy.String(),
		Limit: limit, Addresses: bad[:min(len(bad), storage.MaxChanges)]}, over
}

// unchosenHold holds when the constraints in force name no model (none
// stored, or a stored document with neither model's worker key: CKE
// v1.35.4's reading, the rate model) while the last status says the
// count model was in force (lastModel, from lastSource): running the rate
// model then would make every HEALTHY machine a worker template accepts a
// node in one write, a change of model no one chose. So the leader
// writes nothing until constraints that name a model are stored
// (constraints.Unchosen says why and the command that keeps each model).
// A fresh site (no status), or one whose last status says the rate
// model, does not hold. While it holds, the status keeps the last model
// and source, so that the next leader holds too.
func unchosenHold(c constraints.Constraints, stored bool, lastModel, lastSource string) *Hold {
	if !c.Implicit || lastModel != constraints.CountModel {
		return nil
	}
	msg, writer := constraints.Unchosen(c, stored, lastSource == storage.ConstraintsDefault)
	return &Hold{Rung: RungModel, Reason: reason.ConstraintsUnchosen, Message: msg, Writer: writer}
}
