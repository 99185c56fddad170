package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// TestWrite: the files parse as the generator's inputs, with 40 machines
// a rack and minimum-workers half of them.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir, 2, "../../../../examples/template.yml"); err != nil {
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
	if err := write("", 2, "x"); err == nil {
		t.Error("no -dir: no error")
	}
}
