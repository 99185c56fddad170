package ckeref

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/machine"
)

// A random data center and its history, for the differential test: racks
// of machines of a few roles (the empty role and a role no worker template
// takes included) in every state, sabakan labels, retire dates past and
// future in UTC or +09:00, a few template variants to switch between,
// constraints of the rate model, and Kubernetes taints on the cluster's
// nodes. Everything is drawn from one seed.

var (
	baseNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	jst     = time.FixedZone("JST", 9*3600)
)

// Taint keys the worlds put on Kubernetes Nodes.
const (
	taintBad   = "example.com/bad"   // intolerable on a control plane
	taintOK    = "example.com/ok"    // tolerated where the template says so
	taintSpare = "example.com/spare" // the templates' spare_node_taint_key
	taintK8s   = "node.kubernetes.io/unreachable"
)

type world struct {
	rng      *rand.Rand
	now      time.Time
	machines []machine.Machine // serial order
	serial   int
	roles    []string // roles machines are drawn from
	racks    int
	perRack  []int // next index in each rack

	templates       []string // JSON template variants
	tmpl            int      // the one in force
	templateChanged bool     // since the cluster was last written
	cpc, rate       int
	current         *cluster.Cluster
	// nodeTaints are Kubernetes taints by node name (= address); only the
	// cluster's nodes have a Node.
	nodeTaints  map[string][]cluster.Taint
	withTaints  bool
	stateWeight []int
}

var allStates = []machine.State{
	machine.StateHealthy, machine.StateUninitialized, machine.StateUnhealthy, machine.StateUnreachable,
	machine.StateUpdating, machine.StateRetiring, machine.StateRetired,
}

func newWorld(seed uint64) *world {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := &world{rng: rng, now: baseNow, nodeTaints: map[string][]cluster.Taint{}}
	w.roles = []string{"cs", "ss", "gpu"}[:1+rng.IntN(3)]
	if rng.IntN(4) == 0 {
		w.roles = append(w.roles, "boot") // a role no multi-role template takes
	}
	if rng.IntN(4) == 0 {
		w.roles = append(w.roles, "") // the empty role
	}
	// Mostly HEALTHY; some worlds are rough.
	w.stateWeight = []int{70, 4, 5, 6, 4, 4, 7}
	if rng.IntN(3) == 0 {
		w.stateWeight = []int{45, 8, 8, 10, 8, 8, 13}
	}
	w.racks = 2 + rng.IntN(5)
	w.perRack = make([]int, w.racks)
	n := 4 + rng.IntN(30)
	for range n {
		w.addMachine(w.drawState())
	}
	w.cpc = []int{1, 3, 3, 5}[rng.IntN(4)]
	w.rate = w.drawRate()
	nt := 1 + rng.IntN(3)
	for range nt {
		w.templates = append(w.templates, w.drawTemplate())
	}
	w.withTaints = rng.IntN(3) == 0
	return w
}

func (w *world) drawRate() int {
	return []int{0, 100, 50, 80, 80, 90, 60, w.rng.IntN(101)}[w.rng.IntN(8)]
}

func (w *world) drawState() machine.State {
	total := 0
	for _, x := range w.stateWeight {
		total += x
	}
	k := w.rng.IntN(total)
	for i, x := range w.stateWeight {
		if k < x {
			return allStates[i]
		}
		k -= x
	}
	panic("unreachable")
}

