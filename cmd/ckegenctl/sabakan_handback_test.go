package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// countOf2 is the operator's count model: a number of workers.
const countOf2 = `{"control-plane-count":1,"minimum-workers":2,"maximum-workers":2}`

// storeCountCluster stores the cluster ckegen makes in the stored (count)
// model, built from the stored template, and returns its number of nodes.
func storeCountCluster(t *testing.T, f *planFixture) int {
	t.Helper()
	ctx := context.Background()
	d, _ := f.plan()
	if d.Cluster == nil {
		t.Fatal("no cluster planned")
	}
	data, err := json.Marshal(d.Cluster)
	must(t, err)
	_, tmplRev, err := sitetest.StoreOf(f.st).GetTemplate(ctx)
	must(t, err)
	_, err = f.st.Client.Txn(ctx).Then(
		clientv3.OpPut(f.st.Key(storage.KeyCluster), string(data)),
		clientv3.OpPut(f.st.Key(storage.KeyClusterRevision), fmt.Sprint(tmplRev)),
	).Commit()
	must(t, err)
	return len(d.Cluster.Nodes)
}

// ckeWouldAdd is how many nodes the plan of the rate model with
// minimum-workers-rate 0 (what CKE v1.35.4's own integration reads from a
// count-model document) adds to the stored cluster, as ckegenctl sabakan
// plan --constraints computes it.
func ckeWouldAdd(t *testing.T, f *planFixture, nodes int) int {
	t.Helper()
	d, _ := f.plan("--constraints", f.file("cke-reads.json", `{"control-plane-count":1,"minimum-workers-rate":0}`))
	if len(d.Steps) != 1 || d.Steps[0].Op != "increase worker" {
		t.Fatalf("the rate model's plan from the count model's cluster: %v, want one increase worker", ops(d))
	}
	return len(d.Cluster.Nodes) - nodes
}

// TestHandbackCountModel: while the count model is in force, handback is
// refused, exits 1 and writes nothing, naming how many nodes CKE's own
// integration would add (that many: what the rate model with CKE's reading
// adds) and how to switch to the rate model; when sabakan does not answer
// it is refused all the same, the count not known; --force hands back and
// says what it did. In the rate model handback goes through.
func TestHandbackCountModel(t *testing.T) {
	f := newPlanFixture(t)
	url := f.sabakan.URL + "/graphql"
	putSettings(t, f.st, string(storedTemplate(t)), countOf2, url)
	nodes := storeCountCluster(t, f)
	campaign(t, f.st, storage.KeyLeader, "cke-1")
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	added := ckeWouldAdd(t, f, nodes)
	if added < 5 {
		t.Fatalf("CKE's reading adds %d nodes to %d: the test shows nothing", added, nodes)
	}

	refused := func(what string, want ...string) {
		t.Helper()
		before := readState(t, f.st.Client)
		out, errOut, code := f.run("sabakan", "handback", "--sabakan-timeout", "2s")
		assertNothingWritten(t, "handback, "+what, before, readState(t, f.st.Client))
		if code != 1 || out != "" {
			t.Errorf("handback, %s: exit %d, stdout %q; want 1 and nothing", what, code, out)
		}
		for _, w := range append([]string{"ckegenctl: handback refused, nothing written: ",
			"switch to the rate model first, after checking what it does: ckegenctl constraints set minimum-workers-rate N --dry-run (then hand back), or hand back all the same with --force\n"}, want...) {
			if !strings.Contains(errOut, w) {
				t.Errorf("handback, %s: stderr\n%s\nlacks %q", what, errOut, w)
			}
		}
	}
	refused("count model", "the count model is in force (minimum-workers/maximum-workers), which CKE v1.35.4's own integration does not know: it reads minimum-workers-rate 0 "+
		fmt.Sprintf("and would add %d nodes (%d → %d nodes) in 1 write", added, nodes, nodes+added))

	// sabakan does not answer: refused, the count not known.
	putSettings(t, f.st, "", "", "http://127.0.0.1:1/graphql")
	refused("sabakan unreachable", "how many nodes it would add is not known: ")
	putSettings(t, f.st, "", "", url)

	// --force hands back, and says what it did.
	before := readState(t, f.st.Client)
	out, errOut, code := f.run("sabakan", "handback", "--force")
	if code != 0 || f.raw(storage.KeyOwner) != "cke" || f.raw(storage.KeySabakanDisabled) != "false" {
		t.Fatalf("handback --force: exit %d, owner %s, CKE's switch %s; stderr %s", code, f.raw(storage.KeyOwner), f.raw(storage.KeySabakanDisabled), errOut)
	}
	if got := before.changed(readState(t, f.st.Client)); len(got) != 2 {
		t.Errorf("handback --force changed %v, want the owner and CKE's switch", got)
	}
	adds := fmt.Sprintf("would add %d nodes (%d → %d nodes) in 1 write", added, nodes, nodes+added)
	if !strings.HasPrefix(errOut, "warning: --force: handing back although the count model is in force") || !strings.Contains(errOut, adds) {
		t.Errorf("handback --force: stderr %q lacks the warning with %q", errOut, adds)
	}
	if !strings.Contains(out, "\nHanded back with --force: if CKE's own integration writes the cluster, the count model is in force") || !strings.Contains(out, adds) {
		t.Errorf("handback --force: stdout\n%s", out)
	}

	// The rate model: handback goes through.
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	putSettings(t, f.st, "", rateConstraints, "")
	if out, errOut, code := f.run("sabakan", "handback"); code != 0 || errOut != "" || !strings.HasPrefix(out, "CKE owns the sabakan integration again") || f.raw(storage.KeyOwner) != "cke" {
		t.Errorf("handback in the rate model: exit %d, stdout %q, stderr %q, owner %s", code, out, errOut, f.raw(storage.KeyOwner))
	}
}

