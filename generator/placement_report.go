package generator

// PlacementNodes is one placement of the policy and how many nodes of
// its template are in each of its groups (docs/design.md 12.4): what the daemon's
// status and the metric ckegen_placement_nodes report.
type PlacementNodes struct {
	// Placement is the placement's key: policy.ControlPlane or a worker
	// template's role.
	Placement string `json:"placement"`
	// Groups counts the nodes by group, in the policy's order. A node
	// counts in the first of its groups; those in none count under
	// NoGroup, which is also the one entry of a placement without groups.
	Groups []GroupNodes `json:"groups"`
}

// GroupNodes is the number of a placement's nodes in one group.
type GroupNodes struct {
	Group string `json:"group"`
	Nodes int    `json:"nodes"`
}

// NoGroup names the nodes of a placement that are in none of its groups,
// and all nodes of a placement without groups.
const NoGroup = ""

// Placements counts the nodes of in.Current by placement and group, for
// every template that in.Policy places: the control plane first, then the
// worker templates in the template's order. Nodes whose machine is gone
// from the inventory are not counted. It returns nil without a policy or
// a cluster.
func Placements(in Input) ([]PlacementNodes, error) {
	if in.Policy == nil || in.Current == nil {
		return nil, nil
	}
	s, err := newState(&in, in.Current)
	if err != nil {
		return nil, err
	}
	return s.placementNodes(), nil
}

// placementNodes counts the live members of s by placement and group.
func (s *state) placementNodes() []PlacementNodes {
	var out []PlacementNodes
	for _, pi := range s.placements {
		if pi == nil || pi.pl == nil {
			continue
		}
		n := pi.pl.NumGroups()
		counts := make([]int, n+1) // [n]: in no group
		s.live(func(mb *member) {
			if mb.machine == nil || s.placementOf(mb) != pi {
				return
			}
			e := pi.eval(s, mb.machine)
			if g := e.groups.First(); g >= 0 {
				counts[g]++
			} else {
				counts[n]++
			}
		})
		p := PlacementNodes{Placement: pi.pl.Key(), Groups: make([]GroupNodes, 0, n+1)}
		for g := range n {
			p.Groups = append(p.Groups, GroupNodes{Group: pi.pl.GroupName(g), Nodes: counts[g]})
		}
		p.Groups = append(p.Groups, GroupNodes{Group: NoGroup, Nodes: counts[n]})
		out = append(out, p)
	}
	return out
}
