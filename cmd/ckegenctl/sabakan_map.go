package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

type mapOptions struct {
	machines  string
	current   string
	template  string
	cons      string
	rebooting []string
	next      string
	width     int
	color     string
	output    string
	sabakan   sabakan.Options
}

func newSabakanMapCmd(e *env) *cobra.Command {
	o := &mapOptions{}
	cmd := &cobra.Command{
		Use:   "map",
		Short: "draw the data center as racks: control planes, workers, candidates, states",
		Long: `Map draws one column per rack and one cell per machine in index order:
C control plane, w worker, . unused candidate, - not usable (not HEALTHY, not
returned by the query variables, rebooting, a role no template takes, or a bad
inventory entry). A mark after the cell shows a rebooting node (~), a member
whose machine is in trouble (!), or what the next step does to it (+ ^ v x *).
Under each band of racks: the control planes and workers of each rack by role.

Under the summary, the model of the workers in force: "model: count", or
"model: rate" with the rate model's figure, (workers - 1) / machines * 100
against minimum-workers-rate, of the cluster as the next step leaves it
(offline, of the current cluster), the machines being those the daemon's
query returns (-o json: "model" and "rate").

Online (the default) it draws the decision the leader would make now, read
only, as ` + "`sabakan plan`" + ` does: the settings, cluster and reboot queue from
etcd, the machines of the stored query variables from sabakan (and every
other machine around them), the next step it would take highlighted; notes
say what keeps the leader from taking it now. Online it also marks, by the
stored placement policy's failure domain (the rack without a policy), each
rack that holds control planes of a domain whose loss breaks etcd's quorum in
the cluster as that step leaves it: its number followed by #, and a line
"quorum at risk" under the map (-o json: "failureDomain", "quorumAtRisk").

Offline, --machines reads a machines file instead, with --current,
--template, --constraints and --rebooting as further inputs; the model is
shown only with --constraints, and no failure domain is marked.

Colour shows the machine state, only on a terminal unless --color=always.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(e, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.machines, "machines", "", "draw from a machines file instead of etcd and sabakan")
	f.StringVar(&o.current, "current", "", "with --machines: the current cluster.yml")
	f.StringVar(&o.template, "template", "", "with --machines: the template, so that roles no template takes are not candidates")
	f.StringVar(&o.cons, "constraints", "", "with --machines: the constraints (JSON), to show the model of the workers and its rate")
	f.StringSliceVar(&o.rebooting, "rebooting", nil, "with --machines: addresses of rebooting nodes (comma separated)")
	f.StringVar(&o.next, "next", "", "highlight a next step: the JSON of `sabakan generate --explain json` or of a plan (its first step)")
	f.IntVar(&o.width, "width", 0, "terminal width to wrap to (default: the terminal's, or 80)")
	f.StringVar(&o.color, "color", "auto", "colour the states: auto (only on a terminal), always or never")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.DurationVar(&o.sabakan.Timeout, "sabakan-timeout", sabakan.DefaultTimeout, "timeout of each sabakan request")
	f.StringVar(&o.sabakan.CAFile, "sabakan-tls-ca-file", "", "CA certificates of sabakan's HTTPS endpoint")
	f.StringVar(&o.sabakan.CertFile, "sabakan-tls-cert-file", "", "client certificate for sabakan")
	f.StringVar(&o.sabakan.KeyFile, "sabakan-tls-key-file", "", "client key for sabakan")
	return cmd
}

func (o *mapOptions) run(e *env, stdout, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	var next []generator.Change
	if o.next != "" {
		data, err := readFile("--next", o.next)
		if err != nil {
			return err
		}
		if next, err = parseNextStep(data); err != nil {
			return fmt.Errorf("--next %s: %w", o.next, err)
		}
	}

	var in liveview.MapInput
	var notes []string
	var err error
	if o.machines != "" {
		in, err = o.offlineInput()
	} else {
		in, notes, err = o.onlineInput(e)
	}
	if err != nil {
		return err
	}
	if next != nil {
		// --next replaces the decision's next step.
		in.Next = next
	}
	return o.write(liveview.BuildMap(in), notes, stdout, stderr)
}

// check refuses flags that cannot go together, before anything is read.
func (o *mapOptions) check() error {
	if err := checkFormat(o.output, "text", "json"); err != nil {
		return err
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return usage.Errorf("--color: must be auto, always or never, got %q", o.color)
	}
	if o.width < 0 {
		return usage.Errorf("--width: must be a number of columns > 0, got %d", o.width)
	}
	if o.machines == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--current", o.current != ""}, {"--template", o.template != ""}, {"--constraints", o.cons != ""}, {"--rebooting", len(o.rebooting) > 0}} {
			if f.set {
				return usage.Errorf("%s needs --machines (online, the cluster, template, constraints and reboot queue come from etcd)", f.name)
			}
		}
	}
	return nil
}

// write prints the map m in the format asked, the notes and its warnings
// on stderr.
func (o *mapOptions) write(m *liveview.Map, notes []string, stdout, stderr io.Writer) error {
	for _, n := range notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if o.output == "json" {
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(data, '\n'))
		return err
	}
	tty := isTerminal(stdout)
	opts := liveview.TextOptions{Width: o.width, Color: o.color == "always" || (o.color == "auto" && tty && colorWanted())}
	if opts.Width == 0 && tty {
		if w, _, err := term.GetSize(int(stdout.(*os.File).Fd())); err == nil {
			opts.Width = w
		}
	}
	return m.WriteText(stdout, opts)
}

// offlineInput is the map of the decision on the files (decision.Files:
// the gather and the decision of the online map, on what the files say);
// only --machines is required. Without --constraints the model is not
// known: the site's may be either. The next step is --next's alone: the
// decision's picks score the days to each retire date, and a map of
// files draws the same on any day.
func (o *mapOptions) offlineInput() (liveview.MapInput, error) {
	s, raw, err := intake.ReadFiles(intake.Files{
		Template:      fileFlag("--template", o.template),
		Machines:      fileFlag("--machines", o.machines),
		Constraints:   fileFlag("--constraints", o.cons),
		Current:       fileFlag("--current", o.current),
		Rebooting:     o.rebooting,
		RebootingFlag: "--rebooting",
	})
	if err != nil {
		return liveview.MapInput{}, err
	}
	d := decision.Decide(decision.Files(s, raw, time.Now(), decision.Config{}.WithDefaults()), decision.Memory{})
	in, err := liveview.MapInputOf(d)
	if err != nil {
		return liveview.MapInput{}, err
	}
	in.Context, in.LeftOut, in.Next = raw, "ignored as a bad inventory entry (see warnings)", nil
	if !s.ConstraintsStored {
		in.Model, in.Rate = "", nil
	}
	return in, nil
}

// onlineInput is the decision the leader would make now, read from etcd
// (within --timeout) and sabakan (within --sabakan-timeout per request);
// an error says which one failed.
func (o *mapOptions) onlineInput(e *env) (in liveview.MapInput, notes []string, err error) {
	err = e.withStorage(func(_ context.Context, st storage.Storage) error {
		// The reader bounds its etcd reads by --timeout and each sabakan
		// request by --sabakan-timeout, so a slow sabakan is not reported
		// as a slow etcd.
		r := liveview.NewReader(st, liveview.Options{Sabakan: o.sabakan, EtcdTimeout: e.timeout})
		in, notes, err = r.Input(context.Background())
		return err
	})
	return in, notes, err
}

// nextStep is what --next reads: an explanation ({"op", "changes"}) or a
// plan ({"steps": [{"op", "changes"}, ...]}), of which the first step is
// the next one.
type nextStep struct {
	Op      string       `json:"op"`
	Changes []nextChange `json:"changes"`
	Steps   []struct {
		Changes []nextChange `json:"changes"`
	} `json:"steps"`
}

type nextChange struct {
	Action  string `json:"action"`
	Address string `json:"address"`
	Serial  string `json:"serial"`
	Reason  string `json:"reason"`
}

// parseNextStep reads --next: every error at its line and column, in
// JSON's words (strictjson's); the fields of the explanation or plan it
// does not read are skipped.
func parseNextStep(data []byte) ([]generator.Change, error) {
	var s nextStep
	if err := strictjson.UnmarshalIgnoringUnknown(data, &s,
		strictjson.Document(`the JSON of an explanation {"op", "changes"} or of a plan {"steps"}`)); err != nil {
		return nil, err
	}
	field := strictjson.Path(nil).Key("changes")
	changes := s.Changes
	if s.Changes == nil && len(s.Steps) > 0 {
		field, changes = strictjson.Path(nil).Key("steps").Index(0).Key("changes"), s.Steps[0].Changes
	}
	out := make([]generator.Change, 0, len(changes))
	for i, c := range changes {
		if c.Action == "" || c.Address == "" {
			return nil, strictjson.Place(strictjson.Invalidf(field.Index(i), "action and address must be set"), data)
		}
		out = append(out, generator.Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Reason: c.Reason})
	}
	return out, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colorWanted follows the NO_COLOR convention and TERM=dumb.
func colorWanted() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}
