package resilience

import (
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/reason"
)

// The cluster a report is made on (Report.Basis).
const (
	// BasisCurrent: the input's cluster as it is (or the one Generate
	// would make): its plan is settled at once, refused, or does not
	// settle.
	BasisCurrent = "current"
	// BasisPendingPlanSettled: the cluster the input's pending plan
	// settles on. Each domain's loss is planned on it, as the daemon
	// would plan it once that plan has been applied.
	BasisPendingPlanSettled = "pending-plan-settled"
)

// PendingMaxSteps is how far the input's own plan is followed to find the
// cluster it settles on: further than a plan shows (generator.DefaultMaxSteps),
// since some rules make one change a tick (a RETIRED worker each) and a
// rack's retirement takes a step per machine.
const PendingMaxSteps = 10 * generator.DefaultMaxSteps

// Refusal is why a plan is refused: the tick's reason code (as the
// daemon's status records it) and its message.
type Refusal struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// setBasis records how the input's own plan ends and so which cluster
// the report is made on, and says whether the report's cluster is settled
// at once (its plan has no step): true unless the plan is refused, held
// or does not settle. A plan whose steps change no node (a write that
// records the template's revision) is no pending plan: the report is on
// the cluster as it is.
func (r *Report) setBasis(p *generator.Plan) bool {
	r.Basis, r.PendingSteps = BasisCurrent, len(p.Steps)
	switch p.Result {
	case generator.PlanRefused:
		r.PendingRefused = &Refusal{Reason: p.Reason, Message: p.Message}
		return false
	case generator.PlanHeld:
		r.PendingHeld = &Refusal{Reason: p.Reason, Message: p.Message}
		return false
	case generator.PlanMaxSteps:
		r.PendingMaxSteps = true
		return false
	}
	for _, s := range p.Steps {
		if len(s.Changes) > 0 {
			r.Basis = BasisPendingPlanSettled
			return true
		}
	}
	// No step, or only a write that records the template's revision and
	// changes no node: the cluster as it is.
	r.PendingSteps = 0
	return true
}

// everyLoss is every domain's recovery when the input's plan p tells it
// without planning, nil otherwise:
//   - when p is refused at its first tick by rule 1 (too many control
//     planes whose machines are gone). That rule reads which machines
//     exist and which nodes reboot, never a state, and runs before every
//     other rule; a loss changes states only, so every loss's plan is
//     refused at its first tick the same way, unless (changes) the query
//     leaves UNREACHABLE machines out or a breaker limit is set, which
//     the leader climbs before rule 1;
//   - when p does not settle: NotPlanned (planning every domain would
//     take up to generator.DefaultMaxSteps ticks each).
func everyLoss(p *generator.Plan, changes bool) *Recovery {
	switch {
	case p.Result == generator.PlanMaxSteps:
		return &Recovery{Result: NotPlanned}
	case changes || p.Result != generator.PlanRefused || len(p.Steps) > 0 || p.Reason != reason.TooManyNonExistent:
		return nil
	}
	rec := recoveryOfPlan(p)
	return &rec
}
