package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// generate20000Now is the time of the 20,000-machine benchmark's decision.
var generate20000Now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// generate20000Inputs writes, into dir, the inputs of
// `ckegenctl sabakan generate` at 20,000 machines: machines.json (500 racks
// of 40, one boot server each, indented as examples/machines.json is),
// the bundled template, and constraints.json (3 control planes,
// minimum-workers 10,000). It returns the arguments of the run.
// internal/testutil/dcgen/genfiles writes the same files, to time the command as a
// whole process.
func generate20000Inputs(tb testing.TB, dir string) []string {
	tb.Helper()
	o := dcgen.Default(generate20000Now)
	o.Racks, o.PerRack = 500, 40
	data, err := json.MarshalIndent(dcgen.Machines(o), "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	tmpl, err := os.ReadFile("../../examples/template.yml")
	if err != nil {
		tb.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"machines.json":    append(data, '\n'),
		"template.yml":     tmpl,
		"constraints.json": []byte(`{"control-plane-count": 3, "minimum-workers": 10000}` + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return []string{"sabakan", "generate",
		"--template", filepath.Join(dir, "template.yml"),
		"--machines", filepath.Join(dir, "machines.json"),
		"--constraints", filepath.Join(dir, "constraints.json"),
		"--now", generate20000Now.Format(time.RFC3339), "-o", "json"}
}

// BenchmarkGenerate20000 is `ckegenctl sabakan generate -o json` at 20,000
// machines in the process (a first cluster of 10,003 nodes), beside
// decode-only, the reading and decoding of the same machines file alone
// (machine.Parse): the command's cost is to stay a small multiple of
// what reading its input costs.
func BenchmarkGenerate20000(b *testing.B) {
	dir := b.TempDir()
	args := generate20000Inputs(b, dir)
	b.Run("decode-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := os.ReadFile(filepath.Join(dir, "machines.json"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := machine.Parse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generate-json", func(b *testing.B) {
		b.ReportAllocs()
		var stdout, stderr bytes.Buffer
		for b.Loop() {
			stdout.Reset()
			stderr.Reset()
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				b.Fatalf("exit %d: %s", code, stderr.String())
			}
		}
		b.SetBytes(int64(stdout.Len()))
	})
}
