package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

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
