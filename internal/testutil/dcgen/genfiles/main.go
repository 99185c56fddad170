// Command genfiles writes the inputs of `ckegenctl sabakan generate` for a
// synthetic data center, to time the command as a whole process:
//
//	go run ./internal/testutil/dcgen/genfiles -dir /tmp/gen        # 20,000 machines
//	go build -o /tmp/ckegenctl ./cmd/ckegenctl
//	/usr/bin/time -v /tmp/ckegenctl sabakan generate --template /tmp/gen/template.yml \
//	    --machines /tmp/gen/machines.json --constraints /tmp/gen/constraints-rate.json \
//	    --now 2026-01-01T00:00:00Z -o yaml >/dev/null               # Generate
//	/usr/bin/time -v /tmp/ckegenctl sabakan generate --template /tmp/gen/template.yml \
//	    --machines /tmp/gen/machines.json --constraints /tmp/gen/constraints-rate.json \
//	    --current /tmp/gen/current.yml --now 2026-01-01T00:00:00Z -o yaml >/dev/null  # Update
//
// It writes (dcfiles.Write) machines.json (racks of 40, one boot server
// each, indented as examples/machines.json is), template.yml
// (examples/template.yml), constraints.json (the count model: 3 control
// planes, minimum-workers half the machines), constraints-rate.json (the
// rate model: 3 control planes, minimum-workers-rate 80), and the cluster
// of the count model as the generator makes it from these files, in
// current.yml and current.json (10,003 nodes at 20,000 machines). An Update in the rate
// model from that cluster adds every HEALTHY machine a worker template
// takes (about 8,900 workers at 20,000 machines) in one step.
// cmd/ckegenctl's BenchmarkGenerateFiles times the same runs in process, and
// ckeref/cmd/ckegenerate runs CKE v1.35.4's generator on the same files.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ckegen/ckegen/internal/testutil/dcgen/dcfiles"
)

func main() {
	dir := flag.String("dir", "", "the directory to write the files into (made if missing)")
	racks := flag.Int("racks", 500, "racks of 40 machines")
	tmpl := flag.String("template", "examples/template.yml", "the template to copy")
	flag.Parse()
	if err := dcfiles.Write(*dir, *racks, *tmpl); err != nil {
		fmt.Fprintln(os.Stderr, "genfiles:", err)
		os.Exit(1)
	}
}
