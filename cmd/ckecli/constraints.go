package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/snapshot"
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

// constraintMeaning says what a constraint name of CKE's means to ckegen.
func constraintMeaning(name string) string {
	switch name {
	case constraints.ControlPlaneCount:
		return "number of control planes (default 1; keep it odd for etcd's quorum)"
	case constraints.MinimumWorkers:
		return "fewest workers the cluster may have (default 1)"
	case constraints.MaximumWorkers:
		return "most workers the cluster may have; 0 means no limit (default 0)"
	case constraints.MaximumUnreachableNodesForReboot:
		return "CKE's reboot queue setting: stored and kept, unused by ckegen"
	case constraints.MaximumRepairQueueEntries, constraints.WaitSecondsToRepairRebooting:
		return "CKE's repair queue setting: stored and kept, unused by ckegen"
	}
	return ""
}

// constraintsHelp lists the names and their meaning for `set --help`.
func constraintsHelp() string {
	var b strings.Builder
	b.WriteString("set NAME VALUE sets one constraint. The constraints that result are\n" +
		"validated before they are stored; nothing is stored on error. VALUE is an\n" +
		"integer (a negative one is taken as VALUE, not as a flag). With --dry-run\n" +
		"nothing is stored: the plan the daemon would follow with the new constraints\n" +
		"is printed instead.\n\nNAME is one of:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, n := range constraints.Names {
		fmt.Fprintf(tw, "  %s\t%s\n", n, constraintMeaning(n))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return b.String()
}

func newConstraintsSetCmd(e *env) *cobra.Command {
	var dry *dryRun
	cmd := &cobra.Command{
		Use:       "set NAME VALUE",
		Short:     "set one constraint; the result is validated before it is stored",
		Long:      constraintsHelp(),
		ValidArgs: constraints.Names,
		// The flag parser stops at NAME, so that a negative VALUE is a
		// value rather than an unknown flag; flags after VALUE are parsed
		// in RunE.
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 2 {
				if err := cmd.Flags().Parse(args[2:]); err != nil {
					return err
				}
				if rest := cmd.Flags().Args(); len(rest) > 0 {
					return fmt.Errorf("want NAME VALUE, got %d arguments: %s", 2+len(rest), strings.Join(args, " "))
				}
				if help, _ := cmd.Flags().GetBool("help"); help {
					return cmd.Help()
				}
				args = args[:2]
			}
			name := args[0]
			if !slices.Contains(constraints.Names, name) {
				return fmt.Errorf("constraints: unknown key %q (known: %s)", name, strings.Join(constraints.Names, ", "))
			}
			v, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("%s: value must be an integer, got %q", name, args[1])
			}
			var c constraints.Constraints
			err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
				var err error
				c, err = st.GetConstraints(ctx)
				switch {
				case errors.Is(err, storage.ErrInvalid):
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; setting %s on what could be read\n", err, name)
				case err != nil:
					return err
				}
				if err := c.Set(name, v); err != nil {
					return fmt.Errorf("constraints: %w", err)
				}
				if err := c.Validate(); err != nil {
					return err
				}
				for _, w := range c.Warnings() {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				if dry.enabled {
					return nil
				}
				return st.SetConstraints(ctx, c)
			})
			if err != nil || !dry.enabled {
				return err
			}
			return dry.run(e, cmd, snapshot.WhatIf{Constraints: &c})
		},
	}
	cmd.Flags().SetInterspersed(false)
	dry = addDryRun(cmd)
	return cmd
}

// shownConstraints is every constraint as CKE's `constraints show` prints
// them: all names, CKE's 0 for those never set.
type shownConstraints struct {
	ControlPlaneCount                int `json:"control-plane-count"`
	MinimumWorkers                   int `json:"minimum-workers"`
	MaximumWorkers                   int `json:"maximum-workers"`
	MaximumUnreachableNodesForReboot int `json:"maximum-unreachable-nodes-for-reboot"`
	MaximumRepairQueueEntries        int `json:"maximum-repair-queue-entries"`
	WaitSecondsToRepairRebooting     int `json:"wait-seconds-to-repair-rebooting"`
}

func showConstraints(c constraints.Constraints) shownConstraints {
	value := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return shownConstraints{
		ControlPlaneCount:                c.ControlPlaneCount,
		MinimumWorkers:                   c.MinimumWorkers,
		MaximumWorkers:                   c.MaximumWorkers,
		MaximumUnreachableNodesForReboot: value(c.MaximumUnreachableNodesForReboot),
		MaximumRepairQueueEntries:        value(c.MaximumRepairQueueEntries),
		WaitSecondsToRepairRebooting:     value(c.WaitSecondsToRepairRebooting),
	}
}

func newConstraintsShowCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "print the constraints as JSON, CKE's defaults for those unset",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				c, err := st.GetConstraints(ctx)
				if err != nil {
					return err
				}
				// Indented by four spaces, as CKE's ckecli prints them.
				data, err := json.MarshalIndent(showConstraints(c), "", "    ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
				return err
			})
		},
	}
}
