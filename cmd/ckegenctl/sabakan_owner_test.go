package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// etcdState is every key in etcd with its value and mod revision, and the
// store's revision: equal states mean nothing was written in between.
type etcdState struct {
	rev  int64
	keys map[string]string
}

func readState(t *testing.T, cli *clientv3.Client) etcdState {
	t.Helper()
	resp, err := cli.Get(context.Background(), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	s := etcdState{rev: resp.Header.Revision, keys: map[string]string{}}
	for _, kv := range resp.Kvs {
		s.keys[string(kv.Key)] = fmt.Sprintf("%q@%d", kv.Value, kv.ModRevision)
	}
	return s
}

// changed lists the keys whose value or mod revision differ.
func (s etcdState) changed(after etcdState) []string {
	var out []string
	for k, v := range after.keys {
		if s.keys[k] != v {
			out = append(out, k)
		}
	}
	for k := range s.keys {
		if _, ok := after.keys[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// assertNothingWritten fails unless etcd is as before.
func assertNothingWritten(t *testing.T, what string, before, after etcdState) {
	t.Helper()
	if ch := before.changed(after); len(ch) > 0 || before.rev != after.rev {
		t.Errorf("%s wrote to etcd: revision %d -> %d, keys changed %v", what, before.rev, after.rev, ch)
	}
}

// storedTemplate is planTemplate as set-template stores it.
func storedTemplate(t *testing.T) []byte {
	t.Helper()
	js, err := templateToStore([]byte(planTemplate))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// putSettings stores the settings ckegen takes over with, under st's
// prefix; an empty value leaves the key out.
func putSettings(t *testing.T, st storage.Storage, tmpl, constraints, url string) {
	t.Helper()
	for k, v := range map[string]string{storage.KeySabakanTemplate: tmpl, storage.KeyConstraints: constraints, storage.KeySabakanURL: url} {
		if v == "" {
			continue
		}
		if _, err := st.Client.Put(context.Background(), st.Key(k), v); err != nil {
			t.Fatal(err)
		}
	}
}

// campaign makes the test a candidate named name on the election prefix
// (under st's prefix) and waits until it leads.
func campaign(t *testing.T, st storage.Storage, prefix, name string) {
	t.Helper()
	sess, err := concurrency.NewSession(st.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if err := concurrency.NewElection(sess, st.Key(prefix)).Campaign(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

const (
	countConstraints = `{"control-plane-count":1,"minimum-workers":2,"maximum-workers":0}`
	rateConstraints  = `{"control-plane-count":1,"minimum-workers-rate":80}`
)

// TestTakeoverRefusals: each reason takeover refuses for is named, with
// what to do, exit 1, and nothing is written, with and without --dry-run;
// when ckegen already owns the integration, takeover says so, exits 0 and
// writes nothing. Each case has its own prefix.
func TestTakeoverRefusals(t *testing.T) {
	f := newPlanFixture(t)
	tmpl := string(storedTemplate(t))
	url := f.sabakan.URL + "/graphql"
	// A template CKE's ckecli would store but ckegen refuses: two
	// control-plane templates.
	twoCP := strings.Replace(tmpl, `"nodes":[`, `"nodes":[{"user":"cybozu","control_plane":true},`, 1)
	cases := []struct {
		name                   string
		tmpl, constraints, url string
		extra                  map[string]string
		code                   int
		want                   []string // on stderr (code 1) or stdout (code 0)
	}{
		{name: "no constraints", tmpl: tmpl, url: url, code: 1, want: []string{
			"ckegenctl: takeover refused, nothing written:\n  - no constraints are stored (constraints): ckegen takes over only with an explicit model of the workers; " +
				"run ckegenctl constraints set minimum-workers-rate N (CKE v1.35's rate model) or ckegenctl constraints set minimum-workers N (the count model)\n"}},
		{name: "no template", constraints: countConstraints, url: url, code: 1, want: []string{
			"- no template: set one with ckegenctl sabakan set-template\n"}},
		{name: "template does not parse", tmpl: strings.Replace(tmpl, `"control_plane"`, `"contol_plane"`, 1), constraints: countConstraints, url: url, code: 1, want: []string{
			"- the stored template is invalid: template: ", `unknown field "contol_plane"`, "(set one with ckegenctl sabakan set-template)\n"}},
		{name: "template invalid for ckegen", tmpl: twoCP, constraints: countConstraints, url: url, code: 1, want: []string{
			"- the stored template is invalid: template nodes[1]: control_plane: a template has exactly one control plane node", "(set one with ckegenctl sabakan set-template)\n"}},
		{name: "both models' keys", tmpl: tmpl, constraints: `{"control-plane-count":1,"minimum-workers":2,"minimum-workers-rate":80}`, url: url, code: 1, want: []string{
			"- the stored constraints are invalid: ", "minimum-workers", "minimum-workers-rate", "set them with ckegenctl constraints set"}},
		{name: "constraints out of range", tmpl: tmpl, constraints: `{"control-plane-count":0,"minimum-workers-rate":80}`, url: url, code: 1, want: []string{
			"- the stored constraints are invalid: ", "constraints: line 1, column 24: control-plane-count: must be >= 1, got 0 (set them with ckegenctl constraints set)\n"}},
		{name: "no URL", tmpl: tmpl, constraints: rateConstraints, code: 1, want: []string{
			"- no sabakan URL: set one with ckegenctl sabakan set-url\n"}},
		{name: "bad variables", tmpl: tmpl, constraints: rateConstraints, url: url, extra: map[string]string{storage.KeySabakanQueryVariables: `{"having":{"states":["BROKEN"]}}`}, code: 1, want: []string{
			"- the stored query variables are invalid: ", `unknown state "BROKEN"`}},
		{name: "every problem at once", code: 1, want: []string{
			"  - no constraints are stored", "\n  - no template: ", "\n  - no sabakan URL: "}},
		{name: "owner does not parse", tmpl: tmpl, constraints: rateConstraints, url: url, extra: map[string]string{storage.KeyOwner: "ckgen"}, code: 1, want: []string{
			`stored sabakan/owner: invalid stored value: want "cke" or "ckegen", got "ckgen"`}},
		{name: "already owned", tmpl: tmpl, constraints: rateConstraints, url: url, extra: map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true"}, want: []string{
			"ckegen already owns the sabakan integration (sabakan/owner: ckegen, sabakan/disabled: true): nothing written.\n"}},
		{name: "already owned, switch off", tmpl: tmpl, constraints: rateConstraints, url: url,
			extra: map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true", storage.KeyCKEGenDisabled: "true"}, want: []string{
				"nothing written.\nckegen's own switch sabakan/ckegen/disabled is true: its daemon writes nothing until ckegenctl sabakan enable.\n"}},
		// Already owned, even with no constraints: nothing to do.
		{name: "already owned, no constraints", tmpl: tmpl, url: url, extra: map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true"}, want: []string{
			"ckegen already owns"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprintf("/refusal%d/", i)
			st := storage.New(f.st.Client, prefix)
			putSettings(t, st, c.tmpl, c.constraints, c.url)
			for k, v := range c.extra {
				if _, err := st.Client.Put(context.Background(), st.Key(k), v); err != nil {
					t.Fatal(err)
				}
			}
			for _, dry := range []bool{false, true} {
				args := []string{"--prefix", prefix, "sabakan", "takeover"}
				if dry {
					args = append(args, "--dry-run")
				}
				before := readState(t, f.st.Client)
				out, errOut, code := f.run(args...)
				assertNothingWritten(t, strings.Join(args, " "), before, readState(t, f.st.Client))
				got := errOut
				if c.code == 0 {
					got = out
					if errOut != "" {
						t.Errorf("%v: stderr %q", args, errOut)
					}
				} else if out != "" {
					t.Errorf("%v: stdout %q", args, out)
				}
				if code != c.code {
					t.Errorf("%v: exit %d, want %d; stdout %q, stderr %q", args, code, c.code, out, errOut)
				}
				for _, w := range c.want {
					if !strings.Contains(got, w) {
						t.Errorf("%v: output\n%s\nlacks %q", args, got, w)
					}
				}
			}
		})
	}
}

// TestTakeoverHandback: takeover writes sabakan/owner ckegen and CKE's
// sabakan/disabled true, both in one transaction and nothing else;
// handback writes cke and false the same way. Each says what happens next;
// run twice, each writes nothing the second time.
func TestTakeoverHandback(t *testing.T) {
	f := newPlanFixture(t)
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	campaign(t, f.st, storage.KeyLeader, "cke-1")

	step := func(args []string, wantOut []string, changes ...string) {
		t.Helper()
		before := readState(t, f.st.Client)
		out, errOut, code := f.run(args...)
		after := readState(t, f.st.Client)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, w := range wantOut {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stdout\n%s\nlacks %q", args, out, w)
			}
		}
		if got := before.changed(after); !slices.Equal(got, changes) {
			t.Errorf("%v: changed %v, want %v", args, got, changes)
		}
		// One transaction: one revision for all that changed.
		if len(changes) > 0 && after.rev != before.rev+1 {
			t.Errorf("%v: etcd revision %d -> %d: not one transaction", args, before.rev, after.rev)
		}
	}
	owner, cke := f.st.Key(storage.KeyOwner), f.st.Key(storage.KeySabakanDisabled)

	step([]string{"sabakan", "takeover"}, []string{
		"ckegen now owns the sabakan integration: sabakan/owner was cke (not set), now ckegen; CKE's sabakan/disabled is now true, which stops CKE's own integration.\n" +
			"Next: ckegen's daemon writes the cluster from its next tick, whenever CKE's server reports phase completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted",
		"No ckegen daemon leads now (nothing under sabakan/ckegen/leader/): start ckegen's daemon.\n",
		"ckegenctl sabakan handback"}, cke, owner)
	if f.raw(storage.KeyOwner) != "ckegen" || f.raw(storage.KeySabakanDisabled) != "true" {
		t.Fatalf("after takeover: owner %s, disabled %s", f.raw(storage.KeyOwner), f.raw(storage.KeySabakanDisabled))
	}
	step([]string{"sabakan", "takeover"}, []string{"ckegen already owns"})

	campaign(t, f.st, storage.KeyCKEGenLeader, "gen-1")
	step([]string{"sabakan", "handback"}, []string{
		"CKE owns the sabakan integration again: sabakan/owner is now cke; CKE's sabakan/disabled is now false, which restarts the integration of CKE's server (CKE's own, or ckegen's inside a cke built from ckeserver/).\n" +
			"Next: ckegen's daemon writes nothing from its next tick (OWNED_BY_CKE); CKE's integration writes the cluster.\n"}, cke, owner)
	if f.raw(storage.KeyOwner) != "cke" || f.raw(storage.KeySabakanDisabled) != "false" {
		t.Fatalf("after handback: owner %s, disabled %s", f.raw(storage.KeyOwner), f.raw(storage.KeySabakanDisabled))
	}
	step([]string{"sabakan", "handback"}, []string{"ckegen does not own the sabakan integration (sabakan/owner: cke): nothing written.\n"})

	// A ckegen daemon leads now: takeover does not ask to start one.
	out, _, code := f.run("sabakan", "takeover")
	if code != 0 || strings.Contains(out, "No ckegen daemon leads") {
		t.Errorf("takeover with a ckegen leader: exit %d\n%s", code, out)
	}
}

// TestTakeoverInsideCKE: while ckegen runs inside CKE's server (its last
// status says so) and no ckegen daemon leads, a takeover, which would stop
// it there with nothing in its place, is refused and writes nothing; once
// a daemon leads it goes through.
func TestTakeoverInsideCKE(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	campaign(t, f.st, storage.KeyLeader, "cke-1")
	status, err := json.Marshal(storage.Status{Result: reason.OK, Mode: decision.ModeInsideCKE, Leader: "cke-1", Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanStatus), string(status)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sabakan", "takeover"}, {"sabakan", "takeover", "--dry-run"}} {
		_, errOut, code := f.run(args...)
		if want := "takeover refused, nothing written:\n  - ckegen runs inside CKE's server (the last status is cke-1's, inside CKE) and no ckegen daemon leads"; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%v inside CKE without a daemon: exit %d, stderr %q", args, code, errOut)
		}
	}
	if v := f.raw(storage.KeyOwner); v != "<none>" {
		t.Errorf("a refused takeover wrote sabakan/owner: %q", v)
	}
	campaign(t, f.st, storage.KeyCKEGenLeader, "gen-1")
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Errorf("takeover with a ckegen daemon leading: exit %d, %s", code, errOut)
	}
}

// TestOwnershipRaces: a takeover, handback, enable or disable whose read
// of the ownership keys is stale when it writes loses and writes nothing:
// each command's write (writeOwner, setSwitch) is made here with the
// ownership its read returned before a concurrent change, as the command
// makes it; the command then says so and exits 1 (errStale).
func TestOwnershipRaces(t *testing.T) {
	f := newPlanFixture(t)
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	ctx := context.Background()
	put := func(k, v string) func(storage.Storage) {
		return func(st storage.Storage) {
			if _, err := st.Client.Put(ctx, st.Key(k), v); err != nil {
				t.Error(err)
			}
		}
	}
	takeover := func(st storage.Storage, o intake.Ownership) error {
		return writeOwner(ctx, st, o, intake.OwnerCKEGen, true)
	}
	handback := func(st storage.Storage, o intake.Ownership) error {
		return writeOwner(ctx, st, o, intake.OwnerCKE, false)
	}
	disable := func(st storage.Storage, o intake.Ownership) error { return setSwitch(ctx, st, o, true) }
	enable := func(st storage.Storage, o intake.Ownership) error { return setSwitch(ctx, st, o, false) }
	// concurrent runs a command's read and write against st at once.
	concurrent := func(write func(storage.Storage, intake.Ownership) error) func(storage.Storage) {
		return func(st storage.Storage) {
			o, err := ownership(ctx, st)
			if err == nil {
				err = write(st, o)
			}
			if err != nil {
				t.Error(err)
			}
		}
	}
	for _, c := range []struct {
		name   string
		setup  map[string]string
		change func(storage.Storage)
		write  func(storage.Storage, intake.Ownership) error
	}{
		// CKE's ckecli sabakan enable while takeover reads.
		{"takeover vs CKE's enable", nil, put(storage.KeySabakanDisabled, "false"), takeover},
		{"takeover vs CKE's disable", map[string]string{storage.KeySabakanDisabled: "false"}, put(storage.KeySabakanDisabled, "true"), takeover},
		{"takeover vs a concurrent takeover", nil, concurrent(takeover), takeover},
		{"handback vs ckegen's disable", map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true"}, put(storage.KeyCKEGenDisabled, "true"), handback},
		{"handback vs CKE's enable", map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true"}, put(storage.KeySabakanDisabled, "false"), handback},
		// The switch must not land on CKE's key after a takeover, nor on
		// ckegen's after a handback.
		{"disable vs takeover", nil, concurrent(takeover), disable},
		{"enable vs handback", map[string]string{storage.KeyOwner: intake.OwnerCKEGen, storage.KeySabakanDisabled: "true", storage.KeyCKEGenDisabled: "true"}, concurrent(handback), enable},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{storage.KeyOwner, storage.KeySabakanDisabled, storage.KeyCKEGenDisabled} {
				if _, err := f.st.Client.Delete(ctx, f.st.Key(k)); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range c.setup {
				put(k, v)(f.st)
			}
			o, err := ownership(ctx, f.st)
			if err != nil {
				t.Fatal(err)
			}
			c.change(f.st)
			after := readState(t, f.st.Client)
			if err := c.write(f.st, o); !errors.Is(err, storage.ErrConflict) {
				t.Errorf("a write on a stale read: %v, want it to lose", err)
			}
			assertNothingWritten(t, c.name+" after the concurrent change", after, readState(t, f.st.Client))
		})
	}
	want := "the owner or a switch changed meanwhile (sabakan/owner, sabakan/disabled or sabakan/ckegen/disabled): nothing was written; " +
		"check with ckegenctl sabakan owner and run ckegenctl sabakan takeover again"
	if got := errStale("takeover").Error(); got != want {
		t.Errorf("a lost race says %q, want %q", got, want)
	}
}

// TestSwitchFollowsOwner: enable, disable and is-enabled act on CKE's
// sabakan/disabled unless ckegen owns the integration, then on ckegen's
// own sabakan/ckegen/disabled and never on CKE's; each names the switch on
// stderr.
func TestSwitchFollowsOwner(t *testing.T) {
	f := newPlanFixture(t)
	// The rate model: a handback in the count model is refused (TestHandbackCountModel).
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	cke, gen := f.st.Key(storage.KeySabakanDisabled), f.st.Key(storage.KeyCKEGenDisabled)
	const (
		standalone = "sabakan/disabled (sabakan/owner is cke (not set) and no CKE server holds leader/: ckegen's daemon runs standalone and honours this switch)\n"
		ckeOwns    = "CKE's switch sabakan/disabled (sabakan/owner is cke and a CKE server runs: this switches CKE's own integration, as CKE's ckecli does)\n"
		genOwns    = "ckegen's own switch sabakan/ckegen/disabled (ckegen owns the integration; CKE's sabakan/disabled is left alone)\n"
	)
	type step struct {
		args    []string
		stdout  string
		stderr  string
		changes []string // keys the step writes
	}
	run := func(steps []step) {
		t.Helper()
		for _, s := range steps {
			before := readState(t, f.st.Client)
			out, errOut, code := f.run(s.args...)
			if code != 0 || out != s.stdout || errOut != s.stderr {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, %q, %q", s.args, code, out, errOut, s.stdout, s.stderr)
			}
			if got := before.changed(readState(t, f.st.Client)); !slices.Equal(got, s.changes) {
				t.Errorf("%v: changed %v, want %v", s.args, got, s.changes)
			}
		}
	}
	run([]step{
		{[]string{"sabakan", "is-enabled"}, "true\n", "read: " + standalone, nil},
		{[]string{"sabakan", "disable"}, "", "disabled: " + standalone, []string{cke}},
		{[]string{"sabakan", "is-enabled"}, "false\n", "read: " + standalone, nil},
		{[]string{"sabakan", "enable"}, "", "enabled: " + standalone, []string{cke}},
	})
	campaign(t, f.st, storage.KeyLeader, "cke-1")
	if _, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyOwner), intake.OwnerCKE); err != nil {
		t.Fatal(err)
	}
	run([]step{
		{[]string{"sabakan", "disable"}, "", "disabled: " + ckeOwns, []string{cke}},
		{[]string{"sabakan", "is-enabled"}, "false\n", "read: " + ckeOwns, nil},
		{[]string{"sabakan", "enable"}, "", "enabled: " + ckeOwns, []string{cke}},
	})
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	// CKE's switch is true now; ckegen's is absent.
	run([]step{
		{[]string{"sabakan", "is-enabled"}, "true\n", "read: " + genOwns, nil},
		{[]string{"sabakan", "disable"}, "", "disabled: " + genOwns, []string{gen}},
		{[]string{"sabakan", "is-enabled"}, "false\n", "read: " + genOwns, nil},
		{[]string{"sabakan", "enable"}, "", "enabled: " + genOwns, []string{gen}},
		{[]string{"sabakan", "is-enabled"}, "true\n", "read: " + genOwns, nil},
	})
	if v := f.raw(storage.KeySabakanDisabled); v != "true" {
		t.Errorf("CKE's switch after ckegen's enable and disable: %s, want true", v)
	}

	// Someone enables CKE's integration with CKE's ckecli: ckegen's
	// commands warn; takeover stops CKE's integration again.
	if _, err := f.st.Client.Put(context.Background(), cke, "false"); err != nil {
		t.Fatal(err)
	}
	active := "warning: none from ckegen: CKE's sabakan/disabled is false although ckegen owns the integration (CKE_INTEGRATION_ACTIVE); " +
		"run ckegenctl sabakan takeover to stop CKE's integration again, or ckegenctl sabakan handback\n"
	run([]step{
		{[]string{"sabakan", "is-enabled"}, "true\n", "read: " + genOwns + active, nil},
		{[]string{"sabakan", "enable"}, "", "enabled: " + genOwns + active, []string{gen}},
	})
	out, errOut, code := f.run("sabakan", "takeover")
	if code != 0 || !strings.HasPrefix(out, "ckegen owned the sabakan integration but CKE's sabakan/disabled was false: set it to true again, so CKE's own integration is stopped.\n") {
		t.Errorf("takeover of CKE_INTEGRATION_ACTIVE: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if v := f.raw(storage.KeySabakanDisabled); v != "true" {
		t.Errorf("CKE's switch after takeover: %s, want true", v)
	}

	if _, errOut, code := f.run("sabakan", "handback"); code != 0 {
		t.Fatal(errOut)
	}
	run([]step{
		{[]string{"sabakan", "disable"}, "", "disabled: " + ckeOwns, []string{cke}},
		{[]string{"sabakan", "enable"}, "", "enabled: " + ckeOwns, []string{cke}},
	})
}

// TestOwnerCommand: `sabakan owner` prints the keys that decide who writes
// the cluster, and writes nothing.
// stamps are RFC 3339 times in UTC, as the views print them.
var stamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

func TestOwnerCommand(t *testing.T) {
	f := newPlanFixture(t)
	show := func() (string, ownerReport) {
		t.Helper()
		before := readState(t, f.st.Client)
		out, errOut, code := f.run("sabakan", "owner")
		js, _, _ := f.run("sabakan", "owner", "-o", "json")
		assertNothingWritten(t, "sabakan owner", before, readState(t, f.st.Client))
		if code != 0 || errOut != "" {
			t.Fatalf("owner: exit %d, stderr %q", code, errOut)
		}
		var r ownerReport
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatalf("owner -o json: %v\n%s", err, js)
		}
		return out, r
	}
	out, r := show()
	want := "OWNER           cke (not set)\nCKE SWITCH      sabakan/disabled false\nCKEGEN SWITCH   sabakan/ckegen/disabled false\n" +
		"CKE SERVER      none (nothing under leader/)\nCKE STATUS      none (no status key)\nCKEGEN LEADER   none (nothing under sabakan/ckegen/leader/)\n" +
		"LEADS NOW       nothing leads: no key under leader/ nor sabakan/ckegen/leader/ (read at TIME)\n" +
		"MODE            none: nothing leads\n" +
		"WRITES CLUSTER  none now: nothing leads (nothing under leader/ nor sabakan/ckegen/leader/); " +
		"if ckegen's daemon leads alone: ckegen, standalone (no CKE server holds leader/); " +
		"if CKE's server leads alone: its own integration: CKE's own if it runs CKE's own binary, ckegen if it is a cke built from ckeserver/; " +
		"if both lead: CKE's own integration (ckegen holds, OWNED_BY_CKE; ckegenctl sabakan takeover hands it to ckegen)\n"
	if out = stamps.ReplaceAllString(out, "TIME"); out != want {
		t.Errorf("owner, nothing set:\n%s\nwant\n%s", out, want)
	}
	if r.Owner != "cke" || r.OwnerSet || r.CKEServer {
		t.Errorf("owner -o json: %+v", r)
	}

	campaign(t, f.st, storage.KeyLeader, "cke-1")
	campaign(t, f.st, storage.KeyCKEGenLeader, "gen-1")
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	if _, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyCKEStatus), `{"phase":"completed","timestamp":"2026-01-02T03:04:05Z"}`); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	out, r = show()
	for _, w := range []string{"OWNER           ckegen\n", "CKE SWITCH      sabakan/disabled true\n", "CKE SERVER      cke-1 leads (leader/)\n",
		"CKE STATUS      completed at 2026-01-02T03:04:05Z, ", "CKEGEN LEADER   gen-1 (sabakan/ckegen/leader/)\n",
		"WRITES CLUSTER  ckegen, while CKE's status says completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("owner after takeover:\n%s\nlacks %q", out, w)
		}
	}
	if r.Owner != "ckegen" || !r.OwnerSet || !r.CKEDisabled || r.CKELeader != "cke-1" || r.CKEGenLeader != "gen-1" || r.CKEStatus == nil || r.CKEStatus.Phase != "completed" {
		t.Errorf("owner -o json after takeover: %+v", r)
	}
	if _, errOut, code := f.run("sabakan", "disable"); code != 0 {
		t.Fatal(errOut)
	}
	if out, _ := show(); !strings.Contains(out, "WRITES CLUSTER  none: ckegen owns the integration but its switch sabakan/ckegen/disabled is true (ckegenctl sabakan enable)\n") {
		t.Errorf("owner with ckegen disabled:\n%s", out)
	}
	if _, errOut, code := f.run("sabakan", "handback"); code != 0 {
		t.Fatal(errOut)
	}
	if out, _ := show(); !strings.Contains(out, "WRITES CLUSTER  CKE's own integration (ckegen holds, OWNED_BY_CKE; ckegenctl sabakan takeover hands it to ckegen)\n") {
		t.Errorf("owner after handback:\n%s", out)
	}
}

