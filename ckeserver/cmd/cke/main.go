// Command cke is CKE v1.35.4's server with ckegen's step as its sabakan
// integration: CKE's flags, configuration file, election, REST API and
// /metrics, written here on CKE's exported packages, and ckegen's
// integrator (package integrator) where CKE's own would be. ckegen's page
// is under /ckegen/, with its status, history and version as JSON.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/cybozu-go/cke"
	"github.com/cybozu-go/cke/metrics"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
	"github.com/cybozu-go/cke/server"
	"github.com/cybozu-go/etcdutil"
	"github.com/cybozu-go/log"
	"github.com/cybozu-go/well"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/ckeserver/integrator"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/listen"
	"github.com/ckegen/ckegen/internal/logbridge"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// CKE's server's flags, with CKE's names and defaults; cybozu-go/well adds
// its logging flags (--logfile, --loglevel, --logformat) to the same set.
var (
	flgHTTP                 = pflag.String("http", "0.0.0.0:10180", "<Listen IP>:<Port number>")
	flgConfigPath           = pflag.String("config", "/etc/cke/config.yml", "configuration file path")
	flgInterval             = pflag.String("interval", "1m", "check interval")
	flgCertsGCInterval      = pflag.String("certs-gc-interval", "1h", "tidy interval for expired certificates")
	flgSessionTTL           = pflag.String("session-ttl", "60s", "leader session's TTL")
	flgDebugSabakan         = pflag.Bool("debug-sabakan", false, "debug sabakan integration")
	flgMaxConcurrentUpdates = pflag.Int("max-concurrent-updates", 10, "the maximum number of components that can be updated simultaneously")
	flgVersion              = pflag.Bool("version", false, "print the versions of CKE and ckegen and exit")
)

// pagePrefix is where ckegen's page, status and history are served: a
// path CKE's REST API does not use.
const pagePrefix = "/ckegen/"

// usageText heads cke --help.
const usageText = `cke is CKE v%s's server with ckegen's step as its sabakan integration:
CKE's flags, configuration file (--config), election, REST API and
/metrics on --http, and ckegen's page, status and history under /ckegen/.`

func main() {
	d, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		// The command line is refused: a usage error.
		fmt.Fprintf(os.Stderr, "cke: %v\n", err)
		os.Exit(usage.ExitUsage)
	}
	if *flgVersion {
		// The line of every ckegen binary, after CKE's version.
		fmt.Printf("cke v%s with %s\n", cke.Version, version.Line("ckegen"))
		return
	}
	if err := (well.LogConfig{}).Apply(); err != nil {
		log.ErrorExit(err)
	}
	if err := run(d); err != nil {
		log.ErrorExit(err)
	}
}

// parseFlags parses the command line into CKE's flags, as every ckegen
// binary does: --help on stdout, a "did you mean" for an unknown flag,
// and the durations checked.
func parseFlags(args []string) (durations, error) {
	fs := pflag.CommandLine
	fs.Init("cke", pflag.ContinueOnError)
	fs.SetOutput(os.Stdout)
	// pflag's CommandLine prints pflag.Usage, not its own.
	pflag.Usage = func() {
		fmt.Fprintf(fs.Output(), usageText+"\n\nUsage:\n  cke [flags]\n\nFlags:\n%s\n%s\n", cke.Version, fs.FlagUsages(), usage.Help)
	}
	if err := suggest.OneDash(fs, args); err != nil {
		return durations{}, err
	}
	if err := fs.Parse(args); err != nil {
		return durations{}, suggest.FlagError(fs, err)
	}
	if fs.NArg() > 0 {
		return durations{}, fmt.Errorf("unexpected arguments %q: cke takes only flags (see --help)", fs.Args())
	}
	if *flgVersion {
		return durations{}, nil
	}
	return parseDurations()
}

// durations are the server's durations, parsed, each error naming its
// flag.
type durations struct{ interval, certsGC, sessionTTL time.Duration }

func parseDurations() (durations, error) {
	var d durations
	for _, f := range []struct {
		flag, value string
		to          *time.Duration
	}{{"--interval", *flgInterval, &d.interval}, {"--certs-gc-interval", *flgCertsGCInterval, &d.certsGC}, {"--session-ttl", *flgSessionTTL, &d.sessionTTL}} {
		v, err := time.ParseDuration(f.value)
		if err != nil || v <= 0 {
			return d, fmt.Errorf("%s: want a positive duration such as 1m, got %q", f.flag, f.value)
		}
		*f.to = v
	}
	if *flgMaxConcurrentUpdates <= 0 {
		return d, fmt.Errorf("--max-concurrent-updates: must be greater than 0, got %d", *flgMaxConcurrentUpdates)
	}
	return d, nil
}

// loadConfig reads CKE's etcd configuration file as CKE's server does
// (keys it does not know are left alone), each error at its line and
// column in the file, and its timeout.
func loadConfig(path string) (*etcdutil.Config, time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("--config: %w", err)
	}
	cfg := cke.NewEtcdConfig()
	if err := etcdclient.DecodeFile(data, cfg, false); err != nil {
		return nil, 0, fmt.Errorf("--config %s: %w", path, err)
	}
	timeout, err := time.ParseDuration(cfg.Timeout)
	if err != nil {
		e := yamlpos.Place(strictjson.Invalidf(strictjson.Path(nil).Key("timeout"), "want a duration such as 2s, got %q", cfg.Timeout), data)
		return nil, 0, fmt.Errorf("--config %s: %w", path, e)
	}
	return cfg, timeout, nil
}