// addMachine adds a machine in a random rack.
func (w *world) addMachine(st machine.State) {
	rng := w.rng
	rack := rng.IntN(w.racks)
	w.perRack[rack]++
	w.serial++
	loc := time.UTC
	if rng.IntN(3) == 0 {
		loc = jst
	}
	reg := w.now.Add(-time.Duration(rng.IntN(2000*24*3600)) * time.Second).In(loc)
	ret := w.now.Add(time.Duration(rng.IntN(3200*24*3600)-1200*24*3600) * time.Second).In(loc)
	var labels []machine.Label
	if rng.IntN(2) == 0 {
		labels = append(labels, machine.Label{Name: "product", Value: fmt.Sprintf("R%d", 600+10*rng.IntN(3))})
	}
	if rng.IntN(4) == 0 {
		labels = append(labels, machine.Label{Name: "tier", Value: fmt.Sprint(rng.IntN(3))})
	}
	w.machines = append(w.machines, machine.Machine{
		Spec: machine.Spec{
			Serial:       fmt.Sprintf("S%04d", w.serial),
			Labels:       labels,
			Rack:         rack,
			IndexInRack:  w.perRack[rack],
			Role:         w.roles[rng.IntN(len(w.roles))],
			IPv4:         []string{fmt.Sprintf("10.0.%d.%d", rack, w.perRack[rack])},
			RegisterDate: reg,
			RetireDate:   ret,
			BMC:          machine.BMC{BMCType: "IPMI-2.0"},
		},
		Status: machine.Status{State: st, Duration: float64(rng.IntN(1000))},
	})
}

