package tick

import (
	"context"
	"testing"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestInsideCKEHints: inside CKE's server, a missing template is waited
// for in CKE's words: ckecli sabakan set-template.
func TestInsideCKEHints(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Client.Delete(ctx, f.st.Key(storage.KeySabakanTemplate))
	must(t, err)
	d := f.step("d", func(c *testConfig) { c.Mode = decision.ModeInsideCKE })
	must(t, d.runOnce(ctx, f.lead(t)))
	if st := f.status(t); st.Reason != reason.NoTemplate || st.Message != "no template: set one with ckecli sabakan set-template" {
		t.Errorf("inside CKE: %s %q", st.Reason, st.Message)
	}
}
