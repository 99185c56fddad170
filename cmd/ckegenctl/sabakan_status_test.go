package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// TestStatusTableKubernetes: the status shows what the last tick read
// from Kubernetes, and nothing about it without Kubernetes access.
func TestStatusTableKubernetes(t *testing.T) {
	for _, c := range []struct {
		kube *storage.KubernetesStatus
		want string
	}{
		{nil, ""},
		{&storage.KubernetesStatus{}, "KUBERNETES    not read\n"},
		{&storage.KubernetesStatus{Read: true, Nodes: 12, Intolerable: 2}, "KUBERNETES    read: 12 nodes, 2 with intolerable taints\n"},
	} {
		var b strings.Builder
		if err := statusTable(&b, storage.Status{Result: "ok", Leader: "h", Kubernetes: c.kube}); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "KUBERNETES") {
				got += l
			}
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q in\n%s", c.kube, got, c.want, b.String())
		}
	}
}

// TestStatusTablePlacements: each placement of the policy with the group
// of its last pick and its nodes by group; nothing without a policy.
func TestStatusTablePlacements(t *testing.T) {
	st := storage.Status{Result: "ok", Leader: "h", Placements: []storage.PlacementStatus{
		{Placement: "control-plane", ObservedGroup: "dedicated", Groups: []storage.GroupNodes{
			{Group: "dedicated", Nodes: 2}, {Group: "any", Nodes: 1}, {Group: generator.NoGroup, Nodes: 0}}},
		{Placement: "gpu", Groups: []storage.GroupNodes{{Group: generator.NoGroup, Nodes: 3}}},
	}}
	var b strings.Builder
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	want := "PLACEMENT      OBSERVED GROUP  NODES\n" +
		"control-plane  dedicated       dedicated 2, any 1, in no group 0\n" +
		"gpu            -               3\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("status table:\n%s\nwant it to end with\n%s", b.String(), want)
	}
	b.Reset()
	st.Placements = nil
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "PLACEMENT") {
		t.Errorf("a status without placements shows them:\n%s", b.String())
	}
}

// TestStatusTableModel: the status says which constraints model the last
// tick used, that the count model's defaults are in force when no
// constraints are stored, and in the rate model the worker rate against
// minimum-workers-rate with what it means for a RETIRED worker; nothing
// when the tick read no valid constraints.
func TestStatusTableModel(t *testing.T) {
	rate := func(workers, machines, minimum int) *storage.WorkerRate {
		return &storage.WorkerRate{Workers: workers, Machines: machines, Percent: float64(workers-1) / float64(machines) * 100, Minimum: minimum}
	}
	for _, c := range []struct {
		name string
		st   storage.Status
		want string
	}{
		{"no constraints read", storage.Status{}, ""},
		{"count defaults", storage.Status{Model: "count", ConstraintsSource: storage.ConstraintsDefault},
			"MODEL         count (the count model's defaults of an earlier release: no constraints stored)\n"},
		{"rate defaults", storage.Status{Model: "rate", ConstraintsSource: storage.ConstraintsDefault, WorkerRate: rate(9, 10, 80)},
			"MODEL         rate (CKE's defaults: no constraints stored), workers 80.0% ((9 workers - 1) / 10 machines), minimum-workers-rate 80%: a RETIRED worker past the retire wait may leave\n"},
		{"count", storage.Status{Model: "count", ConstraintsSource: storage.ConstraintsStored}, "MODEL         count\n"},
		{"rate, may leave", storage.Status{Model: "rate", ConstraintsSource: storage.ConstraintsStored, WorkerRate: rate(9, 10, 80)},
			"MODEL         rate, workers 80.0% ((9 workers - 1) / 10 machines), minimum-workers-rate 80%: a RETIRED worker past the retire wait may leave\n"},
		{"rate, stays", storage.Status{Model: "rate", ConstraintsSource: storage.ConstraintsStored, WorkerRate: rate(9, 10, 81)},
			"MODEL         rate, workers 80.0% ((9 workers - 1) / 10 machines), minimum-workers-rate 81%: RETIRED workers stay\n"},
		{"rate, not known", storage.Status{Model: "rate", ConstraintsSource: storage.ConstraintsStored},
			"MODEL         rate (worker rate not known: sabakan has not answered yet)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := tableRows(t, c.st, "MODEL"); got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
		})
	}
}

