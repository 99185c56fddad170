// Package planreport presents a plan (docs/design.md 11.1): what the daemon would do,
// tick after tick, if nothing else changed. A Document holds the plan's
// result, its steps with their changes and scores, a summary of what the
// whole plan changes, and the final cluster; it is written as text for
// people, or as JSON or YAML for programs. A Document read back from JSON
// (a stored plan) is written exactly as the one it was made from.
package planreport

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
)

// Document is a plan as it is shown and stored.
type Document struct {
	// View says which view of the Kubernetes Nodes the plan was made
	// with, and how old it was, or that it was made without Node taints
	// ("": made offline, from files).
	View string `json:"view,omitempty"`
	// Result is generator.PlanSettled, PlanRefused, PlanHeld or
	// PlanMaxSteps.
	Result string `json:"result"`
	// Reason and Message say why a plan ends refused or held, as the
	// daemon's status says it: its reason code and words. Error is a
	// refused step's error.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
	// Model is the model of the workers the plan was computed in:
	// constraints.CountModel or RateModel (see SetModel); "" when not
	// recorded.
	Model string `json:"model,omitempty"`
	// Rate is the rate model's figure of the final cluster, (workers - 1)
	// / machines * 100 against minimum-workers-rate: whether a RETIRED
	// worker could still leave. nil in the count model and without a
	// final cluster.
	Rate  *generator.WorkerRate `json:"rate,omitempty"`
	Steps []Step                `json:"steps"`
	// Warnings are those of the tick that ended the plan.
	Warnings []string `json:"warnings"`
	Summary  Summary  `json:"summary"`
	// Cluster is the cluster after the last step (null when a new cluster
	// could not be built).
	Cluster *cluster.Cluster `json:"cluster"`
}

// Step is one tick: the same object as `ckegenctl sabakan generate --explain
// json` writes for one decision.
type Step struct {
	Op       string   `json:"op"`
	Changes  []Change `json:"changes"`
	Warnings []string `json:"warnings"`
	// Wait is the hold the leader waits out before the step (the retire
	// wait, the quiet time, the trigger): until when, and what.
	Wait *Wait `json:"wait,omitempty"`
}

// WaitWords says when a step that waits for reason comes: "from T, the
// end of reason", or "after reason" for a wait no time ends (the
// trigger). The plan's text, the status and the page say it so.
func WaitWords(reason string, until time.Time) string {
	if until.IsZero() {
		return "after " + reason
	}
	return "from " + until.UTC().Format(time.RFC3339) + ", the end of " + reason
}

// Wait is a timed hold a step waits out.
type Wait struct {
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason"`
}

// Change is one change of a step, with the value of the score that made
// it (null when no score was involved; see ScoreValue), and the placement
// and group of a machine added under a policy's ordered groups.
type Change struct {
	Action    string   `json:"action"`
	Address   string   `json:"address"`
	Serial    string   `json:"serial"`
	Score     *float64 `json:"score"`
	Reason    string   `json:"reason"`
	Placement string   `json:"placement,omitempty"`
	Group     string   `json:"group,omitempty"`
}

// Summary compares the cluster before the plan with the cluster after it.
// A node is counted once by membership (added, removed, promoted, demoted);
// a node that stays what it was is counted as re-tainted when its taints
// change and as re-labelled when its labels or annotations change.
type Summary struct {
	Before     Shape `json:"before"`
	After      Shape `json:"after"`
	Added      Tally `json:"added"`
	Removed    Tally `json:"removed"`
	Promoted   Tally `json:"promoted"`
	Demoted    Tally `json:"demoted"`
	Retainted  Tally `json:"re-tainted"`
	Relabelled Tally `json:"re-labelled"`
}

// Shape is how many control planes and workers a cluster has.
type Shape struct {
	ControlPlanes int `json:"control-planes"`
	Workers       int `json:"workers"`
}

// Tally counts nodes, by the machine role and rack of their labels ("-"
// when a node has no such label).
type Tally struct {
	Nodes  int            `json:"nodes"`
	ByRole map[string]int `json:"by-role"`
	ByRack map[string]int `json:"by-rack"`
}

