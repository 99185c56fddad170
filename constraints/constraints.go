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
	MaximumUnreachableNodesForReboot = "maximum-unreachable-nodes-for-reboot"
	MaximumRepairQueueEntries        = "maximum-repair-queue-entries"
	WaitSecondsToRepairRebooting     = "wait-seconds-to-repair-rebooting"
)

// Names lists every accepted name, in CKE's order.
var Names = []string{
	ControlPlaneCount, MinimumWorkers, MaximumWorkers,
	MaximumUnreachableNodesForReboot, MaximumRepairQueueEntries, WaitSecondsToRepairRebooting,
}

// Constraints are the user's limits on the cluster's shape. The last three
// are CKE's own; they are kept so that a value stored by CKE survives a
// round trip, and the generator ignores them.
type Constraints struct {
	ControlPlaneCount                int  `json:"control-plane-count"`
	MinimumWorkers                   int  `json:"minimum-workers"`
	MaximumWorkers                   int  `json:"maximum-workers"`
	MaximumUnreachableNodesForReboot *int `json:"maximum-unreachable-nodes-for-reboot,omitempty"`
	MaximumRepairQueueEntries        *int `json:"maximum-repair-queue-entries,omitempty"`
	WaitSecondsToRepairRebooting     *int `json:"wait-seconds-to-repair-rebooting,omitempty"`
}

// Default returns the constraints used when none are set.
func Default() Constraints {
	return Constraints{ControlPlaneCount: 1, MinimumWorkers: 1}
}

// Parse reads a constraints JSON object. Left-out keys take their defaults;
// an unknown key, a key given twice, a value that is not an integer, or
// anything after the object is an error.
func Parse(data []byte) (Constraints, error) {
	c := Default()
	if err := strictjson.Check(data); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) && se.Kind == strictjson.Syntax {
			return c, fmt.Errorf("constraints: want a single JSON object: %w", err)
		}
		return c, fmt.Errorf("constraints: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return c, fmt.Errorf("constraints: want a single JSON object: %w", err)
	}
	if raw == nil {
		return c, errors.New("constraints: want a JSON object, got null")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := parseInt(raw[k])
		if err != nil {
			if !slices.Contains(Names, k) {
				return c, fmt.Errorf("constraints: %w", unknownKey(k))
			}
			return c, fmt.Errorf("constraints: %s: %w", k, err)
		}
		if err := c.Set(k, v); err != nil {
			return c, fmt.Errorf("constraints: %w", err)
		}
	}
	return c, c.Validate()
}

func parseInt(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > math.MaxInt32 || n < math.MinInt32 {
		return 0, fmt.Errorf("must be an integer, got %s", s)
	}
	return int(n), nil
}

// Set sets the constraint called name. It does not validate the result.
func (c *Constraints) Set(name string, v int) error {
	switch name {
	case ControlPlaneCount:
		c.ControlPlaneCount = v
	case MinimumWorkers:
		c.MinimumWorkers = v
	case MaximumWorkers:
		c.MaximumWorkers = v
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
	if c.ControlPlaneCount < 1 {
		errs = append(errs, fmt.Errorf("constraints: %s: must be >= 1, got %d", ControlPlaneCount, c.ControlPlaneCount))
	}
	if c.MinimumWorkers < 0 {
		errs = append(errs, fmt.Errorf("constraints: %s: must be >= 0, got %d", MinimumWorkers, c.MinimumWorkers))
	}
	if c.MaximumWorkers < 0 {
		errs = append(errs, fmt.Errorf("constraints: %s: must be 0 (unlimited) or >= %s, got %d", MaximumWorkers, MinimumWorkers, c.MaximumWorkers))
	} else if c.MaximumWorkers != 0 && c.MaximumWorkers < c.MinimumWorkers {
		errs = append(errs, fmt.Errorf("constraints: %s: must be 0 (unlimited) or >= %s (%d), got %d", MaximumWorkers, MinimumWorkers, c.MinimumWorkers, c.MaximumWorkers))
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
			errs = append(errs, fmt.Errorf("constraints: %s: must be >= 0, got %d", p.name, *p.v))
		}
	}
	return errors.Join(errs...)
}

// Warnings returns advice about valid but unwise values.
func (c Constraints) Warnings() []string {
	if c.ControlPlaneCount%2 == 0 {
		return []string{fmt.Sprintf("constraints: %s is even (%d): etcd tolerates no more failures than with %d members",
			ControlPlaneCount, c.ControlPlaneCount, c.ControlPlaneCount-1)}
	}
	return nil
}
