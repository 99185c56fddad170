// Package embedded starts a single-member etcd inside the process: the
// daemon's default when no etcd endpoints are given, and the real etcd that
// unit tests run against.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soheilhy/cmux"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/ckegen/ckegen/internal/listen"
)

// Options of the embedded etcd.
type Options struct {
	Dir       string // data directory
	ClientURL string // e.g. http://127.0.0.1:2379
	PeerURL   string // e.g. http://127.0.0.1:2380
	// MaxRequestBytes is etcd's request size limit; 0 keeps etcd's
	// default (1.5 MiB).
	MaxRequestBytes uint
	// QuotaBackendBytes is the size of etcd's database at which it
	// raises the NOSPACE alarm and refuses writes; 0 keeps etcd's
	// default (2 GiB).
	QuotaBackendBytes int64
	// Logger receives etcd's log; nil discards it.
	Logger *zap.Logger
	// ClientTLS is the TLS of an https ClientURL: certificate, key and,
	// with ClientCertAuth, the CA that client certificates must chain to.
	ClientTLS transport.TLSInfo
}

// Etcd is a running embedded etcd.
type Etcd struct {
	*embed.Etcd
	closing *atomic.Bool
	once    sync.Once
}

// Close stops etcd. The "closed" errors that etcd logs for each of its
// listeners while it stops are what a clean stop looks like: they are not
// logged. Close may be called more than once.
func (e *Etcd) Close() {
	e.once.Do(func() {
		e.closing.Store(true)
		e.Etcd.Close()
	})
}

// Start starts etcd and waits until it serves clients.
func Start(o Options) (*Etcd, error) {
	cu, err := url.Parse(o.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("client URL: %w", err)
	}
	pu, err := url.Parse(o.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("peer URL: %w", err)
	}
	if err := exposure(cu, pu, o.ClientTLS); err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = o.Dir
	cfg.Name = "ckegen"
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	lg := o.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	closing := new(atomic.Bool)
	lg = lg.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return quietStop{c, closing} }))
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	if o.QuotaBackendBytes > 0 {
		cfg.QuotaBackendBytes = o.QuotaBackendBytes
	}
	if o.MaxRequestBytes > 0 {
		cfg.MaxRequestBytes = o.MaxRequestBytes
	}
	cfg.ClientTLSInfo = o.ClientTLS
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, inUse(err, o)
	}
	select {
	case <-e.Server.ReadyNotify():
		return &Etcd{Etcd: e, closing: closing}, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not start within 60s")
	}
}

// URLInUseError is a URL of the embedded etcd that another process
// listens on.
type URLInUseError struct {
	// Peer is true for the peer URL, false for the client URL.
	Peer bool
	// URL is the URL, as Options gave it.
	URL string
	// Err is etcd's error.
	Err error
}

func (e *URLInUseError) Error() string {
	which := "client"
	if e.Peer {
		which = "peer"
	}
	return fmt.Sprintf("%s URL %s: address already in use: another process listens there", which, e.URL)
}

func (e *URLInUseError) Unwrap() error { return e.Err }

// inUse is err, the error of starting etcd with o, as a *URLInUseError
// when a URL's address is in use; else err. etcd's error names the
// address; when it is not one of the URLs' as written (localhost), the
// URL whose address cannot be listened on now is the one.
func inUse(err error, o Options) error {
	if !listen.InUse(err) {
		return err
	}
	client := &URLInUseError{URL: o.ClientURL, Err: err}
	peer := &URLInUseError{Peer: true, URL: o.PeerURL, Err: err}
	cu, _ := url.Parse(o.ClientURL)
	pu, _ := url.Parse(o.PeerURL)
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		switch op.Addr.String() {
		case cu.Host:
			return client
		case pu.Host:
			return peer
		}
	}
	if ln, err := net.Listen("tcp", pu.Host); err != nil && listen.InUse(err) {
		return peer
	} else if err == nil {
		_ = ln.Close() // a probe: only whether it could listen counts
	}
	return client
}

// ErrExposed: the options would open etcd to other hosts without
// client-certificate TLS. Whoever reaches an etcd without it can rewrite
// the cluster.
var ErrExposed = errors.New("embedded etcd exposed")

// Exposure is why Start would refuse o's URLs as open to other hosts
// (ErrExposed), or nil.
func (o Options) Exposure() error {
	cu, err := url.Parse(o.ClientURL)
	if err != nil {
		return fmt.Errorf("client URL: %w", err)
	}
	pu, err := url.Parse(o.PeerURL)
	if err != nil {
		return fmt.Errorf("peer URL: %w", err)
	}
	return exposure(cu, pu, o.ClientTLS)
}

// exposure refuses a client URL off loopback unless it is https with a
// certificate, a key and a CA that client certificates must chain to, and
// any peer URL off loopback: one member has no peers to talk to.
func exposure(client, peer *url.URL, tls transport.TLSInfo) error {
	if !loopback(peer.Hostname()) {
		return fmt.Errorf("%w: peer URL %s is not on loopback (a single member needs no peers)", ErrExposed, peer.Host)
	}
	if loopback(client.Hostname()) {
		return nil
	}
	if client.Scheme != "https" || tls.CertFile == "" || tls.KeyFile == "" || tls.TrustedCAFile == "" || !tls.ClientCertAuth {
		return fmt.Errorf("%w: client URL %s is not on loopback and not https with client certificates", ErrExposed, client.Host)
	}
	return nil
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quietStop passes every entry on, except, once closing is set, those
// whose error only says that a listener or server was closed.
type quietStop struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietStop) With(fs []zapcore.Field) zapcore.Core {
	return quietStop{q.Core.With(fs), q.closing}
}

func (q quietStop) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.Enabled(ent.Level) {
		return ce.AddCore(ent, q)
	}
	return ce
}

func (q quietStop) Write(ent zapcore.Entry, fs []zapcore.Field) error {
	if q.closing.Load() && closedError(fs) {
		return nil
	}
	return q.Core.Write(ent, fs)
}

// closedError reports whether one of the fields is an error saying that a
// listener or server was closed.
func closedError(fs []zapcore.Field) bool {
	for _, f := range fs {
		err, ok := f.Interface.(error)
		if f.Type != zapcore.ErrorType || !ok {
			continue
		}
		if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, grpc.ErrServerStopped) ||
			errors.Is(err, cmux.ErrServerClosed) || errors.Is(err, cmux.ErrListenerClosed) {
			return true
		}
	}
	return false
}