// none names a missing role or rack.
const none = "-"

func (t *Tally) add(n *cluster.Node) {
	t.Nodes++
	t.ByRole[labelOr(n, labels.Role)]++
	t.ByRack[labelOr(n, labels.Rack)]++
}

func labelOr(n *cluster.Node, key string) string {
	if v := n.Labels[key]; v != "" {
		return v
	}
	return none
}

// New makes the document of a plan.
func New(p *generator.Plan) *Document {
	d := &Document{
		Result:   p.Result,
		Steps:    make([]Step, len(p.Steps)),
		Warnings: nonNil(p.Warnings),
		Summary:  summarize(p.Start, p.Cluster),
		Cluster:  p.Cluster,
	}
	d.Reason, d.Message = p.Reason, p.Message
	if p.Err != nil {
		d.Error = p.Err.Error()
	}
	for i, s := range p.Steps {
		d.Steps[i] = Step{Op: s.Op, Changes: Changes(s.Changes), Warnings: nonNil(s.Warnings)}
		if w := s.Wait; w != nil {
			d.Steps[i].Wait = &Wait{Until: w.Until.UTC(), Reason: w.Reason}
		}
	}
	return d
}

// SetModel records the model of the workers in c and, in the rate model,
// the figure of the final cluster with machines in the inventory: the
// number of machines the plan was computed with (after sanitizing), as
// rule 7 counts them.
func (d *Document) SetModel(c constraints.Constraints, machines int) {
	d.Model = c.Model()
	d.Rate = nil
	if d.Cluster != nil {
		d.Rate = generator.RateOf(d.Cluster, machines, c)
	}
}

// ModelLine is the line that says, for people, which model is in force
// and, in the rate model, the figure r: "model: rate, workers 80.0% ((9
// workers - 1) / 10 machines), minimum-workers-rate 80%". It is "" in the
// count model (and when the model is unknown), whose output is as it was
// before there were two models.
func ModelLine(model string, r *generator.WorkerRate) string {
	switch {
	case model != constraints.RateModel:
		return ""
	case r == nil:
		return "model: rate"
	}
	return "model: rate, workers " + r.String()
}

// Changes converts a decision's changes, keeping each score's value.
func Changes(cs []generator.Change) []Change {
	out := make([]Change, len(cs))
	for i, c := range cs {
		out[i] = Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Score: ScoreValue(c.Score),
			Reason: c.Reason, Placement: c.Placement, Group: c.Group}
	}
	return out
}

// ScoreValue is a score as plans, the daemon's status and its history
// keep it: its whole value (the integer terms plus a policy's metric
// points) rounded to three decimals, as explanations show it; nil for no
// score. In JSON an integral value is written without a fraction (1003),
// as the total was before metric points existed.
func ScoreValue(s *generator.Score) *float64 {
	if s == nil {
		return nil
	}
	v := math.Round(s.Value()*1000) / 1000
	if v == 0 {
		v = 0 // no -0
	}
	return &v
}

// FormatScore writes a score's value as JSON does: 1003, 1002.5.
func FormatScore(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// summarize compares two clusters, joined on the node address; either may
// be nil (no cluster).
func summarize(before, after *cluster.Cluster) Summary {
	s := Summary{Before: shapeOf(before), After: shapeOf(after)}
	for _, t := range []*Tally{&s.Added, &s.Removed, &s.Promoted, &s.Demoted, &s.Retainted, &s.Relabelled} {
		t.ByRole, t.ByRack = map[string]int{}, map[string]int{}
	}
	var old map[string]*cluster.Node
	if before != nil {
		old = make(map[string]*cluster.Node, len(before.Nodes))
		for _, n := range before.Nodes {
			old[n.Address] = n
		}
	}
	kept := map[string]bool{}
	if after != nil {
		for _, n := range after.Nodes {
			o, ok := old[n.Address]
			if !ok {
				s.Added.add(n)
				continue
			}
			kept[n.Address] = true
			switch {
			case n == o:
			case !o.ControlPlane && n.ControlPlane:
				s.Promoted.add(n)
			case o.ControlPlane && !n.ControlPlane:
				s.Demoted.add(n)
			default:
				if !slices.Equal(o.Taints, n.Taints) {
					s.Retainted.add(n)
				}
				if !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) {
					s.Relabelled.add(n)
				}
			}
		}
	}
	if before != nil {
		for _, n := range before.Nodes {
			if !kept[n.Address] {
				s.Removed.add(n)
			}
		}
	}
	return s
}

