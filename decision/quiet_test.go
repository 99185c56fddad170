package decision

import (
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
)

func quietMachine(serial, addr string, s machine.State, age time.Duration) *machine.Machine {
	return &machine.Machine{
		Spec:   machine.Spec{Serial: serial, IPv4: []string{addr}},
		Status: machine.Status{State: s, Duration: age.Seconds()},
	}
}

// TestEvaluateQuiet: quiet needs every machine's state and the set of
// serials unchanged for the quiet time; the set is remembered by digest.
func TestEvaluateQuiet(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := []*machine.Machine{
		quietMachine("b", "10.0.0.2", machine.StateHealthy, time.Hour),
		quietMachine("a", "10.0.0.1", machine.StateHealthy, 2*time.Hour),
	}

	// First sight of the set: it counts from now.
	q := evaluateQuiet(old, 10*time.Minute, InventoryMemory{}, now)
	if q.quiet || q.remaining != 10*time.Minute || !q.status.InventorySince.Equal(now) ||
		q.message != "the inventory has not been quiet for the quiet time 10m0s: 10m0s left; machines joined or left the query's result 0s ago" {
		t.Errorf("first sight: %+v", q)
	}
	// Off: quiet, the digest kept all the same.
	off := evaluateQuiet(old, 0, InventoryMemory{}, now)
	if !off.quiet || off.inventory.Digest != q.inventory.Digest || off.inventory.Digest == "" || off.status.QuietTime != "0s" {
		t.Errorf("off: %+v", off)
	}
	// The same set (in another order) 10 minutes later: quiet.
	prev := q.inventory
	reordered := []*machine.Machine{old[1], old[0]}
	q = evaluateQuiet(reordered, 10*time.Minute, prev, now.Add(10*time.Minute))
	if !q.quiet || q.remaining != 0 || !q.status.InventorySince.Equal(now) || q.message != "" {
		t.Errorf("after 10 minutes: %+v", q)
	}
	// 9 minutes: 1 minute left.
	q = evaluateQuiet(old, 10*time.Minute, prev, now.Add(9*time.Minute))
	if q.quiet || q.remaining != time.Minute {
		t.Errorf("after 9 minutes: %+v", q)
	}

	// A machine moved 4 minutes ago, another 30 s ago: 9m30s left, the
	// most recent named first.
	moved := []*machine.Machine{
		quietMachine("a", "10.0.0.1", machine.StateUnreachable, 4*time.Minute),
		quietMachine("b", "10.0.0.2", machine.StateHealthy, 30*time.Second),
	}
	q = evaluateQuiet(moved, 10*time.Minute, prev, now.Add(time.Hour))
	want := "the inventory has not been quiet for the quiet time 10m0s: 9m30s left; last moved: 10.0.0.2 (serial b) HEALTHY for 30s, 10.0.0.1 (serial a) UNREACHABLE for 4m0s"
	if q.quiet || q.remaining != 9*time.Minute+30*time.Second || q.message != want || len(q.status.LastMoved) != 2 || q.status.Remaining != "9m30s" {
		t.Errorf("moved machines: %+v\nwant %s", q, want)
	}

	// A machine leaves: the set changed, counted from now again.
	q = evaluateQuiet(old[:1], 10*time.Minute, prev, now.Add(time.Hour))
	if q.quiet || q.inventory.Digest == prev.Digest || !q.status.InventorySince.Equal(now.Add(time.Hour)) {
		t.Errorf("a machine left: %+v", q)
	}
	// A since in the future (a clock went back): counted from now.
	future := prev
	future.Since = now.Add(time.Hour)
	if q = evaluateQuiet(old, 10*time.Minute, future, now); !q.status.InventorySince.Equal(now) {
		t.Errorf("since in the future: %+v", q)
	}

	// At most five machines named, and how many more.
	var many []*machine.Machine
	for i := range 8 {
		many = append(many, quietMachine(string(rune('a'+i)), "10.0.1.1", machine.StateUpdating, time.Duration(i+1)*time.Second))
	}
	prevMany := evaluateQuiet(many, time.Minute, InventoryMemory{}, now).inventory
	q = evaluateQuiet(many, time.Minute, prevMany, now.Add(time.Hour))
	if len(q.status.LastMoved) != 5 || !strings.HasSuffix(q.message, " and 3 more") || !strings.Contains(q.message, "(serial a) UPDATING for 1s") {
		t.Errorf("many moved: %s", q.message)
	}
}
