package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// TestSnapshotKnowing: a reader that holds the cluster at its current
// mod revision gets every other value and the cluster's revision, but
// not the cluster's value again; a changed or deleted cluster is read as
// by Snapshot. A reader that leads nothing is not Leading.
func TestSnapshotKnowing(t *testing.T) {
	ctx := context.Background()
	s := New(etcdtest.Client(t), "/k/")
	leader, _ := campaign(t, s)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetTemplate(ctx, []byte(`{"name":"t"}`)))
	_, err := s.Client.Put(ctx, s.Key(KeyCluster), `{"name":"a"}`)
	must(err)
	_, rev, err := s.GetCluster(ctx)
	must(err)

	snap, err := s.SnapshotKnowing(ctx, leader, rev)
	must(err)
	if _, _, err := snap.Cluster(); !errors.Is(err, ErrNotRead) {
		t.Errorf("the cluster known at its revision was read again: %v", err)
	}
	if got := snap.ClusterModRevision(); got != rev {
		t.Errorf("ClusterModRevision %d, want %d", got, rev)
	}
	if data, _, err := snap.Template(); err != nil || string(data) != `{"name":"t"}` || !snap.Leading {
		t.Errorf("the other values: template %q (%v), leading %v", data, err, snap.Leading)
	}

	for _, known := range []int64{rev - 1, 0} {
		snap, err := s.SnapshotKnowing(ctx, leader, known)
		must(err)
		if c, got, err := snap.Cluster(); err != nil || c.Name != "a" || got != rev {
			t.Errorf("known at %d: cluster %v at %d (%v), want it read at %d", known, c, got, err, rev)
		}
	}

	_, err = s.Client.Delete(ctx, s.Key(KeyCluster))
	must(err)
	snap, err = s.SnapshotKnowing(ctx, leader, rev)
	must(err)
	if _, _, err := snap.Cluster(); !errors.Is(err, ErrNotFound) || snap.ClusterModRevision() != 0 {
		t.Errorf("a deleted cluster: %v, revision %d", err, snap.ClusterModRevision())
	}
	if snap, err := s.Snapshot(ctx, ""); err != nil || snap.Leading {
		t.Errorf("a snapshot without an election key: leading %v (%v)", snap.Leading, err)
	}
}
