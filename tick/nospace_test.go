package tick

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestNoSpaceAtStatusWrite: a tick that has nothing to write finds etcd
// full only when it records its status (a real etcd with a small
// --quota-backend-bytes, alarm NOSPACE). That is its outcome: the status
// it returns says ETCD_NO_SPACE with what to do, and the step runs again
// after its backoff, as after any failure, not after a whole interval.
func TestNoSpaceAtStatusWrite(t *testing.T) {
	s := sitetest.Start(t, sitetest.Options{
		Now: testNow, QuotaBackendBytes: 4 << 20,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		Template:   sitetest.Template, StoreURL: true, Constraints: sitetest.Counts(3, 5),
	})
	f := &fixture{site: s, etcd: s.Etcd, st: sitetest.StoreOf(s.Storage), store: s.Store, url: s.URL}
	d := f.step("d", func(c *testConfig) {
		c.Interval, c.MinBackoff = storage.Duration(time.Hour), storage.Duration(5*time.Second)
	})
	leader := f.lead(t)
	ctx := context.Background()
	if r := d.run(ctx, leader); r.Err != nil || r.Status.LastOp != "new" {
		t.Fatalf("the first tick: %v, last op %q", r.Err, r.Status.LastOp)
	}
	if r := d.run(ctx, leader); r.Err != nil || r.Next != time.Hour {
		t.Fatalf("a tick with nothing to do: %v, next in %s, want an hour", r.Err, r.Next)
	}

	// Fill etcd's database until it raises its alarm.
	junk := strings.Repeat("x", 512<<10)
	for i := 0; ; i++ {
		_, err := f.st.Client.Put(ctx, f.st.Key("junk"), junk)
		if storage.NoSpace(err) {
			break
		}
		if err != nil || i > 200 {
			t.Fatalf("filling etcd: %v after %d puts", err, i)
		}
	}
	r := d.run(ctx, leader)
	if reason.Of(r.Err) != reason.EtcdNoSpace {
		t.Fatalf("the tick after etcd filled: %v, want %s", r.Err, reason.EtcdNoSpace)
	}
	if r.Status.Result != reason.Failing || r.Status.Reason != reason.EtcdNoSpace || !strings.Contains(r.Status.Message, "etcdctl alarm disarm") {
		t.Errorf("its status: %s %s %q", r.Status.Result, r.Status.Reason, r.Status.Message)
	}
	if r.Status.ConsecutiveFailures != 1 {
		t.Errorf("its status counts %d consecutive failures, want 1", r.Status.ConsecutiveFailures)
	}
	if r.Next != 5*time.Second {
		t.Errorf("the step runs again in %s, want its backoff, 5s", r.Next)
	}
}
