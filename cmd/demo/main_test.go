package main

import (
	"slices"
	"testing"
)

// TestConfigCommands: sabakan's URL first, the constraints given in a
// fixed order, a look at them, and the template last, as it is what lets
// the daemon generate.
func TestConfigCommands(t *testing.T) {
	got := configCommands("http://127.0.0.1:1", map[string]int{"maximum-workers": 9, "control-plane-count": 3, "unknown": 1}, "examples/template.yml")
	want := [][]string{
		{"sabakan", "set-url", "http://127.0.0.1:1"},
		{"constraints", "set", "control-plane-count", "3"},
		{"constraints", "set", "maximum-workers", "9"},
		{"constraints", "show"},
		{"sabakan", "set-template", "examples/template.yml"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("configCommands = %q, want %q", got, want)
	}
}

// TestFlipTargets: the first control plane and the first two workers, in
// the cluster's order; the check after the flip finds the control plane
// only while it still is one.
func TestFlipTargets(t *testing.T) {
	cl := &clusterDoc{Nodes: []node{
		{Address: "cp1", ControlPlane: true}, {Address: "cp2", ControlPlane: true}, {Address: "w1"},
		{Address: "cp3", ControlPlane: true}, {Address: "w2"}, {Address: "w3"},
	}}
	cp, w1, w2 := flipTargets(cl)
	if cp.Address != "cp1" || w1.Address != "w1" || w2.Address != "w2" {
		t.Errorf("flipTargets = %s, %s, %s; want cp1, w1, w2", cp.Address, w1.Address, w2.Address)
	}
	if !stillControlPlane(cl, "cp1") || stillControlPlane(cl, "w1") || stillControlPlane(cl, "nowhere") {
		t.Error("stillControlPlane: want true for cp1 only")
	}
}
