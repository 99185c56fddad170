package sabakan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// stateInventory is a machine of each role and state, some labelled, one
// retiring soon.
func stateInventory() []machine.Machine {
	states := []machine.State{machine.StateUninitialized, machine.StateHealthy, machine.StateUnhealthy, machine.StateUnreachable,
		machine.StateUpdating, machine.StateRetiring, machine.StateRetired}
	var ms []machine.Machine
	n := 0
	for _, role := range []string{"boot", "cs", "ss"} {
		for _, st := range states {
			n++
			m := machine.Machine{
				Spec: machine.Spec{Serial: fmt.Sprintf("s%02d", n), Role: role, Rack: n % 3, IPv4: []string{fmt.Sprintf("10.0.1.%d", n)},
					RegisterDate: now, RetireDate: now.AddDate(0, 0, 10*n), BMC: machine.BMC{BMCType: "IPMI-2.0"}},
				Status: machine.Status{State: st},
			}
			if n%2 == 0 {
				m.Spec.Labels = []machine.Label{{Name: "dc", Value: "ty3"}}
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// TestWithoutStatesAnswersAsTheVariables: the compatible server's own
// search with the variables, and its search with the variables without
// their states then the states filter, answer the same machines, for
// every form of variables (none, null, states on either side or both,
// with other conditions, empty lists).
func TestWithoutStatesAnswersAsTheVariables(t *testing.T) {
	ts, _ := startServer(t, stateInventory())
	c, err := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []string{
		`{}`,
		`{"having": null}`,
		`{"notHaving": null}`,
		`{"having": null, "notHaving": null}`,
		`{"having": {"roles": ["cs"]}}`,
		`{"having": {"states": ["HEALTHY", "RETIRED"]}}`,
		`{"having": {"states": ["RETIRED"]}, "notHaving": null}`,
		`{"notHaving": {"states": ["RETIRED"]}}`,
		`{"notHaving": {"states": ["RETIRED", "RETIRING"], "roles": ["boot"]}}`,
		`{"notHaving": {"roles": ["boot"]}}`,
		`{"notHaving": {"states": []}}`,
		`{"having": {"states": [], "racks": [1]}}`,
		`{"having": {"labels": [{"name": "dc", "value": "ty3"}], "states": ["HEALTHY", "UNREACHABLE"]}, "notHaving": {"states": ["UNREACHABLE"]}}`,
		`{"having": {"roles": ["ss"], "states": ["RETIRING"]}}`,
		`{"notHaving": {"minDaysBeforeRetire": 100, "states": ["UPDATING"]}}`,
		`{"having": {"minDaysBeforeRetire": 50}, "notHaving": {"labels": [{"name": "dc", "value": "ty3"}], "states": ["HEALTHY"]}}`,
	}
	serials := func(ms []machine.Machine) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Spec.Serial)
		}
		return strings.Join(s, " ")
	}
	for _, vs := range cases {
		v, err := sabakan.ParseVariables([]byte(vs))
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.SearchMachines(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		relaxed, f := v.WithoutStates()
		all, err := c.SearchMachines(context.Background(), relaxed)
		if err != nil {
			t.Fatal(err)
		}
		var kept []machine.Machine
		for _, m := range all {
			if f.Keeps(m.Status.State) {
				kept = append(kept, m)
			}
		}
		if got := serials(kept); got != serials(want) {
			t.Errorf("%s: without states then filtered: %s; the server: %s", vs, got, serials(want))
		}
		// The filter reads states only: the relaxed query answers at
		// least as much, and v is left as it was.
		if len(all) < len(want) {
			t.Errorf("%s: the relaxed query answered %d machines, fewer than the %d of the variables", vs, len(all), len(want))
		}
		again, _ := sabakan.ParseVariables([]byte(vs))
		if !slices.Equal(stateList(again), stateList(v)) {
			t.Errorf("%s: WithoutStates changed the variables", vs)
		}
	}
}

func stateList(v sabakan.Variables) []machine.State {
	var out []machine.State
	if v.Having != nil {
		out = append(out, v.Having.States...)
	}
	if v.NotHaving != nil {
		out = append(out, v.NotHaving.States...)
	}
	return out
}

// TestStateFilterWhy: the words of what the filter leaves out, the
// default query's named as such.
func TestStateFilterWhy(t *testing.T) {
	_, def := sabakan.Variables{}.WithoutStates()
	if got, want := def.Why(machine.StateRetired), "the default query leaves out RETIRED machines"; got != want {
		t.Errorf("default: %q, want %q", got, want)
	}
	if got := def.Why(machine.StateRetiring); got != "" || !def.Keeps(machine.StateRetiring) {
		t.Errorf("default keeps RETIRING: %q", got)
	}
	v, _ := sabakan.ParseVariables([]byte(`{"having": {"states": ["HEALTHY"]}, "notHaving": {"states": ["UPDATING"]}}`))
	_, f := v.WithoutStates()
	if got, want := f.Why(machine.StateRetired), "the query variables' having takes only HEALTHY machines"; got != want {
		t.Errorf("having: %q, want %q", got, want)
	}
	v, _ = sabakan.ParseVariables([]byte(`{"notHaving": {"states": ["UPDATING"]}}`))
	_, f = v.WithoutStates()
	if got, want := f.Why(machine.StateUpdating), "the query variables' notHaving leaves out UPDATING machines"; got != want {
		t.Errorf("notHaving: %q, want %q", got, want)
	}
	if f.Keeps(machine.StateUpdating) || !f.Keeps(machine.StateRetired) {
		t.Errorf("notHaving UPDATING: keeps UPDATING or leaves out RETIRED")
	}
}
