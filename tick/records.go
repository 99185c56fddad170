package tick

import (
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// The generator's results as storage's records keep them: storage knows
// its own record types, not the generator's (docs/design.md, Layers).

// statusChanges returns the first storage.MaxChanges of cs as status and
// history keep them, each score as its value (planreport.ScoreValue).
func statusChanges(cs []generator.Change) []storage.Change {
	cs = cs[:min(len(cs), storage.MaxChanges)]
	out := make([]storage.Change, len(cs))
	for i, c := range cs {
		out[i] = storage.Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Score: planreport.ScoreValue(c.Score),
			Reason: c.Reason, Placement: c.Placement, Group: c.Group}
	}
	return out
}

// statusRate is r as the status keeps it; nil for nil.
func statusRate(r *generator.WorkerRate) *storage.WorkerRate {
	if r == nil {
		return nil
	}
	return &storage.WorkerRate{Workers: r.Workers, Machines: r.Machines, Percent: r.Percent, Minimum: r.Minimum}
}
