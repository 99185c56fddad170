package integrator

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// TestRepairAdviceWithCKECLI: the commands the full queue's advice names
// do, with CKE v1.35.4's own ckecli on the same etcd, what the advice
// says. CKE's own integrator queues two machines twice (no API server);
// they stay non-healthy, and a third machine waits (maximum 4). The
// status counts the 2 second entries and names ckecli repair-queue
// delete INDEX for them (delete-unfinished only with its scope), in
// right plurals. ckecli repair-queue list gives the indexes; delete INDEX
// of each second entry marks that entry deleted and no other. The status
// then shows the 2 entries marked deleted apart, and says that they
// count until CKE's server dequeues them: the machine still waits, and
// CKE's own repairer, given the same queue, queues nothing either. Once
// dequeued (as CKE's server does), the machine is queued. Last,
// delete-unfinished marks every unfinished entry deleted, the one being
// processed included, as the advice says.
func TestRepairAdviceWithCKECLI(t *testing.T) {
	_, ckecli := cketest.Binaries(t)
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5, MaximumRepairQueueEntries: ptr(4)})
	config := filepath.Join(t.TempDir(), "cke.yml")
	must(t, os.WriteFile(config, []byte("endpoints: ["+strconv.Quote(f.site.EtcdURL)+"]\nprefix: /cke/\n"), 0o600))
	run := func(args ...string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(c, ckecli, append([]string{"--config", config}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("CKE's ckecli %v: %v: %s", args, err, errOut.String())
		}
		return out.String()
	}
	ig, err := New(Config{Client: f.cke, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.DiscardHandler)}})
	must(t, err)
	must(t, ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
	}
	set := func(s machine.State, addrs ...string) {
		t.Helper()
		for _, a := range addrs {
			_, err := f.site.Store.SetState(serialOf(t, f, a), s)
			must(t, err)
		}
	}
	status := clusterStatus(all, nil)
	status.Kubernetes = cke.KubernetesClusterStatus{}
	must(t, f.st.SetDisabled(ctx, true)) // the repairers alone
	set(machine.StateUnhealthy, all[1], all[2])
	ckes := ckesabakan.NewIntegrator(f.cke)
	must(t, ckes.Do(ctx, f.leader, status))
	must(t, ckes.Do(ctx, f.leader, status))
	if got := queuedPairs(t, f); len(got) != 4 {
		t.Fatalf("CKE's integrator queued %v, want 2 machines twice: the test's inputs are not what it means", got)
	}
	set(machine.StateUnhealthy, all[3])

	must(t, ig.Do(ctx, f.leader, status))
	r := f.status(t).Repair
	if r == nil {
		t.Fatal("no repair status with a full queue")
	}
	want := "auto-repair: the repair queue holds 4 entries (maximum-repair-queue-entries: 4): 2 second entries for machines queued already; " +
		"1 machine waits for an entry, as CKE queues none while they would not all fit: " + all[3] + " (UNHEALTHY). " +
		"Delete each of those entries with ckecli repair-queue delete INDEX (ckecli repair-queue list shows the indexes); " +
		"ckecli repair-queue delete-unfinished is no command for a few entries: it deletes every unfinished entry, those being processed included. "
	if r.Repeated != 2 || r.Deleted != 0 || !strings.HasPrefix(r.Message, "auto-repair: the repair queue holds 4 entries") || !strings.HasPrefix(r.Message, want) {
		t.Fatalf("the status: %+v\nwant the message to begin\n%s", r, want)
	}

	// The advice: list, then delete INDEX of each second entry.
	var listed []*cke.RepairQueueEntry
	must(t, json.Unmarshal([]byte(run("repair-queue", "list")), &listed))
	seen := map[string]bool{}
	var second []int64
	for _, e := range listed {
		if seen[e.Address] {
			second = append(second, e.Index)
		}
		seen[e.Address] = true
	}
	if len(second) != 2 {
		t.Fatalf("ckecli repair-queue list: %d second entries, want 2", len(second))
	}
	for _, i := range second {
		run("repair-queue", "delete", strconv.FormatInt(i, 10))
	}
	var marked []int64
	for _, e := range repairEntries(t, f.cke) {
		if e.Deleted {
			marked = append(marked, e.Index)
		}
	}
	if !slices.Equal(marked, second) {
		t.Fatalf("after ckecli repair-queue delete %v, the entries marked deleted are %v", second, marked)
	}

	// Marked, not dequeued: they count, for ckegen's status as for CKE's
	// repairer.
	must(t, ig.Do(ctx, f.leader, status))
	r = f.status(t).Repair
	wantDeleted := "auto-repair: the repair queue holds 4 entries (maximum-repair-queue-entries: 4): 2 marked deleted, which CKE's repairer counts until CKE's server dequeues them; " +
		"1 machine waits for an entry"
	if r == nil || r.Deleted != 2 || r.Repeated != 0 || !strings.HasPrefix(r.Message, wantDeleted) ||
		!strings.Contains(r.Message, "CKE's server dequeues an entry marked deleted when it next runs its repair operations") || strings.Contains(r.Message, "delete INDEX") {
		t.Fatalf("with 2 entries marked deleted, the status: %+v\nwant the message to begin %q and say when they are dequeued", r, wantDeleted)
	}
	withAPI := clusterStatus(all, nil)
	withAPI.RepairQueue.Entries = repairEntries(t, f.cke)
	must(t, ckes.Do(ctx, f.leader, withAPI))
	if got := queuedPairs(t, f); len(got) != 4 {
		t.Fatalf("CKE's repairer queued with 2 entries marked deleted: %v; the status says they count", got)
	}

	// CKE's server dequeues them (op.RepairDequeueOp): room for the
	// machine that waited.
	queue := cke.Storage{Client: f.cke}
	for _, i := range second {
		must(t, queue.DeleteRepairsEntry(ctx, f.leader, i))
	}
	must(t, ig.Do(ctx, f.leader, status))
	if st := f.status(t); st.Repair != nil || !slices.Contains(queuedPairs(t, f), all[3]+" unhealthy") {
		t.Errorf("dequeued: the status says %+v, the queue is %v; want %s queued", st.Repair, queuedPairs(t, f), all[3])
	}

	// delete-unfinished, with its scope: every unfinished entry, the one
	// being processed included.
	entries := repairEntries(t, f.cke)
	entries[0].Status = cke.RepairStatusProcessing
	must(t, queue.UpdateRepairsEntry(ctx, entries[0]))
	run("repair-queue", "delete-unfinished")
	for _, e := range repairEntries(t, f.cke) {
		if !e.Deleted {
			t.Errorf("after delete-unfinished, entry %d (%s, %s) is not marked deleted", e.Index, e.Address, e.Status)
		}
	}
}
