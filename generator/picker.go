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
type picker struct {
	racks     rackHeap
	rackCount func(x *mach) int
	eligible  func(x *mach) bool
}

// rackQueue is one rack's candidates, best first. key and top are the
// score and machine the queue was last ranked by in the heap; they only ever
// get worse as the queue is consumed, which makes lazy re-ranking correct.
type rackQueue struct {
	ms  []*mach
	pos int
	key int
	top *mach
}

func (q *rackQueue) head() *mach { return q.ms[q.pos] }

type rackHeap []*rackQueue

func (h rackHeap) Len() int { return len(h) }
func (h rackHeap) Less(i, j int) bool {
	return betterSelection(h[i].top, h[i].key, h[j].top, h[j].key)
}
func (h rackHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rackHeap) Push(x any)   { *h = append(*h, x.(*rackQueue)) }
func (h *rackHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	return q
}

// newPicker builds a picker over the machines accepted by eligible. The
// rackCount function reads the live counters of the state.
func newPicker(ms []*mach, eligible func(x *mach) bool, rackCount func(x *mach) int) *picker {
	var byRack []*rackQueue // by dense rack index, in first-seen order
	for _, x := range ms {
		if !eligible(x) {
			continue
		}
		for x.ri >= len(byRack) {
			byRack = append(byRack, nil)
		}
		q := byRack[x.ri]
		if q == nil {
			q = &rackQueue{}
			byRack[x.ri] = q
		}
		q.ms = append(q.ms, x)
	}
	p := &picker{rackCount: rackCount, eligible: eligible}
	p.racks = make(rackHeap, 0, len(byRack))
	for _, q := range byRack {
		if q == nil {
			continue
		}
		slices.SortFunc(q.ms, laterFirst)
		q.top, q.key = q.head(), p.score(q.head())
		p.racks = append(p.racks, q)
	}
	heap.Init(&p.racks)
	return p
}

func (p *picker) score(x *mach) int {
	return rackPoints(p.rackCount(x)) + x.lp
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
			heap.Pop(&p.racks)
			continue
		}
		if k := p.score(q.head()); k != q.key || q.top != q.head() {
			q.top, q.key = q.head(), k
			heap.Fix(&p.racks, 0)
			continue
		}
		return
	}
}

// peek returns the best candidate and its rack count, or nil.
func (p *picker) peek() (*mach, int) {
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
		heap.Pop(&p.racks)
		return
	}
	q.top, q.key = q.head(), p.score(q.head())
	heap.Fix(&p.racks, 0)
}
