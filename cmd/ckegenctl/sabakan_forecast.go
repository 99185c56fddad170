package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/forecast"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// forecastOptions are `sabakan forecast`'s flags: the offline
// generator's input (inputFlags), the flags of reading the live state,
// the forecast's own and the output format.
type forecastOptions struct {
	inputFlags
	live        planOptions
	until       string
	resolution  string
	retireLead  string
	needWorkers int
	output      string
	// The purchases' flags: --buy, --lead-time, --lifetime, --buy-racks,
	// --rack-size; --assume-new the machines assumed to arrive.
	buy      bool
	leadTime string
	lifetime string
	buyRacks []int
	rackSize int
}

// forecastLong is `sabakan forecast --help`.
const forecastLong = `Forecast says until when the cluster meets its constraints if no machine is
bought, and what happens on the way. From now to --until, at each event (the
machines whose state changes in one period of --resolution), it runs the
daemon's planner on the inventory as it would be then, from the cluster the
previous event settled on: a machine is assumed RETIRING --retire-lead before
its retireDate and RETIRED at it, and a machine leaves sabakan's answer when
the query leaves out its new state (RETIRED, by default: offline the default
query, online the stored variables). The machines whose change falls
in a period take it on the period's first day (or now, for the current
period): the forecast errs early, never late.

The first line answers: the runway, the last day the cluster meets its
constraints, and why it ends (the HEALTHY workers fall below the need, a
control plane that is no longer HEALTHY has nothing to replace it, a failure
domain holds more control planes than etcd's quorum survives losing, or the
plan is refused), or that nothing fails before --until. A table of the events
follows: how many machines become RETIRING and RETIRED, what the plan does,
the control planes and their failure domains, the HEALTHY workers against
the need, the domains at risk; then each event's warnings. After a refused
plan the forecast goes on from the cluster as the refusal left it, and says
so at each later event.

--need-workers is the HEALTHY workers the site needs: by default
minimum-workers in the count model; the rate model has none unless given
(its rate is a share of the machines, which retirements alone do not
lower), and there the runway ends only on the control planes or a refusal.

Online (without --machines) the input is the leader's, read as sabakan plan
reads it, and now is the current time; offline, --template and --machines
(required) and --constraints, --current, --now, --retire-wait, --k8s-nodes,
--policy and --rebooting are the input, as generate's. --assume rehearses a
change first (see generate --help): the forecast starts from it.

--buy answers the budget question: at each event that fails for want of
machines, it buys the fewest that keep it (the workers short, split by role;
a control-plane candidate where none is left), arriving on the event's date,
in the racks of --buy-racks that hold the fewest machines of their role
(never past --rack-size), with the product most machines of their role have,
ordered --lead-time before. The text begins with the purchases and the
runway if nothing is bought; -o json adds "purchases", "unbought" and
"madeUp"; -o csv is one row per purchase. --assume-new
rack=N,role=R,count=N,from=DATE[,product=P][,retire=DATE] (repeatable)
assumes machines that do not exist yet, HEALTHY from the first event on or
after from, retiring --lifetime later unless retire says; their serials
(made-up-...) and addresses (240.0.0.0/4) are made up. Every purchase given
back as --assume-new takes the runway to --until (docs/forecast.md).

Exit status 0 with the forecast on stdout; 1 when the input cannot be read or
planned (nothing on stdout); 2 on a usage error.`

// newSabakanForecastCmd is `sabakan forecast`: what the machines' retire
// dates will do to the cluster if nothing is bought (docs/forecast.md).
// Its input is `sabakan resilience`'s, online or offline; the forecast
// itself is forecast.Of on that generator.Input either way.
func newSabakanForecastCmd(e *env) *cobra.Command {
	o := &forecastOptions{}
	o.newOnDates = true
	cmd := &cobra.Command{
		Use:   "forecast [--template T.yml --machines M.json]",
		Short: "until when the cluster meets its constraints as the machines retire, if nothing is bought",
		Long:  forecastLong,
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fo, err := o.check(cmd)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("machines") {
				return o.runOnline(e, cmd, fo)
			}
			for _, name := range []string{"kubeconfig", "kubernetes-timeout", "sabakan-timeout", "sabakan-tls-ca-file", "sabakan-tls-cert-file", "sabakan-tls-key-file"} {
				if cmd.Flags().Changed(name) {
					return usage.Errorf("--%s reads the live state: leave out --machines (and the other input files) to forecast online", name)
				}
			}
			if err := requireFlags(cmd, "template", "machines"); err != nil {
				return err
			}
			return o.run(cmd, fo)
		},
	}
	f := cmd.Flags()
	o.addFlags(f)
	f.StringVar(&o.current, "current", "", "current cluster.yml (default: the cluster Generate would make)")
	f.StringVar(&o.until, "until", "", "the forecast's end, a date (2029-12-31) or RFC3339 (default: 3 years after now)")
	f.StringVar(&o.resolution, "resolution", string(forecast.Month), "the length of a period: month, week or day")
	f.StringVar(&o.retireLead, "retire-lead", "30d", "how long before its retireDate a machine is RETIRING, in days (30d) or a duration (12h); 0: RETIRED at once")
	f.IntVar(&o.needWorkers, "need-workers", 0, "the HEALTHY workers the site needs (default: minimum-workers in the count model, none in the rate model)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json, or csv (the purchases, with --buy)")
	o.addBuyFlags(f)
	o.live.addLiveFlags(f)
	return cmd
}

