// The rack map draws the data center as racks of machines: for each
// machine, whether it is a control plane, a worker, an unused candidate or
// not usable, with its state, whether it is rebooting, and what the next
// step of the generator would do to it.
//
// BuildMap turns what a decision says (the machines, the cluster, the
// rebooting set, the next step to highlight, the model and the failure
// domains) into a Map; WriteText renders a Map for a terminal and the Map
// itself marshals to JSON. BuildMap is pure: no I/O, no clock.

package liveview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// Kind is what a machine is to the cluster.
type Kind string

// The four kinds of cell.
const (
	// KindControlPlane: the machine is a control-plane node.
	KindControlPlane Kind = "control-plane"
	// KindWorker: the machine is a worker node.
	KindWorker Kind = "worker"
	// KindUnused: not in the cluster, and the generator could add it.
	KindUnused Kind = "unused"
	// KindUnusable: not in the cluster, and the generator would not add it
	// (not HEALTHY, not returned by the query, rebooting, a role no
	// template takes, or ignored as a bad entry).
	KindUnusable Kind = "unusable"
)

// Member reports whether the kind is a node of the cluster.
func (k Kind) Member() bool { return k == KindControlPlane || k == KindWorker }

// NodeRole is how a tooltip names the kind: "control plane", "worker" or
// "none".
func (k Kind) NodeRole() string {
	switch k {
	case KindControlPlane:
		return "control plane"
	case KindWorker:
		return "worker"
	}
	return "none"
}

// MapInput is what a map is drawn from: the machines the daemon works
// with and the data center around them, the cluster, and what a decision
// says of it. It says; BuildMap counts nothing of its own.
type MapInput struct {
	// Machines are the machines the daemon works with, sanitized: online,
	// the decision's (sabakan's answer to the stored query variables);
	// offline, the machines file's.
	Machines []*machine.Machine
	// Context are the data center's machines, raw, drawn around Machines:
	// online, every machine sabakan has; offline, the machines file. One
	// whose serial is not among Machines is drawn as not usable, LeftOut
	// saying why.
	Context []machine.Machine
	LeftOut string
	// Warnings are about machines the daemon ignores or changes.
	Warnings []string
	// Current is the cluster; nil when there is none yet.
	Current *cluster.Cluster
	// Template, when given, decides which roles can be used: an unused
	// machine whose role no template takes is not a candidate.
	Template *template.Template
	// Candidates, when not nil, are the serials of the machines the
	// generator could add a node on now (generator.Candidates): an unused
	// machine outside it is not a candidate, whatever its role.
	Candidates map[string]bool
	// Rebooting holds the addresses of nodes in CKE's reboot queue.
	Rebooting map[string]bool
	// Next are the changes of the next step, to highlight.
	Next []generator.Change
	// Model is the model of the workers in force ("": not known), and
	// Rate its figure, in the rate model (nil: none).
	Model string
	Rate  *generator.WorkerRate
	// Domains are the control planes by failure domain, as the decision
	// counted them; nil: the domains at risk are not marked.
	Domains *failuredomain.Census
}

// Cell is one machine.
type Cell struct {
	Serial  string        `json:"serial"`
	Address string        `json:"address"`
	Index   int           `json:"indexInRack"`
	Role    string        `json:"role"`
	State   machine.State `json:"state"`
	Kind    Kind          `json:"kind"`
	// Why says why an unusable machine cannot be added, or what is wrong
	// with a member's machine (not HEALTHY, not returned by the query).
	Why       string `json:"why,omitempty"`
	Rebooting bool   `json:"rebooting,omitempty"`
	// Change is the action of the highlighted next step on this machine.
	Change string `json:"change,omitempty"`
}

// Rack is one rack's machines in index order, and its counts.
type Rack struct {
	Number int    `json:"rack"`
	Counts Counts `json:"counts"`
	Cells  []Cell `json:"cells"`
	// QuorumAtRisk names the failure domains whose loss breaks etcd's
	// quorum and of which the rack holds a control plane (by rack, the
	// rack itself).
	QuorumAtRisk []string `json:"quorumAtRisk,omitempty"`
}

