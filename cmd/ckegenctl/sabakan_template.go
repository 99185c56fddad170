package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// readInput reads a file, or standard input for "-".
func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(name)
}

func newSabakanSetTemplateCmd(e *env) *cobra.Command {
	var dry *dryRun
	cmd := settingCmd("sabakan set-template")
	cmd.Args = exactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		data, err := readInput(cmd, args[0])
		if err != nil {
			return err
		}
		js, err := templateToStore(data)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if err := e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return warnTemplateNotes(ctx, cmd.ErrOrStderr(), st, data)
		}); err != nil {
			return err
		}
		return dry.store(e, cmd, intake.WhatIf{Template: js}, storage.KeySabakanTemplate, js)
	}
	dry = addDryRun(cmd)
	return cmd
}

func newSabakanGetTemplateCmd(e *env) *cobra.Command {
	var output string
	cmd := settingCmd("sabakan get-template")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkFormat(output, "yaml", "json"); err != nil {
			return err
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			v, err := st.Get(ctx, storage.KeySabakanTemplate)
			if err != nil {
				return absent(err, absentTemplate)
			}
			return printCluster(cmd, v.Data, output)
		})
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

// warnTemplateNotes says the notes of a template (data, valid) under the
// stored constraints (generator.TemplateNotes): set-template says them
// once, as it stores the template; the status lists them after. Stored
// constraints that do not parse say nothing here: the tick says why.
func warnTemplateNotes(ctx context.Context, stderr io.Writer, st storage.Storage, data []byte) error {
	tmpl, err := template.Parse(data)
	if err != nil {
		return err
	}
	s, refused, _, err := intake.Load(ctx, st, intake.SettingConstraints)
	if err != nil || refused[intake.SettingConstraints] != nil {
		return err
	}
	for _, n := range generator.TemplateNotes(tmpl, s.Constraints) {
		fmt.Fprintf(stderr, "warning: %s\n", n)
	}
	return nil
}

// templateToStore validates a template and returns it as set-template
// stores it: JSON, with CKE's option defaults.
func templateToStore(data []byte) ([]byte, error) {
	tmpl, err := template.Parse(data)
	if err != nil {
		return nil, err
	}
	if err := template.FillDefaults(tmpl.Cluster); err != nil {
		return nil, err
	}
	return json.Marshal(tmpl.Cluster)
}

// printCluster prints a stored cluster or template (JSON) in the format.
func printCluster(cmd *cobra.Command, data []byte, format string) error {
	c, err := cluster.Parse(data)
	if err != nil {
		return fmt.Errorf("stored value: %w", err)
	}
	out, err := marshalCluster(c, format)
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

func checkFormat(got string, allowed ...string) error {
	for _, a := range allowed {
		if got == a {
			return nil
		}
	}
	if s, ok := suggest.Closest(got, allowed); ok {
		return usage.Errorf("--output: must be one of %v, got %q; did you mean %s?", allowed, got, s)
	}
	return usage.Errorf("--output: must be one of %v, got %q", allowed, got)
}
