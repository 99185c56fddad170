package generator

import (
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// Turning the members of the next cluster into nodes (docs/design.md 2).

// render returns the node for a member, re-rendered from the template and
// current machine data. A current node that already is what rendering would
// produce is returned as is (results share such nodes with Input.Current;
// both are read-only). A member without a machine or a template (only
// rebooting nodes, or nodes a later rule removes) is written back as it was.
func (s *state) render(mb *member) *cluster.Node {
	t := s.templateOf(mb)
	if t == nil {
		return mb.current
	}
	x := mb.machine
	lt := labels.Template{Labels: t.Node.Labels, Annotations: t.Node.Annotations}
	rebooting := mb.rebooting
	if c := mb.current; c != nil && c.Address == x.address && c.Hostname == "" && c.User == t.Node.User &&
		c.ControlPlane == mb.controlPlane && taintsMatch(c.Taints, t.Node.Taints, x.state, rebooting) &&
		labels.Equal(c.Labels, c.Annotations, x.raw, lt, mb.controlPlane) {
		return c
	}
	ls, as := labels.Render(x.raw, lt, mb.controlPlane)
	return &cluster.Node{
		Address:      x.address,
		User:         t.Node.User,
		ControlPlane: mb.controlPlane,
		Labels:       ls,
		Annotations:  as,
		Taints:       taints.Render(t.Node.Taints, x.state, rebooting),
	}
}

// taintsMatch reports whether have equals taints.Render(template, s,
// rebooting), without building it.
func taintsMatch(have, template []cluster.Taint, s machine.State, rebooting bool) bool {
	st := taints.ForState(s, rebooting)
	n := len(template)
	if st != nil {
		n++
	}
	if len(have) != n || !slices.Equal(have[:len(template)], template) {
		return false
	}
	return st == nil || have[n-1] == *st
}

// templateOf is the template node a member is rendered from, or nil when it
// must be written back as it was.
func (s *state) templateOf(mb *member) *template.NodeTemplate {
	if mb.machine == nil {
		return nil
	}
	if mb.controlPlane {
		return &s.tmpl.ControlPlane
	}
	return s.workerTemplate(mb.machine)
}

func (s *state) result(op string) *Result {
	c := s.tmpl.Cluster.ShallowCopy()
	live := make([]*member, 0, len(s.members))
	s.live(func(mb *member) {
		live = append(live, mb)
	})
	c.Nodes = make([]*cluster.Node, len(live))
	// Rendering reads the state only: a large cluster is rendered in two
	// halves at once, each node into its place.
	first := len(live)
	if len(live) >= parallelRender && runtime.GOMAXPROCS(0) > 1 {
		first = len(live) / 2
	}
	var wg sync.WaitGroup
	if first < len(live) {
		wg.Go(func() {
			for i := first; i < len(live); i++ {
				c.Nodes[i] = s.render(live[i])
			}
		})
	}
	for i := range first {
		c.Nodes[i] = s.render(live[i])
	}
	wg.Wait()
	s.relabelled(c, live)
	return &Result{Cluster: c, Op: op, Changes: s.changes, Warnings: s.warnings}
}

// parallelRender is the number of nodes from which result renders in two
// halves at once (below it, starting a goroutine costs more than it saves).
const parallelRender = 2048

// nothingToDo is the result that goes with ErrNothingToDo.
func (s *state) nothingToDo() *Result {
	return &Result{Warnings: s.warnings}
}

// nodeEqual compares two nodes, treating nil and empty maps and lists alike.
func nodeEqual(a, b *cluster.Node) bool {
	return a.Address == b.Address && a.Hostname == b.Hostname && a.User == b.User &&
		a.ControlPlane == b.ControlPlane &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Taints, b.Taints)
}
