package sitetest

import (
	"slices"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/machine"
)

// StatePath is the shortest way from one state to another through the
// transitions sabakan allows (the compatible server's): the states to set, in order (none when from
// is to, or when to cannot be reached).
func StatePath(from, to machine.State) []machine.State {
	prev := map[machine.State]machine.State{from: from}
	queue := []machine.State{from}
	for len(queue) > 0 && to != from {
		s := queue[0]
		queue = queue[1:]
		for _, n := range machine.States {
			if _, seen := prev[n]; !seen && fakesabakan.CanTransition(s, n) {
				prev[n] = s
				queue = append(queue, n)
			}
		}
	}
	if _, ok := prev[to]; !ok || to == from {
		return nil
	}
	var out []machine.State
	for s := to; s != from; s = prev[s] {
		out = append(out, s)
	}
	slices.Reverse(out)
	return out
}
