package usage

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("etcd does not answer"), 1},
		{Errorf("--width: must be > 0, got %d", -3), 2},
		{fmt.Errorf("sabakan map: %w", Errorf("--width: must be > 0")), 2},
		{Wrap(errors.New("unknown flag: --x")), 2},
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if err := Errorf("--x %s", "y"); err.Error() != "--x y" {
		t.Errorf("Errorf: %q, want the message alone", err)
	}
}

// TestCobra runs a cobra command set up by Cobra: --version prints the
// version line, an unknown flag is a usage error with a suggestion, and
// so is a wrong argument count, at any depth; the command's own errors
// are not.
func TestCobra(t *testing.T) {
	newCmd := func() *cobra.Command {
		root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
		sub := &cobra.Command{Use: "sub", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return errors.New("failed") }}
		sub.Flags().String("listen", "", "")
		root.AddCommand(sub)
		Cobra(root, "tool")
		return root
	}
	run := func(args ...string) (string, error) {
		cmd := newCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--version")
	if err != nil || !regexp.MustCompile(`^tool \S+ \(commit \S+, go\S+\)\n$`).MatchString(out) {
		t.Errorf("--version: %q, %v", out, err)
	}
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"sub", "--lisen", "x"}, "unknown flag: --lisen; did you mean --listen?", 2},
		{[]string{"sub", "extra"}, `unknown command "extra" for "tool sub"`, 2},
		{[]string{"sub"}, "failed", 1},
	} {
		_, err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || Code(err) != c.code {
			t.Errorf("%q: %v (exit %d), want %q and exit %d", c.args, err, Code(err), c.want, c.code)
		}
	}
}
