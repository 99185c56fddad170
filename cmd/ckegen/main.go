// Command ckegen is ckegen's daemon: a leader-elected loop that queries
// sabakan, runs the generator and stores cluster.yml in etcd with CKE's
// layout. It reads CKE's configuration file and takes CKE's logging flags;
// with no etcd endpoints it runs an embedded single-member etcd.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cybozu-go/log"
	"github.com/cybozu-go/well"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"

	"github.com/ckegen/ckegen/daemon"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/listen"
	"github.com/ckegen/ckegen/internal/logbridge"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// defaultConfig is CKE's configuration file, read when it exists and
// --config is not given.
var defaultConfig = etcdclient.DefaultFile

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		// A usage error (a flag or a value refused) exits 2; a file the
		// flags name that cannot be used (--config, --kubeconfig, the
		// sabakan TLS files) is a failed start, 1.
		fmt.Fprintf(os.Stderr, "ckegen: %v\n", err)
		os.Exit(usage.Code(err))
	}
	if o.version {
		fmt.Println(version.Line("ckegen"))
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "ckegen: %v\n", err)
		os.Exit(usage.ExitFailure)
	}
}

type options struct {
	version                                           bool
	etcd                                              *etcdclient.Flags
	embeddedDir, embeddedClient, embedded             string
	httpAddr, name                                    string
	interval, sessionTTL, retireWait, ckeStatusMaxAge time.Duration
	minBackoff                                        time.Duration
	maxClusterBytes                                   int
	sabakanMaxBytes                                   int64
	sabakanTimeout                                    time.Duration
	sabakanCA, sabakanCert, sabakanKey                string
	kubeconfig                                        string
	kubeTimeout                                       time.Duration
	logFile, logLevel, logFormat                      string
}

// usageText heads ckegen --help.
const usageText = `ckegen is ckegen's daemon: a leader-elected loop that queries sabakan, runs
the generator and stores cluster.yml in etcd with CKE's layout. It reads
CKE's etcd configuration file (--config, or /etc/cke/config.yml when it
exists) with --etcd-endpoints and --etcd-prefix over it; with neither a
file nor --etcd-endpoints it runs an embedded single-member etcd in
--embedded-etcd-dir. It serves its page, /metrics, /health and
/version on --http. ckegenctl configures it (ckegenctl sabakan set-url,
set-template, constraints set).

` + usage.Help

// flagSet is ckegen's flags, bound to o (docs/daemon.md lists them).
func flagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("ckegen", pflag.ContinueOnError)
	fs.SortFlags = false
	// --help on stdout, as ckegenctl's and fakesabakan's.
	fs.SetOutput(os.Stdout)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nUsage:\n  ckegen [flags]\n\nFlags:\n%s", usageText, fs.FlagUsages())
	}
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	o.etcd = etcdclient.Register(fs, etcdclient.Options{DefaultFile: defaultConfig, Unconfigured: "run an embedded etcd (--embedded-etcd-*)"})
	fs.StringVar(&o.embeddedDir, "embedded-etcd-dir", "./ckegen-data", "data directory of the embedded etcd")
	fs.StringVar(&o.embeddedClient, "embedded-etcd-client-url", "http://127.0.0.1:2379", "client URL of the embedded etcd")
	fs.StringVar(&o.embedded, "embedded-etcd-peer-url", "http://127.0.0.1:2380", "peer URL of the embedded etcd")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:10190", "<Listen IP>:<Port number> of the page at /, /metrics, /health and /version")
	fs.StringVar(&o.name, "name", "", "name in the leader election (default: the host name)")
	fs.DurationVar(&o.interval, "interval", decision.DefaultInterval, "time between ticks")
	fs.DurationVar(&o.sessionTTL, "session-ttl", daemon.DefaultSessionTTL, "leader session's TTL: how long a dead leader keeps leadership")
	fs.DurationVar(&o.retireWait, "retire-wait", decision.DefaultRetireWait, "how long a worker stays RETIRED before it is removed")
	fs.DurationVar(&o.minBackoff, "min-backoff", decision.DefaultMinBackoff, "first retry delay after a failed tick (doubles up to --interval)")
	fs.DurationVar(&o.ckeStatusMaxAge, "cke-status-max-age", decision.DefaultCKEStatusMaxAge, "beside a CKE server, write the cluster only while CKE's status (phase completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted) is at most this old")
	fs.IntVar(&o.maxClusterBytes, "max-cluster-bytes", decision.DefaultMaxClusterBytes, "etcd's request size limit (set etcd's --max-request-bytes to the same): a cluster whose write is larger is refused with CLUSTER_TOO_LARGE; the default holds about 2,100 nodes")
	fs.DurationVar(&o.sabakanTimeout, "sabakan-timeout", sabakan.DefaultTimeout, "timeout of each sabakan request")
	fs.Int64Var(&o.sabakanMaxBytes, "sabakan-max-bytes", sabakan.DefaultMaxBodyBytes, "the largest sabakan answer read; a larger one fails the tick (QUERY_ERROR) before it is decoded")
	fs.StringVar(&o.sabakanCA, "sabakan-tls-ca-file", "", "CA certificates of sabakan's HTTPS endpoint")
	fs.StringVar(&o.sabakanCert, "sabakan-tls-cert-file", "", "client certificate for sabakan")
	fs.StringVar(&o.sabakanKey, "sabakan-tls-key-file", "", "client key for sabakan")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the Kubernetes cluster: the daemon reads its Nodes' taints every tick (none: no taints known)")
	fs.DurationVar(&o.kubeTimeout, "kubernetes-timeout", kubenodes.DefaultTimeout, "timeout of listing the Kubernetes Nodes")
	fs.StringVar(&o.logFile, "logfile", "", "Log filename")
	fs.StringVar(&o.logLevel, "loglevel", "", "Log level [critical,error,warning,info,debug]")
	fs.StringVar(&o.logFormat, "logformat", "", "Log format [plain,logfmt,json]")
	return fs
}

