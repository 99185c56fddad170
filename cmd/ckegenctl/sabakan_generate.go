package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/world"
)

type generateOptions struct {
	inputFlags
	templateChanged bool
	explain         string
	output          string
	plan            bool
	maxSteps        int
}

// inputFlags are the offline generator's input files and settings, which
// `sabakan generate` and `sabakan resilience` read the same way.
type inputFlags struct {
	template    string
	machines    string
	constraints string
	current     string
	now         string
	retireWait  time.Duration
	k8sNodes    string
	policy      string
	rebooting   []string
	// assume are the --assume rehearsals (docs/failure-domains.md);
	// assumed says, after load, how many machines each matched.
	assume  []string
	assumed []assume.Match
	// assumeNew are the --assume-new machines: load adds them to the
	// machines, HEALTHY now, unless newOnDates (the forecast adds them
	// on their dates).
	assumeNew  []string
	newOnDates bool
}

// addFlags defines the input flags on f.
func (o *inputFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.template, "template", "", "cluster template file (YAML or JSON)")
	f.StringVar(&o.machines, "machines", "", "machines file: a JSON array of machines or a searchMachines GraphQL response")
	f.StringVar(&o.constraints, "constraints", "", "constraints file (JSON); defaults apply when absent")
	f.StringVar(&o.now, "now", "", "the time of the decision, RFC3339 (default: the current time)")
	f.DurationVar(&o.retireWait, "retire-wait", generator.DefaultRetireWait, "how long a worker stays RETIRED before it is removed")
	f.StringVar(&o.k8sNodes, "k8s-nodes", "", `Kubernetes nodes file: [{"name": ADDRESS, "taints": [...]}], or kubectl get nodes -o json`)
	f.StringVar(&o.policy, "policy", "", "placement policy file (YAML or JSON, docs/design.md 12); its metrics are fetched from its providers")
	f.StringSliceVar(&o.rebooting, "rebooting", nil, "addresses of nodes that are rebooting (comma separated)")
	f.StringArrayVar(&o.assume, "assume", nil, "WHICH:STATE[@DURATION]: decide as if the machines WHICH names (a serial, an IPv4 address, rack=N or LABEL=VALUE) had that sabakan state; repeatable")
	f.StringArrayVar(&o.assumeNew, "assume-new", nil, "rack=N,role=R,count=N,from=YYYY-MM-DD[,product=P][,retire=YYYY-MM-DD]: machines that do not exist yet, made up (addresses in 240.0.0.0/4), HEALTHY (now; the forecast: from their from date); repeatable")
}

