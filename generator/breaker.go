package generator

import (
	"errors"

	"github.com/ckegen/ckegen/machine"
)

// Unhealthy returns the addresses of the current cluster's nodes that are
// unhealthy (docs/design.md 11.4), in the cluster's order: the node's machine is not
// among in.Machines, or its state is neither HEALTHY, UPDATING nor
// UNINITIALIZED. Rebooting nodes are not counted: CKE's reboot queue takes
// them down on purpose.
func Unhealthy(in Input) []string {
	if in.Current == nil {
		return nil
	}
	states := make(map[string]machine.State, len(in.Machines))
	for _, m := range in.Machines {
		states[m.Address()] = m.Status.State
	}
	var out []string
	for _, n := range in.Current.Nodes {
		if n == nil || in.Rebooting[n.Address] {
			continue
		}
		if s, ok := states[n.Address]; ok && s.Sound() {
			continue
		}
		out = append(out, n.Address)
	}
	return out
}

// Taints is the decision the daemon makes while too many nodes are
// unhealthy (docs/design.md 11.4): rule 8 alone. Membership stays as it is (no rule
// 1-7, no fill, no regeneration); state taints follow the machines, since
// they only protect workloads. It returns ErrNothingToDo, with a Result
// that holds only the warnings, when no taint changes.
func Taints(in Input) (*Result, error) {
	if in.Current == nil {
		return nil, errors.New("taints: no current cluster")
	}
	s, err := newState(&in, in.Current)
	if err != nil {
		return nil, err
	}
	applied, err := s.taintNodes()
	if err != nil {
		return nil, err
	}
	if !applied {
		return s.nothingToDo(), ErrNothingToDo
	}
	return s.result(OpTaintNodes), nil
}
