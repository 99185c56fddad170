package generator

import (
	"fmt"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
)

// WorkerRate is the rate model's figure for a cluster (docs/models.md): the share
// of the machines that would still be workers if one RETIRED worker left,
// (workers - 1) / machines * 100, against minimum-workers-rate. It is what
// decides whether rule 7 may remove a worker.
type WorkerRate struct {
	Workers  int     `json:"workers"`
	Machines int     `json:"machines"`
	Percent  float64 `json:"percent"`
	Minimum  int     `json:"minimumWorkersRate"`
}

// RateOf is the worker rate of cluster c with machines in the inventory,
// or nil in the count model. A nil cluster has no workers.
func RateOf(c *cluster.Cluster, machines int, cons constraints.Constraints) *WorkerRate {
	if !cons.RateModel() {
		return nil
	}
	workers := 0
	if c != nil {
		for _, n := range c.Nodes {
			if !n.ControlPlane {
				workers++
			}
		}
	}
	return &WorkerRate{
		Workers:  workers,
		Machines: machines,
		Percent:  constraints.Rate(workers, machines),
		Minimum:  *cons.MinimumWorkersRate,
	}
}

// CanRemove reports whether a RETIRED worker may leave now.
func (r *WorkerRate) CanRemove() bool {
	return r.Machines > 0 && r.Percent >= float64(r.Minimum)
}

// String is the figure for people: "80.0% ((9 workers - 1) / 10 machines),
// minimum-workers-rate 80%".
func (r *WorkerRate) String() string {
	return fmt.Sprintf("%.1f%% ((%s - 1) / %s), minimum-workers-rate %d%%", r.Percent, count(r.Workers, "worker"), count(r.Machines, "machine"), r.Minimum)
}

// count is n things in English: "1 worker", "0 workers".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
