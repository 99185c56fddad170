package liveview

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// TestMapAgreesWithStatus: the map's failure domains at risk are the
// decision's, counted on the cluster as the next tick leaves it: the map
// drawn before a tick says what the status says once the tick wrote,
// and the map drawn right after the write says it too. With the control
// planes held to racks 1 and 2, the first tick generates a cluster with
// two of three control planes in one rack; released under spread:
// quorum, the next tick moves one out, and nothing is at risk.
func TestMapAgreesWithStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Small(t, now, nil)
	st := site.Storage
	ctx := context.Background()
	clock := &clock{t: now}
	r := NewReader(st, Options{Now: clock.now})
	leader := site.Lead(t, "d", 0)
	step := tick.New(st, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	view := func(when string) map[string][]string {
		t.Helper()
		clock.add(DefaultCacheTTL) // a decision of its own, not the last one
		s, err := r.View(ctx)
		must(t, err)
		if s.Map == nil {
			t.Fatalf("%s: no map: %v", when, s.MapErr)
		}
		if s.Map.FailureDomain != "rack" {
			t.Errorf("%s: the map's failure domain %q, want rack", when, s.Map.FailureDomain)
		}
		out := map[string][]string{}
		for _, d := range s.Map.QuorumAtRisk {
			out[d.Domain] = d.ControlPlanes
			if len(d.Racks) == 0 {
				t.Errorf("%s: domain %s at risk on no rack of the map", when, d.Domain)
			}
		}
		return out
	}
	status := func() map[string][]string {
		t.Helper()
		s, err := st.GetStatus(ctx)
		must(t, err)
		if s.Domains == nil || s.Domains.FailureDomain != "rack" {
			t.Fatalf("status domains %+v", s.Domains)
		}
		out := map[string][]string{}
		for _, d := range s.Domains.Domains {
			if d.QuorumLost {
				out[d.Domain] = d.ControlPlanes
			}
		}
		if !slices.Equal(slices.Sorted(maps.Keys(out)), s.Domains.AtRisk) {
			t.Errorf("status: domains lost %v, at risk %v", out, s.Domains.AtRisk)
		}
		return out
	}
	tickOnce := func() {
		t.Helper()
		if res := step.Run(ctx, leader, nil, nil); res.Err != nil || res.Decision.Step == nil {
			t.Fatalf("the tick wrote nothing: %v", res.Err)
		}
	}
	put := func(policy string) {
		t.Helper()
		_, err := st.Client.Put(ctx, st.Key(storage.KeySabakanPolicy), policy)
		must(t, err)
	}

	put(`{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in (rack1, rack2)"]}}}`)
	before := view("before the first write")
	tickOnce()
	after := status()
	if len(after) != 1 {
		t.Fatalf("status after the first write: %v at risk, want one rack", after)
	}
	if diff := cmp.Diff(after, before); diff != "" {
		t.Errorf("the map before the first write and the status after it differ (-status +map):\n%s", diff)
	}
	if diff := cmp.Diff(after, view("after the first write")); diff != "" {
		t.Errorf("the map after the first write and the status differ (-status +map):\n%s", diff)
	}

	put(`{"placements": {"control-plane": {"spread": "quorum"}}}`)
	before = view("before the move")
	tickOnce()
	after = status()
	if len(after) != 0 {
		t.Fatalf("status after the move: %v at risk, want none", after)
	}
	if diff := cmp.Diff(after, before); diff != "" {
		t.Errorf("the map before the move and the status after it differ (-status +map):\n%s", diff)
	}
	if diff := cmp.Diff(after, view("after the move")); diff != "" {
		t.Errorf("the map after the move and the status differ (-status +map):\n%s", diff)
	}
}
