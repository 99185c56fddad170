// Package deploy tests what an operator installs (docs/install.md,
// docs/alerts.md): the container image that `make image` builds from the
// Containerfile and the version it is stamped with, the systemd units in
// systemd/, and the Prometheus alerting rules in prometheus/ with their
// unit tests and the metrics they name. It has no code of its own: only
// these tests.
//
// Each test needs a program that the machine may lack (podman, promtool,
// systemd-analyze): without it the test is skipped with the reason,
// except under CI (CI set), where it fails. .ci/run installs them.
package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// root is the repository's top directory (TestMain sets it: go test runs
// in deploy/).
var root string

// need finds a program in PATH. Without one the test is skipped, except
// under CI, where it fails: install says how to get it.
func need(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("no %s in PATH: CI must install it (%s)", name, install)
	}
	t.Skipf("no %s in PATH: install it (%s) to run this test", name, install)
	return ""
}

// run runs a command with a deadline and returns its standard output; a
// failure or a time-out fails the test with both outputs.
func run(t *testing.T, timeout time.Duration, dir string, name string, args ...string) []byte {
	t.Helper()
	out, errOut, err := runErr(timeout, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// runErr runs a command with a deadline and returns both outputs and its
// error.
func runErr(timeout time.Duration, dir string, name string, args ...string) (stdout, stderr []byte, err error) {
	return runEnv(timeout, dir, nil, name, args...)
}

// runEnv is runErr with env (KEY=value) over the test's environment; a
// KEY= of env, empty, removes KEY.
func runEnv(timeout time.Duration, dir string, env []string, name string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// Under `make test`, make's own variables would reach a make that a
	// test runs (TestImage): each test's command line is all it gets.
	drop := map[string]bool{"MAKEFLAGS": true, "MFLAGS": true, "MAKELEVEL": true, "MAKEOVERRIDES": true}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return drop[k]
	})
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("no exit within %s: %w", timeout, err)
	}
	return o.Bytes(), e.Bytes(), err
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds ckegen and ckegenctl once for the package's tests
// (as `go build` does, not as the image is built: TestImage builds those)
// and returns their directory.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ckegen-deploy-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		_, errOut, err := runErr(8*time.Minute, root, "go", "build", "-o", dir+"/", "./cmd/ckegen", "./cmd/ckegenctl")
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, errOut)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	dir, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy: the repository's directory:", err)
		os.Exit(1)
	}
	root = dir
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
