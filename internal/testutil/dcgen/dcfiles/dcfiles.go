// Package dcfiles writes the input files of `ckegenctl sabakan generate` for
// a synthetic data center (dcgen), for benchmarks that time the command
// in process or as a whole process (internal/testutil/dcgen/genfiles).
package dcfiles

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
)

// Now is the time the files are made for (the machines' dates), and
// the time of the decisions to give with --now.
var Now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Write writes into dir (made if missing) the files of a data center of
// racks racks of 40 machines: machines.json (one boot server a rack,
// indented as examples/machines.json is), template.yml (a copy of
// tmplPath), constraints.json (the count model: 3 control planes,
// minimum-workers half the machines), constraints-rate.json (the rate
// model: 3 control planes, minimum-workers-rate 80), and the cluster the
// generator makes from these files in the count model, in current.yml and
// current.json (10,003 nodes at 500 racks).
func Write(dir string, racks int, tmplPath string) error {
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
	o := dcgen.Default(Now)
	o.Racks, o.PerRack = racks, 40
	data, err := json.MarshalIndent(dcgen.Machines(o), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"machines.json":         append(data, '\n'),
		"template.yml":          tmpl,
		"constraints.json":      fmt.Appendf(nil, `{"control-plane-count": 3, "minimum-workers": %d}`+"\n", racks*40/2),
		"constraints-rate.json": []byte(`{"control-plane-count": 3, "minimum-workers-rate": 80}` + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return writeCurrent(dir)
}

// writeCurrent writes the cluster the generator makes from the files of
// dir in the count model, as YAML and as JSON.
func writeCurrent(dir string) error {
	path := func(name string) string { return filepath.Join(dir, name) }
	s, inv, _, err := intake.FromFiles(context.Background(), intake.Files{
		Template:    intake.File("--template", path("template.yml")),
		Machines:    intake.File("--machines", path("machines.json")),
		Constraints: intake.File("--constraints", path("constraints.json")),
	})
	if err != nil {
		return err
	}
	res, err := generator.Generate(s.Input(inv, Now, generator.DefaultRetireWait))
	if err != nil {
		return err
	}
	y, err := res.Cluster.MarshalYAML()
	if err != nil {
		return err
	}
	js, err := res.Cluster.MarshalIndentJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path("current.yml"), y, 0o644); err != nil {
		return err
	}
	return os.WriteFile(path("current.json"), js, 0o644)
}
