// Package world is what one tick decides on, and the one loop every
// what-if runs (docs/design.md 11.1): the generator's input as the query
// answers it, the circuit breaker's limit and the query's conditions on
// states; Tick is the leader's decision of each later tick on it, holds
// included, and Plan runs it tick after tick. The decision's own plan,
// `ckegenctl sabakan plan` and `generate --plan`, every --dry-run, the
// resilience report's recoveries and the forecast's events all run Plan
// on a world, edited (Set) as sabakan would be: nothing else plans.
//
// It is pure, as the generator is: no I/O and no clock.
package world

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
)

// World is what a tick decides on.
type World struct {
	// In is the generator's input: the inventory as the query answers
	// it (sanitized), the cluster, the settings, the clock.
	In generator.Input
	// MaxUnhealthy is the circuit breaker's limit (nil: none).
	MaxUnhealthy Limit
	// Query is the query's conditions on states: a machine Set gives a
	// state it leaves out leaves the answer (nil: none leaves).
	Query assume.Query
	// TemplateChanged: the template changed since the cluster was built
	// (the first tick regenerates when it has nothing else to do).
	TemplateChanged bool
	// Interval is the leader's pace: each tick of a plan after the first
	// comes this much later, the soonest the leader takes the next step
	// (0: every step at the world's clock).
	Interval time.Duration
}

// Limit is max-unhealthy: how many unhealthy nodes a cluster of nodes
// nodes allows, and the setting as written.
type Limit interface {
	Limit(nodes int) int
	String() string
}

// BreakerHolds is what the breaker holds back while it is over the limit.
const BreakerHolds = "no node is added, removed, promoted or demoted until fewer are"

// shownUnhealthy is how many unhealthy nodes the breaker's words name.
const shownUnhealthy = 5

// Breaker is the circuit breaker (docs/design.md 11.4) on in: the
// unhealthy nodes of its cluster (generator.Unhealthy), the limit, and,
// when there are more than it allows, the words the status says of them
// ("": within the limit, or no limit or no cluster: limit -1).
func (w *World) Breaker(in generator.Input) (bad []string, limit int, over string) {
	if w.MaxUnhealthy == nil || in.Current == nil {
		return nil, -1, ""
	}
	bad = generator.Unhealthy(in)
	nodes := len(in.Current.Nodes)
	limit = w.MaxUnhealthy.Limit(nodes)
	if len(bad) <= limit {
		return bad, limit, ""
	}
	shown := bad[:min(len(bad), shownUnhealthy)]
	names := strings.Join(shown, ", ")
	if len(bad) > len(shown) {
		names += fmt.Sprintf(" and %d more", len(bad)-len(shown))
	}
	return bad, limit, fmt.Sprintf("%d of %d nodes are unhealthy (%s), more than max-unhealthy %s allows (%d)",
		len(bad), nodes, names, w.MaxUnhealthy, limit)
}

// Tick is a tick as the leader decides it on in (the cluster the
// previous tick left): over max-unhealthy, the state taints alone, and
// once they are written the breaker's hold (a *generator.Held), since no
// tick goes on until fewer nodes are unhealthy; otherwise generator.Tick.
func (w *World) Tick(in generator.Input, changed bool) (*generator.Result, error) {
	_, _, over := w.Breaker(in)
	if over == "" {
		return generator.Tick(in, changed)
	}
	res, err := generator.Taints(in)
	if errors.Is(err, generator.ErrNothingToDo) {
		return res, &generator.Held{Reason: reason.TooManyUnhealthy, Message: over + ": " + BreakerHolds}
	}
	return res, err
}

// Plan is the one loop of a what-if: Tick after Tick from the world's
// cluster, each on the cluster the previous one left and an Interval
// after it (first, when not nil, is the first tick's decision, already
// made on the world's clock), until one has nothing to do, one fails, one
// holds, or one would make step maxSteps+1 (generator.Run). A timed hold
// is waited out on the world's clock: when nothing is left to do but a
// worker waits for the retire wait (generator.RetireWaitLeft), the clock
// moves on past it (the machines' time in their state with it) and the
// loop goes on (WaitOut); the step that follows says what it waited for
// (generator.Step.Wait).
func (w *World) Plan(first *generator.Result, maxSteps int) (*generator.Plan, error) {
	p, last, err := w.run(first, w.TemplateChanged, maxSteps)
	if err != nil {
		return nil, err
	}
	return last.WaitOut(p, maxSteps)
}

