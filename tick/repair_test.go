package tick

import (
	"context"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/storage"
)

// TestNoteRepair: inside CKE's server, what the host's auto-repair
// leaves waiting is in the status (its words a warning) and in the
// gauge, and the next ticks keep it until the host notes nothing waits.
// ckegen's daemon, which runs no auto-repair, keeps none of it from the
// memory of a leader inside CKE's server.
func TestNoteRepair(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader, end := f.leadSession(t, "cke")
	d := f.step("d", func(c *testConfig) { c.Mode = decision.ModeInsideCKE })
	d.run(ctx, leader)
	r := &storage.RepairStatus{Entries: 2, Maximum: 2, WaitingCount: 1, Message: "auto-repair: 1 machine waits"}
	st, changed, err := d.NoteRepair(ctx, r)
	must(t, err)
	d.metrics.Amend(st)
	has := func(st storage.Status) bool {
		return st.Repair != nil && st.Repair.WaitingCount == 1 && slices.Contains(st.Warnings, r.Message)
	}
	if !changed || !has(f.status(t)) {
		t.Fatalf("noted: changed %v, status %+v %q", changed, f.status(t).Repair, f.status(t).Warnings)
	}
	if got := series(scrape(t, d), "ckegen_auto_repair_waiting_machines"); !slices.Equal(got, []string{"ckegen_auto_repair_waiting_machines 1"}) {
		t.Errorf("gauge %q, want 1", got)
	}
	d.run(ctx, leader)
	if _, changed, _ := d.NoteRepair(ctx, r); changed || !has(f.status(t)) {
		t.Errorf("the next tick: changed %v, status %+v %q, want it kept", changed, f.status(t).Repair, f.status(t).Warnings)
	}
	if got := series(scrape(t, d), "ckegen_auto_repair_waiting_machines"); !slices.Equal(got, []string{"ckegen_auto_repair_waiting_machines 1"}) {
		t.Errorf("gauge after the next tick %q, want 1", got)
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
