package generator

import (
	"container/heap"
	"slices"
)

// picker hands out the best candidate of one group (control planes, or the
// workers of one template) again and again, in O(log racks) per pick.
//
// Within a rack every candidate has the same rack count, and the lifetime
// term grows with the retire date, so a rack's candidates are ranked once by
// laterFirst. The racks sit in a max-heap keyed by the selection score of
// their best candidate. A pick only raises the count of its own rack, so
// only that rack's key changes; keys can only fall while a picker lives
// (nodes are added, never removed), and a stale key is re-computed when it
// reaches the top.
//
// With a placement policy, a machine's metric points (bonus) join its
// score: a rack's candidates are then ranked by lifetime and metric points
// together, which are the same for a machine whatever the rack count.
type picker struct {
	racks     rackHeap
	rackCount func(x *machineInfo) int
	eligible  func(x *machineInfo) bool
	bonus     func(x *machineInfo) float64 // nil: no metric points
}

// rackQueue is one rack's candidates, best first. key, top and retire are
// the score, machine and retire date the queue was last ranked by in the
// heap; they only ever get worse as the queue is consumed, which makes lazy
// re-ranking correct. Keeping key and retire inline lets most heap
// comparisons decide without touching the machines.
type rackQueue struct {
	ms     []*machineInfo
	pos    int
	key    float64
	retire instant
	top    *machineInfo
}

func (q *rackQueue) head() *machineInfo { return q.ms[q.pos] }

// rank records x as the queue's top with score key.
func (q *rackQueue) rank(x *machineInfo, key float64) {
	q.top, q.key, q.retire = x, key, x.retireAt
}

type rackHeap []*rackQueue

func (h rackHeap) Len() int { return len(h) }
func (h rackHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.key != b.key {
		return a.key > b.key
	}
	if c := a.retire.compare(b.retire); c != 0 {
		return c > 0
	}
	return laterFirst(a.top, b.top) < 0
}
func (h rackHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rackHeap) Push(x any)   { *h = append(*h, x.(*rackQueue)) }
func (h *rackHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	return q
}

// fixTop is heap.Fix(h, 0), and popTop heap.Pop(h), without the calls
// through heap.Interface: the same steps (container/heap's down from the
// root), so the same order, a pick being two of them over hundreds of
// racks.
func (h rackHeap) fixTop() { h.down(len(h)) }

func (h *rackHeap) popTop() {
	n := len(*h) - 1
	(*h)[0], (*h)[n] = (*h)[n], (*h)[0]
	h.down(n)
	*h = (*h)[:n]
}

// down moves the root of h[:n] down to its place, as container/heap does:
// swapped with the lesser child while that child is less.
func (h rackHeap) down(n int) {
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.Less(r, c) {
			c = r
		}
		if !h.Less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// newPicker builds a picker over the machines accepted by eligible; racks
// is the number of dense rack indexes. The rackCount function reads the
// live counters of the state; bonus, when not nil, gives each machine's
// metric points.
//
// The candidates are bucketed by rack with a counting sort into one
// backing array (serial order kept within a rack), so a picker costs a
// handful of allocations whatever the number of machines and racks.
func newPicker(ms []*machineInfo, racks int, eligible func(x *machineInfo) bool, rackCount func(x *machineInfo) int, bonus func(x *machineInfo) float64) *picker {
	start := make([]int, racks+1)
	var cands []*machineInfo
	for _, x := range ms {
		if eligible(x) {
			cands = append(cands, x)
			start[x.rackSlot+1]++
		}
	}
	nonEmpty := 0
	for slot := range racks {
		if start[slot+1] > 0 {
			nonEmpty++
		}
		start[slot+1] += start[slot]
	}
	sorted := make([]*machineInfo, len(cands))
	next := start[:racks:racks]
	for _, x := range cands {
		sorted[next[x.rackSlot]] = x
		next[x.rackSlot]++
	}
	// next[slot] is now the end of rack slot's bucket and, shifted by one, the
	// start of the following one.
	p := &picker{rackCount: rackCount, eligible: eligible, bonus: bonus}
	queues := make([]rackQueue, 0, nonEmpty)
	p.racks = make(rackHeap, 0, nonEmpty)
	lo := 0
	for slot := range racks {
		hi := next[slot]
		if hi == lo {
			continue
		}
		q := rackQueue{ms: sorted[lo:hi:hi]}
		lo = hi
		p.rankRack(q.ms)
		q.rank(q.head(), p.score(q.head()))
		queues = append(queues, q)
		p.racks = append(p.racks, &queues[len(queues)-1])
	}
	heap.Init(&p.racks)
	return p
}

// rankRack sorts one rack's candidates best first. Without metric points
// the lifetime term grows with the retire date, so laterFirst alone ranks
// them; with them, lifetime and metric points come first.
func (p *picker) rankRack(ms []*machineInfo) {
	if p.bonus == nil {
		slices.SortFunc(ms, laterFirst)
		return
	}
	own := func(x *machineInfo) float64 { return float64(x.lifetimePoints) + p.bonus(x) }
	slices.SortFunc(ms, func(a, b *machineInfo) int {
		if oa, ob := own(a), own(b); oa != ob {
			if oa > ob {
				return -1
			}
			return 1
		}
		return laterFirst(a, b)
	})
}

// score is x's selection score as the picker ranks it.
func (p *picker) score(x *machineInfo) float64 {
	k := float64(rackPoints(p.rackCount(x)) + x.lifetimePoints)
	if p.bonus != nil {
		k += p.bonus(x)
	}
	return k
}

// settle brings the best valid candidate to the top: it drops machines that
// stopped being eligible and re-keys racks whose count changed.
func (p *picker) settle() {
	for len(p.racks) > 0 {
		q := p.racks[0]
		for q.pos < len(q.ms) && !p.eligible(q.head()) {
			q.pos++
		}
		if q.pos == len(q.ms) {
			p.racks.popTop()
			continue
		}
		if k := p.score(q.head()); k != q.key || q.top != q.head() {
			q.rank(q.head(), k)
			p.racks.fixTop()
			continue
		}
		return
	}
}

// peek returns the best candidate and its rack count, or nil.
func (p *picker) peek() (*machineInfo, int) {
	p.settle()
	if len(p.racks) == 0 {
		return nil, 0
	}
	x := p.racks[0].head()
	return x, p.rackCount(x)
}

// take removes the best candidate (after peek) from the picker. The caller
// adds it to the cluster, which raises its rack's count.
func (p *picker) take() {
	q := p.racks[0]
	q.pos++
	if q.pos == len(q.ms) {
		p.racks.popTop()
		return
	}
	q.rank(q.head(), p.score(q.head()))
	p.racks.fixTop()
}
