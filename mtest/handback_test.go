package mtest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
)

// wouldAdd is how ckegenctl names the nodes CKE's own integration would
// add: the count, and the nodes before and after.
var wouldAdd = regexp.MustCompile(`would add (\d+) nodes \((\d+) → (\d+) nodes\) in 1 write`)

// TestHandbackCountModel: ckegen made the cluster in the count model (3
// control planes, 20 workers) of an inventory of 228 HEALTHY machines, and
// owns the integration. handback is refused and writes nothing, naming N,
// the nodes CKE's own integration would add; --force hands back. Then
// CKE v1.35.4's own cke runs its integration once (--debug-sabakan, no
// Vault): it reads the count model's document as minimum-workers-rate 0,
// and its one write adds exactly N nodes.
func TestHandbackCountModel(t *testing.T) {
	bin, cli := cketest.Binaries(t)
	storyStart := time.Now()
	e := newEnv(t)
	// The count model, stored explicitly: a number of workers.
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("constraints", "set", "maximum-workers", "20")
	if out := e.mustCtl("constraints", "show"); !strings.Contains(out, `"maximum-workers": 20`) || strings.Contains(out, "minimum-workers-rate") {
		t.Fatalf("the stored constraints are not the count model's:\n%s", out)
	}
	e.converge(60 * time.Second)
	before := e.rawCluster()
	if cps, ws := before.set(true), before.set(false); len(cps) != 3 || len(ws) != 20 {
		t.Fatalf("ckegen's cluster in the count model: %d control planes, %d workers", len(cps), len(ws))
	}
	e.mustCtl("sabakan", "takeover")

	// Refused: nothing written, N named.
	ownerKeys := func() string {
		var s []string
		for _, k := range []string{"/cke/sabakan/owner", "/cke/sabakan/disabled"} {
			for _, kv := range e.electionKeys(k) {
				s = append(s, kv.Key+"="+kv.Value)
			}
		}
		return strings.Join(s, " ")
	}
	keys := ownerKeys()
	_, err := e.ctl("sabakan", "handback")
	if err == nil || !strings.Contains(err.Error(), "handback refused, nothing written") {
		t.Fatalf("handback in the count model: %v", err)
	}
	if now := ownerKeys(); now != keys {
		t.Errorf("a refused handback wrote: %s -> %s", keys, now)
	}
	m := wouldAdd.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the refusal names no count: %v", err)
	}
	n, _ := strconv.Atoi(m[1])
	if from, _ := strconv.Atoi(m[2]); from != len(before.nodes) {
		t.Errorf("the refusal counts from %d nodes, the cluster has %d", from, len(before.nodes))
	}
	t.Logf("refused: %v", err)

	// --force hands back; owner warns of the same count.
	out := e.mustCtl("sabakan", "handback", "--force")
	if !strings.Contains(out, "Handed back with --force") {
		t.Errorf("handback --force said:\n%s", out)
	}
	if ow := e.mustCtl("sabakan", "owner"); !strings.Contains(ow, "WARNING         handed back to CKE") || !strings.Contains(ow, m[0]) {
		t.Errorf("owner after the handback does not warn of %q:\n%s", m[0], ow)
	}

	// CKE's own integration, once: one write, N nodes added.
	k := newCKESite(e, bin, cli)
	handedBack := e.rawCluster()
	writes := e.rec.count()
	k.debugPass()
	if w := e.rec.count() - writes; w != 1 {
		t.Fatalf("CKE's own integration wrote the cluster %d times in one pass, want 1: %s", w, lastLine(k.debugLog()))
	}
	after := e.firstWriteAfter(writes)
	added := 0
	for a := range after.nodes {
		if _, ok := handedBack.nodes[a]; !ok {
			added++
		}
	}
	if added != n {
		t.Fatalf("CKE's own integration added %d nodes (%d -> %d); ckegenctl said %d", added, len(handedBack.nodes), len(after.nodes), n)
	}
	t.Logf("CKE's own integration added %d nodes in one write (%d -> %d), as ckegenctl said; story %s",
		added, len(handedBack.nodes), len(after.nodes), time.Since(storyStart).Round(100*time.Millisecond))
}
