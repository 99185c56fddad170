package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestCleanStopLogsNoError: a stop after use logs no warning or error;
// etcd's own log of a clean stop says that its listeners closed, which is
// no news to whoever stopped it.
func TestCleanStopLogsNoError(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	e, err := Start(Options{Dir: t.TempDir(), ClientURL: url, PeerURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	started := logs.Len() // start-up warnings are not the point here
	e.Close()
	for _, l := range logs.All()[started:] {
		t.Errorf("%s on a clean stop: %s %v", l.Level, l.Message, l.ContextMap())
	}
}

// TestOtherErrorsStillLogged: before the stop a closed listener is an
// error worth logging; during the stop, any other error is.
func TestOtherErrorsStillLogged(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	closing := new(atomic.Bool)
	lg := zap.New(core).WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return quietStop{c, closing} }))
	lg.Error("serving failed", zap.Error(net.ErrClosed))
	closing.Store(true)
	lg.Error("serving failed", zap.Error(net.ErrClosed))
	lg.With(zap.String("member", "m")).Error("sync failed", zap.Error(errors.New("no space left on device")))
	if got := logs.Len(); got != 2 {
		t.Fatalf("%d entries logged, want 2: %v", got, logs.All())
	}
	if m := logs.All()[1].Message; m != "sync failed" {
		t.Errorf("second entry %q, want the sync failure", m)
	}
}

// TestExposureRefused: an embedded etcd off loopback without client
// certificates is refused before anything listens.
func TestExposureRefused(t *testing.T) {
	tlsInfo := transport.TLSInfo{CertFile: "c", KeyFile: "k", TrustedCAFile: "ca", ClientCertAuth: true}
	cases := []struct {
		client, peer string
		tls          transport.TLSInfo
		want         string // "" when allowed
	}{
		{"http://127.0.0.1:2379", "http://127.0.0.1:2380", transport.TLSInfo{}, ""},
		{"http://localhost:2379", "http://[::1]:2380", transport.TLSInfo{}, ""},
		{"https://10.0.0.1:2379", "http://127.0.0.1:2380", tlsInfo, ""},
		{"http://0.0.0.0:2379", "http://127.0.0.1:2380", transport.TLSInfo{}, "client URL 0.0.0.0:2379 is not on loopback"},
		{"http://10.0.0.1:2379", "http://127.0.0.1:2380", tlsInfo, "client URL 10.0.0.1:2379"},
		{"https://10.0.0.1:2379", "http://127.0.0.1:2380", transport.TLSInfo{CertFile: "c", KeyFile: "k"}, "not https with client certificates"},
		{"http://127.0.0.1:2379", "http://10.0.0.1:2380", transport.TLSInfo{}, "peer URL 10.0.0.1:2380 is not on loopback"},
	}
	for _, c := range cases {
		cu, _ := url.Parse(c.client)
		pu, _ := url.Parse(c.peer)
		err := exposure(cu, pu, c.tls)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v, want allowed", c.client, c.peer, err)
		case c.want != "" && (!errors.Is(err, ErrExposed) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s: %v, want %q", c.client, c.peer, err, c.want)
		}
	}
	// Start refuses before it listens or creates anything.
	dir := t.TempDir() + "/data"
	if _, err := Start(Options{Dir: dir, ClientURL: "http://0.0.0.0:1", PeerURL: "http://127.0.0.1:2"}); !errors.Is(err, ErrExposed) {
		t.Errorf("Start: %v, want refused", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused start created %s", dir)
	}
}

// TestURLInUse: a client or peer URL whose port another process holds is
// refused with which of the two it is.
func TestURLInUse(t *testing.T) {
	for _, peer := range []bool{false, true} {
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held := "http://" + busy.Addr().String()
		free := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		o := Options{Dir: t.TempDir(), ClientURL: held, PeerURL: free}
		if peer {
			o.ClientURL, o.PeerURL = free, held
		}
		e, err := Start(o)
		busy.Close()
		if err == nil {
			e.Close()
			t.Fatalf("peer %v: %s is held by this test, and etcd started on it", peer, held)
		}
		var iu *URLInUseError
		if !errors.As(err, &iu) || iu.Peer != peer || iu.URL != held {
			t.Errorf("peer %v: %v (%#v), want a *URLInUseError of %s", peer, err, iu, held)
		}
		which := map[bool]string{false: "client", true: "peer"}[peer]
		if want := which + " URL " + held + ": address already in use: another process listens there"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}
