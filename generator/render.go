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
		s.labelsEqual(c, x.raw, t, lt, mb.controlPlane) {
		return c
	}
	ls, as := labels.Render(x.raw, lt, mb.controlPlane)
	n := &cluster.Node{
		Address:      x.address,
		User:         t.Node.User,
		ControlPlane: mb.controlPlane,
		Labels:       ls,
		Annotations:  as,
		Taints:       taints.Render(t.Node.Taints, x.state, rebooting),
	}
	s.input.RenderMemo.remember(n, x.raw, t, mb.controlPlane)
	return n
}

// labelsEqual reports whether node c has the labels and annotations
// rendering m by t gives (labels.Equal), asking Input.RenderMemo first.
func (s *state) labelsEqual(c *cluster.Node, m *machine.Machine, t *template.NodeTemplate, lt labels.Template, cp bool) bool {
	r := s.input.RenderMemo
	if r.knows(c, m, t, cp) {
		return true
	}
	if !labels.Equal(c.Labels, c.Annotations, m, lt, cp) {
		return false
	}
	r.remember(c, m, t, cp)
	return true
}

// RenderMemo remembers, for the ticks of one plan or forecast, the nodes
// whose labels and annotations are what rendering a machine by a
// template node gives (labels read the machine's spec and the template
// only, neither changed in place during a plan; an edited machine is a
// copy): a node met again with the same machine and template is not
// compared again. It is safe for concurrent use; the zero value is
// ready, and a nil *RenderMemo remembers nothing.
type RenderMemo struct {
	m sync.Map // *cluster.Node -> renderedFrom
}

// renderedFrom is what a node was found rendered from.
type renderedFrom struct {
	m  *machine.Machine
	t  *template.NodeTemplate
	cp bool
}

func (r *RenderMemo) knows(n *cluster.Node, m *machine.Machine, t *template.NodeTemplate, cp bool) bool {
	if r == nil {
		return false
	}
	v, ok := r.m.Load(n)
	return ok && v.(renderedFrom) == renderedFrom{m, t, cp}
}

func (r *RenderMemo) remember(n *cluster.Node, m *machine.Machine, t *template.NodeTemplate, cp bool) {
	if r != nil {
		r.m.Store(n, renderedFrom{m, t, cp})
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
