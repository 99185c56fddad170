package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/storage"
)

// orderFixture is a real etcd and ckegenctl's command line on it.
type orderFixture struct {
	t   *testing.T
	cli *clientv3.Client
	url string
	cfg string
}

func newOrderFixture(t *testing.T) *orderFixture {
	url := etcdtest.Start(t)
	return &orderFixture{t: t, cli: etcdtest.Connect(t, url), url: url, cfg: filepath.Join(t.TempDir(), "no-default.yml")}
}

// run runs ckegenctl with args on the fixture's etcd.
func (f *orderFixture) run(args ...string) (string, string, int) {
	f.t.Helper()
	return runCLIWithConfig(f.t, f.cfg, append([]string{"--etcd-endpoints", f.url}, args...)...)
}

// stored is the orders document as stored, "<none>" when absent, and its
// revision.
func (f *orderFixture) stored() (string, int64) {
	f.t.Helper()
	resp, err := f.cli.Get(context.Background(), "/cke/"+storage.KeyCKEGenOrders)
	if err != nil {
		f.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>", 0
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
}

// addedAt hides the time an order was added.
var addedAt = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// TestOrderRoundTrip: add stores the spec in its normal form with the
// next ID and says so; list shows the orders as a table and as the
// document; remove removes one; IDs are never given twice, also after the
// last order is removed.
func TestOrderRoundTrip(t *testing.T) {
	f := newOrderFixture(t)
	if out, errOut, code := f.run("sabakan", "order", "list"); code != 0 || out != "nothing on order\n" {
		t.Fatalf("list of none: exit %d %q %q", code, out, errOut)
	}
	before := time.Now().UTC().Truncate(time.Second)
	// Keys in any order: stored as New.String writes them.
	out, errOut, code := f.run("sabakan", "order", "add", "count=20,from=2099-03-01,role=cs,rack=12")
	if want := "order 1 added: rack=12,role=cs,count=20,from=2099-03-01\n" +
		"The leader's forecast assumes it once it forecasts again (ckegenctl sabakan status says whether the stored forecast does); remove it (ckegenctl sabakan order remove 1) once its machines are in sabakan, or they count twice.\n"; code != 0 || out != want || errOut != "" {
		t.Fatalf("add: exit %d stdout %q stderr %q, want %q", code, out, errOut, want)
	}
	if _, _, code := f.run("sabakan", "order", "add", "rack=3,role=ss,count=4,from=2099-04-01,product=r7525,retire=2104-04-01"); code != 0 {
		t.Fatal("second add failed")
	}
	out, _, _ = f.run("sabakan", "order", "list")
	if want := "ID  SPEC                                                                    ADDED\n" +
		"1   rack=12,role=cs,count=20,from=2099-03-01                                T\n" +
		"2   rack=3,role=ss,count=4,from=2099-04-01,product=r7525,retire=2104-04-01  T\n"; addedAt.ReplaceAllString(out, "T") != want {
		t.Errorf("list:\n%s\nwant\n%s", out, want)
	}
	out, _, _ = f.run("sabakan", "order", "list", "-o", "json")
	var doc storage.Orders
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("list -o json: %v: %s", err, out)
	}
	if len(doc.Orders) != 2 || doc.Orders[0].ID != 1 || doc.Orders[0].Spec != "rack=12,role=cs,count=20,from=2099-03-01" ||
		doc.Orders[0].Added.Before(before) || doc.Orders[0].Added.After(time.Now()) || doc.NextID != 3 {
		t.Errorf("list -o json: %+v", doc)
	}
	if out, _, code := f.run("sabakan", "order", "remove", "1"); code != 0 || out != "order 1 removed: rack=12,role=cs,count=20,from=2099-03-01\n" {
		t.Errorf("remove 1: exit %d %q", code, out)
	}
	if out, _, code := f.run("sabakan", "order", "remove", "2"); code != 0 || !strings.HasPrefix(out, "order 2 removed") {
		t.Errorf("remove 2: exit %d %q", code, out)
	}
	if out, _, _ := f.run("sabakan", "order", "list"); out != "nothing on order\n" {
		t.Errorf("list after removing all: %q", out)
	}
	// Neither 1 nor 2 again, though none is on order.
	if out, _, _ := f.run("sabakan", "order", "add", "rack=12,role=cs,count=20,from=2099-03-01"); !strings.HasPrefix(out, "order 3 added") {
		t.Errorf("add after removals: %q, want order 3", out)
	}
}

