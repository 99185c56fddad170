package policy

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/template"
)

// Policy is a validated policy compiled for one template. A nil *Policy is
// valid and means "no policy": every Placement it returns is nil, and a nil
// *Placement admits every machine with no groups and no points.
type Policy struct {
	doc *Document
	// metrics are the defined metrics' names, sorted: the columns of Values.
	metrics    []string
	placements map[string]*Placement
	labelKeys  []string
}

// Placement is the compiled placement of one template.
type Placement struct {
	key     string
	spread  Spread
	labels  []LabelConstraint
	metrics []metricCheck
	groups  []group
	scores  []score
}

type group struct {
	name    string
	labels  []LabelConstraint
	metrics []metricCheck
}

// metricCheck is a metric constraint with its metric's column.
type metricCheck struct {
	MetricConstraint
	col int
}

// score is one weighted metric term.
type score struct {
	name     string
	col      int
	weight   float64
	min, max float64
}

// Load parses data (YAML or JSON) and compiles it for t.
func Load(data []byte, t *template.Template) (*Policy, error) {
	d, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Compile(d, t)
}

// Compile validates d, checks its placements against t (which must not be
// nil) and compiles it.
func Compile(d *Document, t *template.Template) (*Policy, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	if err := d.CheckTemplate(t); err != nil {
		return nil, err
	}
	p := &Policy{doc: d, metrics: sortedKeys(d.Metrics), placements: map[string]*Placement{}}
	for key, spec := range d.Placements {
		pl := &Placement{key: key}
		if spec.Spread != nil {
			pl.spread = *spec.Spread
		}
		pl.labels, pl.metrics = p.compileConstraints(spec.Constraints, spec.MetricConstraints)
		for _, g := range spec.Groups {
			cg := group{name: g.Name}
			cg.labels, cg.metrics = p.compileConstraints(g.Constraints, g.MetricConstraints)
			pl.groups = append(pl.groups, cg)
		}
		for _, m := range spec.Metrics {
			def := d.Metrics[m.Name]
			pl.scores = append(pl.scores, score{
				name: m.Name, col: p.MetricIndex(m.Name), weight: float64(m.Weight),
				min: float64(def.Min), max: float64(def.Max),
			})
		}
		p.placements[key] = pl
	}
	keys := map[string]bool{}
	for _, pl := range p.placements {
		for _, c := range pl.labels {
			keys[c.Key] = true
		}
		for _, g := range pl.groups {
			for _, c := range g.labels {
				keys[c.Key] = true
			}
		}
	}
	p.labelKeys = sortedKeys(keys)
	return p, nil
}

// compileConstraints parses constraints that Validate accepted.
func (p *Policy) compileConstraints(cs, mcs []string) ([]LabelConstraint, []metricCheck) {
	var lcs []LabelConstraint
	for _, s := range cs {
		c, _ := ParseLabelConstraint(s) // validated
		lcs = append(lcs, c)
	}
	var checks []metricCheck
	for _, s := range mcs {
		c, _ := ParseMetricConstraint(s) // validated
		checks = append(checks, metricCheck{c, p.MetricIndex(c.Metric)})
	}
	return lcs, checks
}

// LabelKeys lists, sorted, every label key that some constraint reads.
func (p *Policy) LabelKeys() []string {
	if p == nil {
		return nil
	}
	return p.labelKeys
}

// Document returns the policy as written.
func (p *Policy) Document() *Document {
	if p == nil {
		return nil
	}
	return p.doc
}

// Placement returns the placement of the template with this key
// (ControlPlane, or a worker template's role; see Key), nil when the
// policy says nothing about it.
func (p *Policy) Placement(key string) *Placement {
	if p == nil {
		return nil
	}
	return p.placements[key]
}

// Stickiness is the gain a rebalancing move must exceed; 0 never moves.
func (p *Policy) Stickiness() float64 {
	if p == nil {
		return 0
	}
	return float64(p.doc.Stickiness)
}

// FailureDomain is what the policy calls a failure domain (docs/design.md
// 20): its failureDomain's label, or sabakan's rack (also without a
// policy).
func (p *Policy) FailureDomain() failuredomain.Key {
	if p == nil || p.doc.FailureDomain == nil {
		return failuredomain.Rack()
	}
	return failuredomain.ByLabel(p.doc.FailureDomain.Label)
}

