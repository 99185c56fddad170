package assume

import (
	"errors"
	"strings"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
)

// Avoid says in which order the change a rehearsal assumed would not be
// refused, when the plan was refused because the assumptions took control
// planes out of the query's answer at once (TOO_MANY_NONEXISTENT_CONTROL_PLANES):
// the machines go RETIRING first, which keeps them in the answer while
// ckegen replaces them one per tick, and RETIRED after. "" when refused
// is another refusal, or no assumption left a machine out.
func Avoid(as []Assumption, matches []Match, refused error) string {
	if !errors.Is(refused, generator.ErrTooManyNonExistent) {
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
