package forecast

import "github.com/ckegen/ckegen/machine"

// roles are the roles of the inventory as the machines leave it: a role
// whose every machine left is gone from the query's answer, as from
// sabakan's (the generator's guard against a template role that matches
// no machine reads them, generator.Input.InventoryRoles).
type roles struct {
	// all are the input's roles (nil: the generator takes the machines').
	all []string
	// count counts the machines of each role still in the inventory;
	// now are all without the roles count has at 0.
	count map[string]int
	now   []string
}

func newRoles(ms []*machine.Machine, all []string) roles {
	r := roles{all: all, now: all, count: map[string]int{}}
	for _, m := range ms {
		r.count[m.Spec.Role]++
	}
	return r
}

// leave counts a machine of role out of the inventory.
func (r *roles) leave(role string) {
	if r.count[role]--; r.count[role] > 0 || r.all == nil {
		return
	}
	now := make([]string, 0, len(r.now))
	for _, x := range r.now {
		if x != role {
			now = append(now, x)
		}
	}
	r.now = now
}

// left are the inventory's roles now.
func (r *roles) left() []string { return r.now }
