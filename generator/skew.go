package generator

import (
	"cmp"
	"container/heap"
	"slices"
	"strconv"

	"github.com/ckegen/ckegen/template"
)

// A worker template's spread: {maxSkew: N} (docs/design.md 20), with
// Kubernetes' meaning per role: the skew of a domain is its workers of
// the role minus the fewest any eligible domain holds (a domain that
// holds such a worker or a candidate for one); a pick that keeps the skew
// of its domain at most N is preferred among the candidates of its group.
// It is a preference only: when every candidate of the group would
// exceed it, the best of them is taken all the same, and no worker ever
// leaves for it.

// skew counts one worker template's workers by failure domain while a
// pool of it lives; only the pool adds workers of its template then.
type skew struct {
	maxSkew int
	counts  []int  // workers of the template's role, by domain slot
	counted []bool // eligible domains: they count toward the minimum
	min     int    // the fewest workers an eligible domain holds
	atMin   int    // eligible domains at min
	// epoch changes when min rises, which may bring domains back within
	// the skew: pickers then rank every domain again.
	epoch int
}

func (s *state) newSkew(t *template.NodeTemplate, pi *placement, base func(x *machineInfo) bool) *skew {
	n := s.spread.domains()
	k := &skew{maxSkew: pi.pl.MaxSkew(), counts: make([]int, n), counted: make([]bool, n)}
	s.live(func(mb *member) {
		x := mb.machine
		if mb.controlPlane || x == nil || t.Role != "" && x.role != t.Role {
			return
		}
		k.counts[x.domainSlot]++
		k.counted[x.domainSlot] = true
	})
	for _, x := range s.machines {
		if base(x) && pi.admits(s, x) {
			k.counted[x.domainSlot] = true
		}
	}
	k.resetMin()
	return k
}

func (k *skew) resetMin() {
	k.min, k.atMin = -1, 0
	for slot, ok := range k.counted {
		switch c := k.counts[slot]; {
		case !ok:
		case k.min < 0 || c < k.min:
			k.min, k.atMin = c, 1
		case c == k.min:
			k.atMin++
		}
	}
	k.epoch++
}

// within reports whether one more worker in domain slot keeps its skew
// at most maxSkew.
func (k *skew) within(slot int) bool {
	return k.counts[slot]+1-k.min <= k.maxSkew
}

// add counts a worker added in domain slot.
func (k *skew) add(slot int) {
	c := k.counts[slot]
	k.counts[slot]++
	if k.counted[slot] && c == k.min {
		if k.atMin--; k.atMin == 0 {
			k.resetMin()
		}
	}
}

// groupPicker hands out the candidates of one group of a pool.
type groupPicker interface {
	// peek returns the best candidate and its rack count, nil when none.
	peek() (*machineInfo, int)
	// take removes the candidate of the last peek.
	take()
}

// skewPicker is a group's candidates under maxSkew: one picker per
// failure domain, in a heap of domains ranked by whether their next
// worker keeps within the skew, then by their best candidate's score (as
// picker ranks racks). A domain's rank only falls while the minimum
// stays; when it rises, every domain is ranked again.
type skewPicker struct {
	k       *skew
	domains domainHeap
	epoch   int
	// all is the group's plain picker: the pick without maxSkew, for the
	// explanation.
	all *picker
}

// domainQueue is one domain's candidates and the rank it was last given.
type domainQueue struct {
	slot      int
	pk        *picker
	preferred bool
	key       float64
	retire    instant
	top       *machineInfo
}

type domainHeap []*domainQueue

func (h domainHeap) Len() int { return len(h) }
func (h domainHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.preferred != b.preferred {
		return a.preferred
	}
	if a.key != b.key {
		return a.key > b.key
	}
	if c := a.retire.compare(b.retire); c != 0 {
		return c > 0
	}
	return laterFirst(a.top, b.top) < 0
}
func (h domainHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *domainHeap) Push(x any)   { *h = append(*h, x.(*domainQueue)) }
func (h *domainHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	return q
}

