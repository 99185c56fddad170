// Command genfiles writes the inputs of `ckegenctl sabakan generate` for a
// synthetic data center, to time the command as a whole process:
//
//	go run ./internal/testutil/dcgen/genfiles -dir /tmp/gen        # 20,000 machines
//	go build -o /tmp/ckegenctl ./cmd/ckegenctl
//	/usr/bin/time -v /tmp/ckegenctl sabakan generate --template /tmp/gen/template.yml \
//	    --machines /tmp/gen/machines.json --constraints /tmp/gen/constraints.json \
//	    --now 2026-01-01T00:00:00Z -o json >/dev/null
//
// It writes machines.json (racks of 40, one boot server each, indented
// as examples/machines.json is), template.yml (examples/template.yml)
// and constraints.json (3 control planes, minimum-workers half the
// machines). cmd/ckegenctl's BenchmarkGenerate20000 times the same run in
// process.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
)

func main() {
	dir := flag.String("dir", "", "the directory to write the files into (made if missing)")
	racks := flag.Int("racks", 500, "racks of 40 machines")
	tmpl := flag.String("template", "examples/template.yml", "the template to copy")
	flag.Parse()
	if err := write(*dir, *racks, *tmpl); err != nil {
		fmt.Fprintln(os.Stderr, "genfiles:", err)
		os.Exit(1)
	}
}

func write(dir string, racks int, tmplPath string) error {
	if dir == "" {
		return fmt.Errorf("-dir: required")
	}
	if racks < 1 {
		return fmt.Errorf("-racks: must be at least 1, got %d", racks)
	}
	tmpl, err := os.ReadFile(tmplPath)
	if err != nil {
		return fmt.Errorf("-template: %w", err)
	}
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.Racks, o.PerRack = racks, 40
	data, err := json.MarshalIndent(dcgen.Machines(o), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"machines.json":    append(data, '\n'),
		"template.yml":     tmpl,
		"constraints.json": fmt.Appendf(nil, `{"control-plane-count": 3, "minimum-workers": %d}`+"\n", racks*40/2),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
