package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/storage"
)

func newConstraintsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "constraints",
		Short: "the cluster's constraints",
	}
	cmd.AddCommand(newConstraintsSetCmd(e), newConstraintsShowCmd(e))
	return cmd
}

func newConstraintsSetCmd(e *env) *cobra.Command {
	var dry *dryRun
	cmd := settingCmd("constraints set")
	// The flag parser stops at NAME, so that a negative VALUE is a value
	// rather than an unknown flag; flags after VALUE are parsed in RunE.
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) < 2 {
			return checkArgCount(cmd, 2, args)
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 2 {
			if err := cmd.Flags().Parse(args[2:]); err != nil {
				return flagError(cmd, err)
			}
			if rest := cmd.Flags().Args(); len(rest) > 0 {
				return usage.Errorf("want NAME VALUE, got %d arguments: %s", 2+len(rest), strings.Join(args, " "))
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			args = args[:2]
		}
		name := args[0]
		if !slices.Contains(constraints.Names, name) {
			if s, ok := suggest.Closest(name, constraints.Names); ok {
				return fmt.Errorf("constraints: unknown key %q; did you mean %s? (known: %s)", name, s, strings.Join(constraints.Names, ", "))
			}
			return fmt.Errorf("constraints: unknown key %q (known: %s)", name, strings.Join(constraints.Names, ", "))
		}
		v, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("%s: value must be an integer, got %q", name, args[1])
		}
		var c constraints.Constraints
		var guard storage.Guard
		err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
			var err error
			c, guard, err = constraintsWithSet(ctx, cmd.ErrOrStderr(), st, name, v)
			return err
		})
		if err != nil {
			return err
		}
		if dry.enabled {
			return dry.run(e, cmd, intake.WhatIf{Constraints: &c})
		}
		dry.warn(e, cmd, intake.WhatIf{Constraints: &c}, c.Warnings()...)
		data, err := json.Marshal(c)
		if err != nil {
			return err
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return storeConstraints(ctx, st, guard, data)
		})
	}
	cmd.Flags().SetInterspersed(false)
	dry = addDryRun(cmd)
	return cmd
}

// constraintsWithSet is the constraints with name set to v, checked (the
// warnings written to stderr), and the guard of the write that stores
// them.
func constraintsWithSet(ctx context.Context, stderr io.Writer, st storage.Storage, name string, v int) (constraints.Constraints, storage.Guard, error) {
	c, guard, err := constraintsToSet(ctx, stderr, st, name)
	if err != nil {
		return c, guard, err
	}
	if err := c.Set(name, v); err != nil {
		return c, guard, fmt.Errorf("constraints: %w", err)
	}
	if err := c.Validate(); err != nil {
		return c, guard, err
	}
	for _, w := range c.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	return c, guard, nil
}

