package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/world"
)

// runPlan is `sabakan generate --plan`: the plan from the files, printed
// as `sabakan plan` prints it; the input's warnings go to stderr.
func (o *generateOptions) runPlan(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("output") {
		o.output = "text"
	}
	if err := checkFormat(o.output, "text", "json", "yaml"); err != nil {
		return err
	}
	if o.explain != "" {
		return usage.Errorf("--explain: a plan explains every step already; leave out --explain with --plan")
	}
	if o.templateChanged && o.current == "" {
		return usage.Errorf("--template-changed needs --current")
	}
	if o.maxSteps < 1 {
		return usage.Errorf("--max-steps: must be at least 1, got %d", o.maxSteps)
	}
	if err := o.checkAssume(); err != nil {
		return err
	}
	in, warnings, err := o.load()
	if err != nil {
		return err
	}
	_, states := sabakan.Variables{}.WithoutStates()
	w := world.World{In: in, Query: states, TemplateChanged: o.templateChanged, Interval: decision.DefaultInterval}
	p, err := w.Plan(nil, o.maxSteps)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	d := planreport.New(p)
	d.SetModel(in.Constraints, len(in.Machines))
	// What was assumed begins the text; a JSON or YAML document stays the
	// plan's own, and stderr says it.
	as, _ := assume.ParseAll(o.assume) // parsed by load already
	if o.output == "text" && len(o.assumed) > 0 {
		var b bytes.Buffer
		writeRehearsal(&b, as, o.assumed, p.Err, in.Constraints.RateModel())
		b.WriteByte('\n')
		b.Write(d.Text())
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	writeRehearsal(cmd.ErrOrStderr(), as, o.assumed, p.Err, in.Constraints.RateModel())
	return planreport.Write(cmd.OutOrStdout(), d, o.output)
}
