package tick

import (
	"fmt"
	"time"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
)

// Running beside a real CKE server (docs/beside-cke.md): which integration writes the
// cluster, and CKE's pace.

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

// Hold is why a tick writes nothing although nothing failed: its reason
// code and what the status says.
type Hold struct {
	Reason, Message string
}

// modeOf is the step's mode given what the snapshot read.
func (s *Step) modeOf(own intake.Ownership) string {
	switch {
	case s.cfg.Mode != "":
		return s.cfg.Mode
	case own.CKEServer:
		return ModeBesideCKE
	}
	return ModeStandalone
}

// YieldsToDaemons reports whether a step inside CKE's server leaves the
// integration and its status to ckegen's daemons: while they own it
// (sabakan/owner: ckegen) and CKE's switch is off, as a takeover left it.
// The step then writes nothing, not even its status, which is theirs: a
// site that moves between the daemons and the build inside CKE may run
// both for a while, and its status must not flip between them.
func YieldsToDaemons(own intake.Ownership, mode string) bool {
	return mode == ModeInsideCKE && own.OwnedByCKEGen() && own.CKEDisabled
}

// gate decides from the ownership keys whether a tick may go on (docs/beside-cke.md):
// it holds when a CKE server owns the integration or it was handed back to
// CKE (an explicit sabakan/owner: cke, even with no CKE server running: a
// server that restarts, upgrades or exits after its first Generate leaves
// leader/ empty for a while, and ckegen must not write then), when CKE's own
// integration was re-enabled while ckegen owns it, and beside a CKE server
// while that server is not at rest; otherwise it returns the switch in
// force: ckegen's own while ckegen owns the integration, CKE's
// sabakan/disabled standalone. hasCluster: a cluster is stored (with none,
// ckegen may Generate whatever CKE's phase, as CKE's integration does).
func (s *Step) gate(own intake.Ownership, hasCluster bool, now time.Time) (disabled bool, h *Hold) {
	return Gate(own, s.cfg.Mode, hasCluster, now, s.cfg.CKEStatusMaxAge)
}

// Gate is the step's gate for a step of the mode (ModeInsideCKE, or ""
// for ckegen's daemon), with maxAge the age CKE's status may have; ckegenctl
// sabakan owner says who writes the cluster from it.
func Gate(own intake.Ownership, mode string, hasCluster bool, now time.Time, maxAge time.Duration) (disabled bool, h *Hold) {
	if mode == ModeInsideCKE {
		// CKE's server leads and paces; its switch is CKE's own.
		return own.CKEDisabled, nil
	}
	switch {
	case own.OwnedByCKEGen() && !own.CKEDisabled:
		return false, &Hold{reason.CKEIntegrationActive, "ckegen owns the integration (sabakan/owner: ckegen), but CKE's own integration is enabled again " +
			"(sabakan/disabled is not true): both would write the cluster, so ckegen writes nothing; " +
			"run ckegenctl sabakan takeover to stop CKE's, or ckegenctl sabakan handback to give the integration back"}
	case own.OwnedByCKEGen():
		disabled = own.CKEGenDisabled
	case own.CKEServer:
		return false, &Hold{reason.OwnedByCKE, "a CKE server holds leader/ and its own sabakan integration owns the cluster " +
			"(sabakan/owner is cke or not set), so ckegen writes nothing; " +
			"see what ckegen would do with ckegenctl sabakan takeover --dry-run, then take over with ckegenctl sabakan takeover"}
	case own.HandedBack():
		return false, &Hold{reason.OwnedByCKE, "the integration was handed back to CKE (sabakan/owner: cke), so ckegen writes nothing, " +
			"also while no CKE server holds leader/ (it may be restarting); take over again with ckegenctl sabakan takeover"}
	default:
		disabled = own.CKEDisabled
	}
	if disabled || !own.CKEServer || !hasCluster {
		return disabled, nil
	}
	return false, ckePace(own.CKEStatus, now, maxAge)
}

// CKEPhases says in which phases of CKE's status ckegen writes beside a
// CKE server: those in which CKE v1.35.4's server runs its own integration
// (docs/beside-cke.md).
const CKEPhases = "completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted"

// ckePhases are the phases of CKEPhases. CKE's controller calls its
// integrator when DecideOps has no operation (completed, the two aborted
// phases, and repair-machines or reboot-nodes while blocked) and in
// reboot-nodes. repair-machines blocked cannot be told from
// repair-machines busy by the status key alone: ckegen holds there.
var ckePhases = map[string]bool{"completed": true, "reboot-nodes": true, "upgrade-aborted": true, "etcd-boot-aborted": true}

// ckePace holds while CKE's server is not at rest: as CKE's own
// integration, ckegen changes the cluster only while CKE's status says one
// of ckePhases, and only while that status is fresh.
func ckePace(st *intake.CKEStatus, now time.Time, maxAge time.Duration) *Hold {
	if st == nil {
		return &Hold{reason.CKENotReady, "CKE's server has written no status yet: ckegen waits for it to reach phase completed"}
	}
	age := now.Sub(st.Timestamp).Truncate(time.Second)
	if !ckePhases[st.Phase] {
		phase := st.Phase
		if phase == "" {
			phase = "(none)"
		}
		return &Hold{reason.CKENotReady, fmt.Sprintf("CKE's server is in phase %s (status written %s ago): ckegen writes only in phase %s, as CKE's own integration does", phase, age, CKEPhases)}
	}
	if age > maxAge {
		return &Hold{reason.CKENotReady, fmt.Sprintf("CKE's status (phase %s) is %s old, over --cke-status-max-age %s: its server may be stuck", st.Phase, age, maxAge)}
	}
	return nil
}
