package main

import (
	"strings"
	"testing"
)

// TestSettingWarnings: set-template, set-variables and constraints set run
// the generator dry on the inventory of the compatible server, as
// --dry-run does, print its warnings on stderr (each once), and store the
// value all the same; before the integration is set up there is nothing
// to try and nothing is said; a sabakan that does not answer is a note.
func TestSettingWarnings(t *testing.T) {
	f := newPlanFixture(t)
	typo := `warning: template role "storagee" matches no machine; inventory roles: compute, storage` + "\n"

	// No template stored yet: nothing to try the constraints on (the note
	// says where set started, with nothing stored). The count model's
	// defaults: the template's weights below are no warning there.
	if _, errOut, code := f.run("constraints", "set", "minimum-workers", "1"); code != 0 ||
		errOut != "note: no constraints are stored: setting minimum-workers on CKE v1.35.4's defaults (control-plane-count 1, minimum-workers-rate 80: the rate model), as CKE's ckecli does\n" {
		t.Fatalf("constraints set before any template: exit %d, stderr %q", code, errOut)
	}
	// A template but no URL: nothing to try it on either.
	good := f.file("good.yml", planTemplate)
	if _, errOut, code := f.run("sabakan", "set-template", good); code != 0 || errOut != "" {
		t.Fatalf("set-template before set-url: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := f.run("sabakan", "set-url", f.sabakan.URL); code != 0 || errOut != "" {
		t.Fatalf("set-url: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := f.run("sabakan", "set-template", good); code != 0 || errOut != "" {
		t.Fatalf("a good template: exit %d, stderr %q", code, errOut)
	}

	bad := f.file("typo.yml", strings.Replace(planTemplate, "role: storage", "role: storagee", 1))
	out, errOut, code := f.run("sabakan", "set-template", bad)
	if code != 0 || out != "" || errOut != typo {
		t.Errorf("a template with a misspelt role: exit %d, stdout %q, stderr %q; want exit 0 and only %q", code, out, errOut, typo)
	}
	if got := f.raw("sabakan/template"); !strings.Contains(got, `"storagee"`) {
		t.Errorf("the template with the warning was not stored: %s", got)
	}

	// The constraints' own warning once, then the generator's.
	even := "warning: constraints: control-plane-count is even (2)"
	_, errOut, code = f.run("constraints", "set", "control-plane-count", "2")
	if code != 0 || strings.Count(errOut, even) != 1 || !strings.HasSuffix(errOut, typo) {
		t.Errorf("constraints set with the misspelt template stored: exit %d, stderr %q; want %q once, then %q", code, errOut, even, typo)
	}
	if got := f.raw("constraints"); !strings.Contains(got, `"control-plane-count":2`) {
		t.Errorf("constraints not stored: %s", got)
	}
	vars := f.file("vars.json", `{"having": {"roles": ["compute"]}}`)
	if _, errOut, code := f.run("sabakan", "set-variables", vars); code != 0 || !strings.Contains(errOut, `template role "storagee" matches no machine; inventory roles: compute`) {
		t.Errorf("set-variables: exit %d, stderr %q", code, errOut)
	}

	// sabakan does not answer: a note, and the template is stored.
	f.sabakan.Close()
	_, errOut, code = f.run("sabakan", "set-template", good)
	if code != 0 || !strings.HasPrefix(errOut, "note: not tried on the inventory (sabakan at "+f.sabakan.URL+"/graphql: ") ||
		!strings.HasSuffix(errOut, "ckegenctl sabakan status shows the daemon's warnings after its next tick\n") {
		t.Errorf("sabakan down: exit %d, stderr %q", code, errOut)
	}
	if got := f.raw("sabakan/template"); strings.Contains(got, `"storagee"`) {
		t.Errorf("the good template was not stored with sabakan down: %s", got)
	}
}
