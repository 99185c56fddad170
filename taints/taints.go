// Package taints holds the taint rules: the state taint a machine's
// lifecycle state calls for, which Kubernetes taints a control plane may
// carry, and the syntax of taints.
package taints

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// StateKey is the key of the taint that mirrors a machine's state.
const StateKey = "cke.cybozu.com/state"

// Taint effects.
const (
	NoSchedule       = "NoSchedule"
	PreferNoSchedule = "PreferNoSchedule"
	NoExecute        = "NoExecute"
)

// ForState returns the state taint for a machine in state s, or nil when the
// state calls for none. A rebooting node never gets one.
func ForState(s machine.State, rebooting bool) *cluster.Taint {
	if rebooting {
		return nil
	}
	switch s {
	case machine.StateUnreachable:
		return &cluster.Taint{Key: StateKey, Value: "unreachable", Effect: NoSchedule}
	case machine.StateRetiring:
		return &cluster.Taint{Key: StateKey, Value: "retiring", Effect: NoExecute}
	case machine.StateRetired:
		return &cluster.Taint{Key: StateKey, Value: "retired", Effect: NoExecute}
	}
	return nil
}

// Render returns the node's taints: the template's, then the state taint.
func Render(template []cluster.Taint, s machine.State, rebooting bool) []cluster.Taint {
	st := ForState(s, rebooting)
	if st == nil {
		return slices.Clone(template)
	}
	out := make([]cluster.Taint, 0, len(template)+1)
	out = append(out, template...)
	return append(out, *st)
}

// StateTaintsEqual reports whether two taint lists carry the same state
// taints, in the same order.
func StateTaintsEqual(a, b []cluster.Taint) bool {
	i, j := 0, 0
	for {
		for i < len(a) && a[i].Key != StateKey {
			i++
		}
		for j < len(b) && b[j].Key != StateKey {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i] != b[j] {
			return false
		}
		i++
		j++
	}
}

// Tolerated reports whether a control plane may carry a Kubernetes taint
// with this key: keys under node.kubernetes.io/, the state taint,
// cke.cybozu.com/master, and the template's control_plane_tolerations.
func Tolerated(key string, tolerations []string) bool {
	if strings.HasPrefix(key, "node.kubernetes.io/") || key == StateKey || key == "cke.cybozu.com/master" {
		return true
	}
	return slices.Contains(tolerations, key)
}

// Intolerable returns the first taint a control plane may not carry, or nil.
func Intolerable(ts []cluster.Taint, tolerations []string) *cluster.Taint {
	for i := range ts {
		if !Tolerated(ts[i].Key, tolerations) {
			return &ts[i]
		}
	}
	return nil
}

// Validate checks a taint's key, value and effect.
func Validate(t cluster.Taint) error {
	if err := labels.ValidateKey(t.Key); err != nil {
		return fmt.Errorf("key %q: %w", t.Key, err)
	}
	if t.Value != "" {
		if err := labels.ValidateValue(t.Value); err != nil {
			return fmt.Errorf("value %q: %w", t.Value, err)
		}
	}
	switch t.Effect {
	case NoSchedule, PreferNoSchedule, NoExecute:
	default:
		return fmt.Errorf("effect %q: must be one of NoSchedule, PreferNoSchedule, NoExecute", t.Effect)
	}
	return nil
}
