// Package sitetest starts a test site: an embedded etcd, the
// sabakan-compatible server holding a data center and served over HTTP,
// and the storage over that etcd, with whichever settings the test asks
// for already stored (template, sabakan URL, constraints). Everything
// stops when the test ends.
//
// The package does not import the daemon, so that the daemon's own tests
// (package daemon) can use it as well as the tests outside. A daemon runs
// in process with Go, which runs any func(context.Context) error, such as
// (*daemon.Daemon).Run, until the test ends or stop is called; each test
// keeps its own daemon.Config, since the timings are what they test.
//
// Tests of the binaries use the site's etcd and compatible server for the
// processes they start (the binaries' own flags point at EtcdURL and
// URL), or StartSabakan alone when the binary runs its own etcd. mtest
// does not use it: it kills and restarts etcd members and the compatible
// server, which must therefore be processes of their own.
package sitetest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// DefaultNow is the data center's time when Options leave Now zero.
var DefaultNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options say what differs from one site to another. The zero value is
// the default data center of dcgen (12 racks of 20) on a fixed clock,
// with nothing stored in etcd.
type Options struct {
	// Now is the data center's time (dcgen's dates count from it) and,
	// without Clock, the compatible server's fixed clock. Zero:
	// DefaultNow.
	Now time.Time
	// Clock is the compatible server's clock (machines' status durations
	// count from it); nil: Now, fixed.
	Clock func() time.Time
	// DataCenter shapes the inventory: dcgen.Default(Now), then
	// DataCenter.
	DataCenter func(*dcgen.Options)
	// Machines, when not nil, is the inventory instead of dcgen's.
	Machines []machine.Machine
	// Wrap, when set, wraps the compatible server's handler (to count
	// requests, say).
	Wrap func(http.Handler) http.Handler

	// MaxRequestBytes raises etcd's request size limit, and the client's
	// message limits, to this; 0 keeps the defaults.
	MaxRequestBytes uint
	// QuotaBackendBytes is the size of etcd's database at which it
	// refuses writes (alarm NOSPACE); 0 keeps etcd's default.
	QuotaBackendBytes int64

	// The settings stored in etcd at the start, in this order; none by
	// default.
	Template    string                   // the template (JSON), when not empty
	StoreURL    bool                     // the compatible server's URL
	Constraints *constraints.Constraints // the constraints, when not nil
}

// Sabakan is the compatible server holding a data center, served over
// HTTP until the test ends.
type Sabakan struct {
	Store *fakesabakan.Store
	// Machines is the inventory the store was loaded with.
	Machines []machine.Machine
	// Server serves the store; closing it makes sabakan unreachable.
	Server *httptest.Server
	// URL is the GraphQL endpoint, as stored with set-url.
	URL string
}

// Site is an embedded etcd with its storage, and the compatible server.
type Site struct {
	*Sabakan
	Etcd    *embedded.Etcd
	EtcdURL string
	Storage storage.Storage
}

// Start starts a site shaped by o and stores the settings o names.
func Start(t testing.TB, o Options) *Site {
	t.Helper()
	e, url := etcdtest.StartServer(t, embedded.Options{MaxRequestBytes: o.MaxRequestBytes, QuotaBackendBytes: o.QuotaBackendBytes})
	cfg := clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if o.MaxRequestBytes > 0 {
		cfg.MaxCallSendMsgSize, cfg.MaxCallRecvMsgSize = int(o.MaxRequestBytes), int(o.MaxRequestBytes)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s := &Site{Sabakan: StartSabakan(t, o), Etcd: e, EtcdURL: url, Storage: storage.New(cli, "")}

	ctx := context.Background()
	var errs []error
	if o.Template != "" {
		errs = append(errs, StoreOf(s.Storage).SetTemplate(ctx, []byte(o.Template)))
	}
	if o.StoreURL {
		errs = append(errs, StoreOf(s.Storage).SetURL(ctx, s.URL))
	}
	if o.Constraints != nil {
		errs = append(errs, StoreOf(s.Storage).SetConstraints(ctx, *o.Constraints))
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("storing the site's settings: %v", err)
		}
	}
	return s
}

// StartSabakan starts the compatible server alone, as o shapes it (o's
// etcd fields and settings are not used).
func StartSabakan(t testing.TB, o Options) *Sabakan {
	t.Helper()
	if o.Now.IsZero() {
		o.Now = DefaultNow
	}
	if o.Clock == nil {
		now := o.Now
		o.Clock = func() time.Time { return now }
	}
	ms := o.Machines
	if ms == nil {
		dc := dcgen.Default(o.Now)
		if o.DataCenter != nil {
			o.DataCenter(&dc)
		}
		ms = dcgen.Machines(dc)
	}
	store := fakesabakan.NewStore(o.Clock)
	if err := store.Load(ms); err != nil {
		t.Fatal(err)
	}
	srv, err := fakesabakan.New(store)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &Sabakan{Store: store, Machines: ms, Server: ts, URL: ts.URL + "/graphql"}
}

// ReadMachines reads an inventory file such as examples/machines.json.
func ReadMachines(t testing.TB, path string) []machine.Machine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := machine.Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ms
}

// CKEOptions are CKE's option defaults, which ckegenctl sabakan
// set-template fills in: CKE refuses a cluster without a CRI endpoint.
const CKEOptions = `"options":{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`

// Template is the small sites' template: a control-plane template and a
// worker template of any role, with CKE's option defaults.
const Template = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` + CKEOptions + `}`

// Small starts the unit tests' usual site at now: 4 racks of 5 machines,
// all HEALTHY, with Template, the URL and constraints for 3 control
// planes and 5 workers stored; the compatible server on clock (nil: now).
func Small(t testing.TB, now time.Time, clock func() time.Time) *Site {
	t.Helper()
	return Start(t, Options{
		Now: now, Clock: clock,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		Template:   Template, StoreURL: true, Constraints: Counts(3, 5),
	})
}

// Counts is the count model's constraints with these control-plane-count
// and minimum-workers (maximum-workers 0).
func Counts(controlPlanes, workers int) *constraints.Constraints {
	c := constraints.CountDefaults()
	c.ControlPlaneCount, c.MinimumWorkers = controlPlanes, workers
	return &c
}

// REST calls the compatible server's REST API, as sabakan's users do, and
// fails the test unless it answers 2xx.
func (s *Sabakan) REST(t testing.TB, method, path, body string) {
	t.Helper()
	req, err := http.NewRequest(method, s.Server.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s %q: %s %s", method, path, body, resp.Status, data)
	}
}

// Lead makes the test the leader of the daemons' election under name,
// with a session of ttl seconds (0: etcd's default of 60), and returns
// the election key; the session closes when the test ends. A short TTL
// keeps that close short when the test has stopped etcd.
func (s *Site) Lead(t testing.TB, name string, ttl int) string {
	t.Helper()
	var opts []concurrency.SessionOption
	if ttl > 0 {
		opts = append(opts, concurrency.WithTTL(ttl))
	}
	sess, err := concurrency.NewSession(s.Storage.Client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	e := concurrency.NewElection(sess, s.Storage.Key(storage.KeyCKEGenLeader))
	if err := e.Campaign(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return e.Key()
}

// Go runs run in the background with a context derived from ctx, until
// stop is called or the test ends. stop cancels the context, waits for
// run to return and returns its error; it may be called more than once.
// Registered after Start, the stop at the end of the test comes before
// etcd's.
func Go(t testing.TB, ctx context.Context, run func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	stop = sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { _ = stop() })
	return stop
}