// Spreads reports whether a placement of the policy spreads (spread:
// quorum or maxSkew), which makes the generator count nodes by failure
// domain.
func (p *Policy) Spreads() bool {
	if p == nil {
		return false
	}
	for _, pl := range p.placements {
		if pl.SpreadQuorum() || pl.MaxSkew() > 0 {
			return true
		}
	}
	return false
}

// SpreadQuorum reports whether the placement has spread: quorum.
func (pl *Placement) SpreadQuorum() bool { return pl != nil && pl.spread.Quorum }

// MaxSkew is the placement's spread maxSkew, 0 for none.
func (pl *Placement) MaxSkew() int {
	if pl == nil {
		return 0
	}
	return pl.spread.MaxSkew
}

// Metrics returns the defined metrics' names, sorted: the columns of a
// Row.
func (p *Policy) Metrics() []string {
	if p == nil {
		return nil
	}
	return p.metrics
}

// MetricIndex is the column of a metric in a Row, or -1.
func (p *Policy) MetricIndex(name string) int {
	if p == nil {
		return -1
	}
	i, ok := slices.BinarySearch(p.metrics, name)
	if !ok {
		return -1
	}
	return i
}

// Key is the placement's key.
func (pl *Placement) Key() string {
	if pl == nil {
		return ""
	}
	return pl.key
}

// NumGroups is the number of the placement's ordered groups (0: none, all
// candidates form one pool).
func (pl *Placement) NumGroups() int {
	if pl == nil {
		return 0
	}
	return len(pl.groups)
}

// GroupName is the name of group i, "" when i is out of range (such as
// GroupSet.First of an empty set).
func (pl *Placement) GroupName(i int) string {
	if pl == nil || i < 0 || i >= len(pl.groups) {
		return ""
	}
	return pl.groups[i].name
}

// GroupSet is a set of a placement's groups, by index (group 0 first).
type GroupSet uint64

// Has reports whether group i is in the set.
func (s GroupSet) Has(i int) bool { return i >= 0 && i < 64 && s&(1<<uint(i)) != 0 }

// First is the index of the earliest group in the set, -1 when empty.
func (s GroupSet) First() int {
	if s == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(s))
}

// MatchLabels reports whether l (the labels the machine would have as a
// node of this template) satisfy the placement's own constraints.
func (pl *Placement) MatchLabels(l Labels) bool {
	if pl == nil {
		return true
	}
	return matchLabels(pl.labels, l)
}

// MatchMetrics reports whether the machine's metric values satisfy the
// placement's own metric constraints.
func (pl *Placement) MatchMetrics(r Row) bool {
	if pl == nil {
		return true
	}
	return matchMetrics(pl.metrics, r)
}

// Groups returns the groups whose constraints and metric constraints the
// machine satisfies.
func (pl *Placement) Groups(l Labels, r Row) GroupSet {
	if pl == nil {
		return 0
	}
	var s GroupSet
	for i := range pl.groups {
		g := &pl.groups[i]
		if matchLabels(g.labels, l) && matchMetrics(g.metrics, r) {
			s |= 1 << uint(i)
		}
	}
	return s
}

// Admit reports whether a machine is a candidate for the template (docs/design.md
// 12.2-12.4): the placement's constraints and metric constraints hold, and
// when the placement has groups, those of at least one group. It also
// returns the machine's groups.
func (pl *Placement) Admit(l Labels, r Row) (GroupSet, bool) {
	if pl == nil {
		return 0, true
	}
	if !matchLabels(pl.labels, l) || !matchMetrics(pl.metrics, r) {
		return 0, false
	}
	s := pl.Groups(l, r)
	return s, len(pl.groups) == 0 || s != 0
}

func matchLabels(cs []LabelConstraint, l Labels) bool {
	for i := range cs {
		if !cs[i].Matches(l) {
			return false
		}
	}
	return true
}

func matchMetrics(cs []metricCheck, r Row) bool {
	for i := range cs {
		if !cs[i].Holds(r.at(cs[i].col)) {
			return false
		}
	}
	return true
}

