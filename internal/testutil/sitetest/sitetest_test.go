package sitetest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// TestSite: the compatible server answers the machines it holds, etcd
// holds the settings asked for, REST changes what the store holds, and
// Lead leads.
func TestSite(t *testing.T) {
	const tmpl = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16"}`
	s := sitetest.Start(t, sitetest.Options{
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.BootPerRack = 2, 3, 0 },
		Template:   tmpl, StoreURL: true, Constraints: sitetest.Counts(3, 2),
	})
	ctx := context.Background()
	cli, err := sabakan.NewClient(s.URL, sabakan.Options{Timeout: 2 * time.Second, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cli.SearchMachines(ctx, sabakan.Variables{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 || len(s.Machines) != 6 || ms[0].Spec.Serial != s.Machines[0].Spec.Serial {
		t.Errorf("sabakan answers %d machines, the site loaded %d; want 6, the same", len(ms), len(s.Machines))
	}
	if ms[0].Spec.RegisterDate.After(sitetest.DefaultNow) {
		t.Errorf("registered %s, after the site's time %s", ms[0].Spec.RegisterDate, sitetest.DefaultNow)
	}

	if got, _, err := sitetest.StoreOf(s.Storage).GetTemplate(ctx); err != nil || string(got) != tmpl {
		t.Errorf("template %q, %v", got, err)
	}
	if got, err := sitetest.StoreOf(s.Storage).GetURL(ctx); err != nil || got != s.URL || !strings.HasSuffix(got, "/graphql") {
		t.Errorf("URL %q, %v; want %q", got, err, s.URL)
	}
	if c, err := sitetest.StoreOf(s.Storage).GetConstraints(ctx); err != nil || c.ControlPlaneCount != 3 || c.MinimumWorkers != 2 {
		t.Errorf("constraints %+v, %v", c, err)
	}

	serial := s.Machines[1].Spec.Serial
	s.REST(t, http.MethodPut, "/api/v1/state/"+serial, "unreachable")
	if m, err := s.Store.Get(serial); err != nil || m.Status.State != machine.StateUnreachable {
		t.Errorf("after PUT state: %+v, %v", m.Status, err)
	}

	if key := s.Lead(t, "the-test", 2); key == "" {
		t.Error("no election key")
	}
	if name, err := s.Storage.CKEGenLeader(ctx); err != nil || name != "the-test" {
		t.Errorf("leader %q, %v", name, err)
	}
}

// TestNothingStored: by default no setting is stored, the inventory is
// Machines when given, and Wrap sees the requests.
func TestNothingStored(t *testing.T) {
	var requests atomic.Int64
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := sitetest.Start(t, sitetest.Options{
		Now:      now,
		Machines: []machine.Machine{{Spec: machine.Spec{Serial: "x1", IPv4: []string{"10.0.0.1"}, RetireDate: now.AddDate(1, 0, 0)}}},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1); h.ServeHTTP(w, r) })
		},
	})
	ctx := context.Background()
	resp, err := s.Storage.Client.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("etcd holds %d keys, %v; want none", len(resp.Kvs), err)
	}
	cli, err := sabakan.NewClient(s.URL, sabakan.Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := cli.SearchMachines(ctx, sabakan.Variables{}); err != nil || len(ms) != 1 || ms[0].Spec.Serial != "x1" {
		t.Errorf("answered %v, %v; want x1", ms, err)
	}
	if requests.Load() != 1 {
		t.Errorf("%d requests wrapped, want 1", requests.Load())
	}
	s.Server.Close()
	if _, err := cli.SearchMachines(ctx, sabakan.Variables{}); !errors.Is(err, sabakan.ErrUnreachable) {
		t.Errorf("after Server.Close: %v, want unreachable", err)
	}
}

// TestLargeRequests: MaxRequestBytes raises etcd's limit and the client's.
func TestLargeRequests(t *testing.T) {
	s := sitetest.Start(t, sitetest.Options{MaxRequestBytes: 4 << 20})
	if _, err := s.Storage.Client.Put(context.Background(), "/big", strings.Repeat("x", 3<<20)); err != nil {
		t.Errorf("a 3 MiB put under a 4 MiB limit: %v", err)
	}
}

// TestGo: stop cancels the context and returns what run returned.
func TestGo(t *testing.T) {
	started := make(chan struct{})
	stop := sitetest.Go(t, context.Background(), func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("stop: %v, want the run's context.Canceled", err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("stop again: %v", err)
	}
}