func run(d durations) error {
	cfg, timeout, err := loadConfig(*flgConfigPath)
	if err != nil {
		return err
	}
	// Before anything starts: a port in use says which flag to change.
	// Under --debug-sabakan the server serves no HTTP.
	var ln net.Listener
	serving := false
	if !*flgDebugSabakan {
		if ln, err = listen.TCP("--http", *flgHTTP, "a second cke"); err != nil {
			return err
		}
		defer func() {
			if !serving {
				_ = ln.Close() // the failed start's error is the one to report
			}
		}()
	}
	etcd, err := etcdutil.NewClient(cfg)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	lg := slog.New(logbridge.NewHandler(log.DefaultLogger())).With("integration", "ckegen")
	name, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("host name: %w", err)
	}
	icfg := integrator.Config{Client: etcd, Registerer: prometheus.DefaultRegisterer, Config: decision.Config{Name: name, Interval: storage.Duration(d.interval), Log: lg}}
	if *flgDebugSabakan {
		return runIntegratorAlone(icfg)
	}
	ig, err := integrator.New(icfg)
	if err != nil {
		return err
	}

	session, err := concurrency.NewSession(etcd, concurrency.WithTTL(int(d.sessionTTL.Seconds())))
	if err != nil {
		return fmt.Errorf("etcd session: %w", err)
	}
	defer func() {
		select {
		case <-session.Done():
		default:
			session.Close()
		}
	}()
	// Known in etcd for as long as the session lives, before it campaigns.
	actx, cancel := context.WithTimeout(context.Background(), timeout)
	err = ig.Announce(actx, session.Lease())
	cancel()
	if err != nil {
		return err
	}
	controller := server.NewController(session, ig, &server.Config{
		Interval: d.interval, CertsGCInterval: d.certsGC, MaxConcurrentUpdates: *flgMaxConcurrentUpdates,
	})
	well.Go(controller.Run)

	mux, err := newHandler(etcd, timeout, lg)
	if err != nil {
		return err
	}
	s := &well.HTTPServer{
		Server:          &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ShutdownTimeout: 3 * time.Minute,
	}
	if err := s.Serve(ln); err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	serving = true
	return wait()
}

// runIntegratorAlone runs the integrator as CKE's server does under
// --debug-sabakan: alone, retired workers leaving after 5 s.
func runIntegratorAlone(icfg integrator.Config) error {
	icfg.RetireWait = storage.Duration(5 * time.Second)
	ig, err := integrator.New(icfg)
	if err != nil {
		return err
	}
	well.Go(func(ctx context.Context) error {
		ctx = context.WithValue(ctx, ckesabakan.WaitSecs, float64(5))
		return server.RunIntegrator(ctx, ig)
	})
	return wait()
}

// newHandler is what the server serves: CKE's API, CKE's collector and
// the default registry (ckegen's series, and which binary this is) at
// /metrics, and ckegen's page under pagePrefix.
func newHandler(etcd *clientv3.Client, timeout time.Duration, lg *slog.Logger) (*http.ServeMux, error) {
	if err := prometheus.DefaultRegisterer.Register(version.BuildInfo(version.ModeInsideCKE)); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.GetHandler(metrics.NewCollector(&cke.Storage{Client: etcd})))
	mux.Handle(pagePrefix, http.StripPrefix(pagePrefix[:len(pagePrefix)-1], ckegenHandler(etcd, lg)))
	mux.Handle("/", server.Server{EtcdClient: etcd, Timeout: timeout})
	return mux, nil
}

// wait waits for the server's goroutines; a signal is not an error.
func wait() error {
	well.Stop()
	err := well.Wait()
	if err != nil && !well.IsSignaled(err) {
		return err
	}
	return nil
}

// ckegenHandler serves ckegen's page at /, its status and history as
// JSON at /status and /history, and at /version ckegen's version and the
// CKE release it is built for (under pagePrefix; CKE's own /version stays
// CKE's).
func ckegenHandler(etcd *clientv3.Client, lg *slog.Logger) http.Handler {
	st := storage.Storage{Client: etcd}
	mux := http.NewServeMux()
	mux.Handle("/", liveview.NewHandler(liveview.NewReader(st, liveview.Options{}), liveview.PageOptions{Log: lg}))
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, version.Current(), nil)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		// The status with its notes: that CKE's server stopped calling
		// ckegen, when it did.
		st, err := liveview.ReadStatus(r.Context(), st, time.Now())
		writeJSON(w, st, err)
	})
	mux.HandleFunc("GET /history", func(w http.ResponseWriter, r *http.Request) {
		h, err := st.History(r.Context())
		writeJSON(w, h, err)
	})
	return mux
}

// writeJSON answers v as JSON, or err: 404 for a key not found, 500 for
// etcd.
func writeJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case errors.Is(err, storage.ErrNotFound):
		w.WriteHeader(http.StatusNotFound)
		v = map[string]string{"error": "no tick has run yet"}
	case err != nil:
		w.WriteHeader(http.StatusInternalServerError)
		v = map[string]string{"error": err.Error()}
	}
	_ = json.NewEncoder(w).Encode(v)
}