// TestCKEOwnWarning: owner and status warn, in one line, where CKE's own
// binary could lead while the count model is in force (beside CKE's
// server with ckegen owning the integration; inside CKE), naming the
// nodes its integration would add, or that the count is not known; never
// standalone, never in the rate model.
func TestCKEOwnWarning(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	url := f.sabakan.URL + "/graphql"
	putSettings(t, f.st, string(storedTemplate(t)), countOf2, url)
	nodes := storeCountCluster(t, f)
	added := ckeWouldAdd(t, f, nodes)
	last := time.Now().Add(-time.Minute)
	putStatus := func(mode string) {
		t.Helper()
		data, err := json.Marshal(storage.Status{Result: reason.OK, Time: last, LastRun: last, Since: last, Leader: "x", Mode: mode,
			Interval: storage.Duration(time.Minute)})
		must(t, err)
		_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanStatus), string(data))
		must(t, err)
	}
	// warned runs owner and status and returns their warnings: owner's
	// WARNING row, status's NOTE on CKE's own integration.
	warned := func() (owner, status string) {
		t.Helper()
		out, errOut, code := f.run("sabakan", "owner")
		if code != 0 {
			t.Fatalf("owner: %s", errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "WARNING") {
				owner += strings.TrimSpace(strings.TrimPrefix(l, "WARNING"))
			}
		}
		out, errOut, code = f.run("sabakan", "status")
		if code != 0 {
			t.Fatalf("status: %s", errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "NOTE") && strings.Contains(l, "CKE v1.35.4's own integration") {
				status += strings.TrimSpace(strings.TrimPrefix(l, "NOTE"))
			}
		}
		return owner, status
	}
	adds := fmt.Sprintf("it reads minimum-workers-rate 0 and would add %d nodes (%d → %d nodes) in 1 write; "+
		"switch to the rate model first, after checking what it does: ckegenctl constraints set minimum-workers-rate N --dry-run", added, nodes, nodes+added)

	// Standalone: CKE's own binary has nowhere to lead.
	putStatus(decision.ModeStandalone)
	if o, s := warned(); o != "" || s != "" {
		t.Errorf("standalone, count model: owner %q, status %q; want no warning", o, s)
	}

	// Beside CKE's server, ckegen owning the integration.
	campaign(t, f.st, storage.KeyLeader, "cke-1")
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	putStatus(decision.ModeBesideCKE)
	o, s := warned()
	want := "beside CKE's server, a handback or CKE's integration re-enabled (ckecli sabakan enable) runs CKE's own integration: " +
		"the count model is in force (minimum-workers/maximum-workers), which CKE v1.35.4's own integration does not know: " + adds
	if o != want || s != want {
		t.Errorf("beside CKE, count model:\nowner  %q\nstatus %q\nwant %q", o, s, want)
	}

	// Inside CKE, with sabakan not answering: the count is not known.
	putStatus(decision.ModeInsideCKE)
	putSettings(t, f.st, "", "", "http://127.0.0.1:1/graphql")
	o, s = warned()
	for _, w := range []string{"inside CKE, a rolling restart or a rollback of the binary lets CKE's own cke lead: the count model is in force",
		"; how many nodes it would add is not known: ", "; switch to the rate model first"} {
		if !strings.Contains(o, w) || !strings.Contains(s, w) {
			t.Errorf("inside CKE, sabakan not answering:\nowner  %q\nstatus %q\nlack %q", o, s, w)
		}
	}

	// The rate model: no warning.
	putSettings(t, f.st, "", rateConstraints, url)
	if o, s := warned(); o != "" || s != "" {
		t.Errorf("inside CKE, rate model: owner %q, status %q; want no warning", o, s)
	}
}