// Counts are the machines of a rack or of the whole map by kind. Control
// planes and workers are counted by their machine's role.
type Counts struct {
	Machines      int            `json:"machines"`
	ControlPlanes map[string]int `json:"controlPlanes"`
	Workers       map[string]int `json:"workers"`
	Unused        int            `json:"unused"`
	Unusable      int            `json:"unusable"`
	Rebooting     int            `json:"rebooting"`
}

// TotalControlPlanes is the number of control planes of every role.
func (c Counts) TotalControlPlanes() int { return sum(c.ControlPlanes) }

// TotalWorkers is the number of workers of every role.
func (c Counts) TotalWorkers() int { return sum(c.Workers) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (c *Counts) add(cell *Cell) {
	c.Machines++
	switch cell.Kind {
	case KindControlPlane:
		c.ControlPlanes[cell.Role]++
	case KindWorker:
		c.Workers[cell.Role]++
	case KindUnused:
		c.Unused++
	default:
		c.Unusable++
	}
	if cell.Rebooting {
		c.Rebooting++
	}
}

func newCounts() Counts {
	return Counts{ControlPlanes: map[string]int{}, Workers: map[string]int{}}
}

// Orphan is a node of the cluster whose address is no machine's.
type Orphan struct {
	Address   string `json:"address"`
	Kind      Kind   `json:"kind"`
	Rebooting bool   `json:"rebooting,omitempty"`
	Change    string `json:"change,omitempty"`
}

// Map is the data center as racks.
type Map struct {
	// Racks in rack number order.
	Racks  []Rack `json:"racks"`
	Totals Counts `json:"totals"`
	// Orphans are nodes whose machine is not in the inventory, in the
	// cluster's order.
	Orphans []Orphan `json:"orphans"`
	// Next is the highlighted next step, as given.
	Next []HighlightedChange `json:"next"`
	// Warnings are about machines the daemon would ignore.
	Warnings []string `json:"warnings"`
	// Model is the model of the workers in force (constraints.CountModel
	// or RateModel); "" (and left out of JSON) when the constraints are
	// not known.
	Model string `json:"model,omitempty"`
	// Rate is, in the rate model, the figure of the cluster as the next
	// tick leaves it (online; offline, the current cluster's): (workers
	// - 1) / machines * 100 against minimum-workers-rate, machines being
	// those the daemon's query returns after sanitizing, as rule 7 counts
	// them. nil in the count model.
	Rate *generator.WorkerRate `json:"rate,omitempty"`
	// FailureDomain is what a failure domain is ("rack", or a label's
	// name), and QuorumAtRisk the domains whose loss breaks etcd's
	// quorum in the cluster as the next tick leaves it (the decision's
	// count), in the domain's order; both left out when the decision did
	// not count them (MapInput.Domains).
	FailureDomain string         `json:"failureDomain,omitempty"`
	QuorumAtRisk  []DomainAtRisk `json:"quorumAtRisk,omitempty"`
}

// DomainAtRisk is a failure domain whose loss breaks etcd's quorum.
type DomainAtRisk struct {
	Domain string `json:"domain"`
	// ControlPlanes are the addresses of its control planes, and Racks
	// the racks that hold them (those of machines in the inventory).
	ControlPlanes []string `json:"controlPlanes"`
	Racks         []int    `json:"racks"`
	// Words say it: "rack 4 holds 2 of 3 control planes: losing it
	// breaks etcd's quorum".
	Words string `json:"words"`
}

// HighlightedChange is one change of the next step.
type HighlightedChange struct {
	Action  string `json:"action"`
	Address string `json:"address"`
	Serial  string `json:"serial,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// ModelText says which model of the workers is in force and, in the rate
// model with a cluster, the figure: "model: rate, workers 80.0% ((9
// workers - 1) / 10 machines), minimum-workers-rate 80%", or "model:
// count"; "" when the model is not known.
func (m *Map) ModelText() string {
	switch {
	case m.Model == "":
		return ""
	case m.Rate != nil:
		return "model: " + m.Model + ", workers " + m.Rate.String()
	}
	return "model: " + m.Model
}

// ControlPlaneRoles and WorkerRoles are the roles with at least one
// control plane (worker) anywhere, sorted: the rows of per-rack counts.
func (m *Map) ControlPlaneRoles() []string { return sortedKeys(m.Totals.ControlPlanes) }

// WorkerRoles: see ControlPlaneRoles.
func (m *Map) WorkerRoles() []string { return sortedKeys(m.Totals.Workers) }

func sortedKeys(c map[string]int) []string {
	out := make([]string, 0, len(c))
	for k, v := range c {
		if v > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// BuildMap draws the map. It never fails: machines the daemon ignores
// are drawn as unusable, with LeftOut as why.
func BuildMap(in MapInput) *Map {
	ms, seen := drawn(in)
	cells, racks := newCells(ms)
	byAddr := joinedEntries(cells, seen)
	changes, next := highlights(in.Next)
	classifyCells(in, cells, seen, byAddr, changes)

	m := &Map{Totals: newCounts(), Orphans: orphans(in, byAddr, changes), Next: next, Warnings: in.Warnings,
		Model: in.Model, Rate: in.Rate}
	if m.Warnings == nil {
		m.Warnings = []string{}
	}
	m.addRacks(cells, racks)
	if in.Domains != nil {
		m.markDomains(*in.Domains)
	}
	return m
}

// markDomains marks the domains of cen whose loss breaks etcd's quorum:
// on the map, and on each rack that holds one of their control planes.
func (m *Map) markDomains(cen failuredomain.Census) {
	m.FailureDomain = cen.Key.Name()
	risk := cen.AtRisk()
	if len(risk) == 0 {
		return
	}
	rackOf := map[string]int{} // the racks of the domains' control planes, by address
	for i := range m.Racks {
		for _, c := range m.Racks[i].Cells {
			// A control plane now, or a machine the next step makes one.
			if c.Kind == KindControlPlane || c.Change != "" {
				rackOf[c.Address] = i
			}
		}
	}
	for _, d := range risk {
		a := DomainAtRisk{Domain: d.Name, ControlPlanes: d.Addresses, Racks: []int{}, Words: cen.Words(d)}
		for _, addr := range d.Addresses {
			i, ok := rackOf[addr]
			if !ok {
				continue
			}
			r := &m.Racks[i]
			if !slices.Contains(r.QuorumAtRisk, d.Name) {
				r.QuorumAtRisk = append(r.QuorumAtRisk, d.Name)
				a.Racks = append(a.Racks, r.Number)
			}
		}
		slices.Sort(a.Racks)
		m.QuorumAtRisk = append(m.QuorumAtRisk, a)
	}
}

// drawn are the machines to draw, and whether the daemon works with
// each: Machines first, then the machines of Context but the first entry
// of each serial among them (Machines hold it, sanitized; another entry
// of the same serial is drawn as left out).
func drawn(in MapInput) ([]*machine.Machine, []bool) {
	ms := make([]*machine.Machine, 0, max(len(in.Machines), len(in.Context)))
	kept := make(map[string]bool, len(in.Machines))
	for _, m := range in.Machines {
		ms = append(ms, m)
		kept[m.Spec.Serial] = true
	}
	seen := make([]bool, len(ms), cap(ms))
	for i := range seen {
		seen[i] = true
	}
	for i := range in.Context {
		serial := in.Context[i].Spec.Serial
		if kept[serial] {
			kept[serial] = false // its first entry: drawn from Machines
			continue
		}
		ms, seen = append(ms, &in.Context[i]), append(seen, false)
	}
	return ms, seen
}

// newCells are the cells of the machines, with what the inventory says
// (serial, address, index, role, state) and not yet what they are to the
// cluster; racks holds each cell's rack number.
func newCells(ms []*machine.Machine) (cells []Cell, racks []int) {
	cells = make([]Cell, len(ms))
	racks = make([]int, len(ms))
	for i, m := range ms {
		cells[i] = Cell{Serial: m.Spec.Serial, Address: m.Address(), Index: m.Spec.IndexInRack, Role: m.Spec.Role, State: m.Status.State}
		racks[i] = m.Spec.Rack
	}
	return cells, racks
}

// joinedEntries maps each address to the entry a node of that address
// joins: the one the daemon sees when there is one (Sanitize leaves at
// most one per address), else the first. Cells without an address join
// nothing.
func joinedEntries(cells []Cell, seen []bool) map[string]int {
	byAddr := make(map[string]int, len(cells))
	for i := range cells {
		addr := cells[i].Address
		if addr == "" {
			continue
		}
		if j, ok := byAddr[addr]; !ok || (seen[i] && !seen[j]) {
			byAddr[addr] = i
		}
	}
	return byAddr
}

// highlights are the changes of the next step: the action of the first
// change of each address, to mark on its cell, and every change as given.
func highlights(changes []generator.Change) (map[string]string, []HighlightedChange) {
	byAddr := map[string]string{}
	next := make([]HighlightedChange, 0, len(changes))
	for _, c := range changes {
		if _, ok := byAddr[c.Address]; !ok {
			byAddr[c.Address] = c.Action
		}
		next = append(next, HighlightedChange{Action: c.Action, Address: c.Address, Serial: c.Serial, Reason: c.Reason})
	}
	return byAddr, next
}

// nodesByAddress are the nodes of the cluster by address; none without a
// cluster.
func nodesByAddress(c *cluster.Cluster) map[string]*cluster.Node {
	nodes := map[string]*cluster.Node{}
	if c == nil {
		return nodes
	}
	for _, n := range c.Nodes {
		if n != nil {
			nodes[n.Address] = n
		}
	}
	return nodes
}

// classifyCells says what each cell is to the cluster. Only the entry an
// address joins carries that address's node, change and reboot: another
// entry of the same address is drawn as if no node had it.
func classifyCells(in MapInput, cells []Cell, seen []bool, byAddr map[string]int, changes map[string]string) {
	nodes := nodesByAddress(in.Current)
	for i := range cells {
		c := &cells[i]
		var n *cluster.Node
		if c.Address != "" && byAddr[c.Address] == i {
			n = nodes[c.Address]
			c.Change = changes[c.Address]
			c.Rebooting = in.Rebooting[c.Address]
		}
		classify(c, n, whyIgnored(in, c, seen[i]), in.Template, in.Candidates)
	}
}

// whyIgnored says why the daemon would not use the cell's machine whatever
// the cluster: not selected, a bad entry, or not HEALTHY; "" when it would.
func whyIgnored(in MapInput, c *Cell, seen bool) string {
	switch {
	case !seen && in.LeftOut == "":
		return "not among the machines the daemon works with"
	case !seen:
		return in.LeftOut
	case c.State != machine.StateHealthy:
		return "state " + string(c.State)
	}
	return ""
}

// classify sets the cell's kind and why. A member keeps why as what is
// wrong with its machine; another machine is unusable when why is not
// empty, it is rebooting, no template takes its role or the generator
// would add no node on it (cands, when not nil), and unused (a candidate)
// otherwise.
func classify(c *Cell, n *cluster.Node, why string, t *template.Template, cands map[string]bool) {
	if n != nil {
		c.Kind = nodeKind(n)
		c.Why = why
		return
	}
	switch {
	case why != "":
	case c.Rebooting:
		why = "rebooting"
	case t != nil && !takesRole(t, c.Role):
		why = fmt.Sprintf("role %q matches no template", c.Role)
	case cands != nil && !cands[c.Serial]:
		why = notCandidate
	}
	c.Why = why
	c.Kind = KindUnused
	if why != "" {
		c.Kind = KindUnusable
	}
}

// CandidatesOf is the serials of the machines of in the generator could
// add a node on now (generator.Candidates): MapInput.Candidates.
func CandidatesOf(in generator.Input) (map[string]bool, error) {
	cands, err := generator.Candidates(in)
	if err != nil {
		return nil, fmt.Errorf("candidates: %w", err)
	}
	out := make(map[string]bool, len(cands))
	for i, ok := range cands {
		if ok {
			out[in.Machines[i].Spec.Serial] = true
		}
	}
	return out, nil
}

// notCandidate is why an unused HEALTHY machine of a role a template
// takes is no candidate: the generator's own checks keep it out.
const notCandidate = "the generator would add no node on it now: its template's placement, its Kubernetes taints or etcd's quorum by failure domain keep it out"

// nodeKind is a node's kind: a control plane or a worker.
func nodeKind(n *cluster.Node) Kind {
	if n.ControlPlane {
		return KindControlPlane
	}
	return KindWorker
}

// orphans are the nodes whose address is no machine's, in the cluster's
// order.
func orphans(in MapInput, byAddr map[string]int, changes map[string]string) []Orphan {
	out := []Orphan{}
	if in.Current == nil {
		return out
	}
	for _, n := range in.Current.Nodes {
		if n == nil {
			continue
		}
		if _, ok := byAddr[n.Address]; ok {
			continue
		}
		out = append(out, Orphan{Address: n.Address, Kind: nodeKind(n), Rebooting: in.Rebooting[n.Address], Change: changes[n.Address]})
	}
	return out
}

// addRacks sorts the cells by rack, index and serial, and counts them.
func (m *Map) addRacks(cells []Cell, racks []int) {
	order := make([]int, len(cells))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(
			cmp.Compare(racks[a], racks[b]),
			cmp.Compare(cells[a].Index, cells[b].Index),
			strings.Compare(cells[a].Serial, cells[b].Serial),
			cmp.Compare(a, b),
		)
	})
	m.Racks = []Rack{}
	for k, i := range order {
		if k == 0 || racks[i] != racks[order[k-1]] {
			m.Racks = append(m.Racks, Rack{Number: racks[i], Counts: newCounts()})
		}
		r := &m.Racks[len(m.Racks)-1]
		r.Cells = append(r.Cells, cells[i])
		r.Counts.add(&cells[i])
		m.Totals.add(&cells[i])
	}
}

// takesRole reports whether some template node takes machines of role.
func takesRole(t *template.Template, role string) bool {
	if t.ControlPlane.Role == "" || t.ControlPlane.Role == role {
		return true
	}
	return t.WorkerFor(role) != nil
}

// Marker is the character drawn after a cell's kind: the highlighted
// change first, then rebooting, then a member whose machine is in
// trouble; ' ' for none.
func (c *Cell) Marker() byte {
	if c.Change != "" {
		return ChangeMarker(c.Change)
	}
	if c.Rebooting {
		return '~'
	}
	if c.Kind.Member() && c.Why != "" {
		return troubleMarker
	}
	return ' '
}

// troubleMarker marks a node whose machine is not HEALTHY or not
// returned by the query.
const troubleMarker = '!'

// Symbol is the character of a kind: C, w, . or -.
func (k Kind) Symbol() byte {
	switch k {
	case KindControlPlane:
		return 'C'
	case KindWorker:
		return 'w'
	case KindUnused:
		return '.'
	}
	return '-'
}

// ChangeMarker is the character of a change action: + added, ^ promoted,
// v demoted, x removed, * re-rendered (taints or template), ? unknown.
func ChangeMarker(action string) byte {
	switch action {
	case generator.ActionGenerate, generator.ActionAddControlPlane, generator.ActionAddWorker, generator.ActionRebalanceAddCP, generator.ActionSpreadAddCP:
		return '+'
	case generator.ActionPromoteWorker:
		return '^'
	case generator.ActionDemoteControlPlane, generator.ActionRebalanceDemoteCP, generator.ActionSpreadDemoteCP:
		return 'v'
	case generator.ActionChangeTaint, generator.ActionRegenerate, generator.ActionRerender:
		return '*'
	}
	if strings.HasPrefix(action, "remove-") || action == generator.ActionRebalanceRemoveCP || action == generator.ActionSpreadRemoveCP {
		return 'x'
	}
	return '?'
}
