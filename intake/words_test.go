package intake

import "testing"

// TestInCKEWords: inside CKE's server, the commands CKE's ckecli has are
// named as ckecli's; the others stay ckegenctl's.
func TestInCKEWords(t *testing.T) {
	for in, want := range map[string]string{
		"no template: set one with ckegenctl sabakan set-template":                     "no template: set one with ckecli sabakan set-template",
		"raise it with ckegenctl constraints set minimum-workers N":                    "raise it with ckegenctl constraints set minimum-workers N",
		"ckegenctl constraints set minimum-workers-rate 80 takes CKE's":                "ckecli constraints set minimum-workers-rate 80 takes CKE's",
		"ckegenctl constraints set maximum-workers 9":                                  "ckegenctl constraints set maximum-workers 9",
		"ckegenctl constraints set control-plane-count 3":                              "ckecli constraints set control-plane-count 3",
		"ckegenctl sabakan trigger schedule applies the plan":                          "ckegenctl sabakan trigger schedule applies the plan",
		"fix it with ckegenctl sabakan set-policy; see ckegenctl sabakan get-template": "fix it with ckegenctl sabakan set-policy; see ckecli sabakan get-template",
		"ckegenctl sabakan set-templates":                                              "ckegenctl sabakan set-templates",
	} {
		if got := InCKEWords(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