func shapeOf(c *cluster.Cluster) Shape {
	var s Shape
	if c == nil {
		return s
	}
	for _, n := range c.Nodes {
		if n.ControlPlane {
			s.ControlPlanes++
		} else {
			s.Workers++
		}
	}
	return s
}

// Write writes d in format: "text", "json" or "yaml".
func Write(w io.Writer, d *Document, format string) error {
	var data []byte
	var err error
	switch format {
	case "text":
		data = d.Text()
	case "json":
		data, err = json.MarshalIndent(d, "", "  ")
		data = append(data, '\n')
	case "yaml":
		data, err = yaml.Marshal(d)
	default:
		return fmt.Errorf("output: must be text, json or yaml, got %q", format)
	}
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// Text is the plan for people: one block per step (the operation, then one
// line per change with its address, serial, score and reason), then how the
// plan ends, in the rate model the figure of the final cluster (ModelLine),
// and the summary.
func (d *Document) Text() []byte {
	var b bytes.Buffer
	if d.View != "" {
		b.WriteString(d.View)
		b.WriteString("\n\n")
	}
	// A warning is listed once, where it first appears: the generator
	// gives it again at every tick while its cause holds.
	seen := map[string]bool{}
	for i, s := range d.Steps {
		if w := s.Wait; w != nil {
			fmt.Fprintf(&b, "step %d: %s, %s\n", i+1, s.Op, WaitWords(w.Reason, w.Until))
		} else {
			fmt.Fprintf(&b, "step %d: %s\n", i+1, s.Op)
		}
		if len(s.Changes) == 0 {
			b.WriteString("  (no node changes)\n")
		}
		for _, t := range Tell(s.Changes, func(c Change) (string, string, string) { return c.Action, c.Address, c.Reason }) {
			if t.Addresses != nil {
				fmt.Fprintf(&b, "  - %s\n", Group(t.Addresses, t.Change.Reason))
				continue
			}
			writeChange(&b, t.Change)
		}
		writeWarnings(&b, "  ", s.Warnings, seen)
		b.WriteByte('\n')
	}
	b.WriteString("plan: ")
	b.WriteString(d.ending())
	b.WriteByte('\n')
	writeWarnings(&b, "", d.Warnings, seen)
	if line := ModelLine(d.Model, d.Rate); line != "" {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	s := &d.Summary
	fmt.Fprintf(&b, "control planes: %d -> %d; workers: %d -> %d\n",
		s.Before.ControlPlanes, s.After.ControlPlanes, s.Before.Workers, s.After.Workers)
	for _, row := range []struct {
		name string
		t    *Tally
	}{
		{"added", &s.Added}, {"removed", &s.Removed}, {"promoted", &s.Promoted},
		{"demoted", &s.Demoted}, {"re-tainted", &s.Retainted}, {"re-labelled", &s.Relabelled},
	} {
		fmt.Fprintf(&b, "  %-12s %d", row.name+":", row.t.Nodes)
		if row.t.Nodes > 0 {
			b.WriteString(" (role ")
			writeCounts(&b, row.t.ByRole, "", cmp.Compare[string])
			b.WriteString("; ")
			writeCounts(&b, row.t.ByRack, "rack ", compareRacks)
			b.WriteByte(')')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeWarnings writes the warnings of ws not in seen, each on a line
// after indent, and adds them to seen.
func writeWarnings(b *bytes.Buffer, indent string, ws []string, seen map[string]bool) {
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			fmt.Fprintf(b, "%swarning: %s\n", indent, w)
		}
	}
}

func writeChange(b *bytes.Buffer, c Change) {
	serial := c.Serial
	if serial == "" {
		serial = none
	}
	fmt.Fprintf(b, "  - %s %s (serial %s", c.Action, c.Address, serial)
	if c.Score != nil {
		fmt.Fprintf(b, ", score %s", FormatScore(*c.Score))
	}
	fmt.Fprintf(b, "): %s\n", c.Reason)
}

// ending says how the plan ends.
func (d *Document) ending() string {
	n := len(d.Steps)
	switch d.Result {
	case generator.PlanSettled:
		if n == 0 {
			return "settled: nothing to do"
		}
		return "settled after " + steps(n)
	case generator.PlanRefused:
		if n == 0 {
			return "refused at step 1: " + d.Error
		}
		return fmt.Sprintf("refused at step %d, after %s: %s", n+1, steps(n), d.Error)
	case generator.PlanHeld:
		if n == 0 {
			return "held at step 1 (" + d.Reason + "): " + d.Message
		}
		return fmt.Sprintf("held at step %d (%s), after %s: %s", n+1, d.Reason, steps(n), d.Message)
	case generator.PlanMaxSteps:
		return "max-steps: stopped after " + steps(n) + " with more to do"
	}
	return d.Result
}

func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return strconv.Itoa(n) + " steps"
}

// writeCounts writes "a: 1, b: 2" in the order of compare.
func writeCounts(b *bytes.Buffer, counts map[string]int, prefix string, compare func(a, b string) int) {
	keys := slices.SortedFunc(maps.Keys(counts), compare)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%s%s: %d", prefix, k, counts[k])
	}
}

// compareRacks orders racks by number, and names that are not numbers
// after them.
func compareRacks(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil && x != y:
		return cmp.Compare(x, y)
	case errA == nil && errB == nil:
		return cmp.Compare(a, b) // "01" and "1"
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// Told is a change as a report tells it: a change, or the re-renders of
// several nodes for the same reason (generator.ActionRerender), told
// once with how many nodes and which.
type Told[C any] struct {
	// Change is the change told alone, or the first of the group.
	Change C
	// Addresses are the nodes of a group of re-renders (nil: a change
	// told alone).
	Addresses []string
}

// Tell groups the re-renders among cs by reason, each group where its
// first change stands; every other change is told alone, in order.
// action, address and reason read a change.
func Tell[C any](cs []C, read func(C) (action, address, reason string)) []Told[C] {
	var out []Told[C]
	group := map[string]int{}
	for _, c := range cs {
		action, address, reason := read(c)
		if action != generator.ActionRerender {
			out = append(out, Told[C]{Change: c})
			continue
		}
		if i, ok := group[reason]; ok {
			out[i].Addresses = append(out[i].Addresses, address)
			continue
		}
		group[reason] = len(out)
		out = append(out, Told[C]{Change: c, Addresses: []string{address}})
	}
	for i := range out {
		if len(out[i].Addresses) == 1 {
			out[i].Addresses = nil
		}
	}
	return out
}

// maxNamed is how many addresses a group of re-renders names.
const maxNamed = 3

// Group says a group of re-renders in a line: "re-rendered 42 nodes:
// labels topology.kubernetes.io/zone added (10.0.0.1, 10.0.0.2,
// 10.0.0.3 and 39 more)".
func Group(addresses []string, reason string) string {
	named := strings.Join(addresses[:min(len(addresses), maxNamed)], ", ")
	if more := len(addresses) - maxNamed; more > 0 {
		named += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("re-rendered %d nodes: %s (%s)", len(addresses), reason, named)
}

// Summarize is a step's changes in short, for a log line: each action
// and address, the re-renders grouped.
func Summarize(cs []generator.Change) []string {
	told := Tell(cs, func(c generator.Change) (string, string, string) { return c.Action, c.Address, c.Reason })
	out := make([]string, len(told))
	for i, t := range told {
		if t.Addresses != nil {
			out[i] = Group(t.Addresses, t.Change.Reason)
			continue
		}
		out[i] = t.Change.Action + " " + t.Change.Address
	}
	return out
}
