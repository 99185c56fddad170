package tick

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// ckeServer stands in for a CKE server: a key under leader/ (CKE's
// election) and, when phase is not "", its status key written at at.
func (f *fixture) ckeServer(t *testing.T, phase string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyLeader)+"694d7c8a1b2f0a01", "cke-server-1")
	must(t, err)
	if phase != "" {
		_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeyCKEStatus), fmt.Sprintf(`{"phase":%q,"timestamp":%q}`, phase, at.Format(time.RFC3339Nano)))
		must(t, err)
	}
}

func (f *fixture) takeover(t *testing.T) {
	t.Helper()
	o, err := f.st.Ownership(context.Background())
	must(t, err)
	must(t, f.st.Takeover(context.Background(), o))
}

// wantHeld runs a tick and checks that it held back for reason, wrote
// nothing, and says so in the status and the metrics.
func (f *fixture) wantHeld(t *testing.T, d *testStep, leader, code, msg string) {
	t.Helper()
	before := f.clusterRev(t)
	if err := d.runOnce(context.Background(), leader); err != nil {
		t.Fatalf("a held tick failed: %v", err)
	}
	st := f.status(t)
	if st.Result != reason.Held || st.Reason != code || !strings.Contains(st.Message, msg) {
		t.Fatalf("status %s %s %q, want held %s with %q", st.Result, st.Reason, st.Message, code, msg)
	}
	if f.clusterRev(t) != before {
		t.Fatalf("a tick held by %s wrote the cluster", code)
	}
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_integration_held"); !slices.Contains(got, `ckegen_integration_held{reason="`+code+`"} 1`) {
		t.Errorf("metrics %q, want the hold reason %s", got, code)
	}
}

// TestOwnedByCKE: beside a CKE server that owns the integration, ckegen
// writes nothing and says how to take over.
func TestOwnedByCKE(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	f.ckeServer(t, "completed", testNow)
	d := f.step("d", nil)
	f.wantHeld(t, d, leader, reason.OwnedByCKE, "ckegenctl sabakan takeover")
	if f.cluster(t) != nil {
		t.Fatal("a cluster was written while CKE owns the integration")
	}
	st := f.status(t)
	if st.Mode != decision.ModeBesideCKE || st.Owner != intake.OwnerCKE {
		t.Errorf("mode %q owner %q, want %s and %s", st.Mode, st.Owner, decision.ModeBesideCKE, intake.OwnerCKE)
	}
}

// TestTakeoverPace: after a takeover, beside a CKE server, ckegen may
// build the first cluster whatever CKE's phase, then changes the cluster
// only while CKE's status is completed (or reboot-nodes) and fresh.
func TestTakeoverPace(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	f.ckeServer(t, "", time.Time{})
	f.takeover(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	c := f.cluster(t)
	if c == nil {
		t.Fatal("no first cluster after takeover although none existed")
	}
	if st := f.status(t); st.Owner != intake.OwnerCKEGen || st.Mode != decision.ModeBesideCKE {
		t.Errorf("owner %q mode %q", st.Owner, st.Mode)
	}
	worker := workers(c)[0]
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "unreachable")

	f.wantHeld(t, d, leader, reason.CKENotReady, "has written no status yet")
	f.ckeServer(t, "k8s-maintain", testNow.Add(-time.Minute))
	f.wantHeld(t, d, leader, reason.CKENotReady, "phase k8s-maintain (status written 1m0s ago)")
	f.ckeServer(t, "completed", testNow.Add(-11*time.Minute))
	f.wantHeld(t, d, leader, reason.CKENotReady, "is 11m0s old, over --cke-status-max-age 10m0s")

	f.ckeServer(t, "reboot-nodes", testNow.Add(-time.Minute))
	before := f.clusterRev(t)
	must(t, d.runOnce(ctx, leader))
	if f.clusterRev(t) == before {
		t.Fatalf("no write in phase reboot-nodes: %+v", f.status(t))
	}
	if st := f.status(t); st.Result != reason.OK || st.LastOp != "increase worker" {
		t.Errorf("status %s %s, want a worker added for the UNREACHABLE one", st.Result, st.LastOp)
	}
	if got := series(scrape(t, d), "ckegen_integration_held"); len(got) != 0 {
		t.Errorf("held metric after a tick that went on: %q", got)
	}
}

