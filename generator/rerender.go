package generator

import (
	"maps"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/cluster"
)

// Every node a write changes is told (docs/design.md 6.2): a rule names
// the nodes it acts on, and every other node of the cluster is re-rendered
// from its template and its machine as they are now (section 2). A node
// whose machine's labels, dates or template changed since the cluster was
// written is written anew by the next step whatever its rule: that
// re-rendering is a change of its own, ActionRerender, whose reason says
// which keys changed.

// relabelled appends to the changes of a result a change for each node
// of c (rendered from members, in that order) that differs from the node
// it was, when no change names it already.
func (s *state) relabelled(c *cluster.Cluster, members []*member) {
	var named map[string]bool
	for i, mb := range members {
		old, now := mb.current, c.Nodes[i]
		if old == nil || old == now || nodeEqual(old, now) {
			continue
		}
		if named == nil {
			named = make(map[string]bool, len(s.changes))
			for _, ch := range s.changes {
				named[ch.Address] = true
			}
		}
		if named[now.Address] {
			continue
		}
		s.record(ActionRerender, mb, nil, Rendered(old, now))
	}
}

// Rendered says what differs between a node as it was and as it is
// rendered now: the keys of its labels, annotations and taints that were
// added, removed or changed, and any other field. It names keys, not
// values, so that the nodes a template or a rendering rule changes alike
// read alike.
func Rendered(old, now *cluster.Node) string {
	var parts []string
	if d := mapDiff(old.Labels, now.Labels); d != "" {
		parts = append(parts, "labels "+d)
	}
	if d := mapDiff(old.Annotations, now.Annotations); d != "" {
		parts = append(parts, "annotations "+d)
	}
	if !slices.Equal(old.Taints, now.Taints) {
		parts = append(parts, "taints "+taintDiff(old.Taints, now.Taints))
	}
	if old.User != now.User {
		parts = append(parts, "user changed")
	}
	if old.Hostname != now.Hostname {
		parts = append(parts, "hostname cleared")
	}
	if len(parts) == 0 {
		return "re-rendered"
	}
	return strings.Join(parts, "; ")
}

// mapDiff names the keys added, removed and changed from a to b: "k1,
// k2 added; k3 changed"; "" when they are equal.
func mapDiff(a, b map[string]string) string {
	if maps.Equal(a, b) {
		return ""
	}
	var added, removed, changed []string
	for k, v := range b {
		if w, ok := a[k]; !ok {
			added = append(added, k)
		} else if w != v {
			changed = append(changed, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			removed = append(removed, k)
		}
	}
	return keyList(keyGroup{added, "added"}, keyGroup{removed, "removed"}, keyGroup{changed, "changed"})
}

// taintDiff names the taint keys added, removed and changed.
func taintDiff(a, b []cluster.Taint) string {
	index := func(ts []cluster.Taint) map[string]string {
		m := make(map[string]string, len(ts))
		for _, t := range ts {
			m[t.Key] += t.Value + ":" + t.Effect + ","
		}
		return m
	}
	if d := mapDiff(index(a), index(b)); d != "" {
		return d
	}
	return "reordered"
}

// keyGroup is keys that changed alike, and the verb that says how.
type keyGroup struct {
	keys []string
	verb string
}

// keyList joins groups of keys, sorted, each followed by its verb.
func keyList(groups ...keyGroup) string {
	var parts []string
	for _, g := range groups {
		if len(g.keys) == 0 {
			continue
		}
		slices.Sort(g.keys)
		parts = append(parts, strings.Join(g.keys, ", ")+" "+g.verb)
	}
	return strings.Join(parts, ", ")
}
