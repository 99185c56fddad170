package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ckegen/ckegen/internal/testutil/goldentest"
)

// defaultTemplate is used by golden cases that have no template.yml.
const defaultTemplate = `name: test
nodes:
- user: cybozu
  control_plane: true
- user: cybozu
service_subnet: 10.68.0.0/16
`

// TestGenerateGolden runs every testdata/generate/*.txtar case through
// `ckegenctl sabakan generate` twice and compares stdout, stderr and the exit
// status with the case's want/ sections.
//
// A case holds its input files (template.yml, machines.txt or
// machines.json, constraints.json, current.yml, k8s-nodes.json,
// policy.yml) and an
// optional "args" line with extra flags. Flags for the files present are
// added, as are --now 2026-01-01T00:00:00Z and --explain text, unless args
// sets them.
func TestGenerateGolden(t *testing.T) {
	for _, file := range goldentest.Cases(t, "../../testdata/generate/*.txtar") {
		t.Run(goldentest.Name(file), func(t *testing.T) {
			t.Parallel()
			runGoldenCase(t, file)
		})
	}
}

func runGoldenCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	present := map[string]bool{}
	var extra []string
	hasTemplate := false
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "want/"):
			continue
		case f.Name == "args":
			extra = strings.Fields(string(f.Data))
			continue
		case f.Name == "machines.txt":
			data, err := machinesJSON(f.Data)
			if err != nil {
				t.Fatalf("%s: machines.txt: %v", file, err)
			}
			writeFile(t, filepath.Join(dir, "machines.json"), data)
			present["machines.json"] = true
			continue
		case f.Name == "template.yml":
			hasTemplate = true
		}
		writeFile(t, filepath.Join(dir, f.Name), f.Data)
		present[f.Name] = true
	}
	if !hasTemplate {
		writeFile(t, filepath.Join(dir, "template.yml"), []byte(defaultTemplate))
		present["template.yml"] = true
	}

	args := []string{"sabakan", "generate"}
	for _, fl := range []struct{ flag, file string }{
		{"--template", "template.yml"},
		{"--machines", "machines.json"},
		{"--constraints", "constraints.json"},
		{"--current", "current.yml"},
		{"--k8s-nodes", "k8s-nodes.json"},
		{"--policy", "policy.yml"},
	} {
		if present[fl.file] && !slices.Contains(extra, fl.flag) {
			args = append(args, fl.flag, fl.file)
		}
	}
	if !slices.Contains(extra, "--now") {
		args = append(args, "--now", "2026-01-01T00:00:00Z")
	}
	if !slices.Contains(extra, "--explain") {
		args = append(args, "--explain", "text")
	}
	args = append(args, extra...)
	for i, a := range args {
		if present[a] {
			args[i] = filepath.Join(dir, a)
		}
	}

	var outs [2][3]string
	for i := range outs {
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		outs[i] = [3]string{stdout.String(), strings.ReplaceAll(stderr.String(), dir+"/", ""), strconv.Itoa(code) + "\n"}
	}
	if outs[0] != outs[1] {
		t.Fatalf("two runs differ (nondeterminism):\n%s", cmp.Diff(outs[0], outs[1]))
	}
	got := outs[0]

	goldentest.Check(t, file, ar, []txtar.File{
		{Name: "want/exit", Data: []byte(got[2])},
		{Name: "want/stderr", Data: []byte(got[1])},
		{Name: "want/stdout", Data: []byte(got[0])},
	})
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// machinesJSON expands the compact machine table of golden cases
// (goldentest.Machines) into a machines file.
func machinesJSON(table []byte) ([]byte, error) {
	ms, err := goldentest.Machines(table)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(ms, "", "  ")
}
