package sabakan

import (
	"slices"
	"strings"

	"github.com/ckegen/ckegen/machine"
)

// DefaultNotHaving is the query's default notHaving (queries.graphql):
// the one sabakan applies when the user's variables leave notHaving out.
func DefaultNotHaving() *MachineParams {
	return &MachineParams{Roles: []string{"boot"}, States: []machine.State{machine.StateRetired}}
}

// StateFilter is the part of a query's variables that reads machine
// states: a machine is in the answer when its state is among Having's
// (when Having lists any) and not among NotHaving's. Together with the
// variables without their states (Variables.WithoutStates) it answers
// what the variables answer: sabakan's having needs every condition to
// hold, its notHaving leaves out a machine that meets any one, so the
// states can be tested apart from the rest.
type StateFilter struct {
	Having, NotHaving []machine.State
	// Default: NotHaving is the query's default, the user's variables
	// leaving notHaving out.
	Default bool
}

// WithoutStates returns v without the conditions on states, and the
// filter those conditions make. A notHaving left out takes the query's
// default, so it is sent explicitly (its roles) and its states go to the
// filter. v is left as it is.
func (v Variables) WithoutStates() (Variables, StateFilter) {
	var f StateFilter
	out := Variables{Having: v.Having, NotHaving: v.NotHaving}
	if v.Having != nil {
		h := *v.Having
		f.Having, h.States = h.States, nil
		out.Having = &h
	}
	nh := v.NotHaving
	if nh == nil {
		nh, f.Default = DefaultNotHaving(), true
	}
	n := *nh
	f.NotHaving, n.States = n.States, nil
	out.NotHaving = &n
	return out, f
}

// Keeps reports whether a machine in state st is in the answer, as far
// as states go.
func (f StateFilter) Keeps(st machine.State) bool {
	if len(f.Having) > 0 && !slices.Contains(f.Having, st) {
		return false
	}
	return !slices.Contains(f.NotHaving, st)
}

// Why says why f leaves out a machine in state st ("" when it keeps
// it): "the default query leaves out RETIRED machines".
func (f StateFilter) Why(st machine.State) string {
	switch {
	case len(f.Having) > 0 && !slices.Contains(f.Having, st):
		names := make([]string, len(f.Having))
		for i, s := range f.Having {
			names[i] = string(s)
		}
		return "the query variables' having takes only " + strings.Join(names, ", ") + " machines"
	case !slices.Contains(f.NotHaving, st):
		return ""
	case f.Default:
		return "the default query leaves out " + string(st) + " machines"
	}
	return "the query variables' notHaving leaves out " + string(st) + " machines"
}
