package intake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

const (
	goodTemplate = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16"}`
	goodCluster  = `{"name":"t","nodes":[{"address":"10.0.0.2","user":"u","control_plane":true}],"service_subnet":"10.68.0.0/16"}`
	goodPolicy   = "placements:\n  control-plane:\n    groups: [{name: any}]\n"
)

// cli is the etcd of the running test: each top-level test that reads
// etcd starts one (a subtest's cleanup would close a shared one).
var cli *clientv3.Client

// site stores values (key: value; "" deletes) under a fresh prefix and
// returns its storage.
func site(t *testing.T, values map[string]string) storage.Storage {
	t.Helper()
	st := storage.New(cli, strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())+"/")
	put(t, st, values)
	return st
}

func put(t *testing.T, st storage.Storage, values map[string]string) {
	t.Helper()
	for k, v := range values {
		var err error
		if v == "" {
			_, err = st.Client.Delete(context.Background(), st.Key(k))
		} else {
			_, err = st.Client.Put(context.Background(), st.Key(k), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func snapshot(t *testing.T, st storage.Storage) *storage.Snapshot {
	t.Helper()
	var r Reader
	snap, err := st.Read(context.Background(), r.Request(""))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Leading {
		t.Error("a snapshot read without an election key is Leading")
	}
	return snap
}

// ready are the settings without which nothing runs.
func ready() map[string]string {
	return map[string]string{storage.KeySabakanTemplate: goodTemplate, storage.KeySabakanURL: "http://sabakan/graphql"}
}

func with(m map[string]string, k, v string) map[string]string {
	m[k] = v
	return m
}

// TestRefusals: each setting missing or invalid, how the daemon's status
// and ckegenctl say it. These strings are the operator's interface: the
// daemon's status and `ckegenctl sabakan plan` have said them since before
// this package.
func TestRefusals(t *testing.T) {
	cli = etcdtest.Client(t)
	cases := []struct {
		name    string
		values  map[string]string
		whatIf  WhatIf
		reason  string
		status  string // Refusal.Error, as a substring when it ends with "..."
		explain string // Explained(err, true)
	}{
		{name: "no template", values: map[string]string{storage.KeySabakanURL: "u"},
			reason:  reason.NoTemplate,
			status:  "no template: set one with ckegenctl sabakan set-template",
			explain: "no template: set one with ckegenctl sabakan set-template, or give --template"},
		{name: "invalid template", values: with(ready(), storage.KeySabakanTemplate, `{"name":""}`),
			reason: reason.InvalidTemplate, status: "...", explain: "the stored template is invalid: ... (set one with ckegenctl sabakan set-template)"},
		{name: "invalid what-if template", values: ready(), whatIf: WhatIf{Template: []byte(`{"name":""}`)},
			reason: reason.InvalidTemplate, status: "template: ...", explain: "template: ..."},
		{name: "no url", values: map[string]string{storage.KeySabakanTemplate: goodTemplate},
			reason: reason.NoURL, status: "no sabakan URL: set one with ckegenctl sabakan set-url",
			explain: "no sabakan URL: set one with ckegenctl sabakan set-url"},
		{name: "invalid variables", values: with(ready(), storage.KeySabakanQueryVariables, `{"having":1}`),
			reason: reason.InvalidVariables, status: "...", explain: "the stored query variables are invalid: ... (set them with ckegenctl sabakan set-variables)"},
		{name: "invalid what-if variables", values: ready(), whatIf: WhatIf{Variables: []byte(`[`)},
			reason: reason.InvalidVariables, status: "variables: ...", explain: "variables: ..."},
		{name: "constraints that do not parse", values: with(ready(), storage.KeyConstraints, `{"control-plane-count":"x"}`),
			reason: reason.InvalidConstraints, status: "...", explain: "the stored constraints are invalid: ... (set them with ckegenctl constraints set)"},
		{name: "what-if constraints that do not validate", values: ready(), whatIf: WhatIf{Constraints: &constraints.Constraints{}},
			reason: reason.InvalidConstraints, status: "constraints: ...", explain: "constraints: ..."},
		{name: "invalid cluster", values: with(ready(), storage.KeyCluster, `{`),
			reason: reason.InvalidCluster, status: "...", explain: "the stored cluster is invalid: ..."},
		{name: "invalid cluster revision", values: with(ready(), storage.KeyClusterRevision, `x`),
			reason: reason.InvalidCluster, status: "...", explain: "the cluster's template revision: ..."},
		{name: "invalid policy", values: with(ready(), storage.KeySabakanPolicy, "placements: 1"),
			reason:  reason.InvalidPolicy,
			status:  "...; this is the policy stored in sabakan/policy: fix it with ckegenctl sabakan set-policy, or remove it with ckegenctl sabakan clear-policy",
			explain: "the stored policy is invalid for the template: ... (fix it with ckegenctl sabakan set-policy, or clear it with clear-policy)"},
		{name: "invalid what-if policy", values: ready(), whatIf: WhatIf{Policy: []byte("placements: 1")},
			reason: reason.InvalidPolicy, status: "policy: ...", explain: "policy: ..."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Reader
			s, err := r.Read(snapshot(t, site(t, c.values)), c.whatIf)
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("Read = %v, %v; want a *Refusal", s, err)
			}
			if ref.Reason != c.reason {
				t.Errorf("reason %s, want %s", ref.Reason, c.reason)
			}
			match(t, "status", ref.Error(), c.status, ref.Err)
			match(t, "explanation", Explained(err, true).Error(), c.explain, ref.Err)
			if ref.Err != nil && !errors.Is(Explained(err, true), ref.Err) {
				t.Error("the explanation does not wrap the cause")
			}
		})
	}
}

// match checks got against want, where "..." in want stands for the
// cause's text.
func match(t *testing.T, what, got, want string, cause error) {
	t.Helper()
	if cause != nil {
		want = strings.Replace(want, "...", cause.Error(), 1)
	}
	if got != want {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestReadOrder: with several settings refused, the first in the daemon's
// order is reported, by the daemon and by ckegenctl alike.
func TestReadOrder(t *testing.T) {
	cli = etcdtest.Client(t)
	bad := map[string]string{
		storage.KeySabakanTemplate:       `{"name":""}`,
		storage.KeySabakanQueryVariables: `[`,
		storage.KeyConstraints:           `{"control-plane-count":0}`,
		storage.KeyCluster:               `{`,
		storage.KeySabakanPolicy:         "placements: 1",
	}
	st := site(t, bad)
	for _, want := range []Setting{SettingTemplate, SettingURL, SettingVariables, SettingConstraints, SettingCluster, SettingPolicy} {
		var r Reader
		_, err := r.Read(snapshot(t, st), WhatIf{})
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Setting != want {
			t.Fatalf("refused %v, want %s", err, want)
		}
		// Fix it; the next one is reported.
		fix := map[Setting]map[string]string{
			SettingTemplate: {storage.KeySabakanTemplate: goodTemplate}, SettingURL: {storage.KeySabakanURL: "u"},
			SettingVariables: {storage.KeySabakanQueryVariables: ""}, SettingConstraints: {storage.KeyConstraints: ""},
			SettingCluster: {storage.KeyCluster: goodCluster}, SettingPolicy: {storage.KeySabakanPolicy: goodPolicy},
		}[want]
		put(t, st, fix)
	}
	var r Reader
	if _, err := r.Read(snapshot(t, st), WhatIf{}); err != nil {
		t.Fatalf("all fixed: %v", err)
	}
}

// TestReadEach: a view gets every refusal at once, and what could be read.
func TestReadEach(t *testing.T) {
	cli = etcdtest.Client(t)
	st := site(t, map[string]string{
		storage.KeySabakanTemplate: `{"name":""}`,
		storage.KeyConstraints:     `{"control-plane-count":0}`,
		storage.KeyCluster:         goodCluster,
	})
	var r Reader
	s, refused := r.ReadEach(snapshot(t, st), WhatIf{})
	var got []string
	for k := range refused {
		got = append(got, string(k))
	}
	if len(refused) != 3 || refused[SettingTemplate] == nil || refused[SettingURL] == nil || !refused[SettingURL].Missing || refused[SettingConstraints] == nil {
		t.Errorf("refused %v, want template, url (missing) and constraints", got)
	}
	if s.Current == nil || s.Current.Name != "t" {
		t.Errorf("the cluster was not read beside the refusals: %+v", s.Current)
	}
}

// TestSettings: what Read returns, what-if values replacing stored ones.
func TestSettings(t *testing.T) {
	cli = etcdtest.Client(t)
	st := site(t, with(with(with(ready(), storage.KeyCluster, goodCluster), storage.KeyConstraints, `{"control-plane-count":1}`),
		storage.KeySabakanQueryVariables, `{"having":{"racks":[1]}}`))
	var r Reader
	s, err := r.Read(snapshot(t, st), WhatIf{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := st.Get(context.Background(), storage.KeySabakanTemplate)
	tmplRev := tmpl.ModRevision
	switch {
	case s.URL != "http://sabakan/graphql":
		t.Errorf("URL %q", s.URL)
	case s.TemplateRevision != tmplRev || tmplRev == 0:
		t.Errorf("template revision %d, want %d", s.TemplateRevision, tmplRev)
	case !s.ConstraintsStored || s.Constraints.ControlPlaneCount != 1:
		t.Errorf("constraints %+v stored %v", s.Constraints, s.ConstraintsStored)
	case len(s.Warnings) != len(s.Constraints.Warnings()):
		t.Errorf("warnings %q, want the constraints' %q", s.Warnings, s.Constraints.Warnings())
	case string(s.VariablesData) != `{"having":{"racks":[1]}}` || s.Variables.Having == nil:
		t.Errorf("variables %s %+v", s.VariablesData, s.Variables)
	case s.Current == nil || s.ClusterRevision == 0:
		t.Errorf("cluster %+v at %d", s.Current, s.ClusterRevision)
	case !s.TemplateChanged():
		// No cluster-revision stored: built from revision 0.
		t.Error("TemplateChanged false for a cluster built from another template revision")
	}

	put(t, st, map[string]string{storage.KeyClusterRevision: fmt.Sprint(tmplRev)})
	if s, err = r.Read(snapshot(t, st), WhatIf{}); err != nil || s.TemplateChanged() {
		t.Errorf("built from the stored template: TemplateChanged %v (%v)", s.TemplateChanged(), err)
	}
	c := constraints.CountDefaults()
	s, err = r.Read(snapshot(t, st), WhatIf{Template: []byte(goodTemplate), Constraints: &c, Variables: []byte(`{}`)})
	switch {
	case err != nil:
		t.Fatal(err)
	case !s.TemplateChanged():
		t.Error("a what-if template must count as changed")
	case s.Constraints.ControlPlaneCount != c.ControlPlaneCount || !s.ConstraintsStored:
		t.Errorf("what-if constraints not applied: %+v", s.Constraints)
	case string(s.VariablesData) != `{}`:
		t.Errorf("what-if variables not applied: %s", s.VariablesData)
	}
	put(t, st, map[string]string{storage.KeyConstraints: ""})
	if s, _ = r.Read(snapshot(t, st), WhatIf{}); s.ConstraintsStored || !reflect.DeepEqual(s.Constraints, constraints.Default()) || !s.Constraints.RateModel() {
		t.Errorf("no constraints stored: %+v stored %v, want CKE v1.35.4's defaults (the rate model)", s.Constraints, s.ConstraintsStored)
	}
}

// TestCaches: the cluster is parsed again only when its key changed, the
// policy compiled again only when it or the template changed, and a
// what-if policy or template never lands in the cache.
func TestCaches(t *testing.T) {
	cli = etcdtest.Client(t)
	st := site(t, with(with(ready(), storage.KeyCluster, goodCluster), storage.KeySabakanPolicy, goodPolicy))
	var r Reader
	read := func(w WhatIf) *Settings {
		t.Helper()
		s, err := r.Read(snapshot(t, st), w)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := read(WhatIf{})
	if first.Policy == nil {
		t.Fatal("no policy")
	}
	second := read(WhatIf{})
	if second.Current != first.Current || second.Policy != first.Policy {
		t.Error("nothing changed, yet the cluster or the policy was read again")
	}
	// A snapshot that did not read the cluster's value again, as the
	// daemon takes them.
	known, err := st.Read(context.Background(), r.Request(""))
	if err != nil || !known.NotRead(storage.KeyCluster) {
		t.Fatalf("a snapshot of a reader holding the cluster read it again (%v)", err)
	}
	if s, err := r.Read(known, WhatIf{}); err != nil || s.Current != first.Current {
		t.Errorf("a snapshot that holds the cluster's revision only: %v", err)
	}
	if w := read(WhatIf{Policy: []byte(goodPolicy)}); w.Policy == first.Policy {
		t.Error("a what-if policy came from the cache")
	}
	if w := read(WhatIf{Template: []byte(goodTemplate)}); w.Policy == first.Policy {
		t.Error("the policy for a what-if template came from the cache")
	}
	if again := read(WhatIf{}); again.Policy != first.Policy {
		t.Error("a what-if read replaced the cached policy")
	}
	put(t, st, map[string]string{storage.KeyCluster: goodCluster, storage.KeySabakanTemplate: goodTemplate})
	third := read(WhatIf{})
	if third.Current == first.Current {
		t.Error("the cluster key changed, yet the cached cluster was used")
	}
	if third.Policy == first.Policy {
		t.Error("the template changed, yet the cached policy was used")
	}
	put(t, st, map[string]string{storage.KeySabakanPolicy: "placements: 1"})
	if _, err := r.Read(snapshot(t, st), WhatIf{}); err == nil {
		t.Error("the policy changed to an invalid one, yet the cached one was used")
	}
}

// TestReadChange: the change settings and their refusals.
func TestReadChange(t *testing.T) {
	cli = etcdtest.Client(t)
	st := site(t, with(ready(), storage.KeySabakanTrigger, "planning"))
	put(t, st, map[string]string{storage.KeySabakanQuietTime: "5m", storage.KeySabakanMaxUnhealthy: "10%"})
	var r Reader
	s, err := r.Read(snapshot(t, st), WhatIf{})
	if c := s.Change; err != nil || c.Trigger != TriggerPlanning || c.TriggerRevision == 0 || c.QuietTime.Minutes() != 5 || c.MaxUnhealthy == nil {
		t.Errorf("Read = %+v, %v", c, err)
	}
	for key, want := range map[string]string{
		storage.KeySabakanTrigger:      `stored sabakan/trigger: invalid stored value: trigger: must be planning (compute and store the plan, change nothing) or schedule (apply it one step per tick), got "nonsense" (set it with ckegenctl sabakan trigger)`,
		storage.KeySabakanQuietTime:    `stored sabakan/quiet-time: invalid stored value: quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got "nonsense" (set it with ckegenctl sabakan set-quiet-time)`,
		storage.KeySabakanMaxUnhealthy: `stored sabakan/max-unhealthy: invalid stored value: max-unhealthy: want a count of nodes such as 5 or a percentage of the cluster's nodes such as 40%, got "nonsense" (set it with ckegenctl sabakan set-max-unhealthy)`,
	} {
		st := storage.New(cli, "change-"+key+"/")
		put(t, st, with(ready(), key, "nonsense"))
		_, err := r.Read(snapshot(t, st), WhatIf{})
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Reason != RowOf(ref.Setting).Reason || ref.Error() != want || Explained(err, false).Error() != want {
			t.Errorf("%s nonsense: %v, want %q", key, err, want)
		}
	}
}

// TestSwitches: the owner and both switches, their defaults, their
// refusals, and what is read of CKE's server; a switch refused comes
// before every other setting.
func TestSwitches(t *testing.T) {
	cli = etcdtest.Client(t)
	var r Reader
	st := site(t, map[string]string{})
	s, _ := r.Read(snapshot(t, st), WhatIf{})
	if o := s.Own; o.Owner != OwnerCKE || o.OwnerRev != 0 || o.CKEDisabled || o.CKEGenDisabled || o.CKEServer || o.CKEStatus != nil || o.HandedBack() {
		t.Errorf("defaults: %+v", o)
	}
	put(t, st, map[string]string{storage.KeyOwner: "ckegen", storage.KeySabakanDisabled: "true", storage.KeyCKEGenDisabled: "false",
		storage.KeyLeader + "x": "cke-1", storage.KeyCKEStatus: `{"phase":"completed","timestamp":"2026-01-02T03:04:05Z"}`})
	s, _ = r.Read(snapshot(t, st), WhatIf{})
	o := s.Own
	if !o.OwnedByCKEGen() || o.OwnerRev == 0 || !o.CKEDisabled || o.CKEDisabledRev == 0 || o.CKEGenDisabled || o.CKEGenDisabledRev == 0 ||
		!o.CKEServer || o.CKEStatus == nil || o.CKEStatus.Phase != "completed" || o.SwitchKey() != storage.KeyCKEGenDisabled {
		t.Errorf("stored: %+v", o)
	}
	if g := o.Guards(); len(g) != 3 || g[0] != (storage.Guard{Key: storage.KeyOwner, ModRevision: o.OwnerRev}) || g[2].ModRevision != o.CKEGenDisabledRev {
		t.Errorf("guards %+v", g)
	}
	put(t, st, map[string]string{storage.KeyOwner: "cke", storage.KeyCKEStatus: "not json"})
	if s, _ = r.Read(snapshot(t, st), WhatIf{}); !s.Own.HandedBack() || s.Own.CKEStatus == nil || s.Own.CKEStatus.Phase != "" || s.Own.SwitchKey() != storage.KeySabakanDisabled {
		t.Errorf("handed back, CKE's status unreadable: %+v", s.Own)
	}
	for key, want := range map[string]string{
		storage.KeySabakanDisabled: `stored sabakan/disabled: invalid stored value: want true or false, got "yes" (set it with ckegenctl sabakan enable or disable)`,
		storage.KeyOwner:           `stored sabakan/owner: invalid stored value: want "cke" or "ckegen", got "yes" (set it with ckegenctl sabakan takeover, handback, enable or disable)`,
		storage.KeyCKEGenDisabled:  `stored sabakan/ckegen/disabled: invalid stored value: want true or false, got "yes" (set it with ckegenctl sabakan takeover, handback, enable or disable)`,
	} {
		st := storage.New(cli, "switch-"+key+"/")
		// Every other setting missing: the switch is refused first.
		put(t, st, map[string]string{key: "yes"})
		_, err := r.Read(snapshot(t, st), WhatIf{})
		var ref *Refusal
		if !errors.As(err, &ref) || RowOf(ref.Setting).Kind != Switch || ref.Error() != want || !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("%s yes: %v, want %q", key, err, want)
		}
	}
}

// TestTable: every setting has one row, of a key of its own, and is
// read; every reason code of a row is one of the reason package's; every
// setting a person sets names the command that fixes it; a command's help
// comes from one row at most; the keys and prefixes that wake the leader
// are the settings'.
func TestTable(t *testing.T) {
	cli = etcdtest.Client(t)
	codes := map[string]bool{}
	for _, c := range reason.Codes {
		codes[c.Code] = true
	}
	keys := map[string]bool{}
	helped := map[string]Setting{}
	empty := snapshot(t, site(t, nil))
	var r Reader
	for i, row := range Table {
		where := row.Key + row.Prefix
		if where == "" || keys[where] || (row.Key != "" && row.Prefix != "") {
			t.Errorf("%s: key %q prefix %q: each row has one key or prefix of its own", row.Setting, row.Key, row.Prefix)
		}
		keys[where] = true
		for _, code := range []string{row.Reason, row.Missing} {
			if code != "" && !codes[code] {
				t.Errorf("%s: reason %s is not in reason.Codes", row.Setting, code)
			}
		}
		sets := slices.ContainsFunc(row.Verbs, func(v Verb) bool {
			return !strings.HasSuffix(v.Path, " get") && !strings.HasSuffix(v.Path, " show")
		})
		if row.Reason != "" && row.Fix == "" && sets {
			t.Errorf("%s: refused with %s, and no fix is said", row.Setting, row.Reason)
		}
		if (row.Set == nil) != (row.Show == nil) || row.Set != nil && (len(row.Verbs) == 0 || row.Verbs[0].Short == "") {
			t.Errorf("%s: a setting set from the command line is also shown by it, by commands the row gives the help of", row.Setting)
		}
		if row.About == "" || row.Kind.String() == fmt.Sprintf("Kind(%d)", int(row.Kind)) {
			t.Errorf("%s: about %q, kind %v: say what it is, of a kind there is", row.Setting, row.About, row.Kind)
		}
		for _, v := range row.Verbs {
			if v.Short == "" {
				continue
			}
			if other, ok := helped[v.Path]; ok {
				t.Errorf("%s and %s both give the help of %q", other, row.Setting, v.Path)
			}
			helped[v.Path] = row.Setting
			if got, ok := VerbOf(v.Path); !ok || got.Short != v.Short {
				t.Errorf("VerbOf(%q) = %+v, %v", v.Path, got, ok)
			}
		}
		if r := RowOf(row.Setting); r.Key != row.Key {
			t.Errorf("RowOf(%s) = %+v", row.Setting, r)
		}
		// Every row is read (a row without a read panics).
		r.read(&Table[i], empty, WhatIf{}, &Settings{})
	}
	if v, ok := VerbOf("sabakan status"); ok {
		t.Errorf("VerbOf of a command no row gives the help of: %+v", v)
	}
	// What a person sets wakes the leader; the state read with the
	// settings (the cluster, its revision, the reboot queue) does not.
	var wantKeys, wantPrefixes []string
	for _, row := range Table {
		sets := slices.ContainsFunc(row.Verbs, func(v Verb) bool {
			return !strings.HasSuffix(v.Path, " get") && !strings.HasSuffix(v.Path, " show")
		})
		if row.Wakes != sets {
			t.Errorf("%s: wakes the leader %v; a setting a person sets wakes it, the state read with them does not", row.Setting, row.Wakes)
		}
		switch {
		case row.Wakes && row.Key != "":
			wantKeys = append(wantKeys, row.Key)
		case row.Wakes:
			wantPrefixes = append(wantPrefixes, row.Prefix)
		}
	}
	if got := Watched(); !slices.Equal(got, wantKeys) || len(got) < 10 {
		t.Errorf("Watched() = %v, want %v", got, wantKeys)
	}
	if got := WatchedPrefixes(); !slices.Equal(got, wantPrefixes) {
		t.Errorf("WatchedPrefixes() = %v, want %v", got, wantPrefixes)
	}
}

// TestLoad: a command reads only the settings it names, as a tick reads
// them, with their refusals and the mod revisions to guard a write on.
func TestLoad(t *testing.T) {
	cli = etcdtest.Client(t)
	st := site(t, map[string]string{storage.KeySabakanTemplate: `{"name":""}`, storage.KeySabakanTrigger: "planning", storage.KeyConstraints: `{"control-plane-count":3}`})
	s, refused, snap, err := Load(context.Background(), st, SettingTrigger, SettingConstraints, SettingOwner)
	if err != nil {
		t.Fatal(err)
	}
	if s.Trigger != TriggerPlanning || s.Constraints.ControlPlaneCount != 3 || s.ConstraintsRevision == 0 || len(refused) != 0 || s.Own.Owner != OwnerCKE {
		t.Errorf("Load = %+v, refused %v", s, refused)
	}
	if snap.Get(storage.KeySabakanTemplate).Exists() || snap.Get(storage.KeyConstraints).ModRevision != s.ConstraintsRevision {
		t.Errorf("the snapshot read more than it was asked, or not the revisions: %+v", snap)
	}
	_, refused, _, err = Load(context.Background(), st, SettingTemplate, SettingURL)
	if err != nil || refused[SettingTemplate] == nil || refused[SettingURL] == nil || !refused[SettingURL].Missing {
		t.Errorf("refusals %v (%v)", refused, err)
	}
}

// TestFromFiles: the offline generator's files, and errors that name the
// flag and the file.
func TestFromFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tmpl := file("t.json", goodTemplate)
	machines := file("m.json", `[]`)
	files := Files{Template: File("--template", tmpl), Machines: File("--machines", machines), RebootingFlag: "--rebooting"}
	s, inv, _, err := FromFiles(context.Background(), files)
	if err != nil || s.Template == nil || inv.Machines == nil && len(inv.Machines) != 0 || !reflect.DeepEqual(s.Constraints, constraints.Default()) {
		t.Fatalf("FromFiles = %+v, %v", s, err)
	}
	if !s.templateGiven || s.Current != nil || s.Rebooting != nil {
		t.Errorf("settings %+v", s)
	}

	bad := file("bad.json", `{`)
	for _, c := range []struct {
		name string
		mod  func(f *Files)
		want string
	}{
		{"template", func(f *Files) { f.Template = File("--template", bad) }, "--template " + bad + ": "},
		{"machines", func(f *Files) { f.Machines = File("--machines", bad) }, "--machines " + bad + ": "},
		{"constraints", func(f *Files) { f.Constraints = File("--constraints", bad) }, "--constraints " + bad + ": "},
		{"current", func(f *Files) { f.Current = File("--current", bad) }, "--current " + bad + ": "},
		{"nodes", func(f *Files) { f.NodeTaints = File("--k8s-nodes", bad) }, "--k8s-nodes " + bad + ": "},
		{"policy", func(f *Files) { f.Policy = File("--policy", bad) }, "--policy " + bad + ": "},
		{"missing file", func(f *Files) { f.Current = File("--current", filepath.Join(dir, "none")) }, "--current: open "},
		{"rebooting", func(f *Files) { f.Rebooting = []string{"10.0.0.1", " "} }, "--rebooting: empty address"},
	} {
		f := files
		c.mod(&f)
		if _, _, _, err := FromFiles(context.Background(), f); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error starting %q", c.name, err, c.want)
		}
	}
}

// TestReadFiles: a view of files takes every file but the machines as
// optional, and the machines as given.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	machines := filepath.Join(dir, "m.json")
	cons := filepath.Join(dir, "c.json")
	if err := os.WriteFile(machines, []byte(`[{"spec":{"serial":"s1","ipv4":["10.0.0.1"]},"status":{"state":"HEALTHY"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cons, []byte(`{"control-plane-count":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, raw, err := ReadFiles(Files{Machines: File("--machines", machines)})
	if err != nil || s.Template != nil || s.ConstraintsStored || len(raw) != 1 {
		t.Fatalf("ReadFiles without options = %+v, %d machines, %v", s, len(raw), err)
	}
	s, _, err = ReadFiles(Files{Machines: File("--machines", machines), Constraints: File("--constraints", cons)})
	if err != nil || !s.ConstraintsStored || s.Constraints.ControlPlaneCount != 1 {
		t.Errorf("ReadFiles with constraints = %+v, %v", s, err)
	}
	if _, _, _, err := FromFiles(context.Background(), Files{Machines: File("--machines", machines)}); err == nil || err.Error() != "--template: required" {
		t.Errorf("FromFiles without a template: %v", err)
	}
}
