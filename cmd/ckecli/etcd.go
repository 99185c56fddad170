package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cybozu-go/etcdutil"
	"github.com/spf13/pflag"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/storage"
)

// defaultConfigFile is where CKE keeps its etcd configuration; ckecli reads
// it when --config is not given and the file exists.
const defaultConfigFile = "/etc/cke/config.yml"

// env is how commands reach etcd: CKE's configuration file (--config, or
// the default file when it exists), then --endpoints and --prefix when
// given. Commands that need no etcd never read the file nor connect.
type env struct {
	config    string
	endpoints string
	prefix    string
	timeout   time.Duration
	// flags are the root's persistent flags: which ones were given decides
	// what overrides the file.
	flags *pflag.FlagSet
}

// etcdConfig is the configuration commands connect with. Its Timeout (the
// dial timeout) is empty unless the file sets one: --timeout bounds the dial
// then.
func (e *env) etcdConfig() (*etcdutil.Config, error) {
	cfg := etcdutil.NewConfig(storage.DefaultPrefix)
	cfg.Timeout = ""
	data, err := os.ReadFile(e.config)
	switch {
	case err == nil:
		if err := yaml.UnmarshalStrict(data, cfg); err != nil {
			// The YAML library's errors span lines; the command's is one.
			return nil, fmt.Errorf("--config %s: %s", e.config, strings.Join(strings.Fields(err.Error()), " "))
		}
		if err := checkConfig(cfg); err != nil {
			return nil, fmt.Errorf("--config %s: %w", e.config, err)
		}
	case errors.Is(err, fs.ErrNotExist) && !e.flags.Changed("config"):
		// No --config and no CKE configuration here: the flags' defaults.
	default:
		return nil, fmt.Errorf("--config: %w", err)
	}
	if e.flags.Changed("endpoints") {
		cfg.Endpoints = nil
		for _, ep := range strings.Split(e.endpoints, ",") {
			if ep = strings.TrimSpace(ep); ep != "" {
				cfg.Endpoints = append(cfg.Endpoints, ep)
			}
		}
		if len(cfg.Endpoints) == 0 {
			return nil, fmt.Errorf("--endpoints: want comma-separated URLs such as http://127.0.0.1:2379, got %q", e.endpoints)
		}
	}
	if e.flags.Changed("prefix") {
		cfg.Prefix = e.prefix
	}
	if e.timeout <= 0 {
		return nil, fmt.Errorf("--timeout: must be > 0, got %s", e.timeout)
	}
	return cfg, nil
}

// checkConfig refuses what etcdutil would silently ignore or fail on later
// with a vaguer message.
func checkConfig(cfg *etcdutil.Config) error {
	if len(cfg.Endpoints) == 0 {
		return errors.New("endpoints: empty; give at least one URL such as https://10.0.0.1:2379")
	}
	if d, err := time.ParseDuration(cfg.Timeout); cfg.Timeout != "" && (err != nil || d <= 0) {
		return fmt.Errorf("timeout: must be a positive duration such as 2s, got %q", cfg.Timeout)
	}
	for _, p := range []struct{ file, inline, what string }{
		{cfg.TLSCAFile, cfg.TLSCA, "tls-ca-file and tls-ca"},
		{cfg.TLSCertFile, cfg.TLSCert, "tls-cert-file and tls-cert"},
		{cfg.TLSKeyFile, cfg.TLSKey, "tls-key-file and tls-key"},
	} {
		if p.file != "" && p.inline != "" {
			return fmt.Errorf("%s are both set: give one (a file name or the PEM itself)", p.what)
		}
	}
	hasCert, hasKey := cfg.TLSCertFile != "" || cfg.TLSCert != "", cfg.TLSKeyFile != "" || cfg.TLSKey != ""
	if hasCert != hasKey {
		return errors.New("a client certificate needs both the certificate (tls-cert-file or tls-cert) and its key (tls-key-file or tls-key)")
	}
	if (cfg.TLSCertFile != "") != (cfg.TLSKeyFile != "") {
		return errors.New("tls-cert-file and tls-key-file go together, as do tls-cert and tls-key: give both as files or both inline")
	}
	return nil
}

