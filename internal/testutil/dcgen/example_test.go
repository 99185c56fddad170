package dcgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite examples/machines.json")

// ExampleNow is the time the bundled inventory is generated for.
var exampleNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestExampleInventory keeps examples/machines.json equal to what Default
// generates, so that the bundled data center can always be reproduced.
func TestExampleInventory(t *testing.T) {
	data, err := json.MarshalIndent(Machines(Default(exampleNow)), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	const path = "../../../examples/machines.json"
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the bundled inventory: %v (run go test ./internal/testutil/dcgen -update)", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("%s differs from dcgen.Default; run go test ./internal/testutil/dcgen -update if the change is intended", path)
	}
}

func TestMachinesDeterministic(t *testing.T) {
	a, _ := json.Marshal(Machines(Default(exampleNow)))
	b, _ := json.Marshal(Machines(Default(exampleNow)))
	if !bytes.Equal(a, b) {
		t.Error("two calls with the same options gave different inventories")
	}
}