func TestStatusTableMode(t *testing.T) {
	for _, c := range []struct {
		st   storage.Status
		want string
	}{
		{storage.Status{}, ""},
		{storage.Status{Mode: decision.ModeStandalone, Owner: intake.OwnerCKE},
			"MODE          standalone: ckegen writes cluster.yml; no CKE server seen\n"},
		{storage.Status{Mode: decision.ModeStandalone, Owner: intake.OwnerCKEGen},
			"MODE          standalone: ckegen writes cluster.yml (sabakan/owner ckegen); no CKE server seen\n"},
		{storage.Status{Mode: decision.ModeBesideCKE, Owner: intake.OwnerCKEGen},
			"MODE          beside CKE: a CKE server holds leader/, and ckegen writes cluster.yml (sabakan/owner ckegen)\n"},
		{storage.Status{Mode: decision.ModeBesideCKE, Owner: intake.OwnerCKE},
			"MODE          beside CKE: a CKE server holds leader/, and its own integration writes cluster.yml (sabakan/owner cke); ckegen holds\n"},
		{storage.Status{Mode: decision.ModeInsideCKE, Owner: intake.OwnerCKE},
			"MODE          inside CKE: ckegen is CKE's server's sabakan integration and writes cluster.yml when CKE's server calls it (CKE's sabakan/disabled is the switch)\n"},
	} {
		if got := tableRows(t, c.st, "MODE "); got != c.want {
			t.Errorf("mode %q: %q, want %q", c.st.Mode, got, c.want)
		}
	}
}

// tableRows are the rows of the status table of st (result ok, leader h)
// that start with prefix.
func tableRows(t *testing.T, st storage.Status, prefix string) string {
	t.Helper()
	st.Result, st.Leader = "ok", "h"
	var b strings.Builder
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			got += l
		}
	}
	return got
}

// TestStatusTableWarnings: the last tick's warnings are a WARNINGS block
// near the top of the table, one a row, aligned with the other rows; past
// maxShownWarnings a row says how many more -o json has; no block without
// warnings.
func TestStatusTableWarnings(t *testing.T) {
	typo := `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`
	var b strings.Builder
	if err := statusTable(&b, storage.Status{Result: "ok", Leader: "h", Warnings: []string{typo, "control-plane-count 2 is even"}}); err != nil {
		t.Fatal(err)
	}
	want := "RESULT        ok\n" +
		"WARNINGS      " + typo + "\n" +
		"              control-plane-count 2 is even\n" +
		"SINCE         -\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("status table:\n%s\nwant it to start with\n%s", b.String(), want)
	}

	var many []string
	for i := range maxShownWarnings + 3 {
		many = append(many, fmt.Sprintf("warning %d", i))
	}
	b.Reset()
	if err := statusTable(&b, storage.Status{Result: "ok", Warnings: many}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "              warning 9\n              and 3 more (ckegenctl sabakan status -o json lists them all)\nSINCE") ||
		strings.Contains(b.String(), "warning 10") {
		t.Errorf("13 warnings:\n%s", b.String())
	}

	b.Reset()
	if err := statusTable(&b, storage.Status{Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "WARNINGS") {
		t.Errorf("a status without warnings shows a WARNINGS block:\n%s", b.String())
	}
}

// TestStatusTablePlurals: one change and one node are singular.
func TestStatusTablePlurals(t *testing.T) {
	st := storage.Status{LastOp: "taint nodes", LastChangeCount: 1, Kubernetes: &storage.KubernetesStatus{Read: true, Nodes: 1},
		ChangeStatus: storage.ChangeStatus{Pending: &storage.PlanSummary{Steps: 1, Result: "settled", NextOp: "increase worker", NextChangeCount: 1}}}
	var b strings.Builder
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LAST OP       taint nodes (1 change)\n", "PENDING       1 step (settled)\n", "NEXT STEP     increase worker (1 change)\n", "read: 1 node, 0 with"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestStatusSaysCKEStoppedCalling: inside CKE, a status older than three
// of CKE's intervals is shown with a note that CKE's server stopped
// calling ckegen, naming CKE's phase from its status key, in the table
// and in JSON; a fresh status has no note.
func TestStatusSaysCKEStoppedCalling(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	// The rate model: in the count model the status notes CKE's own binary too.
	putSettings(t, f.st, "", rateConstraints, "")
	leader := campaignAs(t, f.st, "cke-1")
	last := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Second)
	st := storage.Status{Result: "ok", Time: last, LastRun: last, Since: last, Leader: "cke-1", Mode: decision.ModeInsideCKE, Interval: storage.Duration(time.Minute)}
	if err := f.st.PutStatus(ctx, leader, st, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyCKEStatus), `{"phase":"etcd-boot-aborted","timestamp":"`+time.Now().UTC().Format(time.RFC3339)+`"}`); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := f.run("sabakan", "status")
	want := "NOTE            CKE's server has not called ckegen since " + last.Format(time.RFC3339) + " ("
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "CKE's phase is etcd-boot-aborted") || !strings.Contains(out, "\nRESULT          ok\n") {
		t.Errorf("status: exit %d, stderr %q, stdout\n%s\nwant it to begin with %q", code, errOut, out, want)
	}
	out, _, _ = f.run("sabakan", "status", "-o", "json")
	var v struct {
		Result string   `json:"result"`
		Notes  []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Result != "ok" || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "has not called ckegen since") {
		t.Errorf("status -o json: %v, %+v\n%s", err, v, out)
	}
	st.Time = time.Now()
	if err := f.st.PutStatus(ctx, leader, st, nil); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := f.run("sabakan", "status"); strings.Contains(out, "NOTE") {
		t.Errorf("a fresh status has a note:\n%s", out)
	}
}

