package forecast

import "github.com/ckegen/ckegen/machine"

// LeaveRetired is the inventory as sabakan's default query answers it
// once the assumed changes hold: a machine assumed RETIRED (assumed holds
// the machines after the change, before those before it, in the same
// places) leaves the answer, as the query's notHaving skips RETIRED
// machines; a machine RETIRED before the change stays, as the query that
// returned it would still return it. The others keep their order; the
// lists are left as they are.
func LeaveRetired(before, assumed []*machine.Machine) []*machine.Machine {
	out := make([]*machine.Machine, 0, len(assumed))
	for i, m := range assumed {
		if left(before[i], m) {
			continue
		}
		out = append(out, m)
	}
	return out
}
