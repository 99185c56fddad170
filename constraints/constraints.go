// Package constraints reads and checks the cluster constraints, using CKE's
// names so that CKE's stored value can be read as is.
package constraints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/suggest"
)

// Names of the constraints (CKE's kebab-case keys).
const (
	ControlPlaneCount                = "control-plane-count"
	MinimumWorkers                   = "minimum-workers"
	MaximumWorkers                   = "maximum-workers"
	MinimumWorkersRate               = "minimum-workers-rate"
	MaximumUnreachableNodesForReboot = "maximum-unreachable-nodes-for-reboot"
	MaximumRepairQueueEntries        = "maximum-repair-queue-entries"
	WaitSecondsToRepairRebooting     = "wait-seconds-to-repair-rebooting"
)

// Names lists every accepted name, in CKE's order.
var Names = []string{
	ControlPlaneCount, MinimumWorkers, MaximumWorkers, MinimumWorkersRate,
	MaximumUnreachableNodesForReboot, MaximumRepairQueueEntries, WaitSecondsToRepairRebooting,
}

// The two models of the cluster's workers. The stored document chooses:
// a minimum-workers or maximum-workers key selects the count model,
// anything else the rate model (CKE v1.35.4 reads only its keys).
const (
	// CountModel: minimum-workers and maximum-workers bound the number of
	// workers (CKE up to v1.34).
	CountModel = "count"
	// RateModel: every HEALTHY machine a worker template accepts is a
	// worker, and minimum-workers-rate only limits how many RETIRED
	// workers may be removed (CKE v1.35).
	RateModel = "rate"
)

// DefaultMinimumWorkersRate is CKE v1.35's default minimum-workers-rate.
const DefaultMinimumWorkersRate = 80

// Constraints are the user's limits on the cluster's shape.
//
// MinimumWorkersRate set means the rate model: MinimumWorkers and
// MaximumWorkers are then zero and not written. The last three are CKE's
// own; they are kept so that a value stored by CKE survives a round trip,
// and the generator ignores them.
type Constraints struct {
	ControlPlaneCount                int
	MinimumWorkers                   int
	MaximumWorkers                   int
	MinimumWorkersRate               *int
	MaximumUnreachableNodesForReboot *int
	MaximumRepairQueueEntries        *int
	WaitSecondsToRepairRebooting     *int
	// Implicit: no worker key chose the model (nothing stored, or a
	// document with neither minimum-workers, maximum-workers nor
	// minimum-workers-rate), so the rate model is in force as CKE reads
	// such a document. Setting a worker key chooses; once stored, the
	// document names its model (MarshalJSON writes the model's keys).
	Implicit bool
}

// countDoc and rateDoc are the stored documents of the two models, in the
// key order CKE writes.
type countDoc struct {
	ControlPlaneCount                int  `json:"control-plane-count"`
	MinimumWorkers                   int  `json:"minimum-workers"`
	MaximumWorkers                   int  `json:"maximum-workers"`
	MaximumUnreachableNodesForReboot *int `json:"maximum-unreachable-nodes-for-reboot,omitempty"`
	MaximumRepairQueueEntries        *int `json:"maximum-repair-queue-entries,omitempty"`
	WaitSecondsToRepairRebooting     *int `json:"wait-seconds-to-repair-rebooting,omitempty"`
}

type rateDoc struct {
	ControlPlaneCount                int  `json:"control-plane-count"`
	MinimumWorkersRate               int  `json:"minimum-workers-rate"`
	MaximumUnreachableNodesForReboot *int `json:"maximum-unreachable-nodes-for-reboot,omitempty"`
	MaximumRepairQueueEntries        *int `json:"maximum-repair-queue-entries,omitempty"`
	WaitSecondsToRepairRebooting     *int `json:"wait-seconds-to-repair-rebooting,omitempty"`
}

// MarshalJSON writes the keys of the model in force only.
func (c Constraints) MarshalJSON() ([]byte, error) {
	if c.MinimumWorkersRate != nil {
		return json.Marshal(rateDoc{
			ControlPlaneCount:                c.ControlPlaneCount,
			MinimumWorkersRate:               *c.MinimumWorkersRate,
			MaximumUnreachableNodesForReboot: c.MaximumUnreachableNodesForReboot,
			MaximumRepairQueueEntries:        c.MaximumRepairQueueEntries,
			WaitSecondsToRepairRebooting:     c.WaitSecondsToRepairRebooting,
		})
	}
	return json.Marshal(countDoc{
		ControlPlaneCount:                c.ControlPlaneCount,
		MinimumWorkers:                   c.MinimumWorkers,
		MaximumWorkers:                   c.MaximumWorkers,
		MaximumUnreachableNodesForReboot: c.MaximumUnreachableNodesForReboot,
		MaximumRepairQueueEntries:        c.MaximumRepairQueueEntries,
		WaitSecondsToRepairRebooting:     c.WaitSecondsToRepairRebooting,
	})
}

