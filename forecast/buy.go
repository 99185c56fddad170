package forecast

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
)

// DefaultLeadTime is how long before it is needed a machine must be
// ordered unless told otherwise; DefaultLifetime a new machine's retire
// date after its arrival.
const (
	DefaultLeadTime = 90 * 24 * time.Hour
	DefaultLifetime = assume.DefaultLifetime
)

// Buy asks the forecast for the purchases that keep the cluster within
// its constraints until its end (docs/forecast.md).
type Buy struct {
	// LeadTime is how long before it is needed a machine is ordered.
	LeadTime time.Duration
	// Racks are where new machines may go; nil: the racks that hold
	// machines of the template's roles.
	Racks []int
	// RackSize is the machines a rack holds (0: no bound): a purchase
	// never overfills a rack.
	RackSize int
}

// Purchase is machines to buy: Count machines of Role and Product, in
// Racks (the rack's number as a string, how many there), needed on
// Needed (the date of the event it keeps, a period's first day), ordered
// by OrderBy (Needed less the lead time; Overdue when it is past), and
// why.
type Purchase struct {
	Role    string         `json:"role"`
	Product string         `json:"product,omitempty"`
	Count   int            `json:"count"`
	Racks   map[string]int `json:"racks"`
	Needed  string         `json:"needed"`
	OrderBy string         `json:"orderBy"`
	Overdue bool           `json:"overdue,omitempty"`
	Reason  string         `json:"reason"`
}

// Arrival is made-up machines the forecast assumed: Count machines of
// Role in Rack, arriving HEALTHY on Date (an event's), retiring on
// Retire, the first and last of their made-up serials, and whether they
// were bought (a Purchase) or given (Options.New).
type Arrival struct {
	Date    string `json:"date"`
	Rack    int    `json:"rack"`
	Role    string `json:"role"`
	Product string `json:"product,omitempty"`
	Count   int    `json:"count"`
	Retire  string `json:"retire"`
	First   string `json:"firstSerial"`
	Last    string `json:"lastSerial"`
	Bought  bool   `json:"bought,omitempty"`
}

// buyer makes a forecast's purchases: for an event that fails for want
// of machines, the fewest that keep it, arriving on its date.
type buyer struct {
	r    *run
	lead time.Duration
	size int
	// racks are where machines may go, in order; newRack is the number
	// the next rack bought for takes.
	racks   []int
	newRack int
	// cpRole is the role of a control-plane candidate; workers the roles
	// of the workers and their shares.
	cpRole  string
	workers []share
	// products is the product most machines of each role have.
	products map[string]string
	// bought are the purchases by event date and role.
	bought map[string]*Purchase
}

// share is a worker role's share of the workers bought.
type share struct {
	role   string
	weight float64
}

func newBuyer(r *run) *buyer {
	in := r.w.In
	b := &buyer{r: r, lead: r.o.Buy.LeadTime, size: r.o.Buy.RackSize, products: map[string]string{}, bought: map[string]*Purchase{}}
	b.roles(in)
	wanted := map[string]bool{b.cpRole: true}
	for _, s := range b.workers {
		wanted[s.role] = true
	}
	products := map[string]map[string]int{}
	seen := map[int]bool{}
	for _, m := range in.Machines {
		b.newRack = max(b.newRack, m.Spec.Rack+1)
		if !wanted[m.Spec.Role] {
			continue
		}
		if !seen[m.Spec.Rack] {
			seen[m.Spec.Rack] = true
			b.racks = append(b.racks, m.Spec.Rack)
		}
		for _, l := range m.Spec.Labels {
			if l.Name == machine.ProductLabel {
				if products[m.Spec.Role] == nil {
					products[m.Spec.Role] = map[string]int{}
				}
				products[m.Spec.Role][l.Value]++
			}
		}
	}
	if r.o.Buy.Racks != nil {
		b.racks = slices.Clone(r.o.Buy.Racks)
		for _, k := range b.racks {
			b.newRack = max(b.newRack, k+1)
		}
	}
	slices.Sort(b.racks)
	b.racks = slices.Compact(b.racks)
	for role, byProduct := range products {
		best := ""
		for p, n := range byProduct {
			if best == "" || n > byProduct[best] || n == byProduct[best] && p < best {
				best = p
			}
		}
		b.products[role] = best
	}
	return b
}

// roles finds what b buys of in: the control plane's role (the
// template's, else the role with the most HEALTHY machines) and the
// workers' roles and shares (count model: the template's weights, a
// template without a role taking the role it takes most HEALTHY machines
// of; rate model: the HEALTHY machines of each role a worker template
// takes).
func (b *buyer) roles(in generator.Input) {
	healthy := map[string]int{}
	var roles []string
	for _, m := range in.Machines {
		if m.Status.State == machine.StateHealthy {
			if healthy[m.Spec.Role] == 0 {
				roles = append(roles, m.Spec.Role)
			}
			healthy[m.Spec.Role]++
		}
	}
	slices.Sort(roles)
	most := func(ok func(role string) bool) string {
		best := ""
		for _, role := range roles {
			if ok(role) && (best == "" || healthy[role] > healthy[best]) {
				best = role
			}
		}
		return best
	}
	t := in.Template
	b.cpRole = t.ControlPlane.Role
	if b.cpRole == "" {
		b.cpRole = most(func(string) bool { return true })
	}
	if in.Constraints.RateModel() {
		for _, role := range roles {
			if t.WorkerFor(role) != nil {
				b.workers = append(b.workers, share{role, float64(healthy[role])})
			}
		}
		return
	}
	for k := range t.Workers {
		w := &t.Workers[k]
		role := w.Role
		if role == "" {
			role = most(func(role string) bool { return t.WorkerFor(role) == w })
		}
		if role != "" {
			b.workers = append(b.workers, share{role, w.Weight})
		}
	}
}

