package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
)

// commands lists cmd and every command under it.
func commands(cmd *cobra.Command) []*cobra.Command {
	all := []*cobra.Command{cmd}
	for _, c := range cmd.Commands() {
		all = append(all, commands(c)...)
	}
	return all
}

// TestUnknownSubcommandsAndFlags: for every command that groups others, an
// argument naming none of them is a usage error, exit 2 (cobra alone
// prints the help and exits 0); for every command, so is an unknown flag.
// Nothing is printed on stdout.
func TestUnknownSubcommandsAndFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yml")
	groups := 0
	for _, c := range commands(newRootCmd(missing)) {
		path := strings.Fields(c.CommandPath())[1:]
		if c.HasSubCommands() {
			groups++
			out, errOut, code := runCLIWithConfig(t, missing, append(path, "nosuchcmd")...)
			want := `unknown command "nosuchcmd" for "` + c.CommandPath() + `"`
			if code != 2 || out != "" || !strings.Contains(errOut, want) {
				t.Errorf("%s nosuchcmd: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.CommandPath(), code, out, errOut, want)
			}
			out, errOut, code = runCLIWithConfig(t, missing, append(append([]string{"help"}, path...), "nosuchcmd")...)
			if code != 2 || out != "" || !strings.Contains(errOut, want) {
				t.Errorf("help %s nosuchcmd: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.CommandPath(), code, out, errOut, want)
			}
		}
		out, errOut, code := runCLIWithConfig(t, missing, append(path, "--no-such-flag")...)
		if code != 2 || out != "" || !strings.Contains(errOut, "unknown flag: --no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and unknown flag", c.CommandPath(), code, out, errOut)
		}
	}
	// ckegenctl, sabakan, sabakan order, constraints, cluster, completion.
	if groups != 6 {
		t.Errorf("%d commands group others, want 6: the test no longer sees them all", groups)
	}
}

// TestConstraintsSetHelp: `constraints set --help` lists every constraint
// name with what it means.
func TestConstraintsSetHelp(t *testing.T) {
	out, errOut, code := runCLIWithConfig(t, filepath.Join(t.TempDir(), "missing.yml"), "constraints", "set", "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, n := range constraints.Names {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(n) + ` +\S.*$`).MatchString(out) {
			t.Errorf("help lacks a line with %s and its meaning:\n%s", n, out)
		}
	}
}

const linkedVersion = "v9.8.7-test"

// buildCLI builds ckegenctl for a test that needs a process, with a version
// set at link time.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ckegenctl")
	out, err := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X github.com/ckegen/ckegen/internal/version.Version="+linkedVersion, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs the built ckegenctl bin; it reads no /etc/cke/config.yml
