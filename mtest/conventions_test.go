package mtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
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

// versionLine is what --version prints, for every binary called name:
// version.Line's "NAME VERSION (commit COMMIT, GOVERSION)".
func versionLine(name string) *regexp.Regexp {
	return regexp.MustCompile(`^` + name + ` \S+ \(commit ([0-9a-f]{12}|unknown), go[0-9][^\s)]*\)\n$`)
}

// usageHelp is what every binary's --help says of the exit statuses.
const usageHelp = "Exit status: 0 on success, 1 on failure, 2 on a usage error"

// TestFlagConventions: every binary of the project takes its flags the
// same way. --help prints the usage, with the exit statuses, on stdout
// and exits 0; --version prints one line of one shape; an unknown flag
// one or two edits from a real one (a swap of neighbours is one edit)
// fails with exit 2 and a "did you mean" naming it, and so does a long
// flag written with one dash. cke, CKE's server with ckegen inside, is
// checked when it can be built (cketest.Inside skips with why
// otherwise).
func TestFlagConventions(t *testing.T) {
	demo := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", demo, "../cmd/demo").CombinedOutput(); err != nil {
		t.Fatalf("go build ../cmd/demo: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name    string
		bin     func(t *testing.T) string
		help    []string          // in the --help output
		typos   map[string]string // an unknown flag, one or two edits away, and the flag suggested
		oneDash string            // a flag written with one dash
		version *regexp.Regexp    // the --version output
	}{
		{"ckegen", built("ckegen"), []string{"Usage:\n  ckegen [flags]", "--etcd-endpoints"},
			map[string]string{"--etcd-endpoint": "--etcd-endpoints", "--intrevl": "--interval", "--endpiont": "--etcd-endpoints"},
			"-http", versionLine("ckegen")},
		{"ckegenctl", built("ckegenctl"), []string{"Usage:\n  ckegenctl [flags]", "--etcd-endpoints"},
			map[string]string{"--endpoint": "--endpoints", "--endpiont": "--endpoints", "--tmieout": "--timeout"},
			"-endpoints", versionLine("ckegenctl")},
		{"fakesabakan", built("fakesabakan"), []string{"Usage:\n  fakesabakan [flags]", "--machines"},
			map[string]string{"--machine": "--machines", "--lsiten": "--listen", "--macihne": "--machines"},
			"-listen", versionLine("fakesabakan")},
		{"demo", func(*testing.T) string { return demo }, []string{"Usage:\n  demo [flags]", "--examples"},
			map[string]string{"--intervall": "--interval", "--exmaple": "--examples"},
			"-examples", versionLine("demo")},
		{"cke", func(t *testing.T) string { return cketest.Inside(t) }, []string{"Usage:\n  cke [flags]", "--http", "--config"},
			map[string]string{"--intervl": "--interval", "--sesion-tll": "--session-ttl"},
			"-http", regexp.MustCompile(`^cke ` + regexp.QuoteMeta(cketest.Version) + ` with ckegen \S+ \(commit ([0-9a-f]{12}|unknown), go[0-9][^\s)]*\)\n$`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := c.bin(t)
			out, errOut, code, _ := runBin(t, bin, "--help")
			if code != 0 || errOut != "" {
				t.Errorf("--help: exit %d, stderr %q; want exit 0 and the usage on stdout", code, errOut)
			}
			for _, want := range append(c.help, usageHelp) {
				if !strings.Contains(out, want) {
					t.Errorf("--help lacks %q:\n%s", want, out)
				}
			}
			out, errOut, code, _ = runBin(t, bin, "--version")
			if code != 0 || errOut != "" || !c.version.MatchString(out) {
				t.Errorf("--version: exit %d, stdout %q, stderr %q; want exit 0 and stdout matching %s", code, out, errOut, c.version)
			}
			for typo, flag := range c.typos {
				want := fmt.Sprintf("%s: unknown flag: %s; did you mean %s?\n", c.name, typo, flag)
				out, errOut, code, _ = runBin(t, bin, typo, "x")
				if code != 2 || out != "" || errOut != want {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and only %q", typo, code, out, errOut, want)
				}
			}
			want := "flags take two dashes: did you mean -" + c.oneDash + "?\n"
			out, errOut, code, _ = runBin(t, bin, c.oneDash, "x")
			if code != 2 || out != "" || !strings.HasPrefix(errOut, c.name+": ") || !strings.HasSuffix(errOut, want) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and a line ending %q", c.oneDash, code, out, errOut, want)
			}
		})
	}
}

// built is the binary TestMain built.
func built(name string) func(*testing.T) string {
	return func(*testing.T) string { return filepath.Join(binDir, name) }
}

// TestCommandConventions: ckegenctl's commands follow its flags' rules:
// an unknown command one or two edits from a real one fails with exit 2
// and a "did you mean"; a wrong number of arguments exits 2 too; any
// other failure exits 1.
func TestCommandConventions(t *testing.T) {
	ctl := filepath.Join(binDir, "ckegenctl")
	for _, c := range []struct {
		args []string
		code int
		want string // stderr
	}{
		{[]string{"sabakan", "stauts"}, 2, `ckegenctl: unknown command "stauts" for "ckegenctl sabakan"; did you mean status? (see ckegenctl sabakan --help)` + "\n"},
		{[]string{"sabakan", "hsitroy"}, 2, `ckegenctl: unknown command "hsitroy" for "ckegenctl sabakan"; did you mean history? (see ckegenctl sabakan --help)` + "\n"},
		{[]string{"clustre", "get"}, 2, `ckegenctl: unknown command "clustre" for "ckegenctl"; did you mean cluster? (see ckegenctl --help)` + "\n"},
		{[]string{"sabakan", "set-url"}, 2, "ckegenctl: sabakan set-url needs URL (usage: ckegenctl sabakan set-url URL; see --help)\n"},
		{[]string{"sabakan", "set-url", "not a url", "--endpoints", "http://127.0.0.1:1"}, 1, ""},
	} {
		out, errOut, code, _ := runBin(t, ctl, c.args...)
		if code != c.code || out != "" || (c.want != "" && errOut != c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
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