// Model is RateModel when minimum-workers-rate is set, else CountModel.
func (c Constraints) Model() string {
	if c.MinimumWorkersRate != nil {
		return RateModel
	}
	return CountModel
}

// RateModel reports whether the rate model is in force.
func (c Constraints) RateModel() bool { return c.MinimumWorkersRate != nil }

// Rate is the worker rate that decides whether a RETIRED worker may leave
// in the rate model: (workers - 1) / machines * 100, the share of the
// machines that would still be workers. It is 0 without machines.
func Rate(workers, machines int) float64 {
	if machines <= 0 {
		return 0
	}
	return float64(workers-1) / float64(machines) * 100
}

// MayRemoveWorker reports whether, in the rate model, one of workers may be
// removed with machines in the inventory: the rate after the removal is at
// least minimum-workers-rate (CKE v1.35's rule).
func (c Constraints) MayRemoveWorker(workers, machines int) bool {
	return c.MinimumWorkersRate != nil && machines > 0 && Rate(workers, machines) >= float64(*c.MinimumWorkersRate)
}

// Default returns the constraints in force when none are stored: CKE
// v1.35.4's own defaults (its DefaultConstraints), the rate model with
// one control plane and minimum-workers-rate 80. They name no model
// (Implicit).
func Default() Constraints {
	rate := DefaultMinimumWorkersRate
	return Constraints{ControlPlaneCount: 1, MinimumWorkersRate: &rate, Implicit: true}
}

// CountDefaults returns the count model's defaults: one control plane,
// minimum-workers 1, maximum-workers 0 (no maximum). Earlier releases of
// ckegen ran them when no constraints were stored; `ckegenctl constraints
// set minimum-workers 1` stores them (CountDefaultsCommand).
func CountDefaults() Constraints {
	return Constraints{ControlPlaneCount: 1, MinimumWorkers: 1}
}

// CountDefaultsCommand is the command that stores the count model's
// defaults, whatever is stored: with nothing stored, or a document with
// neither model's worker key, setting minimum-workers to 1 switches to
// the count model with maximum-workers 0 (Set).
const CountDefaultsCommand = "ckegenctl constraints set " + MinimumWorkers + " 1"

