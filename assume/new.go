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

// MadeUp makes n's machines, HEALTHY (in the state for 0 s): the i-th
// has serial serial(i) and address machine.MadeUpAddress(first+i),
// which no real machine has.
func (n New) MadeUp(first int, lifetime time.Duration, serial func(i int) string) []machine.Machine {
	out := make([]machine.Machine, n.Count)
	for i := range out {
		m := machine.Machine{Spec: machine.Spec{Serial: serial(i), Rack: n.Rack, IndexInRack: machine.MadeUpIndex + i, Role: n.Role,
			IPv4: []string{machine.MadeUpAddress(first + i).String()}, RegisterDate: n.From, RetireDate: n.RetireAt(lifetime)},
			Status: machine.Status{State: machine.StateHealthy}}
		if n.Product != "" {
			m.Spec.Labels = []machine.Label{{Name: machine.ProductLabel, Value: n.Product}}
		}
		out[i] = m
	}
	return out
}
