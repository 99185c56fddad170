// Package promtest runs a real Prometheus for tests (Debian's prometheus
// binary, on a loopback port, with its storage in a temporary directory)
// and a small exporter whose pages the test sets, so that code reading
// metrics is tested against the real HTTP API, not a stand-in; and it
// reads the metric names of alert rules (MetricNames), for the tests
// that check every rule's metric is exported.
package promtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// readyTimeout bounds the wait for Prometheus to answer, and for the
// first scrapes.
const readyTimeout = 30 * time.Second

// Binary finds Debian's prometheus in PATH. Without one the test is
// skipped, except in CI (CI set), where it must run.
func Binary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no prometheus binary in PATH: CI must install it (apt-get install -y prometheus)")
	}
	t.Skip("no prometheus binary in PATH: install Debian's prometheus (apt-get install -y prometheus) to run the test against a real Prometheus")
	return ""
}

// Server is a Prometheus process scraping every second.
type Server struct {
	// URL is the base URL of its HTTP API, http://127.0.0.1:PORT.
	URL string

	bin, addr, dir string
	log            *syncBuffer

	mu  sync.Mutex
	cmd *exec.Cmd // nil while stopped
}

// Start runs a Prometheus with these scrape configurations (YAML items
// under scrape_configs) and waits until it is ready; it is killed when
// the test ends, and its log is shown if the test failed.
func Start(t testing.TB, scrapeConfigs string) *Server {
	t.Helper()
	s := &Server{bin: Binary(t), dir: t.TempDir(), log: &syncBuffer{}}
	config := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(filepath.Join(s.dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s.addr = fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	s.URL = "http://" + s.addr
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", s.log.String())
		}
	})
	s.start(t)
	return s
}

// Restart starts the stopped server again on the same address with the
// same storage.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.start(t)
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(s.bin, "--config.file="+filepath.Join(s.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(s.dir, "data"), "--web.listen-address="+s.addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after %s: %v\n%s", s.URL, readyTimeout, err, s.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills the process and waits for it; stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait() // killed: its exit status says so
	s.cmd = nil
}

// WaitSamples waits until the instant query returns at least n samples:
// the scrapes the test needs have happened.
func (s *Server) WaitSamples(t testing.TB, query string, n int) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		got, err := s.samples(query)
		if err == nil && got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus: %q returned %d samples after %s, want %d (%v)\n%s", query, got, readyTimeout, n, err, s.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *Server) samples(query string) (int, error) {
	resp, err := http.Get(s.URL + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			ResultType string
			Result     []json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("status %q", body.Status)
	}
	return len(body.Data.Result), nil
}

// Exporter serves the pages the test sets, in Prometheus' text format.
type Exporter struct {
	*httptest.Server

	mu    sync.Mutex
	pages map[string]string
}

// NewExporter starts an exporter with no pages; it is closed when the
// test ends.
func NewExporter(t testing.TB) *Exporter {
	e := &Exporter{pages: map[string]string{}}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

// Set sets the page at path, which may hold a query (/node?host=10.0.0.5:
// what a target with the label __param_host="10.0.0.5" requests); a page
// with a query wins over the same path without.
func (e *Exporter) Set(path, body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pages[path] = body
}

// Target is the exporter's host:port, for static_configs.
func (e *Exporter) Target() string { return strings.TrimPrefix(e.URL, "http://") }

func (e *Exporter) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	body, ok := e.pages[r.URL.RequestURI()]
	if !ok {
		body, ok = e.pages[r.URL.Path]
	}
	e.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprint(w, body)
}

// syncBuffer is a log both the process and the test use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
