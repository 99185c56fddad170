// Command capture records what this build of ckegen stores in etcd, for
// the compatibility tests of the releases that follow (RELEASE.md):
//
//	go run ./internal/records/capture --out testdata/records/v0.1.0
//
// It builds ckegen, ckegenctl and fakesabakan, starts an etcd, the
// sabakan-compatible server with the bundled data center and the daemon,
// and sets every setting with ckegenctl as an operator does (the URL, the
// constraints, the template, the query variables, the placement policy).
// Once the cluster is built it turns a worker UNREACHABLE, waits for its
// taint, then takes the integration over (the owner and both switches)
// and sets the quiet time, the limit of unhealthy nodes and a trigger,
// waits for the tick that holds on them, stops the daemon and
// writes every key but the elections' under --out (internal/records).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cybozu-go/etcdutil"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/child"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/records"
	"github.com/ckegen/ckegen/storage"
)

func main() {
	out := flag.String("out", "", "the directory to write the records in (testdata/records/VERSION), made anew")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/records/capture --out testdata/records/VERSION (from the repository's root)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, err := capture(ctx, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		os.Exit(1)
	}
	fmt.Printf("capture: %d records in %s\n", n, *out)
}

// site is what the capture runs: the binaries, etcd, the compatible server.
type site struct {
	ctx     context.Context
	bin     string
	etcdURL string
	sabURL  string
	st      storage.Storage
}

func capture(ctx context.Context, out string) (int, error) {
	work, err := os.MkdirTemp("", "ckegen-capture-")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := os.RemoveAll(work); err != nil {
			fmt.Fprintln(os.Stderr, "capture:", err)
		}
	}()
	s := &site{ctx: ctx, bin: filepath.Join(work, "bin")}
	build := exec.CommandContext(ctx, "go", "build", "-o", s.bin+"/", "./cmd/ckegen", "./cmd/ckegenctl", "./cmd/fakesabakan")
	if b, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go build: %v\n%s", err, b)
	}
	stopEtcd, err := s.startEtcd(filepath.Join(work, "etcd"))
	if err != nil {
		return 0, err
	}
	defer stopEtcd()
	sab, addr, err := child.Start(ctx, filepath.Join(s.bin, "fakesabakan"), regexp.MustCompile(`msg=serving address=(\S+)`),
		"--listen", "127.0.0.1:0", "--machines", "examples/machines.json")
	if err != nil {
		return 0, err
	}
	defer child.Stop(sab)
	s.sabURL = "http://" + addr
	if err := s.scenario(work); err != nil {
		return 0, err
	}
	recs, err := records.Capture(ctx, s.st)
	if err != nil {
		return 0, err
	}
	return len(recs), records.Write(out, recs)
}

// startEtcd starts an etcd on free ports and connects to it.
func (s *site) startEtcd(dir string) (func(), error) {
	ports, err := child.FreePorts(2)
	if err != nil {
		return nil, err
	}
	s.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	e, err := embedded.Start(embedded.Options{Dir: dir, ClientURL: s.etcdURL,
		PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1])})
	if err != nil {
		return nil, err
	}
	cfg := &etcdclient.Config{Config: *etcdutil.NewConfig("")}
	cfg.Endpoints = []string{s.etcdURL}
	cli, err := etcdclient.Connect(cfg, etcdclient.Within(5*time.Second, "capture's dial timeout"))
	if err != nil {
		e.Close()
		return nil, err
	}
	s.st = storage.New(cli.Client, "")
	return func() { cli.Close(); e.Close() }, nil
}

