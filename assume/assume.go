// Package assume rehearses a change of the inventory before it happens
// (docs/design.md 20): `--assume WHICH:STATE` makes the machines WHICH
// names have STATE, so that a plan, a generated cluster or a resilience
// report shows what the daemon would do once sabakan says so. WHICH is a
// serial, an IPv4 address, rack=N, or LABEL=VALUE (a sabakan label); STATE
// is a sabakan state, in either case (sabakan's REST API takes lower
// case, GraphQL upper case), optionally followed by @DURATION.
//
// The assumed state is as sabakan would report it just after the change:
// a machine whose state changes has been in it for 0 s, one already in it
// keeps its duration. @DURATION says how long instead (rack=4:retired@1h),
// which is what the retire wait reads: a RETIRED worker leaves only once
// it has been RETIRED longer than that, and the quiet time would hold the
// daemon's writes until every machine has been still as long.
//
// A rehearsal changes the inventory where sabakan would change it, before
// the query: a machine assumed into a state the query leaves out (the
// default query leaves out RETIRED machines) leaves the answer, as it
// would leave sabakan's, and the rehearsal says so (Inventory online,
// Apply on a machines file).
//
// It is pure: it edits a copy of a machine list and says how many machines
// each assumption matched.
package assume

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// Assumption is one WHICH:STATE[@DURATION].
type Assumption struct {
	// Text is the assumption as written.
	Text  string
	which selector
	State machine.State
	// For is how long the machines have had the state; nil: 0 s for a
	// machine whose state changes, its own duration for one already in
	// it.
	For *time.Duration
}

type selectorKind int

const (
	bySerial selectorKind = iota
	byAddress
	byRack
	byLabel
)

// selector says which machines an assumption names.
type selector struct {
	kind        selectorKind
	text        string // serial, address, or label value
	rack        int
	label       string
	description string // "rack 4", "serial S000092", ...
}

// Syntax says how an assumption is written, for errors.
const Syntax = "WHICH:STATE[@DURATION], WHICH a serial, an IPv4 address, rack=N or LABEL=VALUE (a sabakan label), " +
	"STATE a sabakan state (UNINITIALIZED, HEALTHY, UNHEALTHY, UNREACHABLE, UPDATING, RETIRING, RETIRED, in either case)"

// Parse reads one assumption.
func Parse(s string) (Assumption, error) {
	a := Assumption{Text: s}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return a, fmt.Errorf("%q: want %s", s, Syntax)
	}
	which, state := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
	if st, d, ok := strings.Cut(state, "@"); ok {
		state = strings.TrimSpace(st)
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur < 0 {
			return a, fmt.Errorf("%q: @%s: want a duration such as 30m or 2h (how long the machines have had the state)", s, d)
		}
		a.For = &dur
	}
	st, err := machine.ParseState(state)
	if err != nil {
		return a, fmt.Errorf("%q: %w", s, err)
	}
	a.State = st
	a.which, err = parseWhich(which)
	if err != nil {
		return a, fmt.Errorf("%q: %w", s, err)
	}
	return a, nil
}

func parseWhich(s string) (selector, error) {
	if s == "" {
		return selector{}, errors.New("no machine named before the state: want a serial, an IPv4 address, rack=N or LABEL=VALUE")
	}
	if k, v, ok := strings.Cut(s, "="); ok {
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "rack":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return selector{}, fmt.Errorf("rack=%s: want a rack number, such as rack=4", v)
			}
			return selector{kind: byRack, rack: n, description: "rack " + strconv.Itoa(n)}, nil
		case "":
			return selector{}, fmt.Errorf("%s: want LABEL=VALUE, with the label's name", s)
		}
		// The node's form of a sabakan label names the same label.
		k = strings.TrimPrefix(k, labels.SabakanPrefix)
		return selector{kind: byLabel, label: k, text: v, description: "label " + k + "=" + v}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return selector{kind: byAddress, text: s, description: "address " + s}, nil
	}
	return selector{kind: bySerial, text: s, description: "serial " + s}, nil
}

