package assume

import (
	"strings"

	"github.com/ckegen/ckegen/machine"
)

// Avoid says in which order the change a rehearsal assumed would not be
// refused, when the plan was refused because the assumptions took control
// planes out of the query's answer at once (TOO_MANY_NONEXISTENT_CONTROL_PLANES),
// in the model in force (rate: minimum-workers-rate). In the count model
// the machines go RETIRING first, which keeps them in the answer while
// ckegen replaces them one per tick, and RETIRED after. The rate model
// replaces no control plane while it is RETIRING, only in the write that
// removes it once it leaves the answer: the machines go RETIRED one at a
// time, each after the previous one's removal. The caller says whether the
// plan was refused so (tooManyNonExistent); "" for another refusal, or
// when no assumption left a machine out.
func Avoid(as []Assumption, matches []Match, tooManyNonExistent, rate bool) string {
	if !tooManyNonExistent {
		return ""
	}
	var which, rehearse []string
	for i, m := range matches {
		if m.LeftOut == 0 || i >= len(as) {
			continue
		}
		w := as[i].Which()
		which = append(which, w)
		rehearse = append(rehearse, "--assume "+w+":"+strings.ToLower(string(machine.StateRetiring)))
	}
	if len(which) == 0 {
		return ""
	}
	if rate {
		return "to avoid it, retire " + strings.Join(which, ", ") + " one machine at a time, RETIRING then RETIRED, " +
			"the next only after the write that removes the previous one: in the rate model (minimum-workers-rate) " +
			"a control plane is not replaced while it is RETIRING, but by the write that removes it once RETIRED takes it out of the query's answer " +
			"(rehearse each with one --assume SERIAL:RETIRED)"
	}
	return "to avoid it, set " + strings.Join(which, ", ") + " RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED: " +
		"RETIRING keeps the machines in the query's answer while ckegen moves the control planes away (rehearse it with " + strings.Join(rehearse, " ") + ")"
}

// Which is the WHICH of the assumption as written: "rack=4", "S000092".
func (a *Assumption) Which() string {
	i := strings.LastIndexByte(a.Text, ':')
	if i < 0 {
		return a.Text
	}
	return strings.TrimSpace(a.Text[:i])
}