// fix buys, for ev (planned on in, the world of its date), what it fails
// for want of: a control-plane candidate when none is left, the workers
// short of the need; nothing for any other failure. It returns how many
// machines it bought, which the run's world has from date on.
func (b *buyer) fix(ev *Event, p *generator.Plan, date time.Time, in generator.Input) int {
	switch ev.failure {
	case NoControlPlaneCandidate:
		return b.buy(date, in, b.cpRole, 1, ev.words, b.cpRack(in))
	case WorkersBelowNeed:
		return b.workersShort(date, in, b.r.f.NeedWorkers-ev.Workers, ev.words)
	case reason.NotEnoughMachines:
		if in.Constraints.RateModel() {
			return b.buy(date, in, b.cpRole, 1, ev.words, b.cpRack(in))
		}
		var short *generator.WorkersShort
		if errors.As(p.Err, &short) {
			return b.workersShort(date, in, short.Short, ev.words)
		}
		return b.buy(date, in, b.cpRole, 1, ev.words, b.cpRack(in))
	}
	return 0
}

// ahead buys, before an event's plan, the workers its inventory lacks:
// the need less the HEALTHY machines a worker template takes that are
// not control planes of the cluster (the workers can be no more). It
// returns how many it bought.
func (b *buyer) ahead(date time.Time) int {
	in := b.r.w.In
	need := b.r.f.NeedWorkers
	if need == 0 {
		return 0
	}
	cps := map[string]bool{}
	if in.Current != nil {
		for _, n := range in.Current.Nodes {
			if n.ControlPlane {
				cps[n.Address] = true
			}
		}
	}
	have := 0
	for _, m := range in.Machines {
		if m.Status.State == machine.StateHealthy && !cps[m.Address()] && in.Template.WorkerFor(m.Spec.Role) != nil {
			have++
		}
	}
	if have >= need {
		return 0
	}
	return b.workersShort(date, in, need-have, fmt.Sprintf("%s HEALTHY machines could be workers (needed %s)", thousands(have), thousands(need)))
}

// workersShort buys short workers, split by role.
func (b *buyer) workersShort(date time.Time, in generator.Input, short int, reason string) int {
	n := 0
	for k, c := range split(max(short, 1), b.workers) {
		if c > 0 {
			n += b.buy(date, in, b.workers[k].role, c, reason, nil)
		}
	}
	return n
}

// split is n shared by weight, largest remainder first (ties: the
// earlier share), adding up to n.
func split(n int, shares []share) []int {
	out := make([]int, len(shares))
	total := 0.0
	for _, s := range shares {
		total += s.weight
	}
	if total <= 0 || n <= 0 {
		return out
	}
	type rem struct {
		k    int
		frac float64
	}
	rems := make([]rem, len(shares))
	left := n
	for k, s := range shares {
		exact := float64(n) * s.weight / total
		out[k] = int(exact)
		left -= out[k]
		rems[k] = rem{k, exact - float64(out[k])}
	}
	slices.SortStableFunc(rems, func(a, b rem) int { return cmp.Compare(b.frac, a.frac) })
	for i := 0; left > 0; i = (i + 1) % len(rems) {
		out[rems[i].k]++
		left--
	}
	return out
}

// cpRack is where a control-plane candidate goes: the rack of b.racks
// with room whose failure domain holds the fewest control planes of
// in's cluster, then the fewest machines of the role; nil: b.buy's
// choice.
func (b *buyer) cpRack(in generator.Input) func(map[int]int) (int, bool) {
	key := in.Policy.FailureDomain()
	held := map[string]int{}
	if in.Current != nil {
		cen := failuredomain.ControlPlanes(key, in.Machines, in.Current)
		for _, d := range cen.Domains {
			held[d.Name] = d.Held()
		}
	}
	// A rack's domain is the one a machine bought for it is in ("": its
	// own, which holds none).
	domainOf := key.NewIn(in.Machines)
	inRack := b.count(in)
	return func(roleIn map[int]int) (int, bool) {
		best, found := 0, false
		for _, k := range b.racks {
			if b.size > 0 && inRack[k] >= b.size {
				continue
			}
			d, bd := domainOf(k), domainOf(best)
			if !found || held[d] < held[bd] || held[d] == held[bd] && roleIn[k] < roleIn[best] {
				best, found = k, true
			}
		}
		return best, found
	}
}