// run is generator.Run at the leader's pace: the first tick on w's clock
// (or first, already made on it), each later one an Interval after the
// one before. It returns the world of the last tick, its cluster the
// plan's.
func (w *World) run(first *generator.Result, changed bool, maxSteps int) (*generator.Plan, *World, error) {
	at := *w
	if at.In.RenderMemo == nil {
		at.In.RenderMemo = &generator.RenderMemo{}
	}
	ticks := 0
	if first != nil {
		ticks = 1
	}
	var clock *pace
	p, err := generator.Run(w.In, first, changed, maxSteps, func(in generator.Input, changed bool) (*generator.Result, error) {
		if ticks > 0 && w.Interval > 0 {
			if clock == nil {
				clock = newPace(&at.In)
			}
			clock.add(&at.In, w.Interval)
		}
		ticks++
		at.In.Current = in.Current
		return at.Tick(at.In, changed)
	})
	if err != nil {
		return nil, nil, err
	}
	at.In.Current = p.Cluster
	return p, &at, nil
}

// pace moves a plan's clock on tick after tick: the input's own copy of
// its RETIRED machines, whose time in their state moves with it (the
// only time in a state a rule reads), made once for the whole plan.
type pace struct {
	retired []*machine.Machine
}

// newPace gives in copies of its RETIRED machines (in a copy of its
// slice) that the pace may move on; nothing is copied when none is
// RETIRED.
func newPace(in *generator.Input) *pace {
	p := &pace{}
	var ms []*machine.Machine
	for i, m := range in.Machines {
		if m.Status.State != machine.StateRetired {
			continue
		}
		if ms == nil {
			ms = slices.Clone(in.Machines)
		}
		c := *m
		ms[i] = &c
		p.retired = append(p.retired, &c)
	}
	if ms != nil {
		in.Machines = ms
	}
	return p
}

// add moves in's clock d on, and the time its RETIRED machines have been
// RETIRED with it.
func (p *pace) add(in *generator.Input, d time.Duration) {
	in.Now = in.Now.Add(d)
	for _, m := range p.retired {
		m.Status.Duration += d.Seconds()
	}
}

// WaitOut is p, a plan whose last tick was on w (its clock, its
// inventory), with what follows once the retire wait is waited out on
// the world's clock: while p settles with a worker waiting
// (generator.RetireWaitLeft), the clock moves on past the wait and the
// ticks go on from p's cluster; the first step after a wait says until
// when it waited (a time that stays the same from one tick of the leader
// to the next, as the stored plan does), and the plan ends as the last
// tick does (its result and warnings: those of the tick after the wait,
// also when it has nothing to do).
func (w *World) WaitOut(p *generator.Plan, maxSteps int) (*generator.Plan, error) {
	at := *w
	for p.Result == generator.PlanSettled && len(p.Steps) < maxSteps {
		at.In.Current = p.Cluster
		wait := generator.RetireWaitLeft(at.In)
		if wait == 0 {
			break
		}
		after := at.After(wait)
		more, last, err := after.run(nil, false, maxSteps-len(p.Steps))
		if err != nil {
			return nil, err
		}
		if len(more.Steps) > 0 {
			more.Steps[0].Wait = &generator.Wait{Until: after.In.Now, Reason: fmt.Sprintf("the retire wait (%s)", after.In.RetireWait)}
		}
		p.Steps = append(p.Steps, more.Steps...)
		p.Result, p.Err, p.Reason, p.Message, p.Cluster, p.Warnings = more.Result, more.Err, more.Reason, more.Message, more.Cluster, more.Warnings
		if len(more.Steps) == 0 {
			break
		}
		at = *last
	}
	return p, nil
}

// After is the world d later: its clock, and the time each RETIRED
// machine has been RETIRED (the only time in a state a rule reads).
func (w World) After(d time.Duration) World {
	w.In = later(w.In, d)
	return w
}

