package integrator

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// TestAnnounce: CKE's server with ckegen inside records, under the lease
// its election key under leader/ is named after, its name, ckegen's
// version and commit and the CKE release it is built on; who acts then
// reads it as CKE's server with ckegen inside, and when the lease goes
// (the process), the record goes with it.
func TestAnnounce(t *testing.T) {
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: 1})
	ctx := context.Background()
	resp, err := f.cke.Get(ctx, f.leader)
	must(t, err)
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	must(t, f.ig.Announce(ctx, lease))

	st := f.st.Storage
	who, err := liveview.ReadActor(ctx, st, intake.Ownership{}, time.Now())
	must(t, err)
	v := version.Current()
	if who.Kind != liveview.InsideCKE || who.CKE == nil || who.CKE.Presence == nil {
		t.Fatalf("who acts after Announce: %+v", who)
	}
	p := *who.CKE.Presence
	want := storage.Presence{Name: "cke-1", Kind: storage.PresenceInsideCKE, Version: v.Version, Commit: v.Commit, CKEVersion: version.CKEVersion, Since: testNow}
	if !p.Since.Equal(want.Since) || p.Name != want.Name || p.Kind != want.Kind || p.Version != want.Version || p.Commit != want.Commit || p.CKEVersion != want.CKEVersion {
		t.Errorf("the record: %+v, want %+v", p, want)
	}

	_, err = f.cke.Revoke(ctx, lease)
	must(t, err)
	left, err := f.cke.Get(ctx, storage.KeyPresence, clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	if left.Count != 0 {
		t.Errorf("%d records left after the server's lease went", left.Count)
	}
	who, err = liveview.ReadActor(ctx, st, intake.Ownership{}, time.Now())
	must(t, err)
	if who.Kind != liveview.Nobody {
		t.Errorf("who acts after the server went: %s", who.Says)
	}
}