// scenario configures the integration, runs the daemon through a build
// of the cluster, a taint and a hold, and stops it.
func (s *site) scenario(work string) error {
	for _, args := range [][]string{
		{"sabakan", "set-url", s.sabURL},
		{"constraints", "set", "control-plane-count", "3"},
		{"constraints", "set", "minimum-workers", "20"},
		{"constraints", "set", "maximum-workers", "40"},
		{"sabakan", "set-variables", "internal/records/capture/variables.json"},
		{"sabakan", "set-policy", "examples/policy.yml"},
		{"sabakan", "set-template", "examples/template.yml"},
	} {
		if err := s.ckegenctl(args...); err != nil {
			return err
		}
	}
	daemon, _, err := child.Start(s.ctx, filepath.Join(s.bin, "ckegen"), regexp.MustCompile(`info: "serving"`),
		"--etcd-endpoints", s.etcdURL, "--http", "127.0.0.1:0", "--name", "capture", "--interval", "500ms")
	if err != nil {
		return err
	}
	defer child.Stop(daemon)
	if err := s.waitSettled("the cluster to be built"); err != nil {
		return err
	}
	return s.taintAndHold()
}

// taintAndHold turns a worker UNREACHABLE and waits for its taint, then
// sets change management and waits for a tick that reads it.
func (s *site) taintAndHold() error {
	before, err := s.st.History(s.ctx)
	if err != nil {
		return err
	}
	serial, err := s.aWorker()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPut, s.sabURL+"/api/v1/state/"+serial, strings.NewReader("unreachable"))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // only the status is the answer
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT /api/v1/state/%s: %s", serial, resp.Status)
	}
	if err := s.wait("the taint of "+serial+"'s node", func() (bool, error) {
		h, err := s.st.History(s.ctx)
		return len(h) > len(before), err
	}); err != nil {
		return err
	}
	if err := s.waitSettled("the taint to settle"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"sabakan", "takeover"},
		{"sabakan", "disable"},
		{"sabakan", "enable"},
		{"sabakan", "set-max-unhealthy", "5"},
		{"sabakan", "set-quiet-time", "10m"},
		{"sabakan", "trigger", "planning"},
	} {
		if err := s.ckegenctl(args...); err != nil {
			return err
		}
	}
	return s.waitSettled("a tick that holds for the quiet time", "planning")
}

// aWorker is the serial of the cluster's first worker.
func (s *site) aWorker() (string, error) {
	v, err := s.st.Get(s.ctx, storage.KeyCluster)
	if err != nil {
		return "", err
	}
	cl, err := cluster.Parse(v.Data)
	if err != nil {
		return "", fmt.Errorf("the stored cluster: %w", err)
	}
	for _, n := range cl.Nodes {
		if serial := n.Annotations["cke.cybozu.com/serial"]; !n.ControlPlane && serial != "" {
			return serial, nil
		}
	}
	return "", errors.New("the stored cluster has no worker with a serial")
}

// waitSettled waits for two ticks in a row, after now, with one of the
// results (ok when none is given) that add no history entry (change
// nothing), and a stored plan.
func (s *site) waitSettled(what string, results ...string) error {
	if len(results) == 0 {
		results = []string{"ok"}
	}
	since := time.Now()
	quiet, entries := 0, -1
	var last time.Time
	var seen storage.Status
	err := s.wait(what, func() (bool, error) {
		st, err := s.st.GetStatus(s.ctx)
		if errors.Is(err, storage.ErrNotFound) || err == nil && (st.Time.Before(since) || st.Time.Equal(last)) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		h, err := s.st.History(s.ctx)
		if err != nil {
			return false, err
		}
		last, seen = st.Time, st
		if !slices.Contains(results, st.Result) || len(h) != entries {
			quiet, entries = 0, len(h)
			return false, nil
		}
		quiet++
		plan, err := s.st.GetPlan(s.ctx)
		return quiet >= 2 && len(plan) > 0, err
	})
	if err != nil && !seen.Time.IsZero() {
		err = fmt.Errorf("%w; the last status: %s %s %s", err, seen.Result, seen.Reason, seen.Message)
	}
	return err
}

// wait polls cond until it holds, for at most two minutes.
func (s *site) wait(what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited 2m for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *site) ckegenctl(args ...string) error {
	out, err := exec.CommandContext(s.ctx, filepath.Join(s.bin, "ckegenctl"),
		append([]string{"--endpoints", s.etcdURL}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ckegenctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