// count is how many machines of in each rack holds.
func (b *buyer) count(in generator.Input) map[int]int {
	out := map[int]int{}
	for _, m := range in.Machines {
		out[m.Spec.Rack]++
	}
	return out
}

// buy buys n machines of role on date, for reason: one at a time in the
// rack pick chooses (nil: the rack of b.racks with room that holds the
// fewest machines of the role, then the lowest number), a new rack when
// none has room; they join the run's world and its calendar, and the
// event's purchase.
func (b *buyer) buy(date time.Time, in generator.Input, role string, n int, reason string, pick func(map[int]int) (int, bool)) int {
	inRack := b.count(in)
	roleIn := map[int]int{}
	for _, m := range in.Machines {
		if m.Spec.Role == role {
			roleIn[m.Spec.Rack]++
		}
	}
	room := func(k int) bool { return b.size == 0 || inRack[k] < b.size }
	var fewest *rackHeap
	if pick == nil {
		// The racks with room by the machines of the role they hold,
		// then number: each machine goes to the first.
		fewest = &rackHeap{of: roleIn}
		for _, k := range b.racks {
			if room(k) {
				fewest.racks = append(fewest.racks, k)
			}
		}
		heap.Init(fewest)
		pick = func(map[int]int) (int, bool) {
			if fewest.Len() == 0 {
				return 0, false
			}
			return heap.Pop(fewest).(int), true
		}
	}
	racks := map[int]int{}
	var fresh []int
	for range n {
		k, ok := pick(roleIn)
		if !ok {
			k = b.newRack
			b.newRack++
			b.racks = append(b.racks, k)
			fresh = append(fresh, k)
		}
		racks[k]++
		roleIn[k]++
		inRack[k]++
		if fewest != nil && room(k) {
			heap.Push(fewest, k)
		}
	}
	r := b.r
	var ms []*machine.Machine
	for _, k := range slices.Sorted(maps.Keys(racks)) {
		got := r.makeUp(assume.New{Rack: k, Role: role, Count: racks[k], From: date, Product: b.products[role]}, true, date)
		ms = append(ms, got...)
	}
	for _, m := range ms {
		r.all = append(r.all, m)
		r.serials = append(r.serials, m.Spec.Serial)
		r.sch.add(len(r.all)-1, m)
	}
	r.w, _ = r.w.Add(ms)
	b.record(date, role, racks, fresh, reason)
	return len(ms)
}

// record adds racks' machines of role to the purchase of date.
func (b *buyer) record(date time.Time, role string, racks map[int]int, fresh []int, reason string) {
	needed := date.UTC().Format(dateLayout)
	key := needed + "\x00" + role
	p := b.bought[key]
	if p == nil {
		orderBy := date.Add(-b.lead)
		p = &Purchase{Role: role, Product: b.products[role], Racks: map[string]int{}, Needed: needed, OrderBy: orderBy.UTC().Format(dateLayout),
			Overdue: orderBy.Before(b.r.w.In.Now), Reason: reason}
		b.bought[key] = p
	}
	for k, c := range racks {
		p.Racks[fmt.Sprint(k)] += c
		p.Count += c
	}
	if len(fresh) > 0 {
		names := make([]string, len(fresh))
		for i, k := range fresh {
			names[i] = fmt.Sprint(k)
		}
		what := "a new rack is needed, rack "
		if len(fresh) > 1 {
			what = "new racks are needed, racks "
		}
		p.Reason += fmt.Sprintf("; no rack has room (rack size %d): %s%s", b.size, what, strings.Join(names, ", "))
	}
}

// FirstOrderBy is the earliest date by which a purchase must be ordered
// ("" when nothing is bought).
func (f *Forecast) FirstOrderBy() string {
	first := ""
	for _, p := range f.Purchases {
		if first == "" || p.OrderBy < first {
			first = p.OrderBy
		}
	}
	return first
}

// purchases are the run's purchases by needed date, then role.
func (r *run) purchases() []Purchase {
	if r.buy == nil {
		return nil
	}
	out := make([]Purchase, 0, len(r.buy.bought))
	for _, p := range r.buy.bought {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Purchase) int {
		return cmp.Or(cmp.Compare(a.Needed, b.Needed), cmp.Compare(a.Role, b.Role))
	})
	return out
}

// rackHeap is racks by how many machines of a role each holds (of),
// then by number.
type rackHeap struct {
	racks []int
	of    map[int]int
}

func (h *rackHeap) Len() int { return len(h.racks) }
func (h *rackHeap) Less(i, j int) bool {
	a, b := h.racks[i], h.racks[j]
	return h.of[a] < h.of[b] || h.of[a] == h.of[b] && a < b
}
func (h *rackHeap) Swap(i, j int) { h.racks[i], h.racks[j] = h.racks[j], h.racks[i] }
func (h *rackHeap) Push(x any)    { h.racks = append(h.racks, x.(int)) }
func (h *rackHeap) Pop() any {
	k := h.racks[len(h.racks)-1]
	h.racks = h.racks[:len(h.racks)-1]
	return k
}
