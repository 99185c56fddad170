package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestModeMetricsAndHealth: beside a CKE server, cke_leader is left to
// CKE, ckegen_leader and ckegen_standalone say how the daemon runs, and
// /health stays healthy while a tick correctly holds back; standalone,
// ckegen_standalone is 1 and cke_leader is ckegen's.
func TestModeMetricsAndHealth(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	ctx := context.Background()
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyLeader)+"cke", "cke-server")
	must(t, err)
	d := f.daemon("d", nil)
	d.setLeading(true)
	if r := d.runOnce(ctx, leader); r.Err != nil || r.Status.Reason != reason.OwnedByCKE {
		t.Fatalf("beside CKE: %+v", r.Status)
	}
	m := scrape(t, d)
	if got := series(m, "cke_leader"); len(got) != 0 {
		t.Errorf("beside a CKE server, cke_leader is CKE's: %q", got)
	}
	if got := series(m, "ckegen_leader "); !slices.Equal(got, []string{"ckegen_leader 1"}) {
		t.Errorf("ckegen_leader: %q", got)
	}
	if got := series(m, "ckegen_standalone"); !slices.Equal(got, []string{"ckegen_standalone 0"}) {
		t.Errorf("ckegen_standalone: %q", got)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), reason.OwnedByCKE) {
		t.Errorf("/health %d %s, want 200 naming %s while correctly held", rec.Code, rec.Body, reason.OwnedByCKE)
	}

	_, err = f.st.Client.Delete(ctx, f.st.Key(storage.KeyLeader)+"cke")
	must(t, err)
	if r := d.runOnce(ctx, leader); r.Err != nil || r.Status.Mode != decision.ModeStandalone {
		t.Fatalf("standalone: %+v", r.Status)
	}
	m = scrape(t, d)
	if got := series(m, "ckegen_standalone"); !slices.Equal(got, []string{"ckegen_standalone 1"}) {
		t.Errorf("ckegen_standalone: %q", got)
	}
	if got := series(m, "cke_leader"); !slices.Equal(got, []string{"cke_leader 1"}) {
		t.Errorf("standalone, cke_leader: %q", got)
	}
}

// TestFollowerModeIsTheTicks: the mode a daemon that does not lead
// reports (ckegen_standalone) is decided by the same function as the
// leader's tick (decision.ModeOf): beside a CKE server and standalone,
// the two say the same.
func TestFollowerModeIsTheTicks(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	ctx := context.Background()
	for _, cke := range []bool{true, false} {
		key := f.st.Key(storage.KeyLeader) + "cke"
		var err error
		if cke {
			_, err = f.st.Client.Put(ctx, key, "cke-server")
		} else {
			_, err = f.st.Client.Delete(ctx, key)
		}
		must(t, err)
		lead := f.daemon("lead", nil)
		lead.setLeading(true)
		r := lead.runOnce(ctx, leader)
		follower := f.daemon("follower", nil)
		wctx, cancel := context.WithCancel(ctx)
		go follower.watchMode(wctx)
		mode := func() string {
			follower.leader.mu.Lock()
			defer follower.leader.mu.Unlock()
			return follower.leader.mode
		}
		waitFor(t, "the follower's mode", func() bool { return mode() != "" })
		cancel()
		if got := mode(); got != r.Status.Mode || got == "" {
			t.Errorf("a CKE server %v: the follower says %q, the leader's tick %q", cke, got, r.Status.Mode)
		}
	}
}
