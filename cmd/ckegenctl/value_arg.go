package main

import (
	"github.com/spf13/cobra"
)

// valueArgCommand makes cmd take one VALUE that may start with "-" (a
// negative duration or count), so that `set-quiet-time -1s` is refused by
// the value's validation, with a message about the value, rather than as an
// unknown flag. Flags are still accepted before and after VALUE. run gets
// the value.
func valueArgCommand(cmd *cobra.Command, run func(cmd *cobra.Command, value string) error) {
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var values, flags []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "--" {
				values = append(values, args[i+1:]...)
				break
			}
			if len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
				values = append(values, a)
				continue
			}
			flags = append(flags, a)
		}
		// Flag parsing is off, so cobra has not merged the root's flags
		// into the command's: InheritedFlags does.
		_ = cmd.InheritedFlags()
		if err := cmd.Flags().Parse(flags); err != nil {
			return flagError(cmd, err)
		}
		if help, _ := cmd.Flags().GetBool("help"); help {
			return cmd.Help()
		}
		values = append(values, cmd.Flags().Args()...)
		if err := checkArgCount(cmd, 1, values); err != nil {
			return err
		}
		return run(cmd, values[0])
	}
}
