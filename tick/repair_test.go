package tick

import (
	"context"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/storage"
)

// TestRepairInStatus: inside CKE's server, what the host's auto-repair
// leaves waiting is in the status the tick records (its words a
// warning; one status write) and in the gauge, and the next ticks keep
// it while the auto-repair does not run. ckegen's daemon, which runs no
// auto-repair, keeps none of it from the memory of a leader inside CKE's
// server.
func TestRepairInStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader, end := f.leadSession(t, "cke")
	d := f.step("d", func(c *testConfig) { c.Mode = decision.ModeInsideCKE })
	r := &storage.RepairStatus{Entries: 2, Maximum: 2, WaitingCount: 1, Message: "auto-repair: 1 machine waits"}
	ran := 0
	d.repair = func(context.Context, string) (*storage.RepairStatus, bool) { ran++; return r, true }
	res := d.run(ctx, leader)
	has := func(st storage.Status) bool {
		return st.Repair != nil && st.Repair.WaitingCount == 1 && slices.Contains(st.Warnings, r.Message)
	}
	if ran != 1 || !has(f.status(t)) || !has(res.Status) {
		t.Fatalf("ran %d, status %+v %q", ran, f.status(t).Repair, f.status(t).Warnings)
	}
	if got := series(scrape(t, d), "ckegen_auto_repair_waiting_machines"); !slices.Equal(got, []string{"ckegen_auto_repair_waiting_machines 1"}) {
		t.Errorf("gauge %q, want 1", got)
	}
	d.repair = func(context.Context, string) (*storage.RepairStatus, bool) { return nil, false }
	d.run(ctx, leader)
	if !has(f.status(t)) {
		t.Errorf("the next tick, auto-repair not run: status %+v %q, want it kept", f.status(t).Repair, f.status(t).Warnings)
	}
	if got := series(scrape(t, d), "ckegen_auto_repair_waiting_machines"); !slices.Equal(got, []string{"ckegen_auto_repair_waiting_machines 1"}) {
		t.Errorf("gauge after the next tick %q, want 1", got)
	}
	d.repair = func(context.Context, string) (*storage.RepairStatus, bool) { return nil, true }
	d.run(ctx, leader)
	if st := f.status(t); st.Repair != nil || slices.Contains(st.Warnings, r.Message) {
		t.Errorf("nothing waits any more, and the status says %+v %q", st.Repair, st.Warnings)
	}
	end()

	daemon := f.step("d", nil)
	daemonLeader, end := f.leadSession(t, "daemon")
	defer end()
	daemon.run(ctx, daemonLeader)
	if st := f.status(t); st.Repair != nil || slices.Contains(st.Warnings, r.Message) {
		t.Errorf("ckegen's daemon kept the auto-repair of CKE's server: %+v %q", st.Repair, st.Warnings)
	}
}
