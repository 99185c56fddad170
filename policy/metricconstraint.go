package policy

import (
	"math"
	"regexp"
	"strconv"
)

// MetricOp is the comparison of a metric constraint.
type MetricOp int

// The comparisons of Krake's metric constraints.
const (
	MetricEqual          MetricOp = iota // is, =, ==
	MetricNotEqual                       // is not, !=
	MetricGreater                        // greater than, gt, >
	MetricGreaterOrEqual                 // greater than or equal, gte, >=, =>
	MetricLess                           // less than, lt, <
	MetricLessOrEqual                    // less than or equal, lte, <=, =<
)

var metricOpText = [...]string{"==", "!=", ">", ">=", "<", "<="}

// MetricConstraint is one parsed metric constraint (docs/design.md 12.3), compared
// with the raw value of the metric.
type MetricConstraint struct {
	Metric string
	Op     MetricOp
	Value  float64
}

// metricName is the syntax of a metric's name: Prometheus' metric names,
// plus dots and dashes.
var metricName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_:.-]*$`)

// ParseMetricConstraint parses one of Krake's metric constraints,
// "METRIC OP NUMBER", OP being any of Krake's spellings:
//
//	is = ==                          is not !=
//	greater than  gt  >              greater than or equal  gte  >=  =>
//	less than     lt  <              less than or equal     lte  <=  =<
//
// An error is a *SyntaxError giving the column and what was expected.
// Whether the metric is defined is checked by the policy, not here.
func ParseMetricConstraint(s string) (MetricConstraint, error) {
	toks, err := lex(s)
	if err != nil {
		return MetricConstraint{}, err
	}
	p := &parser{toks: toks}
	name := p.next()
	switch {
	case name.kind == tokEOF:
		return MetricConstraint{}, errorAt(name.col, "expected a metric name, got an empty constraint")
	case name.kind != tokWord || !metricName.MatchString(name.text):
		return MetricConstraint{}, errorAt(name.col,
			"expected a metric name (a letter or _, then letters, digits, _ : . -), got %s", name.describe())
	}
	c := MetricConstraint{Metric: name.text}
	if c.Op, err = p.metricOp(); err != nil {
		return MetricConstraint{}, err
	}
	t := p.next()
	if t.kind != tokWord {
		return MetricConstraint{}, errorAt(t.col, "expected a number after the comparison, got %s", t.describe())
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return MetricConstraint{}, errorAt(t.col, "expected a finite number after the comparison, got %q", t.text)
	}
	c.Value = v
	if err := p.end(); err != nil {
		return MetricConstraint{}, err
	}
	return c, nil
}

func (p *parser) metricOp() (MetricOp, error) {
	t := p.next()
	if t.kind == tokOp {
		switch t.text {
		case "=", "==":
			return MetricEqual, nil
		case "!=":
			return MetricNotEqual, nil
		case ">":
			return MetricGreater, nil
		case ">=", "=>":
			return MetricGreaterOrEqual, nil
		case "<":
			return MetricLess, nil
		case "<=", "=<":
			return MetricLessOrEqual, nil
		}
	}
	if t.kind == tokWord {
		switch t.text {
		case "is":
			if isWord(p.peek(), "not") {
				p.next()
				return MetricNotEqual, nil
			}
			return MetricEqual, nil
		case "gt":
			return MetricGreater, nil
		case "gte":
			return MetricGreaterOrEqual, nil
		case "lt":
			return MetricLess, nil
		case "lte":
			return MetricLessOrEqual, nil
		case "greater", "less":
			return p.thanOrEqual(t.text)
		}
	}
	return 0, errorAt(t.col, "expected a comparison after the metric name "+
		"(is, =, ==, is not, !=, greater than, gt, >, greater than or equal, gte, >=, =>, "+
		"less than, lt, <, less than or equal, lte, <=, =<), got %s", t.describe())
}

// thanOrEqual reads the rest of "greater than [or equal]" or "less than
// [or equal]" after word, greater or less.
func (p *parser) thanOrEqual(word string) (MetricOp, error) {
	greater := word == "greater"
	if u := p.next(); !isWord(u, "than") {
		return 0, errorAt(u.col, `expected "than" after %q, got %s`, word, u.describe())
	}
	orEqual := false
	if isWord(p.peek(), "or") {
		p.next()
		if u := p.next(); !isWord(u, "equal") {
			return 0, errorAt(u.col, `expected "equal" after "or", got %s`, u.describe())
		}
		orEqual = true
	}
	switch {
	case greater && orEqual:
		return MetricGreaterOrEqual, nil
	case greater:
		return MetricGreater, nil
	case orEqual:
		return MetricLessOrEqual, nil
	}
	return MetricLess, nil
}

// Holds reports whether the raw value v satisfies c. NaN, which stands for
// "no value", satisfies no constraint.
func (c *MetricConstraint) Holds(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch c.Op {
	case MetricEqual:
		return v == c.Value
	case MetricNotEqual:
		return v != c.Value
	case MetricGreater:
		return v > c.Value
	case MetricGreaterOrEqual:
		return v >= c.Value
	case MetricLess:
		return v < c.Value
	default: // MetricLessOrEqual
		return v <= c.Value
	}
}

// String writes c in its canonical form, which parses back to c.
func (c *MetricConstraint) String() string {
	return c.Metric + " " + metricOpText[c.Op] + " " + formatFloat(c.Value)
}

// formatFloat writes v in the shortest form that reads back exactly.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