// TestTakeoverDryRun: --dry-run prints the plan ckegen's daemon would
// follow after takeover, the same as `sabakan plan` on the stored
// settings, and writes nothing.
func TestTakeoverDryRun(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	putSettings(t, f.st, string(storedTemplate(t)), countConstraints, f.sabakan.URL+"/graphql")
	campaign(t, f.st, storage.KeyLeader, "cke-1")

	// The cluster CKE's integration generated (here: the one ckegen would
	// generate), built from the stored template.
	d, _ := f.plan()
	if len(d.Steps) != 1 || d.Steps[0].Op != generator.OpNew || d.Cluster == nil {
		t.Fatalf("first plan: %v", ops(d))
	}
	data, err := json.Marshal(d.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	_, tmplRev, err := sitetest.StoreOf(f.st).GetTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Client.Txn(ctx).Then(
		clientv3.OpPut(f.st.Key(storage.KeyCluster), string(data)),
		clientv3.OpPut(f.st.Key(storage.KeyClusterRevision), fmt.Sprint(tmplRev)),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	// A worker's machine turns UNREACHABLE: the plan taints it.
	var worker string
	for _, n := range d.Cluster.Nodes {
		if !n.ControlPlane {
			worker = n.Address
			break
		}
	}
	if _, err := f.store.SetState(serialOf(t, f.store, worker), machine.StateUnreachable); err != nil {
		t.Fatal(err)
	}

	plan, planErr, code := f.run("sabakan", "plan")
	if code != 0 {
		t.Fatalf("plan: %s", planErr)
	}
	before := readState(t, f.st.Client)
	out, errOut, code := f.run("sabakan", "takeover", "--dry-run")
	assertNothingWritten(t, "takeover --dry-run", before, readState(t, f.st.Client))
	if code != 0 || out != plan {
		t.Errorf("takeover --dry-run: exit %d, stdout\n%s\nwant the plan\n%s\nstderr %s", code, out, plan, errOut)
	}
	// The UNREACHABLE worker is tainted and replaced.
	if !strings.HasPrefix(out, noView+"step 1: increase worker\n") || !strings.Contains(out, "re-tainted:  1 ") {
		t.Errorf("the plan does not taint %s and add a worker:\n%s", worker, out)
	}
	wantErr := planErr + "note: a CKE server runs: ckegen's daemon applies each step only while CKE's status key says completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted, as CKE's own integration does\n" +
		"dry run: nothing was written; ckegenctl sabakan takeover would write sabakan/owner: ckegen and sabakan/disabled: true, and ckegen's daemon would follow this plan\n"
	if errOut != wantErr {
		t.Errorf("takeover --dry-run stderr\n%q\nwant\n%q", errOut, wantErr)
	}
	if got := f.raw(storage.KeyOwner); got != "<none>" {
		t.Errorf("owner after --dry-run: %s", got)
	}

	// The plan follows the stored settings: with the rate model, every
	// healthy machine a template takes becomes a worker.
	putSettings(t, f.st, "", rateConstraints, "")
	if plan2, _, _ := f.run("sabakan", "plan"); plan2 == plan {
		t.Fatal("the rate model's plan is the count model's: the test shows nothing")
	} else if out, _, code := f.run("sabakan", "takeover", "--dry-run"); code != 0 || out != plan2 {
		t.Errorf("takeover --dry-run with the rate model: exit %d\n%s\nwant\n%s", code, out, plan2)
	}
}
