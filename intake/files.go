package intake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/kubenodes/nodefile"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

// Files are the offline generator's files, each the File its flag named;
// the zero Source for a file not given. Template and Machines are
// required.
type Files struct {
	Template, Machines, Constraints, Current, NodeTaints, Policy Source
	// Rebooting are the addresses of rebooting nodes, as given to the
	// flag named RebootingFlag.
	Rebooting     []string
	RebootingFlag string
}

// FromFiles reads the offline generator's files: the settings, and the
// inventory with the metrics of the policy (fetched once, as a tick
// does). The warnings are about machines, constraints and metrics. A file
// that cannot be read or parsed is an error that names its flag and path.
func FromFiles(ctx context.Context, f Files) (*Settings, Inventory, []string, error) {
	var inv Inventory
	if f.Template == (Source{}) {
		return nil, inv, nil, errors.New("--template: required")
	}
	s, raw, err := ReadFiles(f)
	if err != nil {
		return nil, inv, nil, err
	}
	var warnings []string
	inv.Machines, inv.Roles, warnings = Sanitize(raw)
	warnings = append(warnings, s.Warnings...)
	if inv.NodeTaints, err = readNodeTaints(f.NodeTaints); err != nil {
		return nil, inv, nil, err
	}
	if f.Policy == (Source{}) {
		return s, inv, warnings, nil
	}
	data, err := readFile(f.Policy)
	if err != nil {
		return nil, inv, nil, err
	}
	if s.Policy, err = policy.Load(data, s.Template); err != nil {
		return nil, inv, nil, refuse(SettingPolicy, f.Policy, err)
	}
	vals, _, pw, err := FetchMetrics(ctx, s.Policy, inv.Machines)
	if err != nil {
		return nil, inv, nil, fileError(f.Policy, err)
	}
	inv.Metrics = vals
	return s, inv, append(warnings, pw...), nil
}

// ReadFiles reads the settings of f that a view of files needs (the
// template, the constraints, the current cluster, the rebooting nodes;
// each optional but the machines) and the machines as given, unsanitized.
// ConstraintsStored says whether constraints were given.
func ReadFiles(f Files) (*Settings, []machine.Machine, error) {
	s := &Settings{templateGiven: true}
	if f.Template != (Source{}) {
		data, err := readFile(f.Template)
		if err != nil {
			return nil, nil, err
		}
		if s.Template, err = template.Parse(data); err != nil {
			return nil, nil, refuse(SettingTemplate, f.Template, err)
		}
	}
	data, err := readFile(f.Machines)
	if err != nil {
		return nil, nil, err
	}
	raw, err := machine.Parse(data)
	if err != nil {
		return nil, nil, fileError(f.Machines, err)
	}
	if err := s.readFileSettings(f); err != nil {
		return nil, nil, err
	}
	if err := s.readRebooting(f); err != nil {
		return nil, nil, err
	}
	return s, raw, nil
}

// readFileSettings reads the constraints and the current cluster of f
// into s. The constraints are validated by the generator, as in every
// path.
func (s *Settings) readFileSettings(f Files) error {
	s.Constraints = constraints.Default()
	if f.Constraints != (Source{}) {
		data, err := readFile(f.Constraints)
		if err != nil {
			return err
		}
		if s.Constraints, err = constraints.Parse(data); err != nil {
			return refuse(SettingConstraints, f.Constraints, err)
		}
		s.ConstraintsStored = true
	}
	s.Warnings = append(s.Warnings, s.Constraints.Warnings()...)
	if f.Current != (Source{}) {
		data, err := readFile(f.Current)
		if err != nil {
			return err
		}
		if s.Current, err = cluster.Parse(data); err != nil {
			return refuse(SettingCluster, f.Current, err)
		}
	}
	return nil
}

// readRebooting reads the addresses of rebooting nodes of f into s.
func (s *Settings) readRebooting(f Files) error {
	if len(f.Rebooting) == 0 {
		return nil
	}
	s.Rebooting = make(map[string]bool, len(f.Rebooting))
	for _, a := range f.Rebooting {
		a = strings.TrimSpace(a)
		if a == "" {
			return fmt.Errorf("%s: empty address", f.RebootingFlag)
		}
		s.Rebooting[a] = true
	}
	return nil
}

// readNodeTaints reads a Kubernetes Nodes file (nil when none is given).
func readNodeTaints(src Source) (map[string][]cluster.Taint, error) {
	if src == (Source{}) {
		return nil, nil
	}
	data, err := readFile(src)
	if err != nil {
		return nil, err
	}
	taints, err := nodefile.Parse(data)
	if err != nil {
		return nil, fileError(src, err)
	}
	return taints, nil
}

// readFile reads the file of src; an error names the flag.
func readFile(src Source) ([]byte, error) {
	if src.Path == "" {
		return nil, errors.New(src.Flag + ": required")
	}
	data, err := os.ReadFile(src.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Flag, err)
	}
	return data, nil
}

// fileError is an error about the content of the file of src.
func fileError(src Source, err error) error {
	return fmt.Errorf("%s %s: %w", src.Flag, src.Path, err)
}
