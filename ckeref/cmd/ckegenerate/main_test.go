package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/log"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/dcgen/dcfiles"
)

// TestRunsOnGenfilesFiles: on the files genfiles writes, CKE's Generate
// and Update (from the count model's cluster, in the rate model) write a
// cluster of as many nodes as ckegen's rate model gives: every HEALTHY
// machine a worker template takes, and 3 control planes.
func TestRunsOnGenfilesFiles(t *testing.T) {
	silence(t)
	dir := t.TempDir()
	if err := dcfiles.Write(dir, 3, "../../../examples/template.yml"); err != nil {
		t.Fatal(err)
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"--template", path("template.yml"), "--machines", path("machines.json"),
		"--constraints", path("constraints-rate.json"), "--now", dcfiles.Now.Format(time.RFC3339)}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"generate", base},
		{"update yaml", append(base[:len(base):len(base)], "--current", path("current.yml"))},
		{"update json", append(base[:len(base):len(base)], "--current", path("current.json"), "-o", "json")},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(c.args, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := cluster.Parse(stdout.Bytes())
		if err != nil {
			t.Fatalf("%s: the output: %v\n%s", c.name, err, stdout.String())
		}
		cps := 0
		for _, n := range got.Nodes {
			if n.ControlPlane {
				cps++
			}
		}
		// 3 racks of 40, one boot server each: 117 machines of the
		// template's roles, 3% of them not HEALTHY.
		if cps != 3 || len(got.Nodes) < 100 || len(got.Nodes) > 117 {
			t.Errorf("%s: %d nodes, %d control planes", c.name, len(got.Nodes), cps)
		}
	}
	if err := run([]string{"--machines", "x"}, new(bytes.Buffer), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("no --template: %v", err)
	}
}

// silence drops CKE's log for the test.
func silence(t *testing.T) {
	l := log.DefaultLogger()
	l.SetOutput(io.Discard)
	t.Cleanup(func() { l.SetOutput(os.Stderr) })
}
