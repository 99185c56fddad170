package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/internal/redact"
	"github.com/ckegen/ckegen/storage"
)

// normalizeURL checks a sabakan URL and appends /graphql when missing.
func normalizeURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: must be an absolute http or https URL such as http://sabakan:10080", redact.URL(s))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("URL %q: must have no query or fragment", redact.URL(s))
	}
	if !strings.HasSuffix(u.Path, "/graphql") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/graphql"
	}
	return u.String(), nil
}

func newSabakanSetURLCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "set-url URL",
		Short: "set sabakan's URL (/graphql is appended when missing)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := normalizeURL(args[0])
			if err != nil {
				return err
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				return st.SetURL(ctx, u)
			})
		},
	}
}

func newSabakanGetURLCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get-url",
		Short: "print sabakan's URL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				u, err := st.GetURL(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), u)
				return err
			})
		},
	}
}
