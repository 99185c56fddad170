package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ckegen/ckegen/machine"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of golden files")

// defaultTemplate is used by golden cases that have no template.yml.
const defaultTemplate = `name: test
nodes:
- user: cybozu
  control_plane: true
- user: cybozu
service_subnet: 10.68.0.0/16
`

// TestGenerateGolden runs every testdata/generate/*.txtar case through
// `ckecli sabakan generate` twice and compares stdout, stderr and the exit
// status with the case's want/ sections.
//
// A case holds its input files (template.yml, machines.txt or
// machines.json, constraints.json, current.yml, k8s-nodes.json,
// policy.yml) and an
// optional "args" line with extra flags. Flags for the files present are
// added, as are --now 2026-01-01T00:00:00Z and --explain text, unless args
// sets them.
func TestGenerateGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/generate/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden cases found")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
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
			data, err := machinesFromTable(f.Data)
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

	if *update {
		var kept []txtar.File
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				kept = append(kept, f)
			}
		}
		ar.Files = append(kept,
			txtar.File{Name: "want/exit", Data: []byte(got[2])},
			txtar.File{Name: "want/stderr", Data: []byte(got[1])},
			txtar.File{Name: "want/stdout", Data: []byte(got[0])},
		)
		writeFile(t, file, txtar.Format(ar))
		return
	}
	want := [3]string{}
	found := 0
	for _, f := range ar.Files {
		switch f.Name {
		case "want/stdout":
			want[0] = string(f.Data)
			found++
		case "want/stderr":
			want[1] = string(f.Data)
			found++
		case "want/exit":
			want[2] = string(f.Data)
			found++
		}
	}
	if found != 3 {
		t.Fatalf("%s: want/stdout, want/stderr and want/exit are required (run with -update to create them)", file)
	}
	for i, what := range []string{"stdout", "stderr", "exit status"} {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
		}
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// machinesFromTable expands the compact machine table of golden cases into a
// machines file. One machine a line:
//
//	SERIAL ADDRESS RACK ROLE STATE RETIRE-DATE [key=value ...]
//
// ROLE "-" is the empty role, ADDRESS "-" no address; RETIRE-DATE is
// YYYY-MM-DD (midnight UTC) or RFC3339 with its offset and fractional
// seconds as sabakan returns them (2031-08-01T05:00:00.5+09:00). Keys: idx (index in rack, default the line number), reg
// (register date, default 2024-01-01), dur (status duration in seconds,
// default 0), label:NAME (a sabakan label). Lines starting with # are
// comments.
func machinesFromTable(data []byte) ([]byte, error) {
	var ms []machine.Machine
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: want SERIAL ADDRESS RACK ROLE STATE RETIRE-DATE, got %q", n+1, line)
		}
		rack, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: rack: %v", n+1, err)
		}
		retire, err := parseTableDate(f[5])
		if err != nil {
			return nil, fmt.Errorf("line %d: retire date: %v", n+1, err)
		}
		m := machine.Machine{
			Spec: machine.Spec{
				Serial:       f[0],
				Rack:         rack,
				IndexInRack:  n + 1,
				Role:         f[3],
				IPv4:         []string{f[1]},
				RegisterDate: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
				RetireDate:   retire,
				BMC:          machine.BMC{BMCType: "IPMI-2.0"},
			},
			Status: machine.Status{State: machine.State(f[4])},
		}
		if f[3] == "-" {
			m.Spec.Role = ""
		}
		if f[1] == "-" {
			m.Spec.IPv4 = nil
		}
		for _, kv := range f[6:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q: want key=value", n+1, kv)
			}
			switch {
			case k == "idx":
				if m.Spec.IndexInRack, err = strconv.Atoi(v); err != nil {
					return nil, fmt.Errorf("line %d: idx: %v", n+1, err)
				}
			case k == "reg":
				if m.Spec.RegisterDate, err = parseTableDate(v); err != nil {
					return nil, fmt.Errorf("line %d: reg: %v", n+1, err)
				}
			case k == "dur":
				if m.Status.Duration, err = strconv.ParseFloat(v, 64); err != nil {
					return nil, fmt.Errorf("line %d: dur: %v", n+1, err)
				}
			case strings.HasPrefix(k, "label:"):
				m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: strings.TrimPrefix(k, "label:"), Value: v})
			default:
				return nil, fmt.Errorf("line %d: unknown key %q", n+1, k)
			}
		}
		ms = append(ms, m)
	}
	return json.MarshalIndent(ms, "", "  ")
}

// parseTableDate reads a date of the machine table: YYYY-MM-DD, or RFC3339
// whose offset is kept.
func parseTableDate(s string) (time.Time, error) {
	if strings.Contains(s, "T") {
		return time.Parse(time.RFC3339, s)
	}
	return time.Parse(time.DateOnly, s)
}