// Parse reads a constraints JSON object as CKE reads it: CKE decodes the
// stored document into a zero value, so a left-out key is 0, and a
// document with neither model's worker key (minimum-workers,
// maximum-workers, minimum-workers-rate) is the rate model with
// minimum-workers-rate 0, as CKE v1.35.4 reads it (Implicit: the document
// names no model). A left-out control-plane-count is 0, which CKE's
// server cannot run a cluster with: an error naming the key and the fix.
// In the count model, which no CKE release that reads it stores without
// its keys, a left-out minimum-workers is 1 and maximum-workers 0 (no
// maximum), as in earlier releases of ckegen. An unknown key, a key given
// twice, a value that is not an integer, or anything after the object is
// an error, naming the line and column.
func Parse(data []byte) (Constraints, error) {
	zero := 0
	c := Constraints{MinimumWorkersRate: &zero, Implicit: true}
	var raw map[string]json.RawMessage
	if err := strictjson.Unmarshal(data, &raw, strictjson.Document(document)); err != nil {
		return c, fmt.Errorf("constraints: %w", err)
	}
	if raw == nil {
		return c, fmt.Errorf("constraints: %w", strictjson.Place(strictjson.WrongKind(nil, "an object ("+document+")", data), data))
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if err := oneModel(keys); err != nil {
		return c, err
	}
	if slices.Contains(keys, MinimumWorkers) || slices.Contains(keys, MaximumWorkers) {
		c = CountDefaults()
		c.ControlPlaneCount = 0
	}
	for _, k := range keys {
		if !slices.Contains(Names, k) {
			return c, fmt.Errorf("constraints: %w", strictjson.Place(strictjson.UnknownField(nil, k, Names), data))
		}
		v, err := parseInt(strictjson.Path(nil).Key(k), raw[k])
		if err != nil {
			return c, fmt.Errorf("constraints: %w", strictjson.Place(err, data))
		}
		if err := c.Set(k, v); err != nil {
			return c, fmt.Errorf("constraints: %w", err)
		}
	}
	var errs []error
	if _, ok := raw[ControlPlaneCount]; !ok {
		errs = append(errs, fmt.Errorf("constraints: %s: missing, which CKE reads as 0, and CKE's server runs no cluster without a control plane: "+
			"store it (ckegenctl constraints set %s 1, or 3 for etcd to survive the loss of one)", ControlPlaneCount, ControlPlaneCount))
	}
	for _, p := range c.problems() {
		if _, ok := raw[ControlPlaneCount]; !ok && p.Path.String() == ControlPlaneCount {
			continue // said above
		}
		errs = append(errs, fmt.Errorf("constraints: %w", strictjson.Place(p, data)))
	}
	return c, errors.Join(errs...)
}

// document says what the constraints are, for a document of another kind.
const document = `constraints by name, such as {"control-plane-count": 3}`

// oneModel refuses a document with the keys of both models.
func oneModel(keys []string) error {
	if !slices.Contains(keys, MinimumWorkersRate) {
		return nil
	}
	var count []string
	for _, k := range keys {
		if k == MinimumWorkers || k == MaximumWorkers {
			count = append(count, k)
		}
	}
	if len(count) == 0 {
		return nil
	}
	return fmt.Errorf("constraints: %s cannot be used with %s: choose one model, %s (every HEALTHY machine is a worker, CKE v1.35) or %s/%s (a number of workers)",
		MinimumWorkersRate, strings.Join(count, " and "), MinimumWorkersRate, MinimumWorkers, MaximumWorkers)
}

// parseInt reads the value at path, an integer that fits 32 bits.
func parseInt(path strictjson.Path, raw json.RawMessage) (int, error) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	switch {
	case err == nil && n <= math.MaxInt32 && n >= math.MinInt32:
		return int(n), nil
	case err == nil || errors.Is(err, strconv.ErrRange):
		e := strictjson.WrongKind(path, "an integer", raw)
		e.Msg = fmt.Sprintf("out of range (%d to %d)", math.MinInt32, math.MaxInt32)
		return 0, e
	}
	return 0, strictjson.WrongKind(path, "an integer", raw)
}

// Set sets the constraint called name. It does not validate the result.
// Setting a key of the other model switches models: minimum-workers-rate
// replaces minimum-workers and maximum-workers, and either of those
// replaces minimum-workers-rate (the other count key takes the count
// model's default, CountDefaults). Setting a worker key chooses the model
// (Implicit is false).
func (c *Constraints) Set(name string, v int) error {
	switch name {
	case ControlPlaneCount:
		c.ControlPlaneCount = v
	case MinimumWorkers, MaximumWorkers:
		if c.MinimumWorkersRate != nil {
			c.MinimumWorkersRate = nil
			c.MinimumWorkers, c.MaximumWorkers = CountDefaults().MinimumWorkers, CountDefaults().MaximumWorkers
		}
		if name == MinimumWorkers {
			c.MinimumWorkers = v
		} else {
			c.MaximumWorkers = v
		}
		c.Implicit = false
	case MinimumWorkersRate:
		c.MinimumWorkersRate = &v
		c.MinimumWorkers, c.MaximumWorkers = 0, 0
		c.Implicit = false
	case MaximumUnreachableNodesForReboot:
		c.MaximumUnreachableNodesForReboot = &v
	case MaximumRepairQueueEntries:
		c.MaximumRepairQueueEntries = &v
	case WaitSecondsToRepairRebooting:
		c.WaitSecondsToRepairRebooting = &v
	default:
		return unknownKey(name)
	}
	return nil
}

func unknownKey(name string) error {
	if s, ok := suggest.Closest(name, Names); ok {
		return fmt.Errorf("unknown key %q; did you mean %s? (known: %s)", name, s, strings.Join(Names, ", "))
	}
	return fmt.Errorf("unknown key %q (known: %s)", name, strings.Join(Names, ", "))
}

// Validate checks the rules between the values.
func (c Constraints) Validate() error {
	var errs []error
	for _, p := range c.problems() {
		errs = append(errs, fmt.Errorf("constraints: %w", p))
	}
	return errors.Join(errs...)
}

