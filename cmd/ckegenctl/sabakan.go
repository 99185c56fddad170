package main

import "github.com/spf13/cobra"

func newSabakanCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sabakan",
		Short: "sabakan integration: template, URL, query variables, status, and the offline generator",
	}
	cmd.AddCommand(
		newSabakanEnableCmd(e, true), newSabakanEnableCmd(e, false), newSabakanIsEnabledCmd(e),
		newSabakanTakeoverCmd(e), newSabakanHandbackCmd(e), newSabakanOwnerCmd(e),
		newSabakanSetTemplateCmd(e), newSabakanGetTemplateCmd(e),
		newSabakanSetVariablesCmd(e), newSabakanGetVariablesCmd(e),
		newSabakanSetPolicyCmd(e), newSabakanGetPolicyCmd(e), newSabakanClearPolicyCmd(e),
		newSabakanStatusCmd(e), newSabakanHistoryCmd(e),
		newSabakanGenerateCmd(), newSabakanResilienceCmd(e), newSabakanForecastCmd(e), newSabakanOrderCmd(e),
		newSabakanMapCmd(e),
		newSabakanPlanCmd(e),
	)
	cmd.AddCommand(newScalarCmds(e)...)
	return cmd
}