// addBuyFlags defines the purchases' flags on f.
func (o *forecastOptions) addBuyFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.buy, "buy", false, "buy what keeps the cluster within its constraints until --until: the purchases, then the forecast with them")
	f.StringVar(&o.leadTime, "lead-time", "90d", "with --buy: how long before it is needed a machine is ordered, in days (90d) or a duration")
	f.StringVar(&o.lifetime, "lifetime", "1825d", "a new machine's retire date after its arrival (--buy, and --assume-new without retire=), in days or a duration")
	f.IntSliceVar(&o.buyRacks, "buy-racks", nil, "with --buy: the racks new machines may go to (default: the racks that hold machines of the template's roles)")
	f.IntVar(&o.rackSize, "rack-size", 0, "with --buy: the machines a rack holds; a purchase never overfills a rack, and says when a new rack is needed (default: no bound)")
}

// forecastFlags are the forecast's options as the flags give them; until
// is zero when --until is not given (3 years after now).
type forecastFlags struct {
	forecast.Options
	untilGiven bool
}

// check reads the forecast's own flags, refusing a bad one by name.
func (o *forecastOptions) check(cmd *cobra.Command) (forecastFlags, error) {
	var fo forecastFlags
	if err := checkFormat(o.output, "text", "json", "csv"); err != nil {
		return fo, err
	}
	if o.output == "csv" && !o.buy {
		return fo, usage.Errorf("--output csv: the CSV is the purchases: give --buy")
	}
	for _, name := range []string{"lead-time", "buy-racks", "rack-size"} {
		if cmd.Flags().Changed(name) && !o.buy {
			return fo, usage.Errorf("--%s needs --buy", name)
		}
	}
	news, err := assume.ParseNews(o.assumeNew)
	if err != nil {
		return fo, usage.Errorf("--assume-new %v", err)
	}
	lifetime, err := parseLead(o.lifetime)
	if err != nil || lifetime == 0 {
		if err == nil {
			err = fmt.Errorf("must be positive, got %q", o.lifetime)
		}
		return fo, usage.Errorf("--lifetime: %v", err)
	}
	fo.New, fo.Lifetime = news, lifetime
	if o.buy {
		lead, err := parseLead(o.leadTime)
		if err != nil {
			return fo, usage.Errorf("--lead-time: %v", err)
		}
		if o.rackSize < 0 {
			return fo, usage.Errorf("--rack-size: must be at least 1, got %d", o.rackSize)
		}
		for _, k := range o.buyRacks {
			if k < 0 {
				return fo, usage.Errorf("--buy-racks: a rack is a number from 0, got %d", k)
			}
		}
		fo.Buy = &forecast.Buy{LeadTime: lead, Racks: o.buyRacks, RackSize: o.rackSize}
	}
	if err := o.checkAssume(); err != nil {
		return fo, err
	}
	r, err := forecast.ParseResolution(o.resolution)
	if err != nil {
		return fo, usage.Errorf("--resolution: %v", err)
	}
	lead, err := parseLead(o.retireLead)
	if err != nil {
		return fo, usage.Errorf("--retire-lead: %v", err)
	}
	if cmd.Flags().Changed("need-workers") && o.needWorkers < 1 {
		return fo, usage.Errorf("--need-workers: must be at least 1, got %d", o.needWorkers)
	}
	fo.Resolution, fo.RetireLead, fo.NeedWorkers = r, lead, o.needWorkers
	if o.until != "" {
		if fo.Until, err = parseUntil(o.until); err != nil {
			return fo, usage.Errorf("--until: %v", err)
		}
		fo.untilGiven = true
	}
	if fo.untilGiven && o.now != "" {
		if now, err := time.Parse(time.RFC3339, o.now); err == nil && fo.Until.Before(now) {
			return fo, untilBefore(fo.Until, now)
		}
	}
	return fo, nil
}

