// Package generator decides cluster membership: which sabakan machines are
// control planes and which are workers.
//
// It is a pure function of a snapshot (template, constraints, machines,
// current cluster, Kubernetes taints, rebooting nodes, the placement policy
// with the tick's metric values, and the time): no I/O, no clock, no
// logging. Generate builds a first cluster, Update changes an
// existing one by at most one rule of the maintenance ladder, and Regenerate
// re-renders the same membership with a new template. Each returns the
// cluster, the operation's name and the changes with the score that made
// each choice.
package generator

import (
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

// DefaultRetireWait is how long a worker must stay RETIRED before it is
// removed.
const DefaultRetireWait = 300 * time.Second

// Sentinel errors; compare with errors.Is.
var (
	// ErrNothingToDo means no rule of the ladder applies: the current
	// cluster is what the generator wants.
	ErrNothingToDo = errors.New("nothing to do")
	// ErrTooManyNonExistent means removing the control planes that left
	// sabakan would break etcd's quorum; an administrator must step in.
	ErrTooManyNonExistent = errors.New("too many non-existent control plane nodes")
	// ErrNotEnoughMachines means the constraints cannot be met with the
	// machines available.
	ErrNotEnoughMachines = errors.New("not enough machines")
)

// Operation names.
const (
	OpNew                 = "new"
	OpRegenerate          = "regenerate"
	OpRemoveNonExistent   = "remove non-existent node"
	OpRemoveUnmatchedRole = "remove unmatched role worker"
	OpIncreaseCP          = "increase control plane"
	OpDecreaseCP          = "decrease control plane"
	OpReplaceCP           = "replace control plane"
	OpIncreaseWorker      = "increase worker"
	OpDecreaseWorker      = "decrease worker"
	OpTaintNodes          = "taint nodes"
	OpRebalanceCP         = "rebalance control plane"
	OpSpreadCP            = "spread control plane"
)

// Change actions.
const (
	ActionGenerate                = "generate"
	ActionRegenerate              = "regenerate"
	ActionAddControlPlane         = "add-control-plane"
	ActionAddWorker               = "add-worker"
	ActionPromoteWorker           = "promote-worker"
	ActionDemoteControlPlane      = "demote-control-plane"
	ActionRemoveNonExistentCP     = "remove-non-existent-control-plane"
	ActionRemoveNonExistentWorker = "remove-non-existent-worker"
	ActionRemoveUnmatchedWorker   = "remove-unmatched-worker"
	ActionRemoveExcessiveCP       = "remove-excessive-control-plane"
	ActionRemoveBadCP             = "remove-bad-control-plane"
	ActionRemoveRetiredWorker     = "remove-retired-worker"
	ActionChangeTaint             = "change-taint"
	ActionRebalanceDemoteCP       = "rebalance-demote-control-plane"
	ActionRebalanceRemoveCP       = "rebalance-remove-control-plane"
	ActionRebalanceAddCP          = "rebalance-add-control-plane"
	ActionSpreadDemoteCP          = "spread-demote-control-plane"
	ActionSpreadRemoveCP          = "spread-remove-control-plane"
	ActionSpreadAddCP             = "spread-add-control-plane"
	// ActionRerender: a node no rule acts on, written anew because it
	// renders differently now (docs/design.md 6.2).
	ActionRerender = "re-render"
)

// Input is the snapshot a decision is made from.
type Input struct {
	Template    *template.Template
	Constraints constraints.Constraints
	// Machines must come from machine.Sanitize: unique serials and
	// addresses, every one with an IPv4 address.
	Machines []*machine.Machine
	// Current is the cluster to update; nil for Generate.
	Current *cluster.Cluster
	// NodeTaints are the Kubernetes taints of nodes, by node name.
	NodeTaints map[string][]cluster.Taint
	// Rebooting holds the addresses of nodes in CKE's reboot queue.
	Rebooting map[string]bool
	// Now is the time of the decision.
	Now time.Time
	// RetireWait is how long a worker stays RETIRED before removal
	// (callers default it to DefaultRetireWait).
	RetireWait time.Duration
	// InventoryRoles are the roles of the machines as sabakan returned
	// them, before sanitizing (machine.Roles); rule 2's typo guard
	// compares the worker templates' roles with them. When nil, the roles
	// of Machines are used.
	InventoryRoles []string
	// Policy is the placement policy (docs/design.md 12) compiled for Template; nil
	// for none, which leaves every decision as without a policy.
	Policy *policy.Policy
	// Metrics are the policy's metric values of this tick
	// (intake.FetchMetrics), looked up by serial; nil when there are none:
	// every machine then has no value.
	Metrics *policy.Values
	// RenderMemo, when not nil, remembers across the ticks of a plan which
	// nodes are what rendering gives (a cache: the results are the same
	// without it).
	RenderMemo *RenderMemo
}

// Change is one step of a decision: a machine chosen, removed, moved
// between roles or re-tainted, and why.
type Change struct {
	Action  string `json:"action"`
	Address string `json:"address"`
	Serial  string `json:"serial"`
	// Score is the selection or removal score that made the choice, nil
	// where no score was involved (its total in JSON).
	Score *Score `json:"score"`
	// Reason explains the change for people, score terms included.
	Reason string `json:"reason"`
	// Placement and Group are set on a change that adds a machine to a
	// template whose placement has ordered groups (docs/design.md 12.4): the
	// placement's key and the group the machine was picked from.
	Placement string `json:"placement,omitempty"`
	Group     string `json:"group,omitempty"`
}

// Result is a decision.
//
// Update, Regenerate and Tick also return a Result along with
// ErrNothingToDo: then only Warnings is set.
type Result struct {
	Cluster *cluster.Cluster
	Op      string
	Changes []Change
	// Warnings are for the operator: a worker template whose role matches
	// no machine (a likely typo, which stops rule 2) and the like.
	Warnings []string
}

// Generate builds a first cluster: control-plane-count control planes, then
// minimum-workers workers, each picked by the selection score.
func Generate(in Input) (*Result, error) {
	s, err := newState(&in, nil)
	if err != nil {
		return nil, err
	}
	if err := s.generate(); err != nil {
		return nil, err
	}
	return s.result(OpNew), nil
}

// Update makes at most one change to in.Current: the first rule of the
// ladder that applies, followed by fill. It returns ErrNothingToDo when no
// rule applies.
func Update(in Input) (*Result, error) {
	if in.Current == nil {
		return nil, errors.New("update: no current cluster")
	}
	s, err := newState(&in, in.Current)
	if err != nil {
		return nil, err
	}
	for _, r := range ladder {
		applied, err := r.apply(s)
		if err != nil {
			return nil, err
		}
		if !applied {
			continue
		}
		if err := s.fill(); err != nil {
			return nil, fmt.Errorf("%s: %w", r.op, err)
		}
		return s.result(r.op), nil
	}
	return s.nothingToDo(), ErrNothingToDo
}

// rule is one step of the maintenance ladder: apply changes the state and
// reports true, or reports false when the rule does not apply.
type rule struct {
	op    string
	apply func(*state) (bool, error)
}

// ladder is docs/design.md 6.2's maintenance ladder, in order: the first rule that
// applies wins. Rule 9 is docs/design.md 12.5's rebalance, which runs only with a
// policy's stickiness; rule 10 is docs/design.md 20's spread of the control
// planes over the failure domains, only with a policy's spread: quorum.
var ladder = [...]rule{
	{OpRemoveNonExistent, (*state).removeNonExistentNodes},       // 1
	{OpRemoveUnmatchedRole, (*state).removeUnmatchedRoleWorkers}, // 2
	{OpIncreaseCP, (*state).increaseControlPlanes},               // 3
	{OpDecreaseCP, (*state).decreaseControlPlanes},               // 4
	{OpReplaceCP, (*state).replaceControlPlane},                  // 5
	{OpIncreaseWorker, (*state).increaseWorkers},                 // 6
	{OpDecreaseWorker, (*state).decreaseWorkers},                 // 7
	{OpTaintNodes, (*state).taintNodes},                          // 8
	{OpRebalanceCP, (*state).rebalanceControlPlanes},             // 9
	{OpSpreadCP, (*state).spreadControlPlanes},                   // 10
}

// Regenerate re-renders the current membership with in.Template, then fills
// up to the constraints. It returns ErrNothingToDo when a member's machine is
// gone or matches no template: Update removes those first, or rule 2's typo
// guard keeps them until the template is fixed.
func Regenerate(in Input) (*Result, error) {
	if in.Current == nil {
		return nil, errors.New("regenerate: no current cluster")
	}
	s, err := newState(&in, in.Current)
	if err != nil {
		return nil, err
	}
	if err := s.regenerate(); err != nil {
		if errors.Is(err, ErrNothingToDo) {
			return s.nothingToDo(), err
		}
		return nil, err
	}
	if err := s.fill(); err != nil {
		return nil, fmt.Errorf("%s: %w", OpRegenerate, err)
	}
	return s.result(OpRegenerate), nil
}

// Tick is one decision as the daemon makes it: Generate when there is no
// current cluster; otherwise Update, and when Update has nothing to do and
// the template changed since the cluster was built, Regenerate.
func Tick(in Input, templateChanged bool) (*Result, error) {
	if in.Current == nil {
		return Generate(in)
	}
	res, err := Update(in)
	if errors.Is(err, ErrNothingToDo) && templateChanged {
		return Regenerate(in)
	}
	return res, err
}

// Init is the decision a CKE server asks of its integration when it
// becomes leader: Regenerate, only when a cluster exists and the template
// changed since it was built. It returns nil and no error when there is
// nothing to do: unlike Tick's ErrNothingToDo, that says nothing of what
// a tick would do next.
func Init(in Input, templateChanged bool) (*Result, error) {
	if in.Current == nil || !templateChanged {
		return nil, nil
	}
	res, err := Regenerate(in)
	if errors.Is(err, ErrNothingToDo) {
		return nil, nil
	}
	return res, err
}

// WorkersShort is ErrNotEnoughMachines for want of workers: how many
// machines a worker template takes the constraints lack (the
// forecast's purchases read it).
type WorkersShort struct {
	Short int
	err   error
}

func (e *WorkersShort) Error() string { return e.err.Error() }
func (e *WorkersShort) Unwrap() error { return e.err }
