package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/constraints"
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
	return &cobra.Command{
		Use:       "set NAME VALUE",
		Short:     "set one constraint; the result is validated before it is stored",
		Args:      cobra.ExactArgs(2),
		ValidArgs: constraints.Names,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("%s: value must be an integer, got %q", args[0], args[1])
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				c, err := st.GetConstraints(ctx)
				switch {
				case errors.Is(err, storage.ErrInvalid):
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; setting %s on what could be read\n", err, args[0])
				case err != nil:
					return err
				}
				if err := c.Set(args[0], v); err != nil {
					return fmt.Errorf("constraints: %w", err)
				}
				if err := c.Validate(); err != nil {
					return err
				}
				for _, w := range c.Warnings() {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				return st.SetConstraints(ctx, c)
			})
		},
	}
}

func newConstraintsShowCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "print the constraints (defaults for those unset)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				c, err := st.GetConstraints(ctx)
				if err != nil {
					return err
				}
				data, err := json.MarshalIndent(c, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", data)
				return err
			})
		},
	}
}