// at is the options for a forecast made at now: --until, or 3 years
// after now, not before now.
func (fo forecastFlags) at(now time.Time) (forecast.Options, error) {
	o := fo.Options
	if !fo.untilGiven {
		o.Until = now.AddDate(forecast.DefaultYears, 0, 0)
	}
	if o.Until.Before(now) {
		return o, untilBefore(o.Until, now)
	}
	return o, nil
}

func untilBefore(until, now time.Time) error {
	return usage.Errorf("--until: %s is before now (%s): give a later date", until.Format(time.RFC3339), now.Format(time.RFC3339))
}

// parseUntil reads a date (the end of that day's start: 2029-12-31 is
// 2029-12-31T00:00:00Z) or an RFC3339 time.
func parseUntil(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("want a date (2029-12-31) or RFC3339 (2029-12-31T00:00:00Z), got %q", s)
	}
	return t.UTC(), nil
}

// parseLead reads days (30d) or a Go duration (12h, 0), not negative.
func parseLead(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("want days (30d) or a duration (12h), got %q", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("want days (30d) or a duration (12h), got %q", s)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, got %q", s)
	}
	return d, nil
}

// run is the offline form: the input from the files, with the --assume
// rehearsals made on them as generate makes them, then the forecast; a
// machine leaves the machines file when the default query leaves out its
// new state.
func (o *forecastOptions) run(cmd *cobra.Command, fo forecastFlags) error {
	defer collectAt(64<<20, 3, o.machines, o.current)()
	in, warnings, err := o.load()
	if err != nil {
		return err
	}
	_, states := sabakan.Variables{}.WithoutStates()
	return o.forecast(cmd, world.World{In: in, Query: states}, fo, warnings, o.assumed)
}

// runOnline is the online form: the leader's input (decideOnline), then
// the forecast; a machine leaves sabakan's answer when the stored query
// variables leave out its new state.
func (o *forecastOptions) runOnline(e *env, cmd *cobra.Command, fo forecastFlags) error {
	d, assumed, err := decideOnline(e, cmd, &o.inputFlags, o.live)
	if err != nil {
		return err
	}
	w, err := d.WhatIf()
	if err != nil {
		return err
	}
	// What is on order is assumed, as the leader's forecast assumes it.
	var orders storage.Orders
	if err := e.withStorage(func(ctx context.Context, st storage.Storage) error {
		orders, _, err = st.GetOrders(ctx)
		return err
	}); err != nil {
		return err
	}
	news, _, err := liveview.OrdersNew(orders)
	if err != nil {
		return err
	}
	fo.New = append(news, fo.New...)
	for i, n := range news {
		assumed = append(assumed, assume.Match{Assume: fmt.Sprintf("order %d: %s", orders.Orders[i].ID, n), Machines: n.Count})
	}
	return o.forecast(cmd, *w, fo, d.Gathered.Warnings, assumed)
}

// forecastDocument is the JSON output: the forecast and the --assume
// rehearsals it was made under.
type forecastDocument struct {
	*forecast.Forecast
	Assumed []assume.Match `json:"assumed,omitempty"`
}

// forecast makes the forecast of w and writes it; the input's warnings
// go to stderr.
func (o *forecastOptions) forecast(cmd *cobra.Command, w world.World, fo forecastFlags, warnings []string, assumed []assume.Match) error {
	opts, err := fo.at(w.In.Now)
	if err != nil {
		return err
	}
	f, err := forecast.Of(w, opts)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	return writeForecast(cmd.OutOrStdout(), f, assumed, o.output)
}

// writeForecast writes a forecast in format (text, json or csv); what
// was assumed (--assume, the orders) follows the runway's line
// ("assumed" in JSON).
func writeForecast(w io.Writer, f *forecast.Forecast, assumed []assume.Match, format string) error {
	var b bytes.Buffer
	switch format {
	case "csv":
		if err := f.WriteCSV(&b); err != nil {
			return err
		}
	case "json":
		data, err := json.MarshalIndent(forecastDocument{Forecast: f, Assumed: assumed}, "", "  ")
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteByte('\n')
	default:
		lines := make([]string, len(assumed))
		for i, m := range assumed {
			lines[i] = m.String()
		}
		b.Write(f.TextWith(lines))
	}
	_, err := w.Write(b.Bytes())
	return err
}
