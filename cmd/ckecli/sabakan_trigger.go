package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/storage"
)

func newSabakanTriggerCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "trigger [planning|schedule]",
		Short: "print or set the trigger: planning (plan only, change nothing) or schedule (apply)",
		Long: `With no argument, trigger prints the trigger (schedule when never set).

planning: the daemon computes the plan at every tick and stores it
(ckecli sabakan plan --stored), and writes no cluster.
schedule: the daemon applies the changes one step per tick, recomputed from
the live state at every tick (CKE's behaviour).

A change wakes the daemon at once.`,
		ValidArgs: []string{storage.TriggerPlanning, storage.TriggerSchedule},
		Args:      cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				trigger, err := storage.ParseTrigger(args[0])
				if err != nil {
					if s, ok := suggest.Closest(args[0], []string{storage.TriggerPlanning, storage.TriggerSchedule}); ok {
						return fmt.Errorf("%w; did you mean %s?", err, s)
					}
					return err
				}
				return e.withStorage(func(ctx context.Context, st storage.Storage) error {
					return st.SetTrigger(ctx, trigger)
				})
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				trigger, err := st.GetTrigger(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), trigger)
				return err
			})
		},
	}
}