// etcdTLS is the TLS configuration of cfg, read as etcdutil reads it: the
// CA and the client certificate each from a file or inline PEM. It is nil
// when cfg sets neither.
func etcdTLS(cfg *etcdutil.Config) (*tls.Config, error) {
	pemOf := func(file, inline, key string) ([]byte, error) {
		if file == "" {
			return []byte(inline), nil
		}
		data, err := os.ReadFile(file)
		if err == nil && len(data) == 0 {
			err = fmt.Errorf("%s is empty", file)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return data, nil
	}
	ca, err := pemOf(cfg.TLSCAFile, cfg.TLSCA, "tls-ca-file")
	if err != nil {
		return nil, err
	}
	cert, err := pemOf(cfg.TLSCertFile, cfg.TLSCert, "tls-cert-file")
	if err != nil {
		return nil, err
	}
	key, err := pemOf(cfg.TLSKeyFile, cfg.TLSKey, "tls-key-file")
	if err != nil {
		return nil, err
	}
	if len(ca) == 0 && len(cert) == 0 {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, errors.New("tls-ca-file or tls-ca: no PEM certificate found")
		}
	}
	if len(cert) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate (tls-cert, tls-key): %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// withStorage connects to etcd and runs f within --timeout. When etcd does
// not answer, the error says which endpoints, which timeout, and why when
// it can, not only "context deadline exceeded".
//
// The client is made as etcdutil.NewClient makes CKE's (dial timeout,
// keepalive, credentials, TLS), but with a logger that discards the etcd
// client's own lines: etcdutil's client writes its retry warnings to
// stderr while it logs in, before any other logger can be set, and they
// would come out among the command's output.
func (e *env) withStorage(f func(ctx context.Context, st storage.Storage) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	cfg, err := e.etcdConfig()
	if err != nil {
		return err
	}
	endpoints := strings.Join(cfg.Endpoints, ",")
	tc, err := etcdTLS(cfg)
	if err != nil {
		return fmt.Errorf("--config %s: %w", e.config, err)
	}
	// The file's timeout is a dial timeout, as in CKE: the first
	// connection (and the login) must be made within it, and within
	// --timeout.
	dial, from := e.timeout, "--timeout"
	if d, err := time.ParseDuration(cfg.Timeout); err == nil && d < dial {
		dial, from = d, "timeout in "+e.config
	}
	noAnswer := func(d time.Duration, from string, err error) error {
		return fmt.Errorf("etcd at %s: no answer within %s (%s): %w", endpoints, d, from, err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          dial,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * dial,
		PermitWithoutStream:  true,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  tc,
		Logger:               zap.NewNop(),
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return noAnswer(dial, from, err)
	case err != nil:
		return fmt.Errorf("etcd at %s: %w", endpoints, err)
	}
	defer cli.Close()
	if timedOut, err := waitConnected(ctx, cli.ActiveConnection(), cfg.Endpoints, dial); timedOut {
		return noAnswer(dial, from, err)
	} else if errors.Is(err, errRefused) {
		return fmt.Errorf("etcd at %s: %w: start etcd (cke runs an embedded one when given no --etcd-endpoints) or point --endpoints or --config at a running one", endpoints, err)
	} else if err != nil {
		return fmt.Errorf("etcd at %s: %w", endpoints, err)
	}
	err = f(ctx, storage.New(cli, cfg.Prefix))
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return noAnswer(e.timeout, "--timeout", err)
	}
	return err
}

// errRefused marks the error of waitConnected when every endpoint refused
// the connection.
var errRefused = errors.New("nothing listens there")

// waitConnected waits until conn reaches an etcd, for at most d; the
// error of a timeout is the last connection error (refused, a TLS
// failure, ...) when there was one. When every endpoint refuses the
// connection it fails at once (errRefused) rather than after d: nothing
// listens there, and waiting would not change that. An endpoint that
// takes the connection but does not answer (a slow or hung etcd, a TLS
// mismatch) gets the whole of d.
func waitConnected(ctx context.Context, conn *grpc.ClientConn, endpoints []string, d time.Duration) (timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	refused := make(chan error, 1)
	go func() {
		if err := watchRefused(ctx, conn, endpoints); err != nil {
			refused <- err
			cancel()
		}
	}()
	// Status needs no permission; WaitForReady makes it wait for a
	// connection instead of failing on the first refused one.
	_, err = pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(true))
	if err == nil {
		return false, nil
	}
	select {
	case rerr := <-refused:
		return false, rerr
	default:
	}
	st := status.Convert(err)
	if st.Code() != codes.DeadlineExceeded {
		return false, errors.New(st.Message())
	}
	// A timeout shorter than the first failed attempt: when nothing
	// listens, say so rather than that etcd did not answer.
	pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
	defer pcancel()
	if rerr := allRefused(pctx, endpoints); rerr != nil {
		return false, rerr
	}
	msg := st.Message()
	for _, p := range []string{"latest balancer error: ", "connection error: desc = "} {
		msg = strings.TrimPrefix(msg, p)
	}
	if u, err := strconv.Unquote(msg); err == nil {
		msg = u
	}
	return true, errors.New(strings.TrimPrefix(msg, "transport: Error while dialing: "))
}

// watchRefused follows conn's state: each time every endpoint has failed
// (TransientFailure), it dials them itself to see why, and returns an
// error wrapping errRefused when every one refused the connection. It
// returns nil once connected, when ctx ends, or when an endpoint cannot
// be probed (the caller's timeout decides then).
func watchRefused(ctx context.Context, conn *grpc.ClientConn, endpoints []string) error {
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure:
			if err := allRefused(ctx, endpoints); err != nil {
				return err
			}
		}
		if !conn.WaitForStateChange(ctx, s) {
			return nil
		}
	}
}

// allRefused dials each endpoint; when every one refuses the connection,
// it returns their errors, wrapping errRefused, and nil otherwise.
func allRefused(ctx context.Context, endpoints []string) error {
	var msgs []string
	for _, ep := range endpoints {
		network, addr, ok := endpointAddr(ep)
		if !ok {
			return nil
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := (&net.Dialer{}).DialContext(dctx, network, addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			return nil
		}
		msgs = append(msgs, err.Error())
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s)", errRefused, strings.Join(msgs, "; "))
}

// endpointAddr is the network and address the etcd client dials for ep:
// http(s)://HOST:PORT, unix(s)://PATH, or HOST:PORT.
func endpointAddr(ep string) (network, addr string, ok bool) {
	if !strings.Contains(ep, "://") {
		_, _, err := net.SplitHostPort(ep)
		return "tcp", ep, err == nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", "", false
	}
	switch u.Scheme {
	case "http", "https":
		_, _, err := net.SplitHostPort(u.Host)
		return "tcp", u.Host, err == nil
	case "unix", "unixs":
		return "unix", u.Host + u.Path, u.Host+u.Path != ""
	}
	return "", "", false
}
