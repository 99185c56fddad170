package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/resilience"
)

// resilienceOptions are `sabakan resilience`'s flags: the offline
// generator's input (inputFlags) and the output format.
type resilienceOptions struct {
	inputFlags
	output string
}

// newSabakanResilienceCmd is `sabakan resilience`: what losing each
// failure domain would do (docs/failure-domains.md). It is offline: the
// input comes from files, as `sabakan generate`'s does. The report itself
// is resilience.Of on a generator.Input, which is all an online form needs
// to supply.
func newSabakanResilienceCmd() *cobra.Command {
	o := &resilienceOptions{}
	cmd := &cobra.Command{
		Use:   "resilience --template T.yml --machines M.json",
		Short: "what losing each rack (or power feed) would do: etcd's quorum, the workers left, the plan after",
		Long: `Resilience reports, for every failure domain of the data center, what losing
it would do: its control planes and workers, whether etcd keeps its quorum
(the domain holds more than floor((N-1)/2) of the N control planes: it does
not), the HEALTHY workers left against minimum-workers or
minimum-workers-rate, and the plan the daemon would make if every machine of
the domain became UNREACHABLE.

The failure domain is sabakan's rack, or the label the policy's failureDomain
names (--policy). The input is generate's: without --current, the report is
on the cluster Generate would make. --assume rehearses a change first (see
generate --help): rack=4:RETIRING reports on the data center once rack 4 is
retiring. -o text (default: the domains at risk, then a table of every domain,
those at risk first) or json.

Exit status 0 with the report on stdout; 1 when the input cannot be read or
planned (nothing on stdout); 2 on a usage error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "template", "machines"); err != nil {
				return err
			}
			if err := checkFormat(o.output, "text", "json"); err != nil {
				return err
			}
			if err := o.checkAssume(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	o.addFlags(f)
	f.StringVar(&o.current, "current", "", "current cluster.yml (default: the cluster Generate would make)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// resilienceDocument is the JSON output: the report, and the --assume
// rehearsals it was made under.
type resilienceDocument struct {
	*resilience.Report
	Assumed []assume.Match `json:"assumed,omitempty"`
}

// run is the offline form: the input from the files, then the report.
func (o *resilienceOptions) run(cmd *cobra.Command) error {
	defer collectLess(o.machines, o.current)()
	in, warnings, err := o.load()
	if err != nil {
		return err
	}
	r, err := resilience.Of(in, in.Policy.FailureDomain())
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	return writeResilience(cmd.OutOrStdout(), r, o.assumed, o.output)
}

// writeResilience writes a report in format (text or json), saying first
// what was assumed (the text's first lines; "assumed" in JSON).
func writeResilience(w io.Writer, r *resilience.Report, assumed []assume.Match, format string) error {
	var b bytes.Buffer
	if format == "json" {
		data, err := json.MarshalIndent(resilienceDocument{Report: r, Assumed: assumed}, "", "  ")
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteByte('\n')
	} else {
		if len(assumed) > 0 {
			writeAssumed(&b, assumed)
			b.WriteByte('\n')
		}
		b.Write(r.Text())
	}
	_, err := w.Write(b.Bytes())
	return err
}
