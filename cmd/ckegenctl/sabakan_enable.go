package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

// The switch of the integration (docs/beside-cke.md): while ckegen owns the
// integration (sabakan/owner ckegen), ckegen's own sabakan/ckegen/disabled;
// otherwise CKE's sabakan/disabled, as CKE's ckecli. Each command says on
// stderr which one it acted on.

const switchHelp = `

While ckegen owns the integration (sabakan/owner ckegen, see ckegenctl sabakan
owner), this acts on ckegen's own switch sabakan/ckegen/disabled and never on
CKE's sabakan/disabled (which takeover set to true to stop CKE's own
integration). Otherwise it acts on sabakan/disabled, as CKE's ckecli does. The
switch acted on is named on stderr.`

func newSabakanEnableCmd(e *env, enable bool) *cobra.Command {
	use, short := "enable", "enable the sabakan integration"
	if !enable {
		use, short = "disable", "disable the sabakan integration (the cluster stays as it is)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  short + "." + switchHelp,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				o, err := ownership(ctx, st)
				if err != nil {
					return err
				}
				if err := setSwitch(ctx, st, o, !enable); errors.Is(err, storage.ErrConflict) {
					return errStale(use)
				} else if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%sd: %s\n", use, switchNote(o))
				if enable && o.OwnedByCKEGen() && !o.CKEDisabled {
					w, err := whoWrites(ctx, e, st)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				return nil
			})
		},
	}
}

func newSabakanIsEnabledCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "is-enabled",
		Short: "print true if the sabakan integration is enabled",
		Long:  "print true if the sabakan integration is enabled, false otherwise." + switchHelp,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				o, err := ownership(ctx, st)
				if err != nil {
					return err
				}
				disabled := o.CKEDisabled
				if o.OwnedByCKEGen() {
					disabled = o.CKEGenDisabled
				}
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), !disabled); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "read: %s\n", switchNote(o))
				if o.OwnedByCKEGen() && !o.CKEDisabled {
					w, err := whoWrites(ctx, e, st)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				return nil
			})
		},
	}
}
