package liveview

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/storage"
)

// TestMapSnapshotFailureDomain: the map marks the failure domains at risk
// by the stored policy's failure domain, as the decision counts them: by
// rack without a policy, by the policy's label with one; a stored policy
// that does not load leaves no map, and the error says why.
func TestMapSnapshotFailureDomain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyCluster),
		`{"name":"t","nodes":[{"address":"10.0.0.2","user":"u","control_plane":true},{"address":"10.0.0.3","user":"u","control_plane":true},`+
			`{"address":"10.0.1.3","user":"u","control_plane":true}],"service_subnet":"10.68.0.0/16"}`)
	must(t, err)
	// Three control planes wanted: the decision keeps them where they are.
	must(t, sitetest.StoreOf(f.st).SetConstraints(ctx, *sitetest.Counts(3, 1)))
	r := f.reader(Options{})
	s, err := r.View(ctx)
	must(t, err)
	if m := s.Map; m == nil || m.FailureDomain != "rack" || len(m.QuorumAtRisk) != 1 || m.QuorumAtRisk[0].Domain != "0" {
		t.Fatalf("by rack: %+v (map error %v)", s.Map, s.MapErr)
	}

	for serial, feed := range map[string]string{"S000002": "a", "S000003": "b", "S000008": "b"} {
		must(t, f.store.SetLabel(serial, "power-feed", feed))
	}
	_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanPolicy), `{"failureDomain": {"label": "power-feed"}}`)
	must(t, err)
	f.clock.add(DefaultCacheTTL) // the labels are sabakan's: a fresh answer
	s, err = r.View(ctx)
	must(t, err)
	if m := s.Map; m.FailureDomain != "power-feed" || len(m.QuorumAtRisk) != 1 || m.QuorumAtRisk[0].Domain != "b" ||
		!slices.Equal(m.QuorumAtRisk[0].Racks, []int{0, 1}) {
		t.Errorf("by power feed: %+v", m.QuorumAtRisk)
	}

	_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanPolicy), `{"failureDomain": {"lable": "power-feed"}}`)
	must(t, err)
	f.clock.add(DefaultCacheTTL)
	s, err = r.View(ctx)
	must(t, err)
	if s.Map != nil || s.MapErr == nil || !strings.Contains(s.MapErr.Error(), "lable") {
		t.Errorf("invalid policy: map %+v, error %v", s.Map, s.MapErr)
	}
}
