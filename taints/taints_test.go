package taints

import (
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/machine"
)

func TestForState(t *testing.T) {
	cases := []struct {
		s      machine.State
		value  string
		effect string
	}{
		{machine.StateUnreachable, "unreachable", NoSchedule},
		{machine.StateRetiring, "retiring", NoExecute},
		{machine.StateRetired, "retired", NoExecute},
		{machine.StateHealthy, "", ""},
		{machine.StateUnhealthy, "", ""},
		{machine.StateUpdating, "", ""},
		{machine.StateUninitialized, "", ""},
	}
	for _, c := range cases {
		got := ForState(c.s, false)
		if c.value == "" {
			if got != nil {
				t.Errorf("ForState(%s) = %+v, want none", c.s, got)
			}
			continue
		}
		if got == nil || got.Key != StateKey || got.Value != c.value || got.Effect != c.effect {
			t.Errorf("ForState(%s) = %+v, want %s=%s:%s", c.s, got, StateKey, c.value, c.effect)
		}
		if ForState(c.s, true) != nil {
			t.Errorf("a rebooting node in %s got a state taint", c.s)
		}
	}
}

func TestStateTaintsEqual(t *testing.T) {
	u := cluster.Taint{Key: StateKey, Value: "unreachable", Effect: NoSchedule}
	r := cluster.Taint{Key: StateKey, Value: "retired", Effect: NoExecute}
	other := cluster.Taint{Key: "x", Effect: NoSchedule}
	cases := []struct {
		a, b []cluster.Taint
		want bool
	}{
		{nil, nil, true},
		{[]cluster.Taint{other}, nil, true},
		{[]cluster.Taint{other, u}, []cluster.Taint{u}, true},
		{[]cluster.Taint{u}, nil, false},
		{[]cluster.Taint{u}, []cluster.Taint{r}, false},
		{[]cluster.Taint{u, u}, []cluster.Taint{u}, false},
	}
	for i, c := range cases {
		if got := StateTaintsEqual(c.a, c.b); got != c.want {
			t.Errorf("case %d: StateTaintsEqual = %v, want %v", i, got, c.want)
		}
	}
}

func TestTolerated(t *testing.T) {
	for _, k := range []string{"node.kubernetes.io/unreachable", StateKey, "cke.cybozu.com/master", "example.com/ok"} {
		if !Tolerated(k, []string{"example.com/ok"}) {
			t.Errorf("%s is not tolerated", k)
		}
	}
	if Tolerated("example.com/bad", []string{"example.com/ok"}) {
		t.Error("example.com/bad is tolerated")
	}
	if Intolerable([]cluster.Taint{{Key: "node.kubernetes.io/x"}, {Key: "y"}}, nil).Key != "y" {
		t.Error("Intolerable did not find y")
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(cluster.Taint{Key: "a", Value: "b", Effect: NoExecute}); err != nil {
		t.Error(err)
	}
	for _, tt := range []cluster.Taint{{Key: "", Effect: NoSchedule}, {Key: "a", Effect: "x"}, {Key: "a", Value: "b c", Effect: NoSchedule}} {
		if Validate(tt) == nil {
			t.Errorf("Validate(%+v) accepted", tt)
		}
	}
}