// ParseAll reads every assumption, in order; the first that does not
// parse is the error.
func ParseAll(ss []string) ([]Assumption, error) {
	out := make([]Assumption, 0, len(ss))
	for _, s := range ss {
		a, err := Parse(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// matches reports whether the assumption names m.
func (a *Assumption) matches(m *machine.Machine) bool {
	switch w := &a.which; w.kind {
	case bySerial:
		return m.Spec.Serial == w.text
	case byAddress:
		for _, ip := range m.Spec.IPv4 {
			if ip == w.text {
				return true
			}
		}
		return false
	case byRack:
		return m.Spec.Rack == w.rack
	default:
		for _, l := range m.Spec.Labels {
			if l.Name == w.label {
				return l.Value == w.text
			}
		}
		return false
	}
}

// Match is what an assumption did: the machines it matched, and how
// many of them the query leaves out of its answer once they have the
// state, and why.
type Match struct {
	Assume   string `json:"assume"`
	Machines int    `json:"machines"`
	// LeftOut of the Machines are not in the query's answer with the
	// assumed state: Why says which condition leaves them out.
	LeftOut int    `json:"leftOut,omitempty"`
	Why     string `json:"leftOutBecause,omitempty"`
	// MadeUp, for an --assume-new, are the first and last serials of
	// the machines made up.
	MadeUp []string `json:"madeUp,omitempty"`
}

// String is the line that says it: "assume rack=4:RETIRING: 20
// machines", and "assume S000092:RETIRED: 1 machine left out of the
// query's answer (the default query leaves out RETIRED machines)".
func (m Match) String() string {
	s := "assume " + m.Assume + ": " + words.Count(m.Machines, "machine", "machines")
	if len(m.MadeUp) == 2 {
		s += " made up (" + m.MadeUp[0] + " to " + m.MadeUp[1] + "), HEALTHY now"
	}
	switch {
	case m.LeftOut == 0:
		return s
	case m.LeftOut < m.Machines:
		s += ", " + strconv.Itoa(m.LeftOut) + " of them"
	}
	return s + " left out of the query's answer (" + m.Why + ")"
}

// Query is the part of the query that reads states (sabakan.StateFilter):
// whether a machine in a state is in its answer, and why not.
type Query interface {
	Keeps(st machine.State) bool
	Why(st machine.State) string
}

// Inventory rehearses the assumptions on sabakan's inventory: ms is what
// sabakan holds (its answer to the query without the conditions on
// states), q the query's conditions on states. It returns the answer the
// query would give once sabakan has the assumed states (ms edited, then
// q applied to every machine, in order), and how many machines each
// assumption matched and how many of them q leaves out. The machines of
// ms are left as they are. An assumption that matches no machine is an
// error that names it.
func Inventory(ms []machine.Machine, as []Assumption, q Query) ([]machine.Machine, []Match, error) {
	matches := newMatches(as)
	out := make([]machine.Machine, 0, len(ms))
	var hit []int
	for i := range ms {
		m, h := edit(&ms[i], as, hit[:0])
		hit = h
		count(matches, hit)
		if q.Keeps(m.Status.State) {
			out = append(out, *m)
			continue
		}
		leave(matches, hit, q.Why(m.Status.State))
	}
	if err := unmatched(as, matches); err != nil {
		return nil, nil, err
	}
	return out, matches, nil
}

// Apply returns ms as if each assumption held, in order (a machine that
// several name takes the last one's state), and what each matched. ms is
// taken as the query's answer as it is (a machines file, which may hold
// machines the query would not answer); a machine an assumption names
// and q leaves out with its assumed state leaves the answer, as it would
// leave sabakan's (nil q: none leaves). The other machines keep their
// order; a changed machine is a copy, ms and its machines are left as
// they are. An assumption that matches no machine is an error that names
// it.
func Apply(ms []*machine.Machine, as []Assumption, q Query) ([]*machine.Machine, []Match, error) {
	matches := newMatches(as)
	if len(as) == 0 {
		return ms, matches, nil
	}
	out := make([]*machine.Machine, 0, len(ms))
	var hit []int
	for _, m := range ms {
		c, h := edit(m, as, hit[:0])
		hit = h
		count(matches, hit)
		if len(hit) > 0 && q != nil && !q.Keeps(c.Status.State) {
			leave(matches, hit, q.Why(c.Status.State))
			continue
		}
		out = append(out, c)
	}
	if err := unmatched(as, matches); err != nil {
		return nil, nil, err
	}
	return out, matches, nil
}

func newMatches(as []Assumption) []Match {
	matches := make([]Match, len(as))
	for i := range as {
		matches[i].Assume = as[i].Text
	}
	return matches
}

// edit returns m as the assumptions make it: m itself when none names
// it, else a copy with the last one's state. hit gets the indices of
// the assumptions that name it.
func edit(m *machine.Machine, as []Assumption, hit []int) (*machine.Machine, []int) {
	c := m
	for j := range as {
		a := &as[j]
		if !a.matches(m) {
			continue
		}
		hit = append(hit, j)
		c = c.WithState(a.State)
		if a.For != nil {
			c.Status.Duration = a.For.Seconds()
		}
	}
	return c, hit
}

// count counts a machine the assumptions of hit name.
func count(matches []Match, hit []int) {
	for _, j := range hit {
		matches[j].Machines++
	}
}

// leave counts a machine the assumptions of hit name and the query
// leaves out, why.
func leave(matches []Match, hit []int, why string) {
	for _, j := range hit {
		matches[j].LeftOut++
		matches[j].Why = why
	}
}

// unmatched is the error of the first assumption that matched no
// machine.
func unmatched(as []Assumption, matches []Match) error {
	for j, mt := range matches {
		if mt.Machines == 0 {
			return fmt.Errorf("%s: no machine has %s", as[j].Text, as[j].which.description)
		}
	}
	return nil
}
