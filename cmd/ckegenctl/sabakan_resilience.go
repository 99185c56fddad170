package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/resilience"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/world"
)

// resilienceOptions are `sabakan resilience`'s flags: the offline
// generator's input (inputFlags), the flags of reading the live state
// (live's: the Kubernetes view, sabakan's client) and the output format.
type resilienceOptions struct {
	inputFlags
	live   planOptions
	output string
}

// newSabakanResilienceCmd is `sabakan resilience`: what losing each
// failure domain would do (docs/failure-domains.md). Online (no
// --machines) its input is the leader's, gathered as `sabakan plan`
// gathers it; offline it comes from files, as `sabakan generate`'s does.
// The report itself is resilience.Of on that world either way: online the
// leader's decision's (max-unhealthy and the query's conditions on
// states included), offline the files' with the default query.
func newSabakanResilienceCmd(e *env) *cobra.Command {
	o := &resilienceOptions{}
	cmd := &cobra.Command{
		Use:   "resilience [--template T.yml --machines M.json]",
		Short: "what losing each rack (or power feed) would do: etcd's quorum, the workers left, the plan after",
		Long: `Resilience reports, for every failure domain of the data center, what losing
it would do: its control planes and workers, whether etcd keeps its quorum
(the domain holds more than floor((N-1)/2) of the N control planes: it does
not), the HEALTHY workers left against minimum-workers or
minimum-workers-rate, and the plan the daemon would make if every machine of
the domain became UNREACHABLE. A loss that breaks etcd's quorum recovers as
no-quorum, never settled: CKE can apply none of the plan's steps until enough
control planes return.

When the input's own plan is pending, the report is made on the cluster it
settles on, and its first line says so ("basis": "pending-plan-settled" and
"pendingSteps" in JSON; "quorumLostNow" is each domain's quorum on the cluster
as it is now). When that plan is refused, or does not settle, the report is
made on the cluster as it is, with the refusal's reason ("pendingRefused").

The failure domain is sabakan's rack, or the label the placement policy's
failureDomain names.

Online (without --machines), the input is the leader's next tick's: the
settings, the cluster and the policy from etcd, the machines from sabakan with
the stored URL and query variables (read only, as sabakan plan reads them),
the policy's metrics, and the view of the Kubernetes Nodes the leader last
decided with (--kubeconfig reads one now); the text begins with that view's
line ("view" in JSON). --retire-wait replaces the leader's.

Offline, --template and --machines (required) and --constraints, --current,
--now, --retire-wait, --k8s-nodes, --policy and --rebooting are the input, as
generate's; without --current, the report is on the cluster Generate would
make.

--assume rehearses a change first, online or offline (see generate --help):
rack=4:RETIRING reports on the data center once rack 4 is retiring; the text
says what was assumed, one line per --assume with the machines it matched
("assumed" in JSON). -o text (default: the domains at risk, then a table of
every domain, those at risk first) or json.

Exit status 0 with the report on stdout; 1 when the input cannot be read or
planned, or etcd or sabakan cannot be read (nothing on stdout); 2 on a usage
error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(o.output, "text", "json"); err != nil {
				return err
			}
			if err := o.checkAssume(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("machines") {
				return o.runOnline(e, cmd)
			}
			for _, name := range []string{"kubeconfig", "kubernetes-timeout", "sabakan-timeout", "sabakan-tls-ca-file", "sabakan-tls-cert-file", "sabakan-tls-key-file"} {
				if cmd.Flags().Changed(name) {
					return usage.Errorf("--%s reads the live state: leave out --machines (and the other input files) to report online", name)
				}
			}
			if err := requireFlags(cmd, "template", "machines"); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	o.addFlags(f)
	f.StringVar(&o.current, "current", "", "current cluster.yml (default: the cluster Generate would make)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	o.live.addLiveFlags(f)
	return cmd
}

// resilienceDocument is the JSON output: the report, the view of the
// Kubernetes Nodes it was made with (online), and the --assume
// rehearsals it was made under.
type resilienceDocument struct {
	*resilience.Report
	View    string         `json:"view,omitempty"`
	Assumed []assume.Match `json:"assumed,omitempty"`
}

// run is the offline form: the input from the files, then the report.
func (o *resilienceOptions) run(cmd *cobra.Command) error {
	defer collectLess(o.machines, o.current)()
	in, warnings, err := o.load()
	if err != nil {
		return err
	}
	_, states := sabakan.Variables{}.WithoutStates()
	r, err := resilience.Of(world.World{In: in, Query: states}, in.Policy.FailureDomain())
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	return writeResilience(cmd.OutOrStdout(), r, "", o.assumed, o.output)
}

// runOnline is the online form: the leader's input (decideOnline), then
// the report on that input.
func (o *resilienceOptions) runOnline(e *env, cmd *cobra.Command) error {
	d, assumed, err := decideOnline(e, cmd, &o.inputFlags, o.live)
	if err != nil {
		return err
	}
	w, err := d.WhatIf()
	if err != nil {
		return err
	}
	r, err := resilience.Of(*w, w.In.Policy.FailureDomain())
	if err != nil {
		return err
	}
	for _, w := range d.Gathered.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	return writeResilience(cmd.OutOrStdout(), r, d.Gathered.Kubernetes.Describe(d.At), assumed, o.output)
}

// decideOnline is the online input of a what-if (resilience, forecast):
// the leader's, gathered and decided as sabakan plan does
// (liveview.Reader.Rehearse), with the --assume rehearsals made on
// sabakan's inventory before the query. The offline input's flags are
// refused: online, the settings and the cluster come from etcd.
func decideOnline(e *env, cmd *cobra.Command, in *inputFlags, live planOptions) (*decision.Decision, []assume.Match, error) {
	for _, name := range []string{"template", "constraints", "current", "now", "k8s-nodes", "policy", "rebooting"} {
		if cmd.Flags().Changed(name) {
			return nil, nil, usage.Errorf("--%s needs --machines (online, the settings and the cluster come from etcd, the machines from sabakan)", name)
		}
	}
	live.maxSteps, live.assume = generator.DefaultMaxSteps, in.assume
	if !in.newOnDates {
		live.assumeNew = in.assumeNew
	}
	if cmd.Flags().Changed("retire-wait") {
		live.retireWait = in.retireWait
	}
	return live.decide(e, intake.WhatIf{})
}

// writeResilience writes a report in format (text or json), saying first
// the view of the Kubernetes Nodes it was made with ("" offline) and
// what was assumed (the text's first lines; "view" and "assumed" in
// JSON).
func writeResilience(w io.Writer, r *resilience.Report, view string, assumed []assume.Match, format string) error {
	var b bytes.Buffer
	if format == "json" {
		data, err := json.MarshalIndent(resilienceDocument{Report: r, View: view, Assumed: assumed}, "", "  ")
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteByte('\n')
	} else {
		if view != "" {
			b.WriteString(view)
			b.WriteByte('\n')
		}
		writeAssumed(&b, assumed)
		if view != "" || len(assumed) > 0 {
			b.WriteByte('\n')
		}
		b.Write(r.Text())
	}
	_, err := w.Write(b.Bytes())
	return err
}
