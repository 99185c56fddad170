package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// The switch of the integration (docs/beside-cke.md): while ckegen owns the
// integration (sabakan/owner ckegen), ckegen's own sabakan/ckegen/disabled;
// otherwise CKE's sabakan/disabled, as CKE's ckecli. Each command says on
// stderr which one it acted on; the switch's row of intake.Table gives
// their help.

func newSabakanEnableCmd(e *env, enable bool) *cobra.Command {
	use := "enable"
	if !enable {
		use = "disable"
	}
	cmd := settingCmd("sabakan " + use)
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
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
			if enable {
				return warnBothWrite(ctx, e, st, o, cmd.ErrOrStderr())
			}
			return nil
		})
	}
	return cmd
}

func newSabakanIsEnabledCmd(e *env) *cobra.Command {
	cmd := settingCmd("sabakan is-enabled")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			o, err := ownership(ctx, st)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), !o.Disabled()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "read: %s\n", switchNote(o))
			return warnBothWrite(ctx, e, st, o, cmd.ErrOrStderr())
		})
	}
	return cmd
}

// warnBothWrite warns, on w, when ckegen owns the integration and CKE's
// own was enabled again: who writes the cluster then, by the leader's
// decision.
func warnBothWrite(ctx context.Context, e *env, st storage.Storage, o intake.Ownership, w io.Writer) error {
	if !o.OwnedByCKEGen() || o.CKEDisabled {
		return nil
	}
	leads, err := liveview.ReadActor(ctx, st, o, time.Now())
	if err != nil {
		return err
	}
	writes, err := whoWrites(ctx, e, st, leads)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "warning: %s\n", writes)
	return nil
}
