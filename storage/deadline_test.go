package storage

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// TestDeadlineOnAHungEtcd: against an endpoint that accepts connections
// and never answers, every call fails within the deadline.
func TestDeadlineOnAHungEtcd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ln.Addr().String()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	WithDeadline(cli, 300*time.Millisecond)
	st := New(cli, "")
	calls := map[string]func(ctx context.Context) error{
		"get":    func(ctx context.Context) error { _, err := cli.Get(ctx, "k"); return err },
		"put":    func(ctx context.Context) error { _, err := cli.Put(ctx, "k", "v"); return err },
		"delete": func(ctx context.Context) error { _, err := cli.Delete(ctx, "k"); return err },
		"do":     func(ctx context.Context) error { _, err := cli.Do(ctx, clientv3.OpGet("k")); return err },
		"txn":    func(ctx context.Context) error { _, err := cli.Txn(ctx).Then(clientv3.OpGet("k")).Commit(); return err },
		"status": func(ctx context.Context) error { _, err := st.GetStatus(ctx); return err },
	}
	for name, call := range calls {
		start := time.Now()
		// The caller's own limit, far longer than the deadline: without
		// the deadline the call ends here, late, and fails the test
		// rather than hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := call(ctx)
		cancel()
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
			t.Errorf("%s: %v after %s, want a deadline error after 300ms", name, err, took)
		}
	}
}

// TestDeadlineKeepsTxn: the wrapped client's transactions do what the
// plain client's do.
func TestDeadlineKeepsTxn(t *testing.T) {
	_, url := etcdtest.StartServer(t, embedded.Options{})
	cli := etcdtest.Connect(t, url)
	WithDeadline(cli, time.Second)
	ctx := context.Background()
	if _, err := cli.Put(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Value("a"), "=", "2")).
		Then(clientv3.OpPut("b", "then")).Else(clientv3.OpPut("b", "else"), clientv3.OpGet("a")).Commit()
	if err != nil || resp.Succeeded || string(resp.Responses[1].GetResponseRange().Kvs[0].Value) != "1" {
		t.Fatalf("txn: %v %+v", err, resp)
	}
	if got, _ := cli.Get(ctx, "b"); string(got.Kvs[0].Value) != "else" {
		t.Errorf("b = %s, want else", got.Kvs[0].Value)
	}
}