// newSkewPicker builds the picker of the candidates accepted by eligible,
// bucketed by domain.
func (s *state) newSkewPicker(k *skew, eligible func(x *machineInfo) bool, rackCount func(x *machineInfo) int, bonus func(x *machineInfo) float64) *skewPicker {
	p := &skewPicker{k: k, all: newPicker(s.machines, len(s.cpsInRack), eligible, rackCount, bonus)}
	byDomain := make([][]*machineInfo, len(k.counts))
	for _, x := range s.machines {
		if eligible(x) {
			byDomain[x.domainSlot] = append(byDomain[x.domainSlot], x)
		}
	}
	for slot, ms := range byDomain {
		if len(ms) > 0 {
			p.domains = append(p.domains, &domainQueue{slot: slot, pk: newPickerOf(ms, eligible, rackCount, bonus)})
		}
	}
	p.rankAll()
	return p
}

// rank gives q the rank of its best candidate now.
func (p *skewPicker) rank(q *domainQueue) {
	x, _ := q.pk.peek()
	q.top = x
	if x != nil {
		q.key, q.retire, q.preferred = q.pk.score(x), x.retireAt, p.k.within(q.slot)
	}
}

// rankAll ranks every domain again and drops those without a candidate.
func (p *skewPicker) rankAll() {
	for _, q := range p.domains {
		p.rank(q)
	}
	p.domains = slices.DeleteFunc(p.domains, func(q *domainQueue) bool { return q.top == nil })
	heap.Init(&p.domains)
	p.epoch = p.k.epoch
}

func (p *skewPicker) settle() {
	if p.epoch != p.k.epoch {
		p.rankAll()
	}
	for len(p.domains) > 0 {
		q := p.domains[0]
		x, _ := q.pk.peek()
		switch {
		case x == nil:
			heap.Pop(&p.domains)
		case x != q.top || q.pk.score(x) != q.key || p.k.within(q.slot) != q.preferred:
			p.rank(q)
			heap.Fix(&p.domains, 0)
		default:
			return
		}
	}
}

func (p *skewPicker) peek() (*machineInfo, int) {
	p.settle()
	if len(p.domains) == 0 {
		return nil, 0
	}
	return p.domains[0].pk.peek()
}

func (p *skewPicker) take() {
	q := p.domains[0]
	q.pk.take()
	p.k.add(q.slot)
	p.rank(q)
	if q.top == nil {
		heap.Pop(&p.domains)
		return
	}
	heap.Fix(&p.domains, 0)
}

// note explains the last peek when maxSkew changed it: the machine the
// group would have given without it, and what its domain would then hold.
func (p *skewPicker) note(s *state, t *template.NodeTemplate, x *machineInfo) string {
	a, _ := p.all.peek()
	if a == nil || a == x {
		return ""
	}
	sp := s.spread
	return "spread maxSkew " + strconv.Itoa(p.k.maxSkew) + " passes over " + a.address + " (serial " + a.serial + "): " +
		sp.key.Describe(sp.name(a.domainSlot)) + " would then hold " + strconv.Itoa(p.k.counts[a.domainSlot]+1) + " " +
		workerGroupName(t) + ", the fewest " + strconv.Itoa(p.k.min)
}

// newPickerOf is newPicker over candidates already chosen (in serial
// order), for a subset such as one domain's: they are grouped by rack
// with a sort, so that it costs nothing per rack of the data center.
func newPickerOf(cands []*machineInfo, eligible func(x *machineInfo) bool, rackCount func(x *machineInfo) int, bonus func(x *machineInfo) float64) *picker {
	sorted := slices.Clone(cands)
	slices.SortStableFunc(sorted, func(a, b *machineInfo) int { return cmp.Compare(a.rackSlot, b.rackSlot) })
	p := &picker{rackCount: rackCount, eligible: eligible, bonus: bonus}
	var queues []rackQueue
	for lo := 0; lo < len(sorted); {
		hi := lo + 1
		for hi < len(sorted) && sorted[hi].rackSlot == sorted[lo].rackSlot {
			hi++
		}
		q := rackQueue{ms: sorted[lo:hi:hi]}
		p.rankRack(q.ms)
		q.rank(q.head(), p.score(q.head()))
		queues = append(queues, q)
		lo = hi
	}
	p.racks = make(rackHeap, len(queues))
	for i := range queues {
		p.racks[i] = &queues[i]
	}
	heap.Init(&p.racks)
	return p
}
