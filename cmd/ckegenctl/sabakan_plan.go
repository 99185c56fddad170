package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// planOptions are the flags of `sabakan plan`; the --dry-run of the
// setting commands uses them too.
type planOptions struct {
	template, constraints, variables string
	policy                           string
	maxSteps                         int
	stored                           bool
	output                           string
	retireWait                       time.Duration
	sabakan                          sabakan.Options
	kubeconfig                       string
	kubeTimeout                      time.Duration
	// assume are the --assume rehearsals (docs/failure-domains.md).
	assume []string
	// assumeNew are the --assume-new machines (docs/forecast.md).
	assumeNew []string
}

func newSabakanPlanCmd(e *env) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "print what the daemon would do, tick after tick, if nothing else changed",
		Long: `Plan reads the settings and the cluster from etcd, queries sabakan (read
only) with the stored URL and query variables, and prints the ticks the daemon
would make until there is nothing left to do: each step's operation and
changes with their scores, then how the plan ends (settled, refused at a
step, or still changing after --max-steps) and a summary of the whole plan.
Nothing is written anywhere.

The plan is the leader's decision, made by the tick's own code from what its
next tick reads: the same settings, cluster and inventory, the leader's memory
(quiet time, trigger) and options (its --retire-wait, inside or beside CKE),
and the same view of the Kubernetes Nodes. That view is the one the leader last
decided with, unless --kubeconfig gives one to read now. The plan's first line
says which view it used and how old it is, or that it was made without Node
taints. What keeps the leader from following the plan now (a switch, the owner,
CKE's pace, the quiet time, the trigger, the circuit breaker) is noted on
standard error.

--assume WHICH:STATE (repeatable) plans as if sabakan held that state for the
machines WHICH names: a serial, an IPv4 address, rack=N or LABEL=VALUE (a
sabakan label), and a state in either case (rack=4:retiring); STATE@DURATION
says how long they have had it (see sabakan generate --help). sabakan is
asked without the query variables' conditions on states, the assumptions
change what it holds, then the states are applied as sabakan applies them:
a machine assumed RETIRED leaves the default query's answer, as it would.
Only this plan sees it: nothing is written to sabakan. The text says what
was assumed, one line per --assume with the machines it matched (and how
many of them the query leaves out), after the Kubernetes view line, and,
when the plan is refused because control planes left the answer at once,
the order that would not be; with -o json or yaml the plan document is the
same as without, and those lines go to standard error. A WHICH that matches
no machine is refused and nothing is printed on stdout.

--template, --constraints, --variables and --policy replace the stored
settings: what would happen if they were set. With a placement policy (stored
or --policy), its metrics are fetched once, as the daemon's tick does. --stored prints instead the plan the daemon
stored at its last tick (kept while the trigger is planning or while it waits
for quiet time, and whenever it changes).

Exit status 0 when a plan was computed, whatever its result; 1 when it could
not be (bad input, etcd or sabakan unreachable).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(e, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.template, "template", "", "what if this template (YAML or JSON) were set")
	f.StringVar(&o.constraints, "constraints", "", "what if these constraints (JSON, CKE's names) were set")
	f.StringVar(&o.variables, "variables", "", "what if these query variables (JSON) were set")
	f.StringVar(&o.policy, "policy", "", "what if this placement policy (YAML or JSON) were set")
	f.BoolVar(&o.stored, "stored", false, "print the plan the daemon stored in sabakan/plan instead")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	f.StringArrayVar(&o.assume, "assume", nil, "WHICH:STATE[@DURATION]: plan as if the machines WHICH names (a serial, an IPv4 address, rack=N or LABEL=VALUE) had that sabakan state; repeatable")
	f.StringArrayVar(&o.assumeNew, "assume-new", nil, "rack=N,role=R,count=N,from=YYYY-MM-DD[,product=P][,retire=YYYY-MM-DD]: plan as if these machines, made up (addresses in 240.0.0.0/4), were in sabakan and HEALTHY now; repeatable")
	o.addFlags(f)
	return cmd
}

// addFlags adds the flags a plan needs besides the what-if files.
func (o *planOptions) addFlags(f *pflag.FlagSet) {
	f.IntVar(&o.maxSteps, "max-steps", generator.DefaultMaxSteps, "stop the plan after this many steps")
	f.DurationVar(&o.retireWait, "retire-wait", 0, "how long a worker stays RETIRED before it is removed (default: the leader's --retire-wait, else "+generator.DefaultRetireWait.String()+")")
	o.addLiveFlags(f)
}

// addLiveFlags adds the flags of reading the live state besides etcd's:
// the Kubernetes view and sabakan's client.
func (o *planOptions) addLiveFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "read the Kubernetes Nodes' taints with this kubeconfig, as the daemon does (default: the view the leader last decided with)")
	f.DurationVar(&o.kubeTimeout, "kubernetes-timeout", kubenodes.DefaultTimeout, "timeout of listing the Kubernetes Nodes")
	f.DurationVar(&o.sabakan.Timeout, "sabakan-timeout", sabakan.DefaultTimeout, "timeout of each sabakan request")
	f.StringVar(&o.sabakan.CAFile, "sabakan-tls-ca-file", "", "CA certificates of sabakan's HTTPS endpoint")
	f.StringVar(&o.sabakan.CertFile, "sabakan-tls-cert-file", "", "client certificate for sabakan")
	f.StringVar(&o.sabakan.KeyFile, "sabakan-tls-key-file", "", "client key for sabakan")
}

func (o *planOptions) run(e *env, stdout, stderr io.Writer) error {
	if err := checkFormat(o.output, "text", "json", "yaml"); err != nil {
		return err
	}
	if o.stored {
		for _, f := range []struct{ name, value string }{{"--template", o.template}, {"--constraints", o.constraints}, {"--variables", o.variables}, {"--policy", o.policy},
			{"--assume", strings.Join(o.assume, " ")}} {
			if f.value != "" {
				return fmt.Errorf("%s: --stored prints the daemon's plan, computed from the stored settings; leave out --stored to see a plan with %s", f.name, f.name)
			}
		}
		return printStoredPlan(e, o.output, stdout, stderr)
	}
	w, err := o.whatIf()
	if err != nil {
		return err
	}
	return o.plan(e, w, stdout, stderr)
}

// whatIf reads the settings the flags give in place of the stored ones,
// each checked as the command that stores it checks it.
func (o *planOptions) whatIf() (intake.WhatIf, error) {
	var w intake.WhatIf
	if o.template != "" {
		data, err := readFile("--template", o.template)
		if err != nil {
			return w, err
		}
		if w.Template, err = templateToStore(data); err != nil {
			return w, fmt.Errorf("--template %s: %w", o.template, err)
		}
	}
	if o.constraints != "" {
		data, err := readFile("--constraints", o.constraints)
		if err != nil {
			return w, err
		}
		c, err := constraints.Parse(data)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			return w, fmt.Errorf("--constraints %s: %w", o.constraints, err)
		}
		w.Constraints = &c
	}
	if o.variables != "" {
		data, err := readFile("--variables", o.variables)
		if err != nil {
			return w, err
		}
		if _, err := sabakan.ParseVariables(data); err != nil {
			return w, fmt.Errorf("--variables %s: %w", o.variables, err)
		}
		w.Variables = data
	}
	if o.policy != "" {
		data, err := readFile("--policy", o.policy)
		if err != nil {
			return w, err
		}
		doc, err := policy.Parse(data)
		if err != nil {
			return w, fmt.Errorf("--policy %s: %w", o.policy, err)
		}
		if w.Policy, err = doc.Canonical(); err != nil {
			return w, err
		}
	}
	return w, nil
}

// plan computes the plan from the live state with w applied, as the
// leader would decide it (liveview.Reader.Decide), and prints it;
// warnings and notes go to stderr.
func (o *planOptions) plan(e *env, w intake.WhatIf, stdout, stderr io.Writer) error {
	d, assumed, err := o.decide(e, w)
	if err != nil {
		return err
	}
	for _, w := range d.Gathered.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	for _, n := range liveview.Notes(d) {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	doc := liveview.Document(d)
	// What was assumed follows the view's line in the text; a JSON or
	// YAML document stays the plan's own, and stderr says it (as
	// sabakan generate --plan does).
	as, _ := assume.ParseAll(o.assume) // parsed by decide already
	if o.output == "text" && len(assumed) > 0 {
		var b strings.Builder
		writeRehearsal(&b, as, assumed, d.Plan.Err, d.Gathered.Settings.Constraints.RateModel())
		doc.View += "\n" + strings.TrimSuffix(b.String(), "\n")
	} else {
		writeRehearsal(stderr, as, assumed, d.Plan.Err, d.Gathered.Settings.Constraints.RateModel())
	}
	return planreport.Write(stdout, doc, o.output)
}

// decide is the leader's decision with w applied and the --assume
// rehearsals made on what it gathered, read only, with what each
// rehearsal matched.
func (o *planOptions) decide(e *env, w intake.WhatIf) (*decision.Decision, []assume.Match, error) {
	if o.maxSteps < 1 {
		return nil, nil, usage.Errorf("--max-steps: must be at least 1, got %d", o.maxSteps)
	}
	if o.retireWait < 0 {
		return nil, nil, usage.Errorf("--retire-wait: must not be negative, got %s", o.retireWait)
	}
	if o.kubeTimeout <= 0 {
		return nil, nil, usage.Errorf("--kubernetes-timeout: must be positive, got %s", o.kubeTimeout)
	}
	as, err := assume.ParseAll(o.assume)
	if err != nil {
		return nil, nil, usage.Errorf("--assume %v", err)
	}
	news, err := assume.ParseNews(o.assumeNew)
	if err != nil {
		return nil, nil, usage.Errorf("--assume-new %v", err)
	}
	nodes, err := kubenodes.Open(o.kubeconfig, o.kubeTimeout)
	if err != nil {
		return nil, nil, err
	}
	p := liveview.Preview{WhatIf: w, RetireWait: o.retireWait, MaxSteps: o.maxSteps, Assume: as, New: news}
	if nodes != nil {
		p.Kubernetes = kubenodes.APIView(nodes, nil)
	}
	var d *decision.Decision
	var matches []assume.Match
	err = e.withStorage(func(ctx context.Context, st storage.Storage) error {
		// The reader bounds its etcd reads by --timeout and each sabakan
		// request by --sabakan-timeout, so a slow sabakan is not reported
		// as a slow etcd.
		r := liveview.NewReader(st, liveview.Options{Sabakan: o.sabakan, EtcdTimeout: e.timeout})
		var err error
		d, matches, err = r.Rehearse(context.Background(), p)
		return err
	})
	if ae := (*liveview.AssumeError)(nil); errors.As(err, &ae) {
		err = fmt.Errorf("--assume %w", err)
	}
	return d, matches, err
}

// dryRun is --dry-run of a setting command: print the plan with the new
// value instead of storing it.
type dryRun struct {
	enabled bool
	plan    planOptions
}

// addDryRun adds --dry-run, and the flags of the plan it prints, to cmd.
func addDryRun(cmd *cobra.Command) *dryRun {
	d := &dryRun{plan: planOptions{output: "text"}}
	cmd.Flags().BoolVar(&d.enabled, "dry-run", false, "store nothing; print the plan the daemon would follow with this value (as ckegenctl sabakan plan)")
	d.plan.addFlags(cmd.Flags())
	return d
}

// run prints the plan with w applied; a note on stderr says that nothing
// was stored.
func (d *dryRun) run(e *env, cmd *cobra.Command, w intake.WhatIf) error {
	if err := d.plan.plan(e, w, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
		return err
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "dry run: nothing was stored")
	return nil
}

// store stores data, which the caller checked, under key: with --dry-run
// it prints the plan with w applied instead; otherwise it prints the
// warnings of that plan first (warn).
func (d *dryRun) store(e *env, cmd *cobra.Command, w intake.WhatIf, key string, data []byte) error {
	if d.enabled {
		return d.run(e, cmd, w)
	}
	d.warn(e, cmd, w)
	return e.withStorage(func(ctx context.Context, st storage.Storage) error {
		return st.Put(ctx, key, data)
	})
}

// checkTimeout bounds each sabakan request of the check a setting command
// makes before it stores (unless --sabakan-timeout says otherwise): the
// check is advice, and a sabakan that does not answer must not hold the
// setting for the client's full timeout and retries.
const checkTimeout = 5 * time.Second

// warn runs the generator dry on the current inventory with w applied, as
// --dry-run does, and prints the warnings of the plan's ticks on stderr
// (those in printed excepted), so that a value that works but looks wrong
// (a template role that matches no machine) is seen when it is set. It
// stores nothing and never fails: before the integration is set up (no
// template or no URL stored) there is nothing to check against, and when
// the plan cannot be computed a note says why; the caller stores the value
// either way.
func (d *dryRun) warn(e *env, cmd *cobra.Command, w intake.WhatIf, printed ...string) {
	stderr := cmd.ErrOrStderr()
	o := d.plan
	if !cmd.Flags().Changed("sabakan-timeout") {
		o.sabakan.Timeout = checkTimeout
	}
	o.sabakan.Retries = -1
	dec, _, err := o.decide(e, w)
	var ref *intake.Refusal
	switch {
	case errors.As(err, &ref) && ref.Missing:
		// Waiting for a setting never stored (the decision's hold): the
		// integration is not set up, there is nothing to check against.
		return
	case err != nil:
		fmt.Fprintf(stderr, "note: not tried on the inventory (%v); ckegenctl sabakan status shows the daemon's warnings after its next tick\n", err)
		return
	}
	seen := map[string]bool{}
	for _, s := range printed {
		seen[s] = true
	}
	all := slices.Clone(dec.Gathered.Warnings)
	for _, s := range dec.Plan.Steps {
		all = append(all, s.Warnings...)
	}
	all = append(all, dec.Plan.Warnings...)
	for _, s := range all {
		if !seen[s] {
			seen[s] = true
			fmt.Fprintf(stderr, "warning: %s\n", s)
		}
	}
}

// printStoredPlan prints sabakan/plan: in text, a line about when and
// from what the daemon computed it, then the plan.
func printStoredPlan(e *env, format string, stdout, stderr io.Writer) error {
	return e.withStorage(func(ctx context.Context, st storage.Storage) error {
		p, err := planreport.ReadStored(ctx, st)
		if errors.Is(err, storage.ErrNotFound) {
			return errors.New("no stored plan: the daemon stores one while the trigger is planning or while it waits for quiet time (ckegenctl sabakan plan computes one now)")
		}
		if err != nil {
			return err
		}
		v, err := st.Get(ctx, storage.KeyCluster)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		clusterRev := v.ModRevision
		if clusterRev != p.ClusterRevision {
			fmt.Fprintf(stderr, "note: the cluster changed since the plan was computed (revision %d, now %d); the daemon recomputes it at every tick\n", p.ClusterRevision, clusterRev)
		}
		if p.Omitted != "" {
			fmt.Fprintf(stderr, "note: left out of the stored plan: %s\n", p.Omitted)
		}
		if format != "text" {
			return printData(stdout, p, format)
		}
		fmt.Fprintf(stdout, "plan computed at %s (trigger %s, template revision %d, cluster revision %d)\n\n",
			ts(p.ComputedAt), p.Trigger, p.TemplateRevision, p.ClusterRevision)
		return planreport.Write(stdout, &p.Document, "text")
	})
}
