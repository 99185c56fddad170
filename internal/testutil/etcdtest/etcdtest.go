// Package etcdtest runs a real embedded etcd for tests.
package etcdtest

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/internal/embedded"
)

// Silent returns the URL of an etcd that takes connections and says
// nothing, for the errors of a client that waits for an answer.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return "http://" + ln.Addr().String()
}

// FreePort returns a loopback port that was free a moment ago and that
// it has not returned before in this process: the kernel may hand the
// same ephemeral port out again once it is closed, and two members of one
// etcd cluster given the same port do not start.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
	t.Fatal("no free port that was not given out before")
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// Start starts an embedded etcd for the test and returns its client URL;
// both are stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	_, url := StartServer(t, embedded.Options{})
	return url
}

// StartServer starts an embedded etcd with o (a temporary directory and
// free loopback ports where o leaves them empty) and returns it with its
// client URL; it is stopped when the test ends, if the test has not
// stopped it.
func StartServer(t testing.TB, o embedded.Options) (*embedded.Etcd, string) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.ClientURL == "" {
		o.ClientURL = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	}
	if o.PeerURL == "" {
		o.PeerURL = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	}
	e, err := embedded.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, o.ClientURL
}

// Client returns a client of a new embedded etcd.
func Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return Connect(t, Start(t))
}

// Connect returns a client of the etcd at url, closed when the test ends.
func Connect(t testing.TB, url string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
