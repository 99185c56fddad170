package mtest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/internal/testutil/freeze"
)

// TestEtcdStopsAnswering: each daemon talks to an etcd member of its own.
// The leader's member stops answering (SIGSTOP: its connections stay open,
// nothing comes back). Every etcd call of the daemon has a deadline of one
// interval, so the leader gives up within two intervals, and the other
// daemon, whose member still has quorum with the third, leads once the old
// leader's session has expired; the cluster keeps one writer.
func TestEtcdStopsAnswering(t *testing.T) {
	const iv = time.Second
	e := newEnv(t, withoutDaemons())
	for i := 0; i < 2; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		d := &proc{name: "ckegen", log: filepath.Join(e.dir, fmt.Sprintf("ckegen%d.log", i)), args: []string{
			"--etcd-endpoints", e.clients[i], "--http", addr, "--name", fmt.Sprintf("ckegen-%d", i),
			"--interval", iv.String(), "--session-ttl", sessionTTL.String(), "--retire-wait", retireWait.String(),
			"--sabakan-timeout", "1s", "--min-backoff", "200ms",
		}, env: []string{"CANCELLATION_DELAY_SECONDS=0"}}
		d.start(t)
		e.daemons = append(e.daemons, d)
		e.dHTTP = append(e.dHTTP, addr)
	}
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	e.converge(90 * time.Second)

	leading := func(i int) bool {
		return strings.Contains(e.metrics(e.dHTTP[i]), "\nckegen_leader 1\n")
	}
	leader := -1
	e.eventually("a leader", 20*time.Second, func() bool {
		for i := range e.daemons {
			if leading(i) {
				leader = i
				return true
			}
		}
		return false
	})
	other := 1 - leader

	stopped := e.etcd[leader].cmd.Process
	t.Cleanup(func() { _ = freeze.Continue(stopped) })
	if err := freeze.Stop(stopped); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.eventually("the leader to give up", 20*time.Second, func() bool { return !leading(leader) })
	gaveUp := time.Since(start)
	e.eventually("the other daemon to lead", 30*time.Second, func() bool { return leading(other) })
	led := time.Since(start)
	t.Logf("etcd member %d stopped: ckegen-%d gave up after %s, ckegen-%d led after %s (interval %s, session TTL %s)",
		leader, leader, gaveUp.Round(time.Millisecond), other, led.Round(time.Millisecond), iv, sessionTTL)
	// Two intervals (the wait for the next tick, then its first call's
	// deadline), plus the scrape's own time on a busy machine.
	if gaveUp > 2*iv+500*time.Millisecond {
		t.Errorf("the leader gave up after %s, want within two intervals (%s)", gaveUp, 2*iv)
	}

	// The new leader's ticks go on: a state change reaches the cluster
	// through the members that answer.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.clients[other]}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	before, err := cli.Get(ctx, "/cke/cluster")
	if err != nil || len(before.Kvs) != 1 {
		t.Fatalf("cluster through member %d: %v", other, err)
	}
	var worker string
	for _, n := range e.clusterFrom(before.Kvs[0].Value).workers() {
		if n.stateTaint() == "" {
			worker = n.serial()
			break
		}
	}
	e.setState(worker, "unreachable")
	e.eventually("the new leader to taint the unreachable worker", 30*time.Second, func() bool {
		resp, err := cli.Get(e.ctx, "/cke/cluster")
		if err != nil || len(resp.Kvs) != 1 {
			return false
		}
		for _, n := range e.clusterFrom(resp.Kvs[0].Value).workers() {
			if n.serial() == worker {
				return n.stateTaint() == "unreachable:NoSchedule"
			}
		}
		return false
	})
}

// clusterFrom reads a stored cluster (JSON, CKE's layout).
func (e *env) clusterFrom(data []byte) *clusterDoc {
	e.t.Helper()
	var c clusterDoc
	if err := json.Unmarshal(data, &c); err != nil {
		e.t.Fatalf("stored cluster: %v", err)
	}
	return &c
}