// problems are what Validate finds, each at the constraint it is about.
func (c Constraints) problems() []*strictjson.Error {
	var errs []*strictjson.Error
	at := func(name, format string, args ...any) {
		errs = append(errs, strictjson.Invalidf(strictjson.Path(nil).Key(name), format, args...))
	}
	if c.ControlPlaneCount < 1 {
		at(ControlPlaneCount, "must be >= 1, got %d", c.ControlPlaneCount)
	}
	if c.MinimumWorkersRate != nil {
		if r := *c.MinimumWorkersRate; r < 0 || r > 100 {
			at(MinimumWorkersRate, "must be a percentage from 0 to 100, got %d", r)
		}
		if c.MinimumWorkers != 0 || c.MaximumWorkers != 0 {
			errs = append(errs, strictjson.Invalidf(nil, "%s cannot be used with %s or %s: choose one model", MinimumWorkersRate, MinimumWorkers, MaximumWorkers))
		}
	}
	if c.MinimumWorkers < 0 {
		at(MinimumWorkers, "must be >= 0, got %d", c.MinimumWorkers)
	}
	if c.MaximumWorkers < 0 {
		at(MaximumWorkers, "must be 0 (unlimited) or >= %s, got %d", MinimumWorkers, c.MaximumWorkers)
	} else if c.MaximumWorkers != 0 && c.MaximumWorkers < c.MinimumWorkers {
		at(MaximumWorkers, "must be 0 (unlimited) or >= %s (%d), got %d", MinimumWorkers, c.MinimumWorkers, c.MaximumWorkers)
	}
	for _, p := range []struct {
		name string
		v    *int
	}{
		{MaximumUnreachableNodesForReboot, c.MaximumUnreachableNodesForReboot},
		{MaximumRepairQueueEntries, c.MaximumRepairQueueEntries},
		{WaitSecondsToRepairRebooting, c.WaitSecondsToRepairRebooting},
	} {
		if p.v != nil && *p.v < 0 {
			at(p.name, "must be >= 0, got %d", *p.v)
		}
	}
	return errs
}

// Warnings returns advice about valid but unwise values.
func (c Constraints) Warnings() []string {
	if c.ControlPlaneCount%2 == 0 {
		return []string{fmt.Sprintf("constraints: %s is even (%d): etcd tolerates no more failures than with %d members",
			ControlPlaneCount, c.ControlPlaneCount, c.ControlPlaneCount-1)}
	}
	return nil
}

// Unchosen says why a leader holds when c, the constraints in force, name
// no model (c.Implicit; stored: a document without a worker key, else
// nothing stored) while the count model ran last (lastDefaults: its
// defaults, with nothing stored): the message, naming the command that
// keeps each model, and who writes the cluster meanwhile.
func Unchosen(c Constraints, stored, lastDefaults bool) (message, writer string) {
	var now, was string
	switch {
	case stored:
		now = fmt.Sprintf("the stored constraints have no worker key (%s, %s or %s), which CKE v1.35.4 reads as the rate model with %s %d",
			MinimumWorkers, MaximumWorkers, MinimumWorkersRate, MinimumWorkersRate, *c.MinimumWorkersRate)
	default:
		now = fmt.Sprintf("no constraints are stored, and this release's defaults are CKE v1.35.4's (the rate model: %s 1, %s %d)",
			ControlPlaneCount, MinimumWorkersRate, DefaultMinimumWorkersRate)
	}
	switch {
	case lastDefaults:
		was = fmt.Sprintf("the count model's defaults (%s 1, %s 1, %s 0), which earlier releases ran with nothing stored, were in force",
			ControlPlaneCount, MinimumWorkers, MaximumWorkers)
	default:
		was = "the count model was in force"
	}
	keep := fmt.Sprintf("%s keeps the count model (%s 1, %s 0 with the stored %s)", CountDefaultsCommand,
		MinimumWorkers, MaximumWorkers, ControlPlaneCount)
	if !stored {
		keep = fmt.Sprintf("%s keeps the count model's defaults", CountDefaultsCommand)
	}
	rate := fmt.Sprintf("ckegenctl constraints set %s %d takes CKE's", MinimumWorkersRate, DefaultMinimumWorkersRate)
	msg := fmt.Sprintf("%s, but the last status says %s: ckegen does not change the model by itself, "+
		"so it writes nothing until constraints that name a model are stored: %s; %s (ckegenctl constraints set NAME VALUE --dry-run shows the plan of either first)",
		now, was, keep, rate)
	return msg, "none: ckegen holds (CONSTRAINTS_UNCHOSEN) until constraints that name a model are stored (" + CountDefaultsCommand + ", or ckegenctl constraints set " +
		MinimumWorkersRate + " 80)"
}