// Template JSON, as cluster.yml.
type tmplNode struct {
	User         string            `json:"user"`
	ControlPlane bool              `json:"control_plane,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Taints       []cluster.Taint   `json:"taints,omitempty"`
}

type tmplDoc struct {
	Name          string            `json:"name"`
	Nodes         []tmplNode        `json:"nodes"`
	ServiceSubnet string            `json:"service_subnet"`
	Tolerations   []string          `json:"control_plane_tolerations,omitempty"`
	Sabakan       map[string]string `json:"sabakan,omitempty"`
}

// drawTemplate makes a template: a control plane with or without a role,
// then one worker template without a role, or one or more with distinct
// roles (sometimes a role no machine has: a typo). Most worker templates
// have a weight (drawWeight): it means nothing in the rate model, and
// both generators copy it onto the template's nodes.
func (w *world) drawTemplate() string {
	rng := w.rng
	roles := []string{"cs", "ss", "gpu", "boot"}
	d := tmplDoc{Name: "c", ServiceSubnet: "10.68.0.0/16"}
	cp := tmplNode{User: "cp", ControlPlane: true, Labels: map[string]string{"example.com/kind": "cp"}}
	if rng.IntN(2) == 0 {
		cp.Labels["cke.cybozu.com/role"] = roles[rng.IntN(3)]
	}
	if rng.IntN(4) == 0 {
		cp.Annotations = map[string]string{"example.com/note": "control plane"}
	}
	d.Nodes = append(d.Nodes, cp)
	if rng.IntN(3) == 0 {
		n := tmplNode{User: "w", Labels: map[string]string{"example.com/kind": "worker"}}
		w.maybeWeight(n.Labels)
		d.Nodes = append(d.Nodes, n)
	} else {
		k := 1 + rng.IntN(3)
		perm := rng.Perm(len(roles))
		for i := range k {
			r := roles[perm[i]]
			if rng.IntN(25) == 0 {
				r += "x" // a misspelt role: rule 2's typo guard
			}
			n := tmplNode{User: "w-" + r, Labels: map[string]string{"cke.cybozu.com/role": r}}
			w.maybeWeight(n.Labels)
			if rng.IntN(3) == 0 {
				n.Taints = []cluster.Taint{{Key: "example.com/dedicated", Value: r, Effect: "NoSchedule"}}
			}
			d.Nodes = append(d.Nodes, n)
		}
	}
	if rng.IntN(2) == 0 {
		d.Tolerations = []string{taintOK}
	}
	if rng.IntN(2) == 0 {
		d.Sabakan = map[string]string{"spare_node_taint_key": taintSpare}
	}
	data, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// maybeWeight gives a worker template's labels a weight, two times in
// three.
func (w *world) maybeWeight(labels map[string]string) {
	if w.rng.IntN(3) > 0 {
		labels["cke.cybozu.com/weight"] = w.drawWeight()
	}
}

// drawWeight draws a weight among those both CKE and ckegen accept and
// CKE renders: a decimal > 0 that is a Kubernetes label value (digits,
// with a fraction of one to three digits or none, leading and trailing
// zeros included: "6.0", "0.5", "007", "12").
func (w *world) drawWeight() string {
	rng := w.rng
	for {
		s := strconv.Itoa(rng.IntN(13))
		if rng.IntN(6) == 0 {
			s = "0" + s
		}
		if rng.IntN(2) == 0 {
			s += "."
			for range 1 + rng.IntN(3) {
				s += strconv.Itoa(rng.IntN(10))
			}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
			return s
		}
	}
}

// machinesJSON is the inventory as sabakan's GraphQL answer.
func (w *world) machinesJSON() []byte {
	data, err := json.Marshal(w.machines)
	if err != nil {
		panic(err)
	}
	return data
}

// taintsOfNodes are the Kubernetes taints of the current cluster's nodes.
func (w *world) taintsOfNodes() map[string][]cluster.Taint {
	if w.current == nil || len(w.nodeTaints) == 0 {
		return nil
	}
	out := map[string][]cluster.Taint{}
	for _, n := range w.current.Nodes {
		if ts, ok := w.nodeTaints[n.Address]; ok {
			out[n.Address] = ts
		}
	}
	return out
}

// event changes the data center between two ticks.
func (w *world) event() {
	rng := w.rng
	dt := float64(30 + rng.IntN(400))
	if rng.IntN(25) == 0 {
		dt = float64((100 + rng.IntN(400)) * 24 * 3600) // retire dates pass
	}
	w.now = w.now.Add(time.Duration(dt) * time.Second)
	for i := range w.machines {
		w.machines[i].Status.Duration += dt
	}
	if rng.IntN(2) == 0 {
		for range 1 + rng.IntN(2) {
			if len(w.machines) == 0 {
				break
			}
			m := &w.machines[rng.IntN(len(w.machines))]
			m.Status.State = w.drawState()
			m.Status.Duration = float64(rng.IntN(30))
		}
	}
	if rng.IntN(6) == 0 {
		// A RETIRED machine exactly at the retire wait (not past it).
		var retired []int
		for i := range w.machines {
			if w.machines[i].Status.State == machine.StateRetired {
				retired = append(retired, i)
			}
		}
		if len(retired) > 0 {
			w.machines[retired[rng.IntN(len(retired))]].Status.Duration = 300
		}
	}
	if rng.IntN(8) == 0 {
		st := machine.StateHealthy
		if rng.IntN(4) == 0 {
			st = w.drawState()
		}
		w.addMachine(st)
	}
	if rng.IntN(14) == 0 && len(w.machines) > 1 {
		i := rng.IntN(len(w.machines))
		w.machines = slices.Delete(w.machines, i, i+1)
	}
	if rng.IntN(30) == 0 {
		w.cpc = []int{1, 3, 5}[rng.IntN(3)]
	}
	if rng.IntN(40) == 0 {
		w.rate = w.drawRate()
	}
	if len(w.templates) > 1 && rng.IntN(25) == 0 {
		w.tmpl = (w.tmpl + 1 + rng.IntN(len(w.templates)-1)) % len(w.templates)
		w.templateChanged = true
	}
	if w.withTaints && w.current != nil && len(w.current.Nodes) > 0 && rng.IntN(5) == 0 {
		n := w.current.Nodes[rng.IntN(len(w.current.Nodes))]
		if rng.IntN(3) == 0 {
			delete(w.nodeTaints, n.Address)
		} else {
			key := []string{taintBad, taintOK, taintSpare, taintSpare, taintK8s}[rng.IntN(5)]
			w.nodeTaints[n.Address] = append(w.nodeTaints[n.Address], cluster.Taint{Key: key, Effect: "NoSchedule"})
		}
	}
}
