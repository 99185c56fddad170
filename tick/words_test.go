package tick

import (
	"context"
	"testing"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestInCKEWords: inside CKE's server, the commands CKE's ckecli has are
// named as ckecli's; the others stay ckegenctl's.
func TestInCKEWords(t *testing.T) {
	for in, want := range map[string]string{
		"no template: set one with ckegenctl sabakan set-template":                     "no template: set one with ckecli sabakan set-template",
		"raise it with ckegenctl constraints set minimum-workers N":                    "raise it with ckecli constraints set minimum-workers N",
		"ckegenctl sabakan trigger schedule applies the plan":                          "ckegenctl sabakan trigger schedule applies the plan",
		"fix it with ckegenctl sabakan set-policy; see ckegenctl sabakan get-template": "fix it with ckegenctl sabakan set-policy; see ckecli sabakan get-template",
		"ckegenctl sabakan set-templates":                                              "ckegenctl sabakan set-templates",
	} {
		if got := inCKEWords(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

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