// unless the test passes --config.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestBinary runs the built ckegenctl where only a process shows the result:
// the exit status (2 for a usage error, 1 for any other), and the version
// set at link time.
func TestBinary(t *testing.T) {
	bin := buildCLI(t)
	for _, c := range []struct {
		args         []string
		code         int
		stdout       string // a prefix
		stderr       string // contained
		stdoutExact  bool
		stderrSilent bool
	}{
		{args: []string{"--version"}, stdout: "ckegenctl " + linkedVersion + " (commit ", stderrSilent: true},
		{args: []string{"sabakan", "set-urll", "x"}, code: 2, stderr: `ckegenctl: unknown command "set-urll" for "ckegenctl sabakan"; did you mean set-url? (see ckegenctl sabakan --help)` + "\n", stdoutExact: true},
		{args: []string{"sabakan", "stauts"}, code: 2, stderr: `ckegenctl: unknown command "stauts" for "ckegenctl sabakan"; did you mean status? (see ckegenctl sabakan --help)` + "\n", stdoutExact: true},
		{args: []string{"sabakan", "hsitroy"}, code: 2, stderr: `did you mean history?`, stdoutExact: true},
		{args: []string{"completion", "nosuch"}, code: 2, stderr: `unknown command "nosuch" for "ckegenctl completion"`, stdoutExact: true},
		{args: []string{"--no-such-flag"}, code: 2, stderr: "unknown flag: --no-such-flag", stdoutExact: true},
		{args: []string{"--help"}, stdout: "control ckegen: cluster membership generated from sabakan\n\nExit status: 0 on success, 1 on failure, 2 on a usage error", stderrSilent: true},
		{args: []string{"sabakan", "status", "--endpoint", "http://127.0.0.1:1"}, code: 2, stderr: "ckegenctl: unknown flag: --endpoint; did you mean --endpoints?\n", stdoutExact: true},
		{args: []string{"sabakan", "status", "--endpiont", "http://127.0.0.1:1"}, code: 2, stderr: "ckegenctl: unknown flag: --endpiont; did you mean --endpoints?\n", stdoutExact: true},
		{args: []string{"sabakan", "status", "--timeout", "soon"}, code: 2, stderr: `ckegenctl: invalid argument "soon" for "--timeout" flag`, stdoutExact: true},
		{args: []string{"sabakan", "status", "-output", "json"}, code: 2, stderr: "ckegenctl: -output: flags take two dashes: did you mean --output?\n", stdoutExact: true},
		{args: []string{"sabakan", "status", "-o", "json", "--endpoints", "http://127.0.0.1:1"}, code: 1, stderr: "nothing listens there", stdoutExact: true},
		{args: []string{"sabakan", "set-template"}, code: 2, stderr: "ckegenctl: sabakan set-template needs FILE (usage: ckegenctl sabakan set-template FILE; see --help)\n", stdoutExact: true},
		{args: []string{"sabakan", "set-url", "a", "b"}, code: 2, stderr: "ckegenctl: sabakan set-url takes 1 argument, got 2: a b (usage: ckegenctl sabakan set-url URL)\n", stdoutExact: true},
		{args: []string{"cluster", "get", "x"}, code: 2, stderr: "ckegenctl: cluster get takes no arguments, got 1: x (usage: ckegenctl cluster get)\n", stdoutExact: true},
		{args: []string{"constraints", "set", "control-plane-count", "-1", "--endpoints", "http://127.0.0.1:1", "--timeout", "100ms"}, code: 1, stderr: "etcd at http://127.0.0.1:1: nothing listens there", stdoutExact: true},
		{args: []string{"sabakan"}, stdout: "sabakan integration", stderrSilent: true},
		{args: []string{"help", "sabakan", "set-url"}, stdout: "set sabakan's URL", stderrSilent: true},
		{args: []string{"help", "sabakan", "set-urll"}, code: 2, stderr: `unknown command "set-urll" for "ckegenctl sabakan"`, stdoutExact: true},
		{args: []string{"__complete", "help", "sabakan", "set-u"}, stdout: "set-url\t"},
		{args: []string{"completion", "bash"}, stdout: "# bash completion", stderrSilent: true},
	} {
		stdout, stderr, code := runBinary(t, bin, c.args...)
		okOut := strings.HasPrefix(stdout, c.stdout) && (!c.stdoutExact || stdout == c.stdout)
		okErr := strings.Contains(stderr, c.stderr) && (!c.stderrSilent || stderr == "")
		if code != c.code || !okOut || !okErr {
			t.Errorf("ckegenctl %s: exit %d, stdout %.80q, stderr %q; want exit %d, stdout %q, stderr %q",
				strings.Join(c.args, " "), code, stdout, stderr, c.code, c.stdout, c.stderr)
		}
	}
}

// writes counts the writes made to it.
type writes struct {
	bytes.Buffer
	n int
}

func (w *writes) Write(p []byte) (int, error) {
	w.n++
	return w.Buffer.Write(p)
}

// brokenPipe fails every write, as stdout does once its reader is gone.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, errors.New("write |1: broken pipe") }

// TestOutputInOneWrite: what a command prints reaches stdout in one write,
// however many lines it printed, so that `ckegenctl sabakan status | grep
// -q ...` under pipefail finds the whole output in the pipe rather than
// dying of SIGPIPE at a second write once grep has matched and gone (the
// README's lines wait that way). A write that fails is the command's
// failure, said on stderr.
func TestOutputInOneWrite(t *testing.T) {
	var out writes
	var errb bytes.Buffer
	code := run(forecastArgs("--until", "2029-12-31"), strings.NewReader(""), &out, &errb)
	if code != 0 || out.n != 1 || strings.Count(out.String(), "\n") < 10 {
		t.Fatalf("exit %d, %d writes of %d lines; stderr %q", code, out.n, strings.Count(out.String(), "\n"), errb.String())
	}

	errb.Reset()
	code = run(forecastArgs("--until", "2029-12-31"), strings.NewReader(""), brokenPipe{}, &errb)
	if code != 1 || errb.String() != "ckegenctl: writing the output: write |1: broken pipe\n" {
		t.Errorf("a failed write: exit %d, stderr %q", code, errb.String())
	}
}
