package policy

import (
	"strings"

	"github.com/ckegen/ckegen/labels"
)

// Labels is how constraints read the labels a machine would have as a
// node of the placement's template (docs/design.md 2, all steps): the
// caller computes them on demand, without building a map. Policy.LabelKeys
// lists every key the constraints read.
type Labels interface {
	Label(key string) (value string, ok bool)
}

// LabelOp is the operator of a label constraint.
type LabelOp int

// The four forms of Krake's label constraints.
const (
	LabelEqual    LabelOp = iota // is, =, ==
	LabelNotEqual                // is not, !=
	LabelIn                      // in (...)
	LabelNotIn                   // not in (...)
)

// LabelConstraint is one parsed label constraint (docs/design.md 12.2).
type LabelConstraint struct {
	Key string
	Op  LabelOp
	// Values holds one value for LabelEqual and LabelNotEqual, the listed
	// values (in order, without repeats) for LabelIn and LabelNotIn.
	Values []string
	// set replaces a linear scan of Values for long lists.
	set map[string]struct{}
}

// setThreshold is the list length from which a map beats a linear scan.
const setThreshold = 8

// ParseLabelConstraint parses one of Krake's label constraints:
//
//	L is V, L = V, L == V
//	L is not V, L != V
//	L in (V1, V2, ...)
//	L not in (V1, V2, ...)
//
// Keywords are lower case. Values may be quoted with "..." or '...' and then
// hold spaces, commas and parentheses (there are no escapes: a value with a
// double quote is written in single quotes). An error is a *SyntaxError
// giving the column and what was expected there.
func ParseLabelConstraint(s string) (LabelConstraint, error) {
	toks, err := lex(s)
	if err != nil {
		return LabelConstraint{}, err
	}
	p := &parser{toks: toks}
	key := p.next()
	switch {
	case key.kind == tokEOF:
		return LabelConstraint{}, errorAt(key.col, "expected a label key, got an empty constraint")
	case key.kind != tokWord:
		return LabelConstraint{}, errorAt(key.col, "expected a label key, got %s", key.describe())
	}
	if err := labels.ValidateKey(key.text); err != nil {
		return LabelConstraint{}, errorAt(key.col, "invalid label key %q: %v", key.text, err)
	}
	c := LabelConstraint{Key: key.text}
	op := p.next()
	switch {
	case isWord(op, "is"):
		c.Op = LabelEqual
		if isWord(p.peek(), "not") {
			p.next()
			c.Op = LabelNotEqual
		}
	case op.kind == tokOp && (op.text == "=" || op.text == "=="):
		c.Op = LabelEqual
	case op.kind == tokOp && op.text == "!=":
		c.Op = LabelNotEqual
	case isWord(op, "in"):
		c.Op = LabelIn
	case isWord(op, "not"):
		if t := p.next(); !isWord(t, "in") {
			return LabelConstraint{}, errorAt(t.col, `expected "in" after "not", got %s`, t.describe())
		}
		c.Op = LabelNotIn
	default:
		return LabelConstraint{}, errorAt(op.col,
			"expected an operator after the label key (is, =, ==, is not, !=, in, not in), got %s", op.describe())
	}
	if c.Op == LabelIn || c.Op == LabelNotIn {
		c.Values, err = p.valueList()
	} else {
		var v string
		v, err = p.value(`after "` + opText(toks[1:p.pos]) + `"`)
		c.Values = []string{v}
	}
	if err != nil {
		return LabelConstraint{}, err
	}
	if err := p.end(); err != nil {
		return LabelConstraint{}, err
	}
	c.compile()
	return c, nil
}

// opText joins the operator's words as written ("is not", "!=").
func opText(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.text
	}
	return strings.Join(parts, " ")
}

// value reads one value, quoted or not; where says where it was expected.
func (p *parser) value(where string) (string, error) {
	t := p.next()
	if t.kind != tokWord && t.kind != tokString {
		return "", errorAt(t.col, "expected a value %s, got %s", where, t.describe())
	}
	return t.text, nil
}

// valueList reads "(" value ("," value)* ")".
func (p *parser) valueList() ([]string, error) {
	if t := p.next(); t.kind != tokLParen {
		return nil, errorAt(t.col, `expected "(" to open the list of values, got %s`, t.describe())
	}
	var vals []string
	// Values seen, to drop repeats in time linear in the list.
	seen := map[string]bool{}
	for {
		v, err := p.value("in the list")
		if err != nil {
			return nil, err
		}
		if !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
		switch t := p.next(); t.kind {
		case tokComma:
		case tokRParen:
			return vals, nil
		default:
			return nil, errorAt(t.col, `expected "," or ")" after a value in the list, got %s`, t.describe())
		}
	}
}

func (c *LabelConstraint) compile() {
	if len(c.Values) < setThreshold {
		return
	}
	c.set = make(map[string]struct{}, len(c.Values))
	for _, v := range c.Values {
		c.set[v] = struct{}{}
	}
}

func (c *LabelConstraint) contains(v string) bool {
	if c.set != nil {
		_, ok := c.set[v]
		return ok
	}
	for _, x := range c.Values {
		if x == v {
			return true
		}
	}
	return false
}

// Matches reports whether a node with these labels satisfies c. A missing
// label satisfies only the negative forms (is not, !=, not in), as a
// Kubernetes selector does.
func (c *LabelConstraint) Matches(l Labels) bool {
	v, ok := l.Label(c.Key)
	switch c.Op {
	case LabelEqual:
		return ok && v == c.Values[0]
	case LabelNotEqual:
		return !ok || v != c.Values[0]
	case LabelIn:
		return ok && c.contains(v)
	default: // LabelNotIn
		return !ok || !c.contains(v)
	}
}

// String writes c in its canonical form, which parses back to c.
func (c *LabelConstraint) String() string {
	var b strings.Builder
	b.WriteString(c.Key)
	switch c.Op {
	case LabelEqual:
		b.WriteString(" is ")
	case LabelNotEqual:
		b.WriteString(" is not ")
	case LabelIn:
		b.WriteString(" in (")
	case LabelNotIn:
		b.WriteString(" not in (")
	}
	for i, v := range c.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteValue(v))
	}
	if c.Op == LabelIn || c.Op == LabelNotIn {
		b.WriteString(")")
	}
	return b.String()
}

// why says why l fails c, for explanations: the label's value or absence.
func (c *LabelConstraint) why(l Labels) string {
	if v, ok := l.Label(c.Key); ok {
		return "label " + c.Key + " is " + quoteValue(v)
	}
	return "label " + c.Key + " is missing"
}