// TestOrderRefusals: a bad spec names the field, an order on order
// already is refused without --again, an unknown ID names those on order;
// each writes nothing.
func TestOrderRefusals(t *testing.T) {
	f := newOrderFixture(t)
	for _, c := range []struct {
		spec, want string
	}{
		{"rack=12,role=cs,count=20000,from=2099-03-01", `count: want 1 to 10000, got 20000`},
		{"rack=12,role=cs,count=2,from=2099-13-01", `from: parsing time`},
		{"rack=12,role=cs,count=2", `from is missing`},
		{"rack=12,rol=cs,count=2,from=2099-03-01", `unknown key "rol"`},
	} {
		out, errOut, code := f.run("sabakan", "order", "add", c.spec)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "nothing was stored") {
			t.Errorf("add %s: exit %d stdout %q stderr %q, want exit 1 and %q", c.spec, code, out, errOut, c.want)
		}
		if v, _ := f.stored(); v != "<none>" {
			t.Fatalf("add %s stored %s", c.spec, v)
		}
	}
	if _, _, code := f.run("sabakan", "order", "add", "rack=12,role=cs,count=20,from=2099-03-01"); code != 0 {
		t.Fatal("add failed")
	}
	was, rev := f.stored()
	// The same order, its keys in another order: refused.
	out, errOut, code := f.run("sabakan", "order", "add", "role=cs,rack=12,from=2099-03-01,count=20")
	if code != 1 || out != "" || !strings.Contains(errOut, "rack=12,role=cs,count=20,from=2099-03-01 is on order already (order 1, added ") ||
		!strings.Contains(errOut, "--again") {
		t.Errorf("duplicate: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if v, r := f.stored(); v != was || r != rev {
		t.Errorf("a duplicate refused wrote %s", v)
	}
	out, errOut, code = f.run("sabakan", "order", "remove", "7")
	if want := "ckegenctl: order remove: no order 7: on order: 1; nothing was written\n"; code != 1 || out != "" || errOut != want {
		t.Errorf("remove 7: exit %d stdout %q stderr %q, want %q", code, out, errOut, want)
	}
	if _, _, code := f.run("sabakan", "order", "remove", "x"); code != 2 {
		t.Errorf("remove x: exit %d, want 2", code)
	}
	if v, r := f.stored(); v != was || r != rev {
		t.Errorf("a refused remove wrote %s", v)
	}
	// Twice the machines, said so: stored.
	if out, _, code := f.run("sabakan", "order", "add", "--again", "rack=12,role=cs,count=20,from=2099-03-01"); code != 0 || !strings.HasPrefix(out, "order 2 added") {
		t.Errorf("--again: exit %d %q", code, out)
	}
}

