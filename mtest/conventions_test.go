package mtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBin runs a built binary with args and returns its outputs, its exit
// status and how long it took.
func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code, took
}

// TestFlagConventions: every binary of the project takes its flags the
// same way. --help prints the usage on stdout and exits 0; --version
// prints the version; an unknown flag near a real one fails with a "did
// you mean" naming it, and so does a long flag written with one dash.
func TestFlagConventions(t *testing.T) {
	demo := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", demo, "../cmd/demo").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/demo: %v\n%s", err, out)
	}
	for _, c := range []struct {
		bin         string
		help        []string // in the --help output
		typo, want  string   // an unknown flag and the flag suggested
		oneDash     string   // a flag written with one dash
		versionLine string   // the --version output, before the version
	}{
		{filepath.Join(binDir, "ckegen"), []string{"Usage:\n  ckegen [flags]", "--etcd-endpoints"}, "--etcd-endpoint", "--etcd-endpoints", "-interval", ""},
		{filepath.Join(binDir, "ckegenctl"), []string{"Usage:\n  ckegenctl [flags]", "--endpoints"}, "--endpoint", "--endpoints", "-endpoints", "ckegenctl version "},
		{filepath.Join(binDir, "fakesabakan"), []string{"Usage:\n  fakesabakan [flags]", "--machines"}, "--machine", "--machines", "-listen", ""},
		{demo, []string{"Usage:\n  demo [flags]", "--examples"}, "--intervall", "--interval", "-examples", ""},
	} {
		name := filepath.Base(c.bin)
		t.Run(name, func(t *testing.T) {
			out, errOut, code, _ := runBin(t, c.bin, "--help")
			if code != 0 || errOut != "" {
				t.Errorf("--help: exit %d, stderr %q; want exit 0 and the usage on stdout", code, errOut)
			}
			for _, want := range c.help {
				if !strings.Contains(out, want) {
					t.Errorf("--help lacks %q:\n%s", want, out)
				}
			}
			out, errOut, code, _ = runBin(t, c.bin, "--version")
			if code != 0 || errOut != "" || !strings.HasPrefix(out, c.versionLine) || strings.Count(out, "\n") != 1 {
				t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			want := fmt.Sprintf("%s: unknown flag: %s; did you mean %s?\n", name, c.typo, c.want)
			out, errOut, code, _ = runBin(t, c.bin, c.typo, "x")
			if code == 0 || out != "" || errOut != want {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure and only %q", c.typo, code, out, errOut, want)
			}
			want = "flags take two dashes: did you mean -" + c.oneDash + "?\n"
			out, errOut, code, _ = runBin(t, c.bin, c.oneDash, "x")
			if code == 0 || out != "" || !strings.HasPrefix(errOut, name+": ") || !strings.HasSuffix(errOut, want) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure ending %q", c.oneDash, code, out, errOut, want)
			}
		})
	}
}

// TestRefusedEtcd: ckegenctl pointed at a port where nothing listens fails
// in well under its 10s default --timeout, naming the endpoint, whatever
// the command.
func TestRefusedEtcd(t *testing.T) {
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	for _, args := range [][]string{{"sabakan", "status"}, {"constraints", "set", "control-plane-count", "3"}, {"cluster", "get"}} {
		out, errOut, code, took := runBin(t, filepath.Join(binDir, "ckegenctl"), append([]string{"--endpoints", dead}, args...)...)
		want := "ckegenctl: etcd at " + dead + ": nothing listens there (dial tcp " + strings.TrimPrefix(dead, "http://") + ": connect: connection refused): "
		if code != 1 || out != "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
		if took > 3*time.Second {
			t.Errorf("%v: failed after %s, want under 3s", args, took.Round(time.Millisecond))
		}
	}
}
