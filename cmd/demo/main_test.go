package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/usage"
)

// TestCommandLine: the demo's command line follows every binary's
// conventions: the version line, a usage error (exit 2) with a "did you
// mean" for an unknown flag, and for an argument.
func TestCommandLine(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := newCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	if out, err := run("--version"); err != nil || !regexp.MustCompile(`^demo \S+ \(commit \S+, go\S+\)\n$`).MatchString(out) {
		t.Errorf("--version: %q, %v", out, err)
	}
	if out, err := run("--help"); err != nil || !strings.Contains(out, usage.Help) {
		t.Errorf("--help: %v; lacks the exit statuses:\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--intervl", "1s"}, "unknown flag: --intervl; did you mean --interval?"},
		{[]string{"--exmaple", "x"}, "unknown flag: --exmaple; did you mean --examples?"},
		{[]string{"extra"}, `unknown command "extra" for "demo"`},
		{[]string{"--interval", "soon"}, `invalid argument "soon" for "--interval" flag`},
	} {
		_, err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || usage.Code(err) != 2 {
			t.Errorf("%q: %v (exit %d), want %q and exit 2", c.args, err, usage.Code(err), c.want)
		}
	}
}

// TestConfigCommands: sabakan's URL first, the constraints given in a
// fixed order, a look at them, and the template last, as it is what lets
// the daemon generate.
func TestConfigCommands(t *testing.T) {
	got := configCommands("http://127.0.0.1:1", map[string]int{"maximum-workers": 9, "control-plane-count": 3, "unknown": 1}, "examples/template.yml")
	want := [][]string{
		{"sabakan", "set-url", "http://127.0.0.1:1"},
		{"constraints", "set", "control-plane-count", "3"},
		{"constraints", "set", "maximum-workers", "9"},
		{"constraints", "show"},
		{"sabakan", "set-template", "examples/template.yml"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("configCommands = %q, want %q", got, want)
	}
}

// TestFlipTargets: the first control plane and the first two workers, in
// the cluster's order; the check after the flip finds the control plane
// only while it still is one.
func TestFlipTargets(t *testing.T) {
	cl := &cluster.Cluster{Nodes: []*cluster.Node{
		{Address: "cp1", ControlPlane: true}, {Address: "cp2", ControlPlane: true}, {Address: "w1"},
		{Address: "cp3", ControlPlane: true}, {Address: "w2"}, {Address: "w3"},
	}}
	cp, w1, w2 := flipTargets(cl)
	if cp.Address != "cp1" || w1.Address != "w1" || w2.Address != "w2" {
		t.Errorf("flipTargets = %s, %s, %s; want cp1, w1, w2", cp.Address, w1.Address, w2.Address)
	}
	if !stillControlPlane(cl, "cp1") || stillControlPlane(cl, "w1") || stillControlPlane(cl, "nowhere") {
		t.Error("stillControlPlane: want true for cp1 only")
	}
}

// TestReadConstraints: the examples' constraints.json is read strictly,
// its errors at their line and column in JSON's words.
func TestReadConstraints(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "constraints.json")
	if err := os.WriteFile(file, []byte("{\"control-plane-count\": 3,\n \"minimum-workers\": \"2\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readConstraints(dir)
	want := file + `: line 2, column 21: minimum-workers: want an integer, got the string "2"`
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
	if c, err := readConstraints("../../examples"); err != nil || c["control-plane-count"] == 0 {
		t.Errorf("the bundled constraints: %v, %v", c, err)
	}
}