// TestStatusShowsOrders: the status lists what is on order, says of an
// order whose from date has passed that the forecast assumes it until it
// is removed and of one the stored forecast did not assume that it does
// not yet, and gives the stored forecast's next order-by date, overdue
// once passed.
func TestStatusShowsOrders(t *testing.T) {
	f := newOrderFixture(t)
	ctx := context.Background()
	s := storage.New(f.cli, "")
	sess, err := concurrency.NewSession(f.cli)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	elec := concurrency.NewElection(sess, s.Key(storage.KeyCKEGenLeader))
	if err := elec.Campaign(ctx, "host-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStatus(ctx, elec.Key(), storage.Status{Result: "ok", Leader: "host-1"}, nil); err != nil {
		t.Fatal(err)
	}
	day := func(d int) string { return time.Now().UTC().AddDate(0, 0, d).Format(time.DateOnly) }
	past, future := "rack=1,role=cs,count=2,from="+day(-2), "rack=2,role=cs,count=3,from="+day(30)
	for _, spec := range []string{past, future} {
		_, errOut, code := f.run("sabakan", "order", "add", spec)
		if code != 0 {
			t.Fatalf("add %s: %s", spec, errOut)
		}
		if passed := strings.Contains(errOut, "warning: from "+day(-2)+" has passed"); passed != (spec == past) {
			t.Errorf("add %s: stderr %q", spec, errOut)
		}
	}
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	summary := storage.ForecastSummary{At: at, RunwayReason: "NONE", RunwayMessage: "the cluster meets its constraints until the forecast's end",
		OrderBy: day(10), Purchases: []storage.ForecastPurchase{{Role: "cs", Count: 4}, {Role: "ss", Count: 1}}, Orders: []string{past, future}}
	if err := s.PutForecast(ctx, elec.Key(), summary); err != nil {
		t.Fatal(err)
	}
	tail := func() string {
		out, errOut, code := f.run("sabakan", "status")
		if code != 0 {
			t.Fatalf("status: exit %d %s", code, errOut)
		}
		_, after, _ := strings.Cut(out, "\nRUNWAY")
		return "RUNWAY" + after
	}
	want := "RUNWAY    the cluster meets its constraints until the forecast's end (forecast made 1h ago, " + at.Format(time.RFC3339) + ")\n" +
		"CAPACITY  next order by " + day(10) + " (2 purchases keep the constraints; RUNWAY is if nothing is bought: ckegenctl sabakan forecast --buy)\n" +
		"ORDERS    order 1 (" + past + "): from " + day(-2) + " has passed; ckegen's forecast still assumes it until it is removed (ckegenctl sabakan order remove 1) once its machines are in sabakan\n" +
		"          order 2: " + future + "\n"
	if got := tail(); got != want {
		t.Errorf("status:\n%s\nwant\n%s", got, want)
	}
	// The order-by date passed; the forecast made before order 2.
	summary.OrderBy, summary.Orders = day(-1), []string{past}
	if err := s.PutForecast(ctx, elec.Key(), summary); err != nil {
		t.Fatal(err)
	}
	want = "RUNWAY    the cluster meets its constraints until the forecast's end (forecast made 1h ago, " + at.Format(time.RFC3339) + ")\n" +
		"CAPACITY  next order by " + day(-1) + ", overdue (2 purchases keep the constraints; RUNWAY is if nothing is bought: ckegenctl sabakan forecast --buy)\n" +
		"ORDERS    order 1 (" + past + "): from " + day(-2) + " has passed; ckegen's forecast still assumes it until it is removed (ckegenctl sabakan order remove 1) once its machines are in sabakan\n" +
		"          order 2: " + future + "; the stored forecast (made " + at.Format(time.RFC3339) + ") does not assume it yet\n"
	if got := tail(); got != want {
		t.Errorf("status, overdue:\n%s\nwant\n%s", got, want)
	}
	// Nothing to buy, nothing on order: neither row.
	summary.OrderBy, summary.Purchases, summary.Orders = "", nil, nil
	if err := s.PutForecast(ctx, elec.Key(), summary); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2"} {
		if _, _, code := f.run("sabakan", "order", "remove", id); code != 0 {
			t.Fatal("remove failed")
		}
	}
	if got, want := tail(), "RUNWAY  the cluster meets its constraints until the forecast's end (forecast made 1h ago, "+at.Format(time.RFC3339)+")\n"; got != want {
		t.Errorf("status with nothing to buy:\n%s\nwant\n%s", got, want)
	}
	// Orders edited by hand that cannot be read: said, and the status
	// shown all the same.
	for doc, want := range map[string]string{
		`{"orders":[{"id":9,"spec":"rack=1"}]}`: "ORDERS  order 9 cannot be read: \"rack=1\": role is missing",
		`not json`:                              "ORDERS  cannot be read: " + storage.KeyCKEGenOrders + ": invalid character",
	} {
		if _, err := f.cli.Put(ctx, "/cke/"+storage.KeyCKEGenOrders, doc); err != nil {
			t.Fatal(err)
		}
		if got := tail(); !strings.Contains(got, want) {
			t.Errorf("status with orders %s:\n%s\nwant it to say %q", doc, got, want)
		}
	}
}

// TestChangeOrdersRetries: an order added by another command between a
// change's read and its write is kept: the change is made again on what
// is stored, and gets the next ID.
func TestChangeOrdersRetries(t *testing.T) {
	f := newOrderFixture(t)
	st := storage.New(f.cli, "")
	ctx := context.Background()
	n, err := assume.ParseNew("rack=1,role=cs,count=2,from=2099-01-01")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	err = changeOrders(ctx, st, func(o *storage.Orders) error {
		calls++
		if calls == 1 {
			// Another ckegenctl adds an order meanwhile.
			other, was, err := st.GetOrders(ctx)
			if err != nil {
				return err
			}
			if _, err := addOrder(&other, n, false, time.Now()); err != nil {
				return err
			}
			if err := st.PutOrders(ctx, was, other); err != nil {
				return err
			}
		}
		_, err := addOrder(o, n, true, time.Now())
		return err
	})
	if err != nil || calls != 2 {
		t.Fatalf("changeOrders: %v after %d calls, want nil after 2", err, calls)
	}
	o, _, err := st.GetOrders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Orders) != 2 || o.Orders[0].ID != 1 || o.Orders[1].ID != 2 || o.NextID != 3 {
		t.Errorf("stored %+v, want orders 1 and 2", o)
	}
}

// TestOrderIDWithoutNextID: a document without nextID (written by hand,
// say) gives the next order one more than the largest ID present.
func TestOrderIDWithoutNextID(t *testing.T) {
	f := newOrderFixture(t)
	if _, err := f.cli.Put(context.Background(), "/cke/"+storage.KeyCKEGenOrders,
		`{"orders":[{"id":5,"spec":"rack=1,role=cs,count=2,from=2099-01-01","added":"2026-12-01T00:00:00Z"}]}`); err != nil {
		t.Fatal(err)
	}
	if out, errOut, _ := f.run("sabakan", "order", "add", "rack=2,role=cs,count=2,from=2099-01-01"); !strings.HasPrefix(out, "order 6 added") {
		t.Errorf("add: %q %q, want order 6", out, errOut)
	}
}
