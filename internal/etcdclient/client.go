package etcdclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cybozu-go/etcdutil"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// Option is what a binary's client differs in.
type Option func(*options)

type options struct {
	maxRequestBytes int
	logger          *zap.Logger
	within          time.Duration
	withinFrom      string
}

// MaxRequestBytes lets the client send requests of up to n bytes (the
// etcd client's default is 2 MiB): the daemon writes clusters as large as
// --max-cluster-bytes.
func MaxRequestBytes(n int) Option {
	return func(o *options) { o.maxRequestBytes = n }
}

// Logger receives the etcd client's own log lines; without it they are
// discarded (the client would write its retry warnings to stderr, among a
// command's output).
func Logger(lg *zap.Logger) Option {
	return func(o *options) { o.logger = lg }
}

// Within bounds the connection by d, which flag sets: the dial timeout
// is the file's timeout when that is shorter, and d otherwise.
func Within(d time.Duration, flag string) Option {
	return func(o *options) { o.within, o.withinFrom = d, flag }
}

// Client is an etcd client that knows where it connects, to say why its
// etcd does not answer. The prefix is the storage's business: the client
// is not namespaced.
type Client struct {
	*clientv3.Client
	endpoints []string
	dial      time.Duration
	dialFrom  string
}

// Connect returns a client of the etcd cfg names, made as
// etcdutil.NewClient makes CKE's (dial timeout, keepalive, credentials,
// TLS), with opts. It does not wait for etcd unless it logs in (username
// and password): WaitReady does. The dial timeout is the file's, else
// etcdutil's default (2s), bounded by Within.
func Connect(cfg *Config, opts ...Option) (*Client, error) {
	o := options{logger: zap.NewNop()}
	for _, opt := range opts {
		opt(&o)
	}
	fileTimeout, err := cfg.dialTimeout()
	if err != nil {
		return nil, err
	}
	c := &Client{endpoints: cfg.Endpoints}
	switch {
	case fileTimeout > 0 && (o.within <= 0 || fileTimeout < o.within):
		c.dial, c.dialFrom = fileTimeout, "timeout in "+cfg.File
	case o.within > 0:
		c.dial, c.dialFrom = o.within, o.withinFrom
	default:
		c.dial, _ = time.ParseDuration(etcdutil.DefaultTimeout)
		c.dialFrom = "the default dial timeout"
	}
	tc, err := cfg.TLS()
	if err != nil {
		return nil, err
	}
	c.Client, err = clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          c.dial,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * c.dial,
		PermitWithoutStream:  true,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  tc,
		MaxCallSendMsgSize:   o.maxRequestBytes,
		Logger:               o.logger,
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, c.NoAnswer(c.dial, c.dialFrom, err)
	case err != nil:
		return nil, fmt.Errorf("etcd at %s: %w", strings.Join(c.endpoints, ","), err)
	}
	return c, nil
}

// NoAnswer is the error of an etcd that did not answer within d, which
// from set.
func (c *Client) NoAnswer(d time.Duration, from string, err error) error {
	return &NoAnswerError{Endpoints: c.endpoints, Within: d, From: from, Err: err}
}

// NoAnswerError is an etcd that did not answer in time: which endpoints,
// which time limit and what set it, and why when it is known.
type NoAnswerError struct {
	Endpoints []string
	Within    time.Duration
	From      string
	Err       error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("etcd at %s: no answer within %s (%s): %v", strings.Join(e.Endpoints, ","), e.Within, e.From, e.Err)
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// ErrRefused marks the error of WaitReady when every endpoint refused the
// connection: nothing listens there.
var ErrRefused = errors.New("nothing listens there")

// WaitReady waits until an endpoint answers, for at most the dial
// timeout. When every endpoint refuses the connection it fails at once
// (ErrRefused, with what to do) rather than after the timeout: waiting
// would not change that. An endpoint that takes the connection but does
// not answer (a slow or hung etcd, a TLS mismatch) gets the whole
// timeout, and the error is a *NoAnswerError with the last connection
// error (refused, a TLS failure, ...) when there was one.
func (c *Client) WaitReady(ctx context.Context) error {
	eps := strings.Join(c.endpoints, ",")
	timedOut, err := waitConnected(ctx, c.ActiveConnection(), c.endpoints, c.dial)
	switch {
	case timedOut:
		return c.NoAnswer(c.dial, c.dialFrom, err)
	case errors.Is(err, ErrRefused):
		return fmt.Errorf("etcd at %s: %w: start etcd (ckegen runs an embedded one when given neither --config nor --etcd-endpoints), "+
			"or point --etcd-endpoints or --config at a running one", eps, err)
	case err != nil:
		return fmt.Errorf("etcd at %s: %w", eps, err)
	}
	return nil
}

// waitConnected waits until conn reaches an etcd, for at most d; see
// WaitReady.
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
// error wrapping ErrRefused when every one refused the connection. It
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
// it returns their errors, wrapping ErrRefused, and nil otherwise.
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
			_ = c.Close() // a probe: only whether it connected counts
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
	return fmt.Errorf("%w (%s)", ErrRefused, strings.Join(msgs, "; "))
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