// parseFlags parses and checks the command line and the files it names.
// Its errors about the command line are usage errors (usage.Code 2); those
// about a file, failures.
func parseFlags(args []string) (*options, error) {
	var o options
	fs := flagSet(&o)
	if err := suggest.OneDash(fs, args); err != nil {
		return nil, usage.Wrap(err)
	}
	if err := fs.Parse(args); err != nil {
		return nil, usage.Wrap(suggest.FlagError(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, usage.Errorf("unexpected arguments: %q: ckegen takes only flags, such as --etcd-endpoints URL (see --help)", fs.Args())
	}
	if o.version {
		return &o, nil
	}
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--name: no host name to default to: %w", err)
		}
		o.name = h
	}
	return &o, o.check()
}

// check refuses values that would fail later or make the daemon spin, each
// error naming its flag.
func (o *options) check() error {
	switch {
	case o.interval < 100*time.Millisecond:
		return usage.Errorf("--interval: must be at least 100ms, got %s", o.interval)
	case o.sessionTTL < time.Second || o.sessionTTL%time.Second != 0:
		return usage.Errorf("--session-ttl: must be a whole number of seconds, at least 1s (etcd leases count seconds), got %s", o.sessionTTL)
	case o.retireWait < 0:
		return usage.Errorf("--retire-wait: must not be negative, got %s", o.retireWait)
	case o.minBackoff <= 0:
		return usage.Errorf("--min-backoff: must be positive, got %s", o.minBackoff)
	case o.maxClusterBytes <= 0:
		return usage.Errorf("--max-cluster-bytes: must be positive, got %d", o.maxClusterBytes)
	case o.ckeStatusMaxAge <= 0:
		return usage.Errorf("--cke-status-max-age: must be positive, got %s", o.ckeStatusMaxAge)
	case o.sabakanMaxBytes <= 0:
		return usage.Errorf("--sabakan-max-bytes: must be positive, got %d", o.sabakanMaxBytes)
	case o.sabakanTimeout <= 0:
		return usage.Errorf("--sabakan-timeout: must be positive, got %s", o.sabakanTimeout)
	case strings.ContainsAny(o.name, "\n\r"):
		return usage.Errorf("--name: must be one line, got %q", o.name)
	}
	if _, port, err := net.SplitHostPort(o.httpAddr); err != nil || port == "" {
		return usage.Errorf("--http: want <Listen IP>:<Port number>, got %q", o.httpAddr)
	}
	for _, f := range []struct{ flag, url string }{{"--embedded-etcd-client-url", o.embeddedClient}, {"--embedded-etcd-peer-url", o.embedded}} {
		p, err := url.Parse(f.url)
		if err != nil || p.Scheme != "http" || p.Port() == "" || p.Path != "" {
			return usage.Errorf("%s: want http://HOST:PORT, got %q", f.flag, f.url)
		}
	}
	if o.logLevel != "" {
		if err := log.NewLogger().SetThresholdByName(o.logLevel); err != nil {
			return usage.Errorf("--loglevel: want critical, error, warning, info or debug, got %q", o.logLevel)
		}
	}
	switch o.logFormat {
	case "", "plain", "logfmt", "json":
	default:
		return usage.Errorf("--logformat: want plain, logfmt or json, got %q", o.logFormat)
	}
	if _, err := sabakan.NewClient("https://sabakan.invalid/graphql", o.sabakanOptions()); err != nil {
		return fmt.Errorf("--sabakan-tls-ca-file, --sabakan-tls-cert-file, --sabakan-tls-key-file: %w", err)
	}
	cfg, err := o.etcd.Load()
	if err != nil {
		return err
	}
	if !cfg.Configured {
		// The embedded etcd has no TLS: it stays on this machine. An etcd
		// for other hosts is one of your own, with TLS (--config).
		if err := (embedded.Options{ClientURL: o.embeddedClient, PeerURL: o.embedded}).Exposure(); err != nil {
			return usage.Errorf("--embedded-etcd-client-url, --embedded-etcd-peer-url: %w; "+
				"keep it on 127.0.0.1, or, to serve other hosts, run etcd with client-certificate TLS and give --config (or --etcd-endpoints)", err)
		}
	}
	if _, err := o.nodes(); err != nil {
		return err
	}
	return nil
}

