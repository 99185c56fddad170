package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/storage"
)

// errTemplateChanged says why a policy was not stored.
const errTemplateChanged = "the template changed while the policy was checked against it"

// setPolicyAttempts bounds the retries when the template changes while a
// policy is checked against it.
const setPolicyAttempts = 3

func newSabakanSetPolicyCmd(e *env) *cobra.Command {
	cmd := settingCmd("sabakan set-policy")
	cmd.Args = exactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		data, err := readInput(cmd, args[0])
		if err != nil {
			return err
		}
		doc, err := policy.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		js, err := doc.Canonical()
		if err != nil {
			return err
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			for range setPolicyAttempts {
				rev, err := checkAgainstStoredTemplate(ctx, cmd, st, doc)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				// Stored only while the template is still the one it
				// was checked against.
				err = st.Swap(ctx, []storage.Guard{{Key: storage.KeySabakanTemplate, ModRevision: rev}},
					storage.Write{Key: storage.KeySabakanPolicy, Data: js})
				if !errors.Is(err, storage.ErrConflict) {
					return err
				}
			}
			return fmt.Errorf("%s: not stored: %s %d times in a row; try again", args[0], errTemplateChanged, setPolicyAttempts)
		})
	}
	return cmd
}

// checkAgainstStoredTemplate checks the placements against the stored
// template and returns the template's revision (0 when none is stored).
// Without a usable template it warns and checks nothing.
func checkAgainstStoredTemplate(ctx context.Context, cmd *cobra.Command, st storage.Storage, doc *policy.Document) (int64, error) {
	s, refused, _, err := intake.Load(ctx, st, intake.SettingTemplate)
	if err != nil {
		return 0, err
	}
	switch ref := refused[intake.SettingTemplate]; {
	case ref != nil && ref.Missing:
		fmt.Fprintln(cmd.ErrOrStderr(), "warning: no template is stored: the placements were not checked against one (the daemon checks them at every tick)")
		return 0, nil
	case ref != nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the stored template is invalid, the placements were not checked against it: %v\n", ref.Err)
		return s.TemplateRevision, nil
	}
	return s.TemplateRevision, doc.CheckTemplate(s.Template)
}

func newSabakanGetPolicyCmd(e *env) *cobra.Command {
	var output string
	cmd := settingCmd("sabakan get-policy")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkFormat(output, "yaml", "json"); err != nil {
			return err
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			v, err := st.Get(ctx, storage.KeySabakanPolicy)
			if err != nil {
				return absent(err, absentPolicy)
			}
			doc, err := policy.Parse(v.Data)
			if err != nil {
				return fmt.Errorf("stored %s: %w", storage.KeySabakanPolicy, err)
			}
			js, err := doc.Canonical()
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if output == "json" {
				if err := json.Indent(&out, js, "", "  "); err != nil {
					return err
				}
				out.WriteByte('\n')
			} else {
				y, err := yaml.JSONToYAML(js)
				if err != nil {
					return err
				}
				out.Write(y)
			}
			_, err = cmd.OutOrStdout().Write(out.Bytes())
			return err
		})
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func newSabakanClearPolicyCmd(e *env) *cobra.Command {
	cmd := settingCmd("sabakan clear-policy")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			resp, err := st.Client.Delete(ctx, st.Key(storage.KeySabakanPolicy))
			if err == nil && resp.Deleted == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no policy was set")
			}
			return err
		})
	}
	return cmd
}
