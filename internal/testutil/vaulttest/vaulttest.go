// Package vaulttest runs a real Vault for tests: OpenBao's bao (the Vault
// fork with Vault's HTTP API and CLI), built once per machine into a
// cache from the source archive beside the repository
// (internal/testutil/buildcache/programs), and started in dev mode on
// loopback with the AppRole auth method enabled, as CKE's `ckecli vault
// init` needs it. CKE's server needs a Vault before it calls its
// integration with a cluster status.
//
// When bao cannot be had, a test that needs it is skipped with the
// reason, and fails instead when CI=true.
package vaulttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/needed"
)

// Environment variables that steer the build.
const (
	// EnvBinary names a bao binary to use instead of building one.
	EnvBinary = programs.EnvOpenBao
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/openbao (~/.cache/... on Linux).
	EnvCacheDir = programs.EnvOpenBaoCache
)

// Version is the OpenBao release built.
const Version = programs.OpenBaoVersion

// readyTimeout bounds how long Start waits for the server to answer.
const readyTimeout = 60 * time.Second

// bao is OpenBao's bao, as programs.OpenBao has it ($CKEGEN_OPENBAO, or
// the cache's, built first when missing).
var bao = needed.Program{What: "a real Vault, OpenBao " + Version + "'s bao", Build: programs.OpenBao,
	Otherwise: "set " + EnvBinary + " to a built bao, or lay OpenBao's source archive beside the repository, ../shared/openbao"}

// Binary returns the path of a bao binary, once per test process. When
// none can be had the test is skipped, or fails under CI.
func Binary(t testing.TB) string {
	t.Helper()
	return bao.Path(t)
}

// Server is a Vault in dev mode run for a test: in memory, unsealed, with
// a root token and the AppRole auth method enabled.
type Server struct {
	// Addr is the server's address, http://127.0.0.1:PORT (VAULT_ADDR).
	Addr string
	// Token is the root token (VAULT_TOKEN).
	Token string

	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a Vault in dev mode on a free loopback port, waits until
// it answers, and enables AppRole. It is stopped when the test ends; its
// log is printed when the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	tok := make([]byte, 16)
	rand.Read(tok)
	s := &Server{
		Addr:  fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t)),
		Token: hex.EncodeToString(tok),
		log:   filepath.Join(t.TempDir(), "vault.log"),
		done:  make(chan struct{}),
	}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, "server", "-dev", "-dev-root-token-id="+s.Token,
		"-dev-listen-address="+strings.TrimPrefix(s.Addr, "http://"),
		// The token stays out of the user's ~/.vault-token.
		"-dev-no-store-token")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		bao.Unavailable(t, fmt.Errorf("starting %s: %w", bin, err))
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("last lines of Vault's log:\n%s", s.tail(30))
		}
	})
	start := time.Now()
	if err := s.waitReady(); err != nil {
		s.Stop()
		t.Fatalf("Vault did not answer: %v\nlast lines of its log:\n%s", err, s.tail(30))
	}
	if code, body, err := s.Call(http.MethodPost, "/v1/sys/auth/approle", `{"type":"approle"}`); err != nil || code/100 != 2 {
		t.Fatalf("enabling AppRole: %d %s %v", code, body, err)
	}
	t.Logf("Vault (OpenBao %s) ready in %s at %s", Version, time.Since(start).Round(time.Millisecond), s.Addr)
	return s
}

// Env is the environment of Vault's clients for the server: VAULT_ADDR and
// VAULT_TOKEN.
func (s *Server) Env() []string {
	return []string{"VAULT_ADDR=" + s.Addr, "VAULT_TOKEN=" + s.Token}
}

// Call sends a request of Vault's HTTP API with the root token and
// returns the status code and the body.
func (s *Server) Call(method, path, body string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.Addr+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("X-Vault-Token", s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for
// it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// waitReady waits until /v1/sys/health says the server is initialized,
// unsealed and active (200).
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("the process exited (%v)", s.cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
		code, body, err := s.Call(http.MethodGet, "/v1/sys/health", "")
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK:
			return nil
		default:
			last = fmt.Sprintf("/v1/sys/health: %d %s", code, body)
		}
	}
	return fmt.Errorf("not ready within %s: %s", readyTimeout, last)
}

// tail is the last n lines of the server's log.
func (s *Server) tail(n int) string {
	data, _ := os.ReadFile(s.log)
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
