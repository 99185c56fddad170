// Package dcgen makes synthetic data-center inventories, deterministic for a
// given seed: the bundled example, benchmarks, property tests and end-to-end
// tests all draw their machines from it.
package dcgen

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ckegen/ckegen/machine"
)

// Options shape an inventory.
type Options struct {
	Racks        int
	PerRack      int
	Seed         uint64
	Now          time.Time
	BootPerRack  int      // the first machines of each rack get role "boot"
	Roles        []string // roles dealt out by Weights
	Weights      []int
	UnhealthyPct int // percent of non-boot machines in a state other than HEALTHY
}

// Default is a mid-size data center: 12 racks of 20 machines, one boot
// server per rack, roles compute/storage/gpu at 6:3:1.
func Default(now time.Time) Options {
	return Options{
		Racks: 12, PerRack: 20, Seed: 1, Now: now, BootPerRack: 1,
		Roles: []string{"compute", "storage", "gpu"}, Weights: []int{6, 3, 1},
		UnhealthyPct: 3,
	}
}

// Machines returns the inventory in serial order. Machine i of rack r has
// address 10.<r/256>.<r%256>.<i+1> (PerRack must stay under 255).
func Machines(o Options) []machine.Machine {
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	total := 0
	for _, w := range o.Weights {
		total += w
	}
	states := []machine.State{machine.StateUnhealthy, machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring, machine.StateUninitialized}
	ms := make([]machine.Machine, 0, o.Racks*o.PerRack)
	n := 0
	for r := 0; r < o.Racks; r++ {
		for i := 0; i < o.PerRack; i++ {
			n++
			role := "boot"
			if i >= o.BootPerRack {
				k := rng.IntN(total)
				for j, w := range o.Weights {
					if k < w {
						role = o.Roles[j]
						break
					}
					k -= w
				}
			}
			// Registered up to 5 years ago, retiring 5 years after.
			reg := o.Now.AddDate(0, 0, -rng.IntN(5*365)).Truncate(24 * time.Hour)
			ret := reg.AddDate(5, 0, 0)
			state := machine.StateHealthy
			if role != "boot" && rng.IntN(100) < o.UnhealthyPct {
				state = states[rng.IntN(len(states))]
			}
			ms = append(ms, machine.Machine{
				Spec: machine.Spec{
					Serial:       fmt.Sprintf("S%06d", n),
					Labels:       []machine.Label{{Name: "product", Value: fmt.Sprintf("R%d", 600+rng.IntN(3)*10)}},
					Rack:         r,
					IndexInRack:  i + 1,
					Role:         role,
					IPv4:         []string{fmt.Sprintf("10.%d.%d.%d", r/256, r%256, i+1)},
					RegisterDate: reg.UTC(),
					RetireDate:   ret.UTC(),
					BMC:          machine.BMC{BMCType: "IPMI-2.0"},
				},
				Status: machine.Status{State: state, Duration: float64(rng.IntN(100000))},
			})
		}
	}
	return ms
}
