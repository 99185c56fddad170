package liveview

import (
	"fmt"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// InsideWriter is who writes the cluster when ckegen runs inside CKE's
// server.
const InsideWriter = "ckegen, as CKE's server's own sabakan integration (inside CKE: no takeover; CKE's sabakan/disabled is the switch)"

// Writes says who writes the cluster, the one answer `ckegenctl sabakan
// owner`, `status` and the page give: the leader's decision says it for
// the mode the leader last ran in (its memory), and who leads now says
// whether that leader is still there. A CKE server that keeps no
// record of ckegen may be CKE's own binary or a cke built from an older
// ckegen: who writes is then not known.
func Writes(d *decision.Decision, who Actor) string {
	inside := d.Mode == decision.ModeInsideCKE
	switch {
	case who.Kind == Nobody:
		return nobodyLeads(d)
	case who.Kind == CKEWithoutCKEGen:
		return "none: " + who.Says
	case who.Kind == CKENotKnown && inside && d.Hold != nil && d.Hold.Writer != "":
		return fmt.Sprintf("%s, whatever CKE's server %s runs", d.Hold.Writer, who.CKE.Name)
	case who.Kind == CKENotKnown && inside:
		return fmt.Sprintf("not known: CKE's server %s leads and keeps no record of ckegen: its own integration if it is CKE's own binary, "+
			"ckegen inside it if it is a cke built from an older ckegen", who.CKE.Name)
	case who.Kind == InsideCKE:
		return InsideWriter
	case who.Kind == Daemon && inside:
		return fmt.Sprintf("ckegen's daemon %s, by its first tick (the last leader ran inside CKE's server)", who.CKEGen.Name)
	}
	return writer(d)
}

// writer says who writes the cluster, from the leader's decision on the
// settings alone (writerOf its hold and mode).
func writer(d *decision.Decision) string { return writerOf(d.Hold, d.Mode) }

// writerOf says who writes the cluster when a leader of mode holds on h
// (nil: none): the gate says who writes while it holds, and the mode who
// writes when nothing holds (a rung after the gate, a setting missing,
// decides what is written, not who writes).
func writerOf(h *decision.Hold, mode string) string {
	switch {
	case h != nil && h.Writer != "":
		return h.Writer
	case mode == decision.ModeInsideCKE:
		return InsideWriter
	case mode == decision.ModeBesideCKE:
		return "ckegen, while CKE's status says " + intake.CKEPhases()
	}
	return "ckegen, standalone (no CKE server holds leader/)"
}

// nobodyLeads says, while nothing leads, what each possible leader would
// write: the gate decided, on the settings of d, for ckegen's daemon
// alone, for CKE's server alone (its integration: CKE's own binary's, or
// ckegen's inside a cke built from ckeserver/; CKE's sabakan/disabled is
// the switch of both) and for ckegen's daemon beside CKE's server.
func nobodyLeads(d *decision.Decision) string {
	none := fmt.Sprintf("none now: nothing leads (nothing under %s nor %s)", storage.KeyLeader, storage.KeyCKEGenLeader)
	g := d.Gathered
	if d.Mode == "" || g == nil || g.Settings == nil {
		return none + "; who would write is not known: " + d.Message
	}
	as := func(mode string, ckeServer bool) (*decision.Hold, string) {
		o := g.Settings.Own
		o.CKEServer = ckeServer
		return decision.Gate(o, mode, g.HasCluster, d.At, time.Duration(d.Config.CKEStatusMaxAge)), decision.ModeOf(mode, o)
	}
	daemon := writerOf(as("", false))
	cke := "its own integration: CKE's own if it runs CKE's own binary, ckegen if it is a cke built from ckeserver/"
	if h, _ := as(decision.ModeInsideCKE, true); h != nil {
		cke = h.Writer
	}
	both := writerOf(as("", true))
	return fmt.Sprintf("%s; if ckegen's daemon leads alone: %s; if CKE's server leads alone: %s; if both lead: %s", none, daemon, cke, both)
}