// TestCKEPhases: beside a CKE server, after a takeover, ckegen writes in
// the phases in which CKE v1.35.4's server runs its own integration
// (completed, reboot-nodes, upgrade-aborted, etcd-boot-aborted) and holds
// in every other, repair-machines included (blocked cannot be told from
// busy by the status key).
func TestCKEPhases(t *testing.T) {
	for _, c := range []struct {
		phase string
		write bool
	}{
		{"completed", true}, {"reboot-nodes", true}, {"upgrade-aborted", true}, {"etcd-boot-aborted", true},
		{"repair-machines", false}, {"upgrade-kubernetes", false}, {"etcd-boot", false}, {"k8s-maintain", false}, {"", false},
	} {
		t.Run(c.phase, func(t *testing.T) {
			f := newFixture(t)
			leader := f.lead(t)
			f.ckeServer(t, "", time.Time{})
			f.takeover(t)
			d := f.step("d", nil)
			ctx := context.Background()
			must(t, d.runOnce(ctx, leader)) // the first cluster
			f.rest(t, http.MethodPut, "/api/v1/state/"+serial(workers(f.cluster(t))[0]), "unreachable")
			phase := c.phase
			if phase == "" {
				phase = "nothing-known"
			}
			f.ckeServer(t, phase, testNow.Add(-time.Minute))
			before := f.clusterRev(t)
			must(t, d.runOnce(ctx, leader))
			if wrote := f.clusterRev(t) != before; wrote != c.write {
				t.Errorf("phase %s: wrote %v, want %v (%s %s)", phase, wrote, c.write, f.status(t).Reason, f.status(t).Message)
			}
			if st := f.status(t); !c.write && (st.Reason != reason.CKENotReady || !strings.Contains(st.Message, "writes only in phase "+intake.CKEPhases())) {
				t.Errorf("held in %s: %s %q", phase, st.Reason, st.Message)
			}
		})
	}
}

// TestCKEIntegrationActive: ckegen owns the integration but CKE's own was
// enabled again: nothing written. ckegen's own switch, not CKE's, disables
// ckegen while it owns the integration.
func TestCKEIntegrationActive(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	f.takeover(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, f.st.SetDisabled(ctx, false))
	f.wantHeld(t, d, leader, reason.CKEIntegrationActive, "CKE's own integration is enabled again")
	if f.cluster(t) != nil {
		t.Fatal("a cluster was written while both integrations are enabled")
	}
	f.takeover(t)
	must(t, f.st.SetCKEGenDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.Disabled || f.cluster(t) != nil {
		t.Fatalf("ckegen's own switch off: status %s, cluster %v", st.Result, f.cluster(t) != nil)
	}
	must(t, f.st.SetCKEGenDisabled(ctx, false))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.OK || f.cluster(t) == nil || st.Mode != decision.ModeStandalone {
		t.Fatalf("owned, CKE's switch true, ckegen's on, no CKE server: status %s mode %s", st.Result, st.Mode)
	}
}

// TestStandaloneHonoursCKESwitch: with no CKE server and no owner, the
// daemon stands in for CKE and follows sabakan/disabled, as before.
func TestStandaloneHonoursCKESwitch(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.Disabled {
		t.Fatalf("standalone, sabakan/disabled true: %s", st.Result)
	}
	must(t, f.st.SetDisabled(ctx, false))
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	if st.Result != reason.OK || st.Mode != decision.ModeStandalone || st.Owner != intake.OwnerCKE || f.cluster(t) == nil {
		t.Fatalf("standalone: %s mode %s owner %s", st.Result, st.Mode, st.Owner)
	}
}

// TestInvalidClusterForCKE: a cluster CKE would refuse (no CRI endpoint,
// which ckegenctl sabakan set-template would have filled in) is not written.
func TestInvalidClusterForCKE(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	ctx := context.Background()
	must(t, f.st.SetTemplate(ctx, []byte(strings.Replace(testTemplate, ","+testOptions, "", 1))))
	err := f.step("d", nil).runOnce(ctx, leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.InvalidCluster || !strings.Contains(te.Err.Error(), "options.kubelet.cri_endpoint") {
		t.Fatalf("tick: %v, want INVALID_CLUSTER naming CKE's rule", err)
	}
	if f.cluster(t) != nil {
		t.Fatal("a cluster CKE refuses was written")
	}
}

// TestHandbackHoldsWithoutCKEServer: once handed back, ckegen writes
// nothing even while no CKE server holds leader/: the server may be
// restarting, and only a takeover gives the integration back to ckegen.
// With no owner ever set and no server, it stands in for CKE as before.
func TestHandbackHoldsWithoutCKEServer(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	f.takeover(t)
	must(t, d.runOnce(ctx, leader))
	if f.cluster(t) == nil {
		t.Fatal("no cluster while ckegen owns the integration")
	}
	o, err := f.st.Ownership(ctx)
	must(t, err)
	must(t, f.st.Handback(ctx, o))
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(workers(f.cluster(t))[0]), "unreachable")
	f.wantHeld(t, d, leader, reason.OwnedByCKE, "handed back to CKE")
	if st := f.status(t); st.Mode != decision.ModeStandalone || st.Owner != intake.OwnerCKE {
		t.Errorf("mode %q owner %q", st.Mode, st.Owner)
	}
}

// TestInvalidOwner: an owner that is neither cke nor ckegen fails the tick
// naming the key and the commands that set it, and nothing is written.
func TestInvalidOwner(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	ctx := context.Background()
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyOwner), "both")
	must(t, err)
	err = f.step("d", nil).runOnce(ctx, leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.InvalidOwner || !strings.Contains(te.Err.Error(), "sabakan/owner") ||
		!strings.Contains(te.Err.Error(), "ckegenctl sabakan takeover") {
		t.Fatalf("tick: %v, want %s naming sabakan/owner and the fix", err, reason.InvalidOwner)
	}
	if f.cluster(t) != nil {
		t.Fatal("a cluster was written with an invalid owner")
	}
}
