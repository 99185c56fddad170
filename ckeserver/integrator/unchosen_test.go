package integrator

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// TestHoldsOnUnchosenConstraints: inside CKE's server, the same hold as
// ckegen's daemon (docs/models.md, "Upgrading with nothing stored"): the
// constraints are deleted after a tick that ran the count model; the
// next tick, and a restarted server's, hold with CONSTRAINTS_UNCHOSEN and
// write nothing, rather than run CKE's defaults, the rate model.
func TestHoldsOnUnchosenConstraints(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.CountDefaults())
	must(t, f.ig.Do(ctx, f.leader, nil))
	if st := f.status(t); st.Result != reason.OK || st.Model != constraints.CountModel {
		t.Fatalf("first tick: %s %s, model %q", st.Result, st.Reason, st.Model)
	}
	_, rev, err := f.st.GetCluster(ctx)
	must(t, err)
	_, err = f.site.Storage.Client.Delete(ctx, f.site.Storage.Key(storage.KeyConstraints))
	must(t, err)
	restarted, err := New(Config{Client: f.cke, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	must(t, err)
	for _, ig := range []*Integrator{f.ig, restarted} {
		must(t, ig.Do(ctx, f.leader, nil))
		st := f.status(t)
		if st.Result != reason.Held || st.Reason != reason.ConstraintsUnchosen || !strings.Contains(st.Message, "minimum-workers 1") || st.Model != constraints.CountModel {
			t.Errorf("status %s %s %q, model %q; want held %s", st.Result, st.Reason, st.Message, st.Model, reason.ConstraintsUnchosen)
		}
		if _, now, err := f.st.GetCluster(ctx); err != nil || now != rev {
			t.Errorf("the cluster was written while held (revision %d, was %d, %v)", now, rev, err)
		}
	}
}
