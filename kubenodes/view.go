package kubenodes

import (
	"context"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/storage"
)

// Kubernetes is what a host knows of the cluster's Kubernetes Nodes
// (docs/design.md 13): the daemon reads them from the API server at each
// tick (--kubeconfig, APIView), CKE's server has them in its cluster
// status (a View), ckegenctl's plan takes the leader's last view.
type Kubernetes interface {
	View(ctx context.Context) (View, error)
}

// View is a view of the Kubernetes Nodes: where it comes from, when it
// was read, and the taints of the Nodes that carry any (a Node with none
// is the same to the generator as a Node not listed). A view that is not
// Known says Why: CKE's status has no ready API server, say; the
// generator then sees no taint at all, which the status says.
type View struct {
	Source string                     `json:"source"`
	Known  bool                       `json:"known"`
	Why    string                     `json:"why,omitempty"`
	At     time.Time                  `json:"at,omitzero"`
	Nodes  int                        `json:"nodes"`
	Taints map[string][]cluster.Taint `json:"taints,omitempty"`
}

// View implements Kubernetes: a view the host holds already.
func (v View) View(context.Context) (View, error) { return v, nil }

// ViewOf is the view of the Nodes' taints, all of them, by name, from
// source at.
func ViewOf(source string, at time.Time, all map[string][]cluster.Taint) View {
	v := View{Source: source, Known: true, At: at, Nodes: len(all)}
	for name, ts := range all {
		if len(ts) > 0 {
			if v.Taints == nil {
				v.Taints = map[string][]cluster.Taint{}
			}
			v.Taints[name] = ts
		}
	}
	return v
}

// GeneratorTaints are what the generator is given of the view: nil when nothing
// is known.
func (v *View) GeneratorTaints() map[string][]cluster.Taint {
	if v == nil || !v.Known {
		return nil
	}
	if v.Taints == nil {
		// Known, and no Node has a taint: not the same as nothing known
		// for the status, the same for the generator.
		return map[string][]cluster.Taint{}
	}
	return v.Taints
}

// NodeLister lists the Nodes' taints by name: *Reader.
type NodeLister interface {
	NodeTaints(ctx context.Context) (map[string][]cluster.Taint, error)
}

// APIView is a view read from the Kubernetes API at each gather, as the
// daemon reads it with --kubeconfig.
func APIView(l NodeLister, now func() time.Time) Kubernetes {
	if now == nil {
		now = time.Now
	}
	return apiView{l, now}
}

type apiView struct {
	l   NodeLister
	now func() time.Time
}

// SourceAPI is the source of a view read from the Kubernetes API.
const SourceAPI = "the Kubernetes API (--kubeconfig)"

func (a apiView) View(ctx context.Context) (View, error) {
	all, err := a.l.NodeTaints(ctx)
	if err != nil {
		return View{}, err
	}
	return ViewOf(SourceAPI, a.now(), all), nil
}

// Describe says which view a decision used, and how old it was at now
// (zero: the view's age is not said), for the first line of a plan.
func (v *View) Describe(now time.Time) string {
	switch {
	case v == nil:
		return "Kubernetes view: none: made without Node taints (the leader reads no Nodes: no --kubeconfig)"
	case !v.Known:
		return fmt.Sprintf("Kubernetes view: %s: not known (%s): made without Node taints", v.Source, v.Why)
	}
	age := ""
	if !now.IsZero() {
		age = fmt.Sprintf(", read %s ago", max(now.Sub(v.At), 0).Round(time.Second))
	}
	return fmt.Sprintf("Kubernetes view: %s%s (%s, %d with taints)", v.Source, age, nodes(v.Nodes), len(v.Taints))
}

// nodes is "1 Node", "2 Nodes".
func nodes(n int) string {
	if n == 1 {
		return "1 Node"
	}
	return fmt.Sprintf("%d Nodes", n)
}

// Status is what the status says of view v (nil: the host has none, or
// the gather did not get to it; hostView: the host has one), the Nodes
// with a taint outside tolerations counted.
func (v *View) Status(hostView bool, tolerations []string) *storage.KubernetesStatus {
	if v == nil {
		if hostView {
			return &storage.KubernetesStatus{}
		}
		return nil
	}
	k := &storage.KubernetesStatus{Read: v.Known, Source: v.Source, Why: v.Why}
	if v.Known {
		k.Nodes, k.Intolerable = v.Nodes, CountIntolerable(v.Taints, tolerations)
	}
	return k
}
