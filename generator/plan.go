package generator

import (
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/machine"
)

// DefaultMaxSteps is how many steps a plan looks ahead unless told
// otherwise.
const DefaultMaxSteps = 100

// How a plan ends.
const (
	// PlanSettled: the last tick had nothing to do; the plan's cluster is
	// what the generator wants.
	PlanSettled = "settled"
	// PlanRefused: a tick failed (not enough machines, too many
	// non-existent control planes); Plan.Err says why, and the daemon
	// would stop there and write nothing more.
	PlanRefused = "refused"
	// PlanMaxSteps: there was still something to do after the maximum
	// number of steps; the plan does not settle, or not soon.
	PlanMaxSteps = "max-steps"
	// PlanHeld: a hold that needs an operator keeps the daemon from going
	// on (the breaker over max-unhealthy: docs/design.md 11.4); Plan.Reason
	// and Message say which, as the daemon's status does.
	PlanHeld = "held"
)

// Held is what a tick function returns when the daemon would hold: the
// plan ends there, PlanHeld, with the hold's reason code and words.
type Held struct{ Reason, Message string }

func (h *Held) Error() string { return h.Message }

// Plan is the sequence of ticks the daemon would make if nothing else
// changed (docs/design.md 11.1), and where it leads.
type Plan struct {
	// Result is PlanSettled, PlanRefused, PlanHeld or PlanMaxSteps.
	Result string
	// Err is the refused tick's error; nil unless Result is PlanRefused.
	Err error
	// Reason and Message say why a plan ends refused (Refusal's code and
	// the error) or held (the hold's code and words), as the daemon's
	// status says it; "" otherwise.
	Reason, Message string
	// Steps are the ticks that change the cluster, in order: at most the
	// maximum number of steps.
	Steps []Step
	// Start is the cluster the plan starts from (Input.Current, nil when
	// the first step builds a new cluster).
	Start *cluster.Cluster
	// Cluster is the cluster after the last step: Start when there is no
	// step.
	Cluster *cluster.Cluster
	// Warnings are those of the tick that ended the plan (the one with
	// nothing to do, or the refused one), which has no step of its own.
	Warnings []string
}

// Step is one tick of a plan: the decision's operation, its changes with
// their scores, and its warnings; Wait, when not nil, the timed hold the
// leader waits out before it.
type Step struct {
	Op       string
	Changes  []Change
	Warnings []string
	Wait     *Wait
}

// Run is the one loop of a plan: tick decides each tick from the
// cluster the previous one left (first, when not nil, is the first
// tick's decision, already made on in), each tick's cluster the next
// one's current cluster, the template counted as changed for the first
// tick only (the first write records its revision), until one has
// nothing to do (PlanSettled), one fails (PlanRefused), one holds (tick
// returns a *Held: PlanHeld), or one would make step maxSteps+1
// (PlanMaxSteps, that step left out). The leader's tick, holds
// included, is world.World.Tick, and world.World.Plan the what-if that
// runs it; Tick alone is the generator's.
//
// It writes nothing and reads no clock. It returns an error only when
// no plan can be computed: the input is bad (no template, invalid
// constraints, a current cluster with a duplicate address, unsanitized
// machines) or maxSteps is below 1. Every tick works on in as given: a
// node a tick does not change is the same *cluster.Node in every later
// cluster, so a step costs one tick and the plan keeps only the steps
// and the last cluster.
func Run(in Input, first *Result, templateChanged bool, maxSteps int, tick func(Input, bool) (*Result, error)) (*Plan, error) {
	if maxSteps < 1 {
		return nil, fmt.Errorf("max steps: must be at least 1, got %d", maxSteps)
	}
	p := &Plan{Start: in.Current, Cluster: in.Current}
	if first != nil {
		p.Steps, p.Cluster = []Step{{Op: first.Op, Changes: first.Changes, Warnings: first.Warnings}}, first.Cluster
		in.Current, templateChanged = first.Cluster, false
	}
	return run(p, in, templateChanged, maxSteps, tick)
}

// run makes ticks from in, after the steps p has, until one has nothing
// to do, one fails, one holds, or one would make step maxSteps+1.
func run(p *Plan, in Input, templateChanged bool, maxSteps int, tick func(Input, bool) (*Result, error)) (*Plan, error) {
	for {
		res, err := tick(in, templateChanged)
		var held *Held
		if err != nil && res != nil {
			p.Warnings = res.Warnings
		}
		switch {
		case errors.Is(err, ErrNothingToDo):
			p.Result = PlanSettled
			return p, nil
		case errors.As(err, &held):
			p.Result, p.Reason, p.Message = PlanHeld, held.Reason, held.Message
			return p, nil
		case err != nil:
			if len(p.Steps) == 0 && !isRefusal(err) {
				return nil, err
			}
			p.Result, p.Err, p.Reason, p.Message = PlanRefused, err, Refusal(err), err.Error()
			return p, nil
		case len(p.Steps) == maxSteps:
			p.Result = PlanMaxSteps
			return p, nil
		}
		p.Steps = append(p.Steps, Step{Op: res.Op, Changes: res.Changes, Warnings: res.Warnings})
		p.Cluster = res.Cluster
		in.Current = res.Cluster
		templateChanged = false
	}
}

// Settled is the plan of an input whose first tick had nothing to do,
// given that tick's warnings: what Run returns for it, for a caller
// that has already run the tick (the daemon's steady tick) and need not
// run it again.
func Settled(current *cluster.Cluster, warnings []string) *Plan {
	return &Plan{Result: PlanSettled, Start: current, Cluster: current, Warnings: warnings}
}

// isRefusal reports whether err is a tick the daemon would refuse on good
// input, as opposed to input no tick can be computed from.
func isRefusal(err error) bool {
	return errors.Is(err, ErrNotEnoughMachines) || errors.Is(err, ErrTooManyNonExistent)
}

// Wait is a hold the leader waits out before a plan's step: until when
// (zero for one an operator lifts: the trigger), and what it waits for.
type Wait struct {
	Until  time.Time
	Reason string
}

// RetireWaitLeft is how long until the first of in.Current's workers
// whose machine is RETIRED, and not yet for longer than the retire wait,
// is (rule 7 removes a worker RETIRED for strictly longer: the second
// after the wait); 0 when no worker waits.
func RetireWaitLeft(in Input) time.Duration {
	if in.Current == nil {
		return 0
	}
	retired := map[string]float64{}
	for _, m := range in.Machines {
		if m.Status.State == machine.StateRetired && m.Status.Duration <= in.RetireWait.Seconds() {
			retired[m.Address()] = m.Status.Duration
		}
	}
	var left time.Duration
	for _, n := range in.Current.Nodes {
		d, ok := retired[n.Address]
		if !ok || n.ControlPlane || in.Rebooting[n.Address] {
			continue
		}
		l := in.RetireWait - time.Duration(d*float64(time.Second)) + time.Second
		if left == 0 || l < left {
			left = l
		}
	}
	return left.Truncate(time.Second)
}