// constraintsToSet reads the constraints that `set NAME` changes, as
// the tick reads them (intake's table): the stored ones, or the defaults
// when none are stored, with the guard of the write that stores the
// result. An invalid stored document is read as constraints.ForSet reads
// it: what could be read, with a warning, or, when it holds the keys of
// both models, without the other model's keys (a note says so) if name
// chooses a model, and refused otherwise.
func constraintsToSet(ctx context.Context, stderr io.Writer, st storage.Storage, name string) (constraints.Constraints, storage.Guard, error) {
	s, refused, snap, err := intake.Load(ctx, st, intake.SettingConstraints)
	if err != nil {
		return constraints.Constraints{}, storage.Guard{}, err
	}
	v := snap.Get(storage.KeyConstraints)
	guard := storage.GuardOf(storage.KeyConstraints, v)
	if refused[intake.SettingConstraints] == nil {
		if !s.ConstraintsStored {
			fmt.Fprintf(stderr, "note: no constraints are stored: setting %s on CKE v1.35.4's defaults (control-plane-count 1, minimum-workers-rate 80: the rate model), as CKE's ckecli does\n", name)
		}
		return s.Constraints, guard, nil
	}
	c, note, err := constraints.ForSet(v.Data, name)
	var model *constraints.ModelError
	switch {
	case errors.As(err, &model):
		return c, guard, fmt.Errorf("invalid stored value: %w", err)
	case err != nil:
		fmt.Fprintf(stderr, "warning: invalid stored value: %v; setting %s on what could be read\n", err, name)
	case note != "":
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	return c, guard, nil
}

// storeConstraints stores the constraints set computed, guarded on the
// document it read: a concurrent set makes this one lose and write
// nothing.
func storeConstraints(ctx context.Context, st storage.Storage, guard storage.Guard, data []byte) error {
	err := st.Swap(ctx, []storage.Guard{guard}, storage.Write{Key: storage.KeyConstraints, Data: data})
	if errors.Is(err, storage.ErrConflict) {
		return errors.New("the constraints changed while they were set (another ckegenctl constraints set, or CKE's ckecli): nothing was written; check them with ckegenctl constraints show and set again")
	}
	return err
}

// shownCountConstraints is every constraint of the count model as CKE up
// to v1.34 prints them: all its names, CKE's 0 for those never set.
type shownCountConstraints struct {
	ControlPlaneCount                int `json:"control-plane-count"`
	MinimumWorkers                   int `json:"minimum-workers"`
	MaximumWorkers                   int `json:"maximum-workers"`
	MaximumUnreachableNodesForReboot int `json:"maximum-unreachable-nodes-for-reboot"`
	MaximumRepairQueueEntries        int `json:"maximum-repair-queue-entries"`
	WaitSecondsToRepairRebooting     int `json:"wait-seconds-to-repair-rebooting"`
}

// shownRateConstraints is every constraint of the rate model as CKE v1.35
// prints them (its Constraints struct): all its names, 0 for those never
// set.
type shownRateConstraints struct {
	ControlPlaneCount                int `json:"control-plane-count"`
	MinimumWorkersRate               int `json:"minimum-workers-rate"`
	MaximumUnreachableNodesForReboot int `json:"maximum-unreachable-nodes-for-reboot"`
	MaximumRepairQueueEntries        int `json:"maximum-repair-queue-entries"`
	WaitSecondsToRepairRebooting     int `json:"wait-seconds-to-repair-rebooting"`
}

// showConstraints is what `show` prints of c: the keys of the model in
// force, each with a value.
func showConstraints(c constraints.Constraints) any {
	value := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	if c.RateModel() {
		return shownRateConstraints{
			ControlPlaneCount:                c.ControlPlaneCount,
			MinimumWorkersRate:               *c.MinimumWorkersRate,
			MaximumUnreachableNodesForReboot: value(c.MaximumUnreachableNodesForReboot),
			MaximumRepairQueueEntries:        value(c.MaximumRepairQueueEntries),
			WaitSecondsToRepairRebooting:     value(c.WaitSecondsToRepairRebooting),
		}
	}
	return shownCountConstraints{
		ControlPlaneCount:                c.ControlPlaneCount,
		MinimumWorkers:                   c.MinimumWorkers,
		MaximumWorkers:                   c.MaximumWorkers,
		MaximumUnreachableNodesForReboot: value(c.MaximumUnreachableNodesForReboot),
		MaximumRepairQueueEntries:        value(c.MaximumRepairQueueEntries),
		WaitSecondsToRepairRebooting:     value(c.WaitSecondsToRepairRebooting),
	}
}

// constraintsModelLine says on stderr which model the shown constraints are, so that
// stdout stays the JSON document alone (CKE's output, and a file that
// --constraints reads back).
func constraintsModelLine(c constraints.Constraints, stored bool) string {
	switch {
	case !stored:
		return "model: rate (no constraints stored: these are CKE v1.35.4's defaults; every HEALTHY machine a worker template accepts is a worker)"
	case c.Implicit:
		return "model: rate (the stored constraints have no worker key: CKE v1.35.4 reads them as the rate model, minimum-workers-rate 0)"
	case c.RateModel():
		return "model: rate (minimum-workers-rate: every HEALTHY machine a worker template accepts is a worker, as in CKE v1.35)"
	}
	return "model: count (minimum-workers and maximum-workers bound the number of workers)"
}

func newConstraintsShowCmd(e *env) *cobra.Command {
	cmd := settingCmd("constraints show")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			s, refused, _, err := intake.Load(ctx, st, intake.SettingConstraints)
			if err != nil {
				return err
			}
			if ref := refused[intake.SettingConstraints]; ref != nil {
				return intake.Explained(ref, false)
			}
			c := s.Constraints
			// Indented by four spaces, as CKE's ckecli prints them.
			data, err := json.MarshalIndent(showConstraints(c), "", "    ")
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data); err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.ErrOrStderr(), constraintsModelLine(c, s.ConstraintsStored))
			return err
		})
	}
	return cmd
}
