package mtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Markers around README.md's "Run it yourself" lines.
const (
	runBegin = "<!-- run-it-yourself: begin -->"
	runEnd   = "<!-- run-it-yourself: end -->"
)

// runItYourself returns the shell lines of the sh blocks between the
// markers in readme, in order.
func runItYourself(readme string) (string, error) { return shBlocks(readme, runBegin, runEnd) }

// shBlocks returns the shell lines of the sh blocks between the markers
// begin and end in a Markdown document, in order.
func shBlocks(doc, begin, end string) (string, error) {
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q", begin, end)
	}
	blocks := regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(doc[i:j], -1)
	if len(blocks) == 0 {
		return "", fmt.Errorf("no sh block between the markers")
	}
	var b strings.Builder
	for _, m := range blocks {
		b.WriteString(m[1])
	}
	return b.String(), nil
}

// TestRunItYourself runs README.md's "Run it yourself" lines as a newcomer
// would, in bash from the repository root: they build the binaries, start
// fakesabakan and ckegen on their default ports, configure, change machines,
// set a misspelt template and stop. Any line that fails, or a wait that
// never ends, fails the test: the README says what works. It needs curl
// and the ports 2379, 2380, 10080 and 10190 free; without them it skips,
// except under CI, where it fails.
func TestRunItYourself(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := runItYourself(string(data))
	if err != nil {
		t.Fatal(err)
	}
	need := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (under CI this fails)", args...)
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			need("the README's lines need %s: install it (apt-get install -y %s)", tool, tool)
		}
	}
	for _, port := range []int{2379, 2380, 10080, 10190} {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			need("the README's lines use port %d, which is taken: %v", port, err)
		}
		ln.Close()
	}

	// A cold build takes minutes: the lines get 8 of the package's 10.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = ".."
	// mktemp -d makes the scratch directory in the test's.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The servers the lines start in the background are in the script's
	// process group: the whole group goes when the test ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	t.Logf("the README's lines took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("the README's lines failed (%v) after %s; their output:\n%s", err, time.Since(start).Round(time.Second), out.String())
	}
	// What the lines say the newcomer sees.
	for _, want := range []string{
		`{"health":"healthy"`,
		"RESULT          ok",
		"replace control plane",
		`warning: template role "gpuu" matches no machine; inventory roles: `,
		`WARNINGS        template role "gpuu" matches no machine; inventory roles: `,
		"ckegen_tick_warnings 1",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the README's lines did not show %q; their output:\n%s", want, out.String())
		}
	}
}

// TestRunItYourselfExtraction: the lines are those of every sh block
// between the markers, and only those.
func TestRunItYourselfExtraction(t *testing.T) {
	readme := "# x\n```sh\nnot this\n```\n" + runBegin + "\n```sh\na\nb\n```\ntext\n```\nnot sh\n```\n```sh\nc\n```\n" + runEnd + "\n```sh\nnor this\n```\n"
	got, err := runItYourself(readme)
	if err != nil || got != "a\nb\nc\n" {
		t.Errorf("lines %q, %v; want a, b, c", got, err)
	}
	if _, err := runItYourself("no markers"); err == nil {
		t.Error("a README without the markers passed")
	}
}