func newSabakanGenerateCmd() *cobra.Command {
	o := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate --template T.yml --machines M.json",
		Short: "run the generator offline, without etcd or sabakan",
		Long: `Generate prints the cluster the daemon would write, from files.

Without --current it builds a first cluster (Generate). With --current it makes
one maintenance step (Update), and with --template-changed it re-renders the
cluster from the template when Update has nothing to do (Regenerate).

Exit status 0 with the cluster on stdout; 0 with "nothing to do" on stderr and
nothing on stdout; 1 with the error on stderr and nothing on stdout.

--explain writes the decision to stderr. The constraints choose the model of
the workers: in the rate model (minimum-workers-rate) --explain text ends with
"model: rate, workers 80.0% ((9 workers - 1) / 10 machines),
minimum-workers-rate 80%", the figure of the cluster this run leaves (the
current one when nothing is done), machines counting the machines file after
sanitizing; --explain json has "model" ("count" or "rate") and, in the rate
model, "rate": {"workers", "machines", "percent", "minimumWorkersRate"}.

With --plan it prints instead every step the daemon would make until there is
nothing left to do, as ckegenctl sabakan plan does (-o text, json or yaml; text
by default), and exits 0 whatever the plan's result.

--assume WHICH:STATE (repeatable) decides as if sabakan said the machines
WHICH names had that state: a serial, an IPv4 address, rack=N or LABEL=VALUE
(a sabakan label), and a state in either case (rack=4:retiring). A machine
whose state changes has had it for 0 s, as sabakan reports it right after the
change; STATE@DURATION says how long instead (rack=4:RETIRED@1h, past the
retire wait). The machines file is taken as sabakan's answer as it is, but a
machine assumed into a state the default query leaves out (RETIRED) leaves
it, as it would leave sabakan's answer. Stderr begins with one line per
--assume and the machines it matched ("assume rack=4:RETIRING: 20 machines";
"assume S000092:RETIRED: 1 machine left out of the query's answer (...)"; in
the --explain json object, "assumed" with "leftOut"), then, when control
planes leaving the answer at once are refused, the order that would not be;
with --plan -o text, stdout begins with them. A WHICH that matches no
machine, or a STATE that is not one, is refused and nothing is printed on
stdout.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "template", "machines"); err != nil {
				return err
			}
			if o.plan {
				return o.runPlan(cmd)
			}
			if cmd.Flags().Changed("max-steps") {
				return usage.Errorf("--max-steps needs --plan")
			}
			if len(o.assumeNew) > 0 {
				return usage.Errorf("--assume-new needs --plan: a cluster.yml with made-up machines is not one to apply")
			}
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.addFlags(f)
	f.StringVar(&o.current, "current", "", "current cluster.yml: make one maintenance step instead of a new cluster")
	f.BoolVar(&o.templateChanged, "template-changed", false, "with --current: re-render from the template when there is nothing else to do")
	f.StringVar(&o.explain, "explain", "", "write the decision to stderr: text or json")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json (with --plan: text, json or yaml)")
	f.BoolVar(&o.plan, "plan", false, "print the plan (every step until nothing is left to do) instead of one step")
	f.IntVar(&o.maxSteps, "max-steps", generator.DefaultMaxSteps, "with --plan: stop the plan after this many steps")
	return cmd
}

// explanation is the --explain json object. A change is
// {"action", "address", "serial", "score", "reason"}, score being the total
// or null.
type explanation struct {
	Op string `json:"op"`
	// Model is the model of the workers (count or rate), and Rate, in the
	// rate model, the figure of the cluster this run leaves (the new one,
	// or the current one when nothing is done or on error); both are left
	// out when the input could not be read, Rate when there is no cluster.
	Model    string                `json:"model,omitempty"`
	Rate     *generator.WorkerRate `json:"rate,omitempty"`
	Changes  []generator.Change    `json:"changes"`
	Warnings []string              `json:"warnings"`
	Error    string                `json:"error,omitempty"`
	// Assumed are the --assume rehearsals and the machines each matched.
	Assumed []assume.Match `json:"assumed,omitempty"`
}

// opNothingToDo is the op --explain reports when no rule applies.
const opNothingToDo = "nothing to do"

func (o *generateOptions) run(stdout, stderr io.Writer) error {
	if err := o.checkFlags(); err != nil {
		return err
	}
	defer collectLess(o.machines, o.current)()
	r := o.generate()
	nothing := errors.Is(r.err, generator.ErrNothingToDo)
	if o.explain != "json" {
		as, _ := assume.ParseAll(o.assume) // parsed by load already
		writeRehearsal(stderr, as, o.assumed, r.err, r.model == constraints.RateModel)
	}
	switch o.explain {
	case "json":
		r.assumed = o.assumed
		if err := r.writeJSON(stderr); err != nil {
			return err
		}
		if r.err != nil && !nothing {
			return errReported
		}
	case "text":
		writeTextExplanation(stderr, r.res, r.warnings, r.err, planreport.ModelLine(r.model, r.rate))
	default:
		for _, w := range r.warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		if nothing {
			fmt.Fprintf(stderr, "%v\n", r.err)
		}
	}
	if nothing {
		return nil
	}
	if r.err != nil {
		return r.err
	}
	_, err := stdout.Write(r.out)
	return err
}

// checkFlags refuses flags that cannot work together.
func (o *generateOptions) checkFlags() error {
	switch o.explain {
	case "", "text", "json":
	default:
		return usage.Errorf("--explain: must be text or json, got %q", o.explain)
	}
	switch o.output {
	case "yaml", "json":
	default:
		return usage.Errorf("--output: must be yaml or json, got %q", o.output)
	}
	if o.templateChanged && o.current == "" {
		return usage.Errorf("--template-changed needs --current")
	}
	return o.checkAssume()
}

// checkAssume refuses, as a usage error, an --assume that does not parse.
func (o *inputFlags) checkAssume() error {
	if _, err := assume.ParseAll(o.assume); err != nil {
		return usage.Errorf("--assume %v", err)
	}
	if _, err := assume.ParseNews(o.assumeNew); err != nil {
		return usage.Errorf("--assume-new %v", err)
	}
	return nil
}

// writeAssumed writes one line per --assume: what it assumed and how many
// machines it matched.
func writeAssumed(w io.Writer, ms []assume.Match) {
	for _, m := range ms {
		fmt.Fprintln(w, m.String())
	}
}

// writeRehearsal is writeAssumed, then, when the rehearsal was refused
// for a reason the order of the change avoids, a line that says that
// order in the model in force (rate: minimum-workers-rate; assume.Avoid).
func writeRehearsal(w io.Writer, as []assume.Assumption, ms []assume.Match, refused error, rate bool) {
	writeAssumed(w, ms)
	if s := assume.Avoid(as, ms, generator.Refusal(refused) == reason.TooManyNonExistent, rate); s != "" {
		fmt.Fprintf(w, "note: %s\n", s)
	}
}

// generated is what one offline run decided: the result and the cluster
// as printed, or the error (generator.ErrNothingToDo included), with the
// model of the workers and the rate of the cluster the run leaves.
type generated struct {
	res      *generator.Result
	out      []byte
	err      error
	warnings []string
	model    string
	rate     *generator.WorkerRate
	assumed  []assume.Match
}

// generate reads the files and runs one tick of the generator.
func (o *generateOptions) generate() generated {
	var r generated
	in, warnings, err := o.load()
	r.warnings = warnings
	if err != nil {
		r.err = err
		return r
	}
	// A one-off run says the notes of its settings as warnings, as
	// set-template does when it stores the template.
	r.warnings = append(r.warnings, generator.TemplateNotes(in.Template, in.Constraints)...)
	w := world.World{In: in, TemplateChanged: o.templateChanged}
	r.res, r.err = w.Tick(in, w.TemplateChanged)
	if r.res != nil {
		r.warnings = append(r.warnings, r.res.Warnings...)
	}
	if r.err == nil {
		r.out, r.err = marshalCluster(r.res.Cluster, o.output)
	}
	// The model in force and, in the rate model, the figure of the
	// cluster this run leaves, counted on the machines the generator saw.
	r.model = in.Constraints.Model()
	left := in.Current
	if r.err == nil {
		left = r.res.Cluster
	}
	if left != nil {
		r.rate = generator.RateOf(left, len(in.Machines), in.Constraints)
	}
	return r
}

// writeJSON writes the --explain json object.
func (r generated) writeJSON(w io.Writer) error {
	e := explanation{Model: r.model, Rate: r.rate, Changes: []generator.Change{}, Warnings: r.warnings, Assumed: r.assumed}
	if e.Warnings == nil {
		e.Warnings = []string{}
	}
	switch {
	case errors.Is(r.err, generator.ErrNothingToDo):
		e.Op = opNothingToDo
	case r.err != nil:
		e.Error = r.err.Error()
	default:
		e.Op = r.res.Op
		e.Changes = append(e.Changes, r.res.Changes...)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", data)
	return nil
}

// writeTextExplanation writes the warnings, then the operation and its
// changes (or nothing to do), then modelLine when it is not "" (the rate
// model's figure; see planreport.ModelLine).
func writeTextExplanation(w io.Writer, res *generator.Result, warnings []string, err error, modelLine string) {
	var b bytes.Buffer
	for _, wr := range warnings {
		fmt.Fprintf(&b, "warning: %s\n", wr)
	}
	switch {
	case errors.Is(err, generator.ErrNothingToDo):
		fmt.Fprintf(&b, "%v\n", err)
	case err != nil:
		// the error itself is printed by main
	default:
		fmt.Fprintf(&b, "op: %s\n", res.Op)
		for _, t := range planreport.Tell(res.Changes, func(c generator.Change) (string, string, string) { return c.Action, c.Address, c.Reason }) {
			c := t.Change
			if t.Addresses != nil {
				fmt.Fprintf(&b, "- %s\n", planreport.Group(t.Addresses, c.Reason))
				continue
			}
			serial := c.Serial
			if serial == "" {
				serial = "-"
			}
			fmt.Fprintf(&b, "- %s %s (serial %s): %s\n", c.Action, c.Address, serial, c.Reason)
		}
	}
	if modelLine != "" {
		b.WriteString(modelLine)
		b.WriteByte('\n')
	}
	_, _ = w.Write(b.Bytes())
}

func marshalCluster(c *cluster.Cluster, format string) ([]byte, error) {
	if format == "json" {
		return c.MarshalIndentJSON()
	}
	return c.MarshalYAML()
}

// load reads every input file into a generator input, with the warnings
// about machines, constraints and metrics, and applies the --assume
// rehearsals to the machines (o.assumed says what each matched).
func (o *inputFlags) load() (generator.Input, []string, error) {
	now := time.Now().UTC()
	if o.retireWait < 0 {
		return generator.Input{}, nil, usage.Errorf("--retire-wait: must not be negative, got %s", o.retireWait)
	}
	if o.now != "" {
		t, err := time.Parse(time.RFC3339, o.now)
		if err != nil {
			return generator.Input{}, nil, usage.Errorf("--now: must be RFC3339 (2006-01-02T15:04:05Z), got %q", o.now)
		}
		now = t
	}
	s, inv, warnings, err := intake.FromFiles(context.Background(), intake.Files{
		Template:      fileFlag("--template", o.template),
		Machines:      fileFlag("--machines", o.machines),
		Constraints:   fileFlag("--constraints", o.constraints),
		Current:       fileFlag("--current", o.current),
		NodeTaints:    fileFlag("--k8s-nodes", o.k8sNodes),
		Policy:        fileFlag("--policy", o.policy),
		Rebooting:     o.rebooting,
		RebootingFlag: "--rebooting",
	})
	if err != nil {
		return generator.Input{}, nil, err
	}
	in := s.Input(inv, now, o.retireWait)
	as, err := assume.ParseAll(o.assume)
	if err != nil {
		return generator.Input{}, nil, usage.Errorf("--assume %v", err)
	}
	// The machines file is the query's answer as it is; a machine assumed
	// into a state the default query leaves out (RETIRED) leaves it, as
	// it would leave sabakan's answer.
	_, states := sabakan.Variables{}.WithoutStates()
	kept, matches, err := assume.Apply(in.Machines, as, states)
	if err != nil {
		return generator.Input{}, nil, fmt.Errorf("--assume %w", err)
	}
	if len(kept) < len(in.Machines) && in.InventoryRoles != nil {
		in.InventoryRoles = rolesLeft(in.InventoryRoles, in.Machines, kept)
	}
	in.Machines, o.assumed = kept, matches
	if len(o.assumeNew) > 0 && !o.newOnDates {
		if in, err = o.addNew(in, states); err != nil {
			return generator.Input{}, nil, err
		}
	}
	return in, warnings, nil
}

// addNew is in with the --assume-new machines, HEALTHY now, as the
// query would answer them (world.World.Add); o.assumed says what each
// made up.
func (o *inputFlags) addNew(in generator.Input, states assume.Query) (generator.Input, error) {
	news, err := assume.ParseNews(o.assumeNew)
	if err != nil {
		return in, usage.Errorf("--assume-new %v", err)
	}
	for _, m := range in.Machines {
		if err := assume.RefuseMadeUp(m.Spec.Serial, m.Address()); err != nil {
			return in, err
		}
	}
	made, matches := assume.MakeUp(news, assume.DefaultLifetime)
	ptrs := make([]*machine.Machine, len(made))
	for i := range made {
		ptrs[i] = &made[i]
	}
	w, _ := world.World{In: in, Query: states}.Add(ptrs)
	o.assumed = append(o.assumed, matches...)
	return w.In, nil
}

// rolesLeft are the roles of the inventory once the machines of all that
// are not in kept have left: a role whose every machine left is gone
// from the answer, as from sabakan's (the generator's guard against a
// template role that matches no machine reads them).
func rolesLeft(roles []string, all, kept []*machine.Machine) []string {
	still := make(map[string]bool, len(roles))
	for _, m := range kept {
		still[m.Spec.Role] = true
	}
	gone := map[string]bool{}
	for _, m := range all {
		if !still[m.Spec.Role] {
			gone[m.Spec.Role] = true
		}
	}
	out := make([]string, 0, len(roles))
	for _, r := range roles {
		if !gone[r] {
			out = append(out, r)
		}
	}
	return out
}

// fileFlag is the source of a file flag; the zero source when the flag
// is not given.
func fileFlag(flag, path string) intake.Source {
	if path == "" {
		return intake.Source{}
	}
	return intake.File(flag, path)
}

// collectLess sets the garbage collector for one offline run reading
// files, and returns what sets it back. A run allocates a few times the
// size of its input and ends: collecting during it costs a fifth of its
// CPU (20,000 machines: 90 MB allocated, the live heap most of it) to free
// what the end of the process frees anyway. The collector then runs only
// when the heap reaches 256 MiB plus 16 times the size of files (a run
// allocates 5 to 10 times its files), so that a larger input than
// expected is still collected; GOGC or GOMEMLIMIT, when set, are left as
// they are.
func collectLess(files ...string) (restore func()) {
	return collectAt(256<<20, 16, files...)
}

// collectAt is collectLess with the heap the collector waits for: base
// plus perByte times the size of files. A forecast, which plans an event
// after another and frees each one's ticks, keeps a live heap of about
// three times its files: it collects at 64 MiB plus three times them
// (20,000 machines: 112 MiB).
func collectAt(base, perByte int64, files ...string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	var size int64
	for _, name := range files {
		if fi, err := os.Stat(name); err == nil && name != "" {
			size += fi.Size()
		}
	}
	limit := debug.SetMemoryLimit(base + perByte*size)
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

func readFile(flag, name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return data, nil
}
