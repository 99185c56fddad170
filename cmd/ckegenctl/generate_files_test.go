package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/dcgen/dcfiles"
)

// TestGenerateFilesFastAndStrictAgree: an Update of 2,400 machines from
// the count model's cluster (Generate too) prints the same bytes whether
// the files take the one-pass readers (the writers' own layout) or the
// strict ones (a comment before the YAML, an escape in the JSON, the
// machines with an escape), in YAML and in JSON, and large enough to be
// rendered and written in two halves at once.
func TestGenerateFilesFastAndStrictAgree(t *testing.T) {
	dir := t.TempDir()
	if err := dcfiles.Write(dir, 60, "../../examples/template.yml"); err != nil {
		t.Fatal(err)
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	edit := func(from, to string, change func(string) string) {
		data, err := os.ReadFile(path(from))
		if err != nil {
			t.Fatal(err)
		}
		changed := change(string(data))
		if changed == string(data) {
			t.Fatalf("%s: not changed", from)
		}
		if err := os.WriteFile(path(to), []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("current.yml", "strict.yml", func(s string) string { return "# read by the strict path\n" + s })
	edit("current.json", "strict.json", func(s string) string {
		return strings.Replace(s, `"user": "cybozu"`, `"user": "cyb\u006fzu"`, 1)
	})
	edit("machines.json", "strict-machines.json", func(s string) string {
		return strings.Replace(s, `"bmcType": "IPMI-2.0"`, `"bmcType": "IPMI\u002d2.0"`, 1)
	})
	for _, current := range []string{"", "current"} {
		for _, format := range []string{"yaml", "json"} {
			var outs [][]byte
			for _, strict := range []bool{false, true} {
				machines, cur := "machines.json", current
				if strict {
					machines = "strict-machines.json"
					if current != "" {
						cur = "strict"
					}
				}
				args := []string{"sabakan", "generate", "--template", path("template.yml"), "--machines", path(machines),
					"--constraints", path("constraints-rate.json"), "--now", "2026-01-01T00:00:00Z", "-o", format}
				if cur != "" {
					ext := map[string]string{"yaml": ".yml", "json": ".json"}[format]
					args = append(args, "--current", path(cur+ext))
				}
				var stdout, stderr bytes.Buffer
				if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
				}
				outs = append(outs, stdout.Bytes())
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("current %q, -o %s: the one-pass and the strict readers' runs differ", current, format)
			}
			if n := bytes.Count(outs[0], []byte("address")); n < 2200 {
				t.Errorf("current %q, -o %s: %d nodes", current, format, n)
			}
		}
	}
}
