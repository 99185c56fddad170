package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/storage"
)

// scalar is a setting that one value on the command line sets: its row of
// intake.Table names its commands (Verbs), checks and stores the value
// (Set) and shows it (Show); this is their help.
type scalar struct {
	setting intake.Setting
	// use, short and long are the set command's ("set-url URL"); getShort
	// the get command's. A setting with one verb (trigger) sets with a
	// value and prints without one.
	use, short, long, getShort string
	// choices are the values there are, for a "did you mean".
	choices []string
	// signed: the value may start with "-" (a negative duration or
	// count), which is then a value, not a flag.
	signed bool
}

var scalars = []scalar{
	{setting: intake.SettingURL, use: "set-url URL", short: "set sabakan's URL (/graphql is appended when missing)",
		getShort: "print sabakan's URL"},
	{setting: intake.SettingTrigger, use: "trigger [planning|schedule]",
		short: "print or set the trigger: planning (plan only, change nothing) or schedule (apply)",
		long: `With no argument, trigger prints the trigger (schedule when never set).

planning: the daemon computes the plan at every tick and stores it
(ckegenctl sabakan plan --stored), and writes no cluster.
schedule: the daemon applies the changes one step per tick, recomputed from
the live state at every tick (CKE's behaviour).

A change wakes the daemon at once.`,
		choices: []string{intake.TriggerPlanning, intake.TriggerSchedule}},
	{setting: intake.SettingQuietTime, use: "set-quiet-time DURATION", signed: true,
		short: "write a cluster only after the inventory was still for DURATION (0 turns it off)",
		long: `set-quiet-time sets how long the inventory must have been still before
the daemon writes a cluster: every machine's state unchanged for DURATION
(sabakan's status.duration), and no machine added to or removed from the
query's result for DURATION. Until then the daemon plans, as with the
trigger planning. DURATION is a Go duration such as 10m or 1h30m; 0 turns
quiet time off.`,
		getShort: "print the quiet time (0s: off)"},
	{setting: intake.SettingMaxUnhealthy, use: "set-max-unhealthy VALUE", signed: true,
		short: "stop membership changes while more nodes than VALUE (5, or 40% of the nodes) are unhealthy",
		long: `set-max-unhealthy sets how many of the cluster's nodes may be unhealthy
(machine gone from sabakan, or neither HEALTHY, UPDATING nor UNINITIALIZED;
rebooting nodes not counted) before the daemon stops changing membership:
above it, nodes are neither added, removed, promoted nor demoted, and only
state taints follow the machines. So many failures at once usually mean a
switch, a power feed or sabakan itself, which replacing machines would make
worse.

VALUE is a count (5) or a percentage of the cluster's nodes (40%, rounded
down), or off to remove the limit.`,
		getShort: "print the limit of unhealthy nodes (off: none)"},
}

// verb is the command name of a row's verb ("sabakan set-url": "set-url").
func verb(v string) string { return v[strings.LastIndexByte(v, ' ')+1:] }

// newScalarCmds builds the commands of sc from its row.
func newScalarCmds(e *env, sc scalar) []*cobra.Command {
	row := intake.RowOf(sc.setting)
	set := &cobra.Command{Use: sc.use, Short: sc.short, Long: sc.long}
	store := func(cmd *cobra.Command, value string) error {
		data, err := row.Set(value)
		if err != nil {
			if s, ok := suggest.Closest(value, sc.choices); ok {
				return fmt.Errorf("%w; did you mean %s?", err, s)
			}
			return err
		}
		w := storage.Write{Key: row.Key, Data: data, Delete: data == nil}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return st.Swap(ctx, nil, w)
		})
	}
	show := func(cmd *cobra.Command) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			s, refused, _, err := intake.Load(ctx, st, sc.setting)
			if err != nil {
				return err
			}
			if ref := refused[sc.setting]; ref != nil {
				return intake.Explained(ref, false)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), row.Show(s))
			return err
		})
	}
	if len(row.Verbs) == 1 {
		// One command: a value sets, none prints.
		set.ValidArgs, set.Args = sc.choices, maxArgs(1)
		set.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return store(cmd, args[0])
			}
			return show(cmd)
		}
		return []*cobra.Command{set}
	}
	if sc.signed {
		valueArgCommand(set, store)
	} else {
		set.Args = exactArgs(1)
		set.RunE = func(cmd *cobra.Command, args []string) error { return store(cmd, args[0]) }
	}
	get := &cobra.Command{Use: verb(row.Verbs[1]), Short: sc.getShort, Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return show(cmd) }}
	return []*cobra.Command{set, get}
}
