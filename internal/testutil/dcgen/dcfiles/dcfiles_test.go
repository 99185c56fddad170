package dcfiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// TestWrite: the files parse as the generator's inputs, with 40 machines
// a rack, minimum-workers half of them, the rate model's constraints, and
// the count model's cluster in YAML and JSON.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, 2, "../../../../examples/template.yml"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "machines.json"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := machine.Parse(data)
	if err != nil || len(ms) != 80 {
		t.Fatalf("machines.json: %d machines, %v", len(ms), err)
	}
	data, err = os.ReadFile(filepath.Join(dir, "constraints.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := constraints.Parse(data)
	if err != nil || c.MinimumWorkers != 40 || c.ControlPlaneCount != 3 {
		t.Errorf("constraints.json: %+v, %v", c, err)
	}
	data, err = os.ReadFile(filepath.Join(dir, "constraints-rate.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := constraints.Parse(data); err != nil || c.MinimumWorkersRate == nil || *c.MinimumWorkersRate != 80 || c.ControlPlaneCount != 3 {
		t.Errorf("constraints-rate.json: %+v, %v", c, err)
	}
	var sizes []int
	for _, name := range []string{"current.yml", "current.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := cluster.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sizes = append(sizes, len(c.Nodes))
	}
	// 3 control planes and minimum-workers 40.
	if sizes[0] != 43 || sizes[1] != 43 {
		t.Errorf("current.yml, current.json: %v nodes, want 43", sizes)
	}
	if err := Write("", 2, "x"); err == nil {
		t.Error("no -dir: no error")
	}
}