// later is in, d later: its clock, and the time each RETIRED machine has
// been RETIRED (the only time in a state a rule reads).
func later(in generator.Input, d time.Duration) generator.Input {
	in.Now = in.Now.Add(d)
	ms := make([]*machine.Machine, len(in.Machines))
	for i, m := range in.Machines {
		ms[i] = m
		if m.Status.State == machine.StateRetired {
			c := *m
			c.Status.Duration += d.Seconds()
			ms[i] = &c
		}
	}
	in.Machines = ms
	return in
}

// Set is the world once sabakan has the machines pick names (by their
// place in In.Machines) in state st, as the query then answers: each a
// copy with the new state (machine.Machine.WithState), in its place, and those
// whose new state the query leaves out gone from the answer, their role
// with them when no machine of it is left (In.InventoryRoles). It
// returns the world and how many machines pick named; w is left as it
// is.
func (w World) Set(pick func(i int, m *machine.Machine) bool, st machine.State) (World, int) {
	in := &w.In
	out := make([]*machine.Machine, 0, len(in.Machines))
	var left map[string]int
	named := 0
	for i, m := range in.Machines {
		if !pick(i, m) {
			out = append(out, m)
			continue
		}
		named++
		if Leaves(w.Query, st) {
			if left == nil {
				left = map[string]int{}
			}
			left[m.Spec.Role]++
			continue
		}
		out = append(out, m.WithState(st))
	}
	in.Machines = out
	if left != nil && in.InventoryRoles != nil {
		in.InventoryRoles = rolesLeft(in.InventoryRoles, out, left)
	}
	return w, named
}

// Leaves reports whether a machine whose state becomes st leaves the
// answer of a query with conditions q (nil: none leaves).
func Leaves(q assume.Query, st machine.State) bool {
	return q != nil && !q.Keeps(st)
}

// rolesLeft are the roles of an answer (all, as sabakan returned them)
// once machines of the roles left counts have gone from it: a role none
// of whose machines is left in ms is gone too.
func rolesLeft(all []string, ms []*machine.Machine, left map[string]int) []string {
	still := make(map[string]bool, len(left))
	for _, m := range ms {
		if left[m.Spec.Role] > 0 {
			still[m.Spec.Role] = true
		}
	}
	out := make([]string, 0, len(all))
	for _, r := range all {
		if left[r] == 0 || still[r] {
			out = append(out, r)
		}
	}
	return out
}

// Add is the world once sabakan answers with ms too (made-up machines,
// sorted by serial among the others, as sabakan answers): those whose
// state the query leaves out stay out, and the role of each one added
// joins the inventory's roles; each is placed in its rack's failure
// domain (failuredomain.Key.Racked). It returns the world and how many were added; w and ms are left as
// they are.
func (w World) Add(ms []*machine.Machine) (World, int) {
	in := &w.In
	var add []*machine.Machine
	var roles []string
	racked := in.Policy.FailureDomain().Racked(in.Machines)
	for _, m := range ms {
		if Leaves(w.Query, m.Status.State) {
			continue
		}
		m = racked(m)
		add = append(add, m)
		if in.InventoryRoles != nil && !slices.Contains(in.InventoryRoles, m.Spec.Role) && !slices.Contains(roles, m.Spec.Role) {
			roles = append(roles, m.Spec.Role)
		}
	}
	bySerial := func(a, b *machine.Machine) int { return strings.Compare(a.Spec.Serial, b.Spec.Serial) }
	slices.SortStableFunc(add, bySerial)
	// Both sorted: merge them, the world's first on equal serials.
	out := make([]*machine.Machine, 0, len(in.Machines)+len(add))
	old := in.Machines
	for len(old) > 0 && len(add) > 0 {
		if bySerial(add[0], old[0]) < 0 {
			out, add = append(out, add[0]), add[1:]
		} else {
			out, old = append(out, old[0]), old[1:]
		}
	}
	out = append(append(out, old...), add...)
	added := len(out) - len(in.Machines)
	in.Machines = out
	if len(roles) > 0 {
		in.InventoryRoles = append(slices.Clip(in.InventoryRoles), roles...)
		slices.Sort(in.InventoryRoles)
	}
	return w, added
}