// liveRows replaces, in a status table, what depends on the time it is
// read at: the age of the last tick and the evidence of who leads.
func liveRows(out string) string {
	out = lastTickAge.ReplaceAllString(out, "(the last tick's, AGE)")
	return evidence.ReplaceAllString(out, "(EVIDENCE)")
}

var (
	lastTickAge = regexp.MustCompile(`\(the last tick's, [^)]*\)`)
	evidence    = regexp.MustCompile(`\(its election key's lease [^)]*\)`)
)

// statusTable writes the status s for people, notes first.
func statusTable(w io.Writer, s storage.Status, notes ...string) error {
	return liveStatusTable(w, s, nil, "", notes...)
}

// TestNoStatusSaysTheHost: before the first tick, status says why there
// is none as the host that leads is: CKE's server with ckegen inside
// (never "no ckegen daemon"), ckegen's daemon, or nothing leading.
func TestNoStatusSaysTheHost(t *testing.T) {
	f := newPlanFixture(t)
	if _, errOut, code := f.run("sabakan", "status"); code != 1 || !strings.Contains(errOut, "no status yet: no ckegen has ticked on this etcd and prefix, neither a daemon nor CKE's server with ckegen inside") {
		t.Errorf("nothing leads: exit %d, %q", code, errOut)
	}
	srv := startServer(t, f.st, "cke-1", &storage.Presence{Kind: storage.PresenceInsideCKE, Version: "v0.9.0", Commit: "abc", CKEVersion: "v1.35.4"})
	_, errOut, code := f.run("sabakan", "status")
	want := "ckegenctl: no status yet: the ckegen inside CKE's server has not ended a tick (CKE's server calls it at each pass of its loop): CKE's server cke-1 leads with ckegen v0.9.0"
	if code != 1 || !strings.HasPrefix(errOut, want) || strings.Contains(errOut, "daemon has") {
		t.Errorf("ckegen inside CKE's server leads: exit %d, %q, want it to begin %q", code, errOut, want)
	}
	must(t, srv.sess.Close())
	campaignAs(t, f.st, "ckegen-1")
	_, errOut, code = f.run("sabakan", "status")
	if want := "ckegenctl: no status yet: ckegen's daemon has not ended a tick: ckegen's daemon ckegen-1"; code != 1 || !strings.HasPrefix(errOut, want) {
		t.Errorf("a daemon leads: exit %d, %q, want it to begin %q", code, errOut, want)
	}
}

// TestConstraintsHelpRepairQueue: constraints set --help says that the
// repair queue's settings are used inside CKE's server, by the
// auto-repair ckegen runs there, and never that ckegen does not use them.
func TestConstraintsHelpRepairQueue(t *testing.T) {
	out, errOut, code := runCLI(t, "constraints", "set", "--help")
	if code != 0 {
		t.Fatalf("constraints set --help: exit %d, %q", code, errOut)
	}
	for _, name := range []string{"maximum-repair-queue-entries", "wait-seconds-to-repair-rebooting"} {
		line := regexp.MustCompile(`(?m)^\s*` + name + `\s+(.*)$`).FindStringSubmatch(out)
		want := "CKE's auto-repair setting: unused by ckegen's daemons; inside CKE's server, its auto-repair (which ckegen runs) uses it"
		if line == nil || line[1] != want {
			t.Errorf("constraints set --help on %s: %q, want %q\n%s", name, line, want, out)
		}
	}
}

// TestStatusTableNotes: the status's notes on the settings are rows of
// their own, after the warnings, never among them.
func TestStatusTableNotes(t *testing.T) {
	var b strings.Builder
	note := "template nodes[1]: label cke.cybozu.com/weight has no meaning in the rate model (minimum-workers-rate): every HEALTHY machine a worker template accepts is a worker"
	if err := statusTable(&b, storage.Status{Result: "ok", Leader: "h", Warnings: []string{"w"}, SettingsNotes: []string{note, "n2"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !regexp.MustCompile(`(?m)^WARNINGS +w\nSETTINGS +` + regexp.QuoteMeta(note) + `\n +n2\n`).MatchString(out) {
		t.Errorf("the status table lacks the notes after the warnings:\n%s", out)
	}
}