// nodes returns the Kubernetes Node reader of --kubeconfig, nil without
// it.
func (o *options) nodes() (kubenodes.Kubernetes, error) {
	if o.kubeTimeout <= 0 {
		return nil, usage.Errorf("--kubernetes-timeout: must be positive, got %s", o.kubeTimeout)
	}
	r, err := kubenodes.Open(o.kubeconfig, o.kubeTimeout)
	if r == nil || err != nil {
		return nil, err
	}
	return kubenodes.APIView(r, nil), nil
}

func (o *options) sabakanOptions() sabakan.Options {
	return sabakan.Options{Timeout: o.sabakanTimeout, MaxBodyBytes: o.sabakanMaxBytes, CAFile: o.sabakanCA, CertFile: o.sabakanCert, KeyFile: o.sabakanKey}
}

// daemonConfig is the daemon's configuration from the flags, with a
// registry that also has Go's and the process's collectors.
func (o *options) daemonConfig(st storage.Storage, nodes kubenodes.Kubernetes, lg *slog.Logger) daemon.Config {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return daemon.Config{
		Config: decision.Config{
			Name:            o.name,
			Interval:        storage.Duration(o.interval),
			RetireWait:      storage.Duration(o.retireWait),
			CKEStatusMaxAge: storage.Duration(o.ckeStatusMaxAge),
			MinBackoff:      storage.Duration(o.minBackoff),
			MaxClusterBytes: o.maxClusterBytes,
			Sabakan:         o.sabakanOptions(),
			Log:             lg,
		},
		Storage:    st,
		SessionTTL: o.sessionTTL,
		Kubernetes: nodes,
		Registry:   reg,
	}
}

// startEmbedded starts the embedded etcd (no --etcd-endpoints, no
// configuration file) and points cfg at it. It creates --embedded-etcd-dir
// when it does not exist; undo removes what it created (nothing when the
// directory existed), for a start that fails later. When the start of
// etcd itself fails, it has removed it already.
func (o *options) startEmbedded(cfg *etcdclient.Config, lg *slog.Logger) (e *embedded.Etcd, undo func(), err error) {
	created, err := makeDir(o.embeddedDir)
	if err != nil {
		return nil, nil, fmt.Errorf("--embedded-etcd-dir: %w", err)
	}
	undo = func() {
		if created == "" {
			return
		}
		if err := os.RemoveAll(created); err != nil {
			lg.Error("the failed start leaves --embedded-etcd-dir behind", "dir", created, "error", err)
		}
	}
	e, err = embedded.Start(embedded.Options{Dir: o.embeddedDir, ClientURL: o.embeddedClient, PeerURL: o.embedded,
		MaxRequestBytes: uint(o.maxClusterBytes + requestMargin), Logger: logbridge.NewZap(lg.Handler(), zapcore.ErrorLevel)})
	if err != nil {
		undo()
		var iu *embedded.URLInUseError
		if errors.As(err, &iu) {
			flag := "--embedded-etcd-client-url"
			if iu.Peer {
				flag = "--embedded-etcd-peer-url"
			}
			return nil, nil, &listen.InUseError{Flag: flag, Value: iu.URL, Who: "an etcd, or a second ckegen", Err: err}
		}
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	lg.Info("embedded etcd started", "client", o.embeddedClient, "dir", o.embeddedDir)
	cfg.Endpoints = []string{o.embeddedClient}
	return e, undo, nil
}

// makeDir creates dir, and the directories it is in that do not exist,
// with mode 0700. created is the first of them that did not exist (dir
// itself, or the parent it is in), which removing removes all it created;
// "" when dir existed.
func makeDir(dir string) (created string, err error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		created = d
		if filepath.Dir(d) == d {
			break
		}
	}
	return created, os.MkdirAll(dir, 0o700)
}

