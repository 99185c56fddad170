// Command cke is ckegen's daemon: a leader-elected loop that queries
// sabakan, runs the generator and stores cluster.yml in etcd with CKE's
// layout. With no etcd endpoints it runs an embedded single-member etcd.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ckegen/ckegen/daemon"
	"github.com/ckegen/ckegen/etcdconfig"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "cke: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	config, endpoints, prefix             string
	embeddedDir, embeddedClient, embedded string
	httpAddr, name                        string
	interval, sessionTTL, retireWait      time.Duration
	minBackoff                            time.Duration
	maxClusterBytes                       int
	sabakanTimeout                        time.Duration
	sabakanCA, sabakanCert, sabakanKey    string
	logFormat                             string
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("cke", flag.ContinueOnError)
	fs.StringVar(&o.config, "config", "", "CKE's etcd configuration file (YAML: endpoints, prefix, timeout, username, password, tls-*)")
	fs.StringVar(&o.endpoints, "etcd-endpoints", "", "etcd endpoints, comma separated (overrides the file); none: run an embedded etcd")
	fs.StringVar(&o.prefix, "etcd-prefix", "", "etcd key prefix (default "+storage.DefaultPrefix+")")
	fs.StringVar(&o.embeddedDir, "embedded-etcd-dir", "./cke-data", "data directory of the embedded etcd")
	fs.StringVar(&o.embeddedClient, "embedded-etcd-client-url", "http://127.0.0.1:2379", "client URL of the embedded etcd")
	fs.StringVar(&o.embedded, "embedded-etcd-peer-url", "http://127.0.0.1:2380", "peer URL of the embedded etcd")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:10180", "address of /metrics and /health")
	fs.StringVar(&o.name, "name", "", "name in the leader election (default: the host name)")
	fs.DurationVar(&o.interval, "interval", daemon.DefaultInterval, "time between ticks")
	fs.DurationVar(&o.sessionTTL, "session-ttl", daemon.DefaultSessionTTL, "etcd session TTL: how long a dead leader keeps leadership")
	fs.DurationVar(&o.retireWait, "retire-wait", generator.DefaultRetireWait, "how long a worker stays RETIRED before it is removed")
	fs.DurationVar(&o.minBackoff, "min-backoff", daemon.DefaultMinBackoff, "first retry delay after a failed tick (doubles up to --interval)")
	fs.IntVar(&o.maxClusterBytes, "max-cluster-bytes", daemon.DefaultMaxClusterBytes, "etcd's request size limit; a larger cluster is refused")
	fs.DurationVar(&o.sabakanTimeout, "sabakan-timeout", sabakan.DefaultTimeout, "timeout of each sabakan request")
	fs.StringVar(&o.sabakanCA, "sabakan-tls-ca-file", "", "CA certificates of sabakan's HTTPS endpoint")
	fs.StringVar(&o.sabakanCert, "sabakan-tls-cert-file", "", "client certificate for sabakan")
	fs.StringVar(&o.sabakanKey, "sabakan-tls-key-file", "", "client key for sabakan")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var handler slog.Handler
	switch o.logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, nil)
	default:
		return fmt.Errorf("--log-format: must be text or json, got %q", o.logFormat)
	}
	log := slog.New(handler)
	if o.sessionTTL < time.Second {
		return fmt.Errorf("--session-ttl: must be at least 1s, got %s", o.sessionTTL)
	}
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		o.name = h
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	cfg := etcdconfig.Config{}
	if o.config != "" {
		c, err := etcdconfig.Load(o.config)
		if err != nil {
			return err
		}
		cfg = c
	}
	if o.endpoints != "" {
		cfg.Endpoints = strings.Split(o.endpoints, ",")
	}
	if o.prefix != "" {
		cfg.Prefix = o.prefix
	}
	if len(cfg.Endpoints) == 0 {
		if err := os.MkdirAll(o.embeddedDir, 0o700); err != nil {
			return err
		}
		e, err := embedded.Start(embedded.Options{Dir: o.embeddedDir, ClientURL: o.embeddedClient, PeerURL: o.embedded,
			MaxRequestBytes: uint(o.maxClusterBytes) + 64*1024, Logger: etcdconfig.ErrorLogger(os.Stderr)})
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		defer e.Close()
		log.Info("embedded etcd started", "client", o.embeddedClient, "dir", o.embeddedDir)
		cfg.Endpoints = []string{o.embeddedClient}
	}
	cli, err := cfg.Client(etcdconfig.ErrorLogger(os.Stderr))
	if err != nil {
		return err
	}
	defer cli.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d := daemon.New(daemon.Config{
		Storage:         storage.New(cli, cfg.Prefix),
		Name:            o.name,
		Interval:        o.interval,
		SessionTTL:      o.sessionTTL,
		RetireWait:      o.retireWait,
		MinBackoff:      o.minBackoff,
		MaxClusterBytes: o.maxClusterBytes,
		Sabakan:         sabakan.Options{Timeout: o.sabakanTimeout, CAFile: o.sabakanCA, CertFile: o.sabakanCert, KeyFile: o.sabakanKey},
		Log:             log,
		Registry:        reg,
	})

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		code, body := http.StatusOK, map[string]any{"status": "ok", "lastTick": d.Status()}
		if _, err := cli.Get(hctx, "health"); err != nil {
			code, body = http.StatusServiceUnavailable, map[string]any{"status": "etcd unreachable", "error": err.Error()}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
	ln, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "error", err)
		}
	}()
	log.Info("serving", "http", ln.Addr().String(), "name", o.name, "interval", o.interval.String())

	err = d.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	log.Info("stopped")
	return err
}