// Points is the machine's metric score: the sum over the placement's
// metrics of weight x clamp((value - min) / (max - min), 0, 1); a metric
// without a value adds 0.
func (pl *Placement) Points(r Row) float64 {
	if pl == nil {
		return 0
	}
	var sum float64
	for i := range pl.scores {
		s := &pl.scores[i]
		if v := r.at(s.col); !math.IsNaN(v) {
			sum += s.weight * normalize(v, s.min, s.max)
		}
	}
	return sum
}

// normalize maps [min, max] to [0, 1], clamping outside values (also
// infinite ones).
func normalize(v, lo, hi float64) float64 {
	switch {
	case v <= lo:
		return 0
	case v >= hi:
		return 1
	}
	return (v - lo) / (hi - lo)
}

// Term is one metric's part of a machine's points, for explanations.
type Term struct {
	Metric string `json:"metric"`
	// Value is the raw value; nil when the machine has none.
	Value      *float64 `json:"value"`
	Weight     float64  `json:"weight"`
	Normalized float64  `json:"normalized"`
	Points     float64  `json:"points"`
}

// String writes the term as explanations show it:
// "inlet_temperature=27 (normalized 0.4) x weight -5 = -2" or
// "inlet_temperature: no value, 0".
func (t Term) String() string {
	return string(t.AppendText(make([]byte, 0, 64)))
}

// AppendText appends String's text to b: explanations write one term per
// metric of every pick, thousands per decision, without fmt.
func (t Term) AppendText(b []byte) []byte {
	b = append(b, t.Metric...)
	if t.Value == nil {
		return append(b, ": no value, 0"...)
	}
	b = append(b, '=')
	b = strconv.AppendFloat(b, *t.Value, 'g', -1, 64)
	b = append(b, " (normalized "...)
	b = appendRound3(b, t.Normalized)
	b = append(b, ") x weight "...)
	b = strconv.AppendFloat(b, t.Weight, 'g', -1, 64)
	b = append(b, " = "...)
	return appendRound3(b, t.Points)
}

// appendRound3 appends v rounded to three decimals, without trailing
// zeros.
func appendRound3(b []byte, v float64) []byte {
	r := math.Round(v*1000) / 1000
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.AppendFloat(b, r, 'f', -1, 64)
}

// Terms explains Points term by term, in the placement's order; their
// Points add up to Points(r) exactly.
func (pl *Placement) Terms(r Row) []Term {
	if pl == nil || len(pl.scores) == 0 {
		return nil
	}
	terms := make([]Term, len(pl.scores))
	for i := range pl.scores {
		s := &pl.scores[i]
		terms[i] = Term{Metric: s.name, Weight: s.weight}
		if v := r.at(s.col); !math.IsNaN(v) {
			terms[i].Value = &v
			terms[i].Normalized = normalize(v, s.min, s.max)
			terms[i].Points = s.weight * terms[i].Normalized
		}
	}
	return terms
}

// Rejection says why a machine is not a candidate ("" when it is): the
// first constraint that fails with the label's value, or for each group
// the reason it does not take the machine.
func (pl *Placement) Rejection(l Labels, r Row) string {
	if pl == nil {
		return ""
	}
	if why := failure(pl.labels, pl.metrics, l, r); why != "" {
		return why
	}
	if len(pl.groups) == 0 || pl.Groups(l, r) != 0 {
		return ""
	}
	parts := make([]string, len(pl.groups))
	for i := range pl.groups {
		g := &pl.groups[i]
		parts[i] = "group " + g.name + ": " + failure(g.labels, g.metrics, l, r)
	}
	return "in no group: " + strings.Join(parts, "; ")
}

func failure(lcs []LabelConstraint, mcs []metricCheck, l Labels, r Row) string {
	for i := range lcs {
		if c := &lcs[i]; !c.Matches(l) {
			return fmt.Sprintf("constraint %q does not hold: %s", c.String(), c.why(l))
		}
	}
	for i := range mcs {
		c := &mcs[i]
		v := r.at(c.col)
		if math.IsNaN(v) {
			return fmt.Sprintf("metric constraint %q does not hold: no value", c.String())
		}
		if !c.Holds(v) {
			return fmt.Sprintf("metric constraint %q does not hold: value %s", c.String(), formatFloat(v))
		}
	}
	return ""
}
