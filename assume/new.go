package assume

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/machine"
)

// New is machines that do not exist yet (docs/forecast.md): `--assume-new
// rack=12,role=cs,count=20,from=2027-03-01[,product=X][,retire=DATE]`, or
// an order stored with `ckegenctl sabakan order add`. They are Count
// machines of Role in Rack, HEALTHY from From (a real sabakan registers a
// machine UNINITIALIZED; the assumption is that it is set up by then),
// retiring at Retire (zero: From plus the lifetime the caller gives), with
// sabakan's product label Product ("": none).
type New struct {
	Rack    int       `json:"rack"`
	Role    string    `json:"role"`
	Count   int       `json:"count"`
	From    time.Time `json:"from"`
	Product string    `json:"product,omitempty"`
	Retire  time.Time `json:"retire,omitzero"`
}

// DefaultLifetime is a new machine's retire date after its from date
// unless told otherwise: 5 years of 365 days.
const DefaultLifetime = 5 * 365 * 24 * time.Hour

// MaxNew is the most machines one --assume-new may add: more is a typo.
const MaxNew = 10000

// newDate is how a New's dates are written.
const newDate = "2006-01-02"

// ParseNew reads one --assume-new spec, naming the field that is wrong.
func ParseNew(spec string) (New, error) {
	var n New
	seen := map[string]bool{}
	for part := range strings.SplitSeq(spec, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			return New{}, fmt.Errorf("%q: %q: want KEY=VALUE (rack, role, count, from, product, retire)", spec, part)
		}
		if seen[k] {
			return New{}, fmt.Errorf("%q: %s: given twice", spec, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "rack":
			n.Rack, err = strconv.Atoi(v)
			if err == nil && n.Rack < 0 {
				err = fmt.Errorf("must not be negative")
			}
		case "role":
			n.Role = v
		case "count":
			n.Count, err = strconv.Atoi(v)
			if err == nil && (n.Count < 1 || n.Count > MaxNew) {
				err = fmt.Errorf("want 1 to %d, got %d", MaxNew, n.Count)
			}
		case "from":
			n.From, err = time.Parse(newDate, v)
		case "product":
			n.Product = v
		case "retire":
			n.Retire, err = time.Parse(newDate, v)
		default:
			return New{}, fmt.Errorf("%q: unknown key %q: want rack, role, count, from, product or retire", spec, k)
		}
		if err != nil {
			return New{}, fmt.Errorf("%q: %s: %w", spec, k, err)
		}
	}
	for _, k := range []string{"rack", "role", "count", "from"} {
		if !seen[k] {
			return New{}, fmt.Errorf("%q: %s is missing (rack=N,role=R,count=N,from=YYYY-MM-DD)", spec, k)
		}
	}
	if !n.Retire.IsZero() && !n.Retire.After(n.From) {
		return New{}, fmt.Errorf("%q: retire: %s is not after from (%s)", spec, n.Retire.Format(newDate), n.From.Format(newDate))
	}
	return n, nil
}

// ParseNews reads every --assume-new spec.
func ParseNews(specs []string) ([]New, error) {
	out := make([]New, 0, len(specs))
	for _, s := range specs {
		n, err := ParseNew(s)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// String is n as a spec ParseNew reads.
func (n New) String() string {
	s := fmt.Sprintf("rack=%d,role=%s,count=%d,from=%s", n.Rack, n.Role, n.Count, n.From.Format(newDate))
	if n.Product != "" {
		s += ",product=" + n.Product
	}
	if !n.Retire.IsZero() {
		s += ",retire=" + n.Retire.Format(newDate)
	}
	return s
}

// RetireAt is n's retire date: Retire, or From plus lifetime.
func (n New) RetireAt(lifetime time.Duration) time.Time {
	if !n.Retire.IsZero() {
		return n.Retire
	}
	return n.From.Add(lifetime)
}

// Maker makes machines up, numbering them on: the k-th machine of a
// date, role and rack has serial machine.MadeUpSerial(date, role, rack,
// k), whatever else was made up before it, so that the same machines
// have the same serials however they were given (as --assume-new or as
// a purchase); their addresses go on from 240.0.0.1. The zero Maker is
// ready.
type Maker struct {
	made int
	seq  map[string]int
}

// Make makes n's machines, registered on date (their serials' date) and
// HEALTHY (in the state for 0 s), retiring at n.RetireAt(lifetime), with
// sabakan's product label when n has a product.
func (mk *Maker) Make(n New, date time.Time, lifetime time.Duration) []machine.Machine {
	if mk.seq == nil {
		mk.seq = map[string]int{}
	}
	day := date.UTC().Format("20060102")
	key := fmt.Sprintf("%s/%s/%d", day, n.Role, n.Rack)
	out := make([]machine.Machine, n.Count)
	for i := range out {
		m := machine.Machine{Spec: machine.Spec{Serial: machine.MadeUpSerial(day, n.Role, n.Rack, mk.seq[key]+i+1), Rack: n.Rack,
			IndexInRack: machine.MadeUpIndex + i, Role: n.Role, IPv4: []string{machine.MadeUpAddress(mk.made + i + 1).String()},
			RegisterDate: date, RetireDate: n.RetireAt(lifetime)},
			Status: machine.Status{State: machine.StateHealthy}}
		if n.Product != "" {
			m.Spec.Labels = []machine.Label{{Name: machine.ProductLabel, Value: n.Product}}
		}
		out[i] = m
	}
	mk.seq[key] += n.Count
	mk.made += n.Count
	return out
}

// MakeUp makes the machines of news, HEALTHY now whatever their from
// (the what-ifs of one moment: plan, generate --plan, resilience; the
// forecast adds them on their dates), each with its Match ("assume new
// SPEC: ..."), registered on their from date.
func MakeUp(news []New, lifetime time.Duration) ([]machine.Machine, []Match) {
	var out []machine.Machine
	var mk Maker
	matches := make([]Match, 0, len(news))
	for _, n := range news {
		ms := mk.Make(n, n.From, lifetime)
		out = append(out, ms...)
		matches = append(matches, Match{Assume: "new " + n.String(), Machines: len(ms), MadeUp: []string{ms[0].Spec.Serial, ms[len(ms)-1].Spec.Serial}})
	}
	return out, matches
}

// RefuseMadeUp is an error naming a machine (serial and address) whose
// address is in 240.0.0.0/4, which made-up machines take: beside it, no
// machine can be assumed new (--assume-new, an order, a purchase).
func RefuseMadeUp(serial, address string) error {
	if !machine.IsMadeUpAddress(address) {
		return nil
	}
	return fmt.Errorf("machine %s: its address %s is in 240.0.0.0/4, which made-up machines take: no machine can be assumed new beside it (--assume-new, an order, a purchase)", serial, address)
}
