package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// TestPolicyKey: set, get and clear sabakan/policy; a write checked
// against a template that changed since is refused and stores nothing.
func TestPolicyKey(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "/p")
	if _, _, err := s.GetPolicy(ctx); !errors.Is(err, ErrNotFound) || err.Error() != "sabakan/policy: not found" {
		t.Fatalf("GetPolicy on an empty etcd: %v", err)
	}
	// No template stored: revision 0.
	if err := s.SetPolicy(ctx, []byte(`{"stickiness":1}`), 0); err != nil {
		t.Fatal(err)
	}
	if got := raw(t, cli, "/p/sabakan/policy"); got != `{"stickiness":1}` {
		t.Errorf("stored %q", got)
	}
	if err := s.SetTemplate(ctx, []byte(`{"name":"t"}`)); err != nil {
		t.Fatal(err)
	}
	_, tmplRev, err := s.GetTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Checked against no template, but one was stored since.
	if err := s.SetPolicy(ctx, []byte(`{"stickiness":2}`), 0); !errors.Is(err, ErrTemplateChanged) {
		t.Errorf("SetPolicy with a stale revision: %v, want ErrTemplateChanged", err)
	}
	if err := s.SetPolicy(ctx, []byte(`{"stickiness":3}`), tmplRev-1); !errors.Is(err, ErrTemplateChanged) {
		t.Errorf("SetPolicy with a stale revision: %v, want ErrTemplateChanged", err)
	}
	if got := raw(t, cli, "/p/sabakan/policy"); got != `{"stickiness":1}` {
		t.Errorf("a refused write stored %q", got)
	}
	if err := s.SetPolicy(ctx, []byte(`{"stickiness":4}`), tmplRev); err != nil {
		t.Fatal(err)
	}
	data, rev, err := s.GetPolicy(ctx)
	if err != nil || string(data) != `{"stickiness":4}` || rev <= tmplRev {
		t.Errorf("GetPolicy = %q, %d, %v", data, rev, err)
	}
	if had, err := s.ClearPolicy(ctx); err != nil || !had {
		t.Errorf("ClearPolicy = %v, %v; want true", had, err)
	}
	if got := raw(t, cli, "/p/sabakan/policy"); got != "<none>" {
		t.Errorf("after ClearPolicy: %q", got)
	}
	if had, err := s.ClearPolicy(ctx); err != nil || had {
		t.Errorf("ClearPolicy again = %v, %v; want false", had, err)
	}
}
