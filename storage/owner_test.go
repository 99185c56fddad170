package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

func TestOwnershipDefaults(t *testing.T) {
	s := New(etcdtest.Client(t), "/ownership/")
	ctx := context.Background()
	o, err := s.Ownership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Ownership{Owner: OwnerCKE}
	if o != want {
		t.Errorf("Ownership = %+v, want %+v", o, want)
	}
	if _, err := s.CKEGenLeader(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("CKEGenLeader = %v, want ErrNotFound", err)
	}
}

// Takeover and Handback flip the owner and CKE's switch together, and
// refuse (writing nothing) when either changed since it was read.
func TestTakeoverHandback(t *testing.T) {
	cli := etcdtest.Client(t)
	s := New(cli, "/takeover/")
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetDisabled(ctx, false))
	o, err := s.Ownership(ctx)
	must(err)
	if o.CKEDisabledRev == 0 || o.CKEDisabled {
		t.Fatalf("Ownership = %+v, want CKE's switch read as false with its revision", o)
	}
	// Someone flips CKE's switch after the read: the takeover must lose.
	must(s.SetDisabled(ctx, false))
	if err := s.Takeover(ctx, o); !errors.Is(err, ErrOwnershipChanged) {
		t.Fatalf("Takeover on a stale read = %v, want ErrOwnershipChanged", err)
	}
	if got := raw(t, cli, s.Key(KeyOwner)); got != "<none>" {
		t.Fatalf("a refused takeover wrote the owner %q", got)
	}
	o, err = s.Ownership(ctx)
	must(err)
	must(s.Takeover(ctx, o))
	if a, b := raw(t, cli, s.Key(KeyOwner)), raw(t, cli, s.Key(KeySabakanDisabled)); a != "ckegen" || b != "true" {
		t.Fatalf("after takeover owner %q, sabakan/disabled %q; want ckegen, true", a, b)
	}
	o, err = s.Ownership(ctx)
	must(err)
	if !o.OwnedByCKEGen() || !o.CKEDisabled {
		t.Fatalf("Ownership after takeover = %+v", o)
	}
	// ckegen's own switch is part of the guard too.
	must(s.SetCKEGenDisabled(ctx, true))
	if err := s.Handback(ctx, o); !errors.Is(err, ErrOwnershipChanged) {
		t.Fatalf("Handback on a stale read = %v, want ErrOwnershipChanged", err)
	}
	o, err = s.Ownership(ctx)
	must(err)
	if !o.CKEGenDisabled {
		t.Fatalf("ckegen's switch not read: %+v", o)
	}
	must(s.Handback(ctx, o))
	if a, b := raw(t, cli, s.Key(KeyOwner)), raw(t, cli, s.Key(KeySabakanDisabled)); a != "cke" || b != "false" {
		t.Fatalf("after handback owner %q, sabakan/disabled %q; want cke, false", a, b)
	}
}

func TestOwnershipReadsCKE(t *testing.T) {
	cli := etcdtest.Client(t)
	s := New(cli, "/ckeserver/")
	ctx := context.Background()
	ts := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for k, v := range map[string]string{
		s.Key(KeyLeader) + "694d7c8a1b2f0a01": "cke-server-1",
		s.Key(KeyCKEStatus):                   `{"phase":"completed","timestamp":"2026-11-25T10:00:00Z"}`,
		s.Key(KeyCKEGenLeader) + "1":          "ckegen-1",
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	o, err := s.Ownership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !o.CKEServer || o.CKEStatus == nil || o.CKEStatus.Phase != "completed" || !o.CKEStatus.Timestamp.Equal(ts) {
		t.Errorf("Ownership = %+v (status %+v), want a CKE server in phase completed at %s", o, o.CKEStatus, ts)
	}
	if name, err := s.CKEGenLeader(ctx); name != "ckegen-1" || err != nil {
		t.Errorf("CKEGenLeader = %q, %v", name, err)
	}
	if name, err := s.CKELeader(ctx); name != "cke-server-1" || err != nil {
		t.Errorf("CKELeader = %q, %v", name, err)
	}
	if _, err := cli.Put(ctx, s.Key(KeyOwner), "both"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ownership(ctx); !errors.Is(err, ErrInvalid) {
		t.Errorf("an owner of %q: %v, want ErrInvalid", "both", err)
	}
}

// A cluster write that relies on an ownership read loses when a takeover
// or handback lands in between, and writes nothing: two integrations never
// both write the cluster.
func TestPutClusterOwnedLosesToTakeover(t *testing.T) {
	cli := etcdtest.Client(t)
	s := New(cli, "/guarded/")
	ctx := context.Background()
	leaderKey, _ := campaign(t, s)
	o, err := s.Ownership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.PutClusterOwned(ctx, leaderKey, []byte(`{"name":"a"}`), 0, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Takeover(ctx, o); err != nil {
		t.Fatal(err)
	}
	// The old read says CKE owns it: the write must lose.
	if _, err := s.PutClusterOwned(ctx, leaderKey, []byte(`{"name":"b"}`), rev, 1, o); !errors.Is(err, ErrOwnershipChanged) {
		t.Fatalf("write after a takeover = %v, want ErrOwnershipChanged", err)
	}
	if got := raw(t, cli, s.Key(KeyCluster)); got != `{"name":"a"}` {
		t.Fatalf("cluster = %s after a refused write", got)
	}
	// A changed cluster is still told as such.
	o, _ = s.Ownership(ctx)
	if _, err := s.PutClusterOwned(ctx, leaderKey, []byte(`{"name":"c"}`), rev+100, 1, o); !errors.Is(err, ErrConflict) {
		t.Fatalf("write on a stale cluster = %v, want ErrConflict", err)
	}
	if _, err := s.PutClusterOwned(ctx, leaderKey, []byte(`{"name":"d"}`), rev, 1, o); err != nil {
		t.Fatalf("write with a fresh read: %v", err)
	}
}