func run(o *options) error {
	// Files the daemon creates (its log, the embedded etcd's data) are
	// its own: 0600 and 0700, whatever the libraries that create them ask
	// for (the log library asks for 0644). docs/security.md.
	syscall.Umask(0o077)
	lg, err := o.startLogging()
	if err != nil {
		return err
	}

	cfg, err := o.etcd.Load()
	if err != nil {
		return err
	}
	// Until the daemon serves, a failure is a failed start: it leaves
	// nothing behind, no listener, no new etcd data directory.
	started := false
	ln, err := listen.TCP("--http", o.httpAddr, "a second ckegen")
	if err != nil {
		return err
	}
	defer func() {
		if !started {
			_ = ln.Close() // the failed start's error is the one to report
		}
	}()
	if !cfg.Configured {
		e, undo, err := o.startEmbedded(cfg, lg)
		if err != nil {
			return err
		}
		defer func() {
			e.Close()
			if !started {
				undo()
			}
		}()
	}
	cli, err := o.connect(cfg, lg)
	if err != nil {
		return err
	}
	defer cli.Close()
	// A call that takes longer than a tick's interval is an etcd that
	// stopped answering: the leader gives up within two intervals and
	// another daemon leads (docs/security.md).
	storage.WithDeadline(cli.Client, max(o.interval, time.Second))

	nodes, err := o.nodes()
	if err != nil {
		return err
	}
	d := daemon.New(o.daemonConfig(storage.New(cli.Client, cfg.Prefix), nodes, lg))

	// The page at / shows the racks, the status and the history; it reads
	// etcd and queries sabakan read-only, with a short cache.
	mux := d.Handler()
	st := storage.New(cli.Client, cfg.Prefix)
	mux.Handle("/", liveview.NewHandler(liveview.NewReader(st, liveview.Options{Sabakan: o.sabakanOptions()}), liveview.PageOptions{Log: lg}))

	well.Go(d.Run)
	started, err = o.serve(ln, daemon.Secure(mux), cfg, lg)
	return err
}

// startLogging configures CKE's logger from the logging flags and makes
// the slog logger that writes through it the default.
func (o *options) startLogging() (*slog.Logger, error) {
	if err := (well.LogConfig{Filename: o.logFile, Level: o.logLevel, Format: o.logFormat}).Apply(); err != nil {
		return nil, fmt.Errorf("--logfile, --loglevel, --logformat: %w", err)
	}
	lg := slog.New(logbridge.NewHandler(log.DefaultLogger()))
	slog.SetDefault(lg)
	return lg, nil
}

// serve serves h on ln until the daemon is told to stop. started is
// whether it did serve: a failure before is a failed start.
func (o *options) serve(ln net.Listener, h http.Handler, cfg *etcdclient.Config, lg *slog.Logger) (started bool, err error) {
	s := &well.HTTPServer{
		Server: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10},
		ShutdownTimeout: 5 * time.Second,
	}
	if err := s.Serve(ln); err != nil {
		return false, fmt.Errorf("--http: %w", err)
	}
	lg.Info("serving", "http", ln.Addr().String(), "name", o.name, "interval", o.interval.String(),
		"etcd", strings.Join(cfg.Endpoints, ","), "prefix", cfg.Prefix, "version", version.String())
	well.Stop()
	err = well.Wait()
	if err != nil && !well.IsSignaled(err) {
		return true, err
	}
	lg.Info("stopped")
	return true, nil
}
