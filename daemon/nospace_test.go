package daemon

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestNoSpace: when etcd's database is full (a real etcd with a small
// --quota-backend-bytes, alarm NOSPACE), the tick that must write fails
// with its own reason, ETCD_NO_SPACE, whose message says what to do; the
// daemon keeps leading and ticking; once an operator has compacted,
// defragmented and disarmed the alarm, its next tick writes.
func TestNoSpace(t *testing.T) {
	s := sitetest.Start(t, sitetest.Options{
		Now: testNow, QuotaBackendBytes: 4 << 20,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		Template:   sitetest.Template, StoreURL: true, Constraints: sitetest.Counts(3, 5),
	})
	f := &fixture{site: s, etcd: s.Etcd, st: sitetest.StoreOf(s.Storage), url: s.URL}
	d := f.daemon("d", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	waitFor(t, "the first cluster", func() bool { return d.Status().LastOp == "new" })

	// Fill etcd's database until it raises its alarm.
	cli := f.st.Client
	junk := strings.Repeat("x", 512<<10)
	for i := 0; ; i++ {
		_, err := cli.Put(ctx, f.st.Key("junk"), junk)
		if storage.NoSpace(err) {
			break
		}
		if err != nil || i > 200 {
			t.Fatalf("filling etcd: %v after %d puts", err, i)
		}
	}
	// A change the daemon must write: a control plane turns UNREACHABLE.
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	cp := c.Nodes[0].Address
	serial := ""
	for _, m := range s.Machines {
		if m.Spec.IPv4[0] == cp {
			serial = m.Spec.Serial
		}
	}
	if _, err := s.Store.SetState(serial, machine.StateUnreachable); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ETCD_NO_SPACE", func() bool { return d.Status().Reason == reason.EtcdNoSpace })
	st := d.Status()
	if st.Result != reason.Failing || !strings.Contains(st.Message, "etcdctl alarm disarm") || !d.Leading() {
		t.Errorf("status %s %s %q, leading %v", st.Result, st.Reason, st.Message, d.Leading())
	}
	if got := series(scrape(t, d), "ckegen_integration_failing"); len(got) != 1 || got[0] != `ckegen_integration_failing{reason="ETCD_NO_SPACE"} 1` {
		t.Errorf("ckegen_integration_failing: %q", got)
	}
	before := ticks(d)
	waitFor(t, "the daemon ticking on", func() bool { return ticks(d) >= before+2 })

	// The operator's fix: free the space, compact, defragment, disarm.
	_, err = cli.Delete(ctx, f.st.Key("junk"))
	must(t, err)
	resp, err := cli.Get(ctx, "any")
	must(t, err)
	_, err = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	must(t, err)
	_, err = cli.Defragment(ctx, f.site.EtcdURL)
	must(t, err)
	_, err = cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: uint64(s.Etcd.Server.MemberID()), Alarm: 1}) // NOSPACE
	must(t, err)
	waitFor(t, "the cluster written after the fix", func() bool {
		st := d.Status()
		return st.Result == reason.OK && st.LastOp == "replace control plane"
	})
	cancel()
	<-done
}
