package decision

import (
	"slices"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// placementStatus is the status of each counted placement: its observed
// group is the group of the last change of this tick that added a machine
// for it, else the one the memory keeps while the placement still has a
// group of that name.
func placementStatus(observed map[string]string, counts []generator.PlacementNodes, changes []generator.Change) []storage.PlacementStatus {
	if len(counts) == 0 {
		return nil
	}
	out := make([]storage.PlacementStatus, len(counts))
	for i, c := range counts {
		ps := storage.PlacementStatus{Placement: c.Placement, Groups: planreport.Groups(c.Groups)}
		for j := len(changes) - 1; j >= 0; j-- {
			if ch := changes[j]; ch.Placement == c.Placement && ch.Group != "" {
				ps.ObservedGroup = ch.Group
				break
			}
		}
		if g := observed[c.Placement]; ps.ObservedGroup == "" && g != "" && slices.ContainsFunc(c.Groups, func(n generator.GroupNodes) bool {
			return n.Group == g
		}) {
			ps.ObservedGroup = g
		}
		out[i] = ps
	}
	return out
}
