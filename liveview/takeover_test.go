package liveview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// TestTakeoverTellsEveryChange: a cluster written without a label ckegen
// renders (as an older integration wrote it) is taken over; the first
// write, made to replace a worker gone RETIRING, re-renders every node.
// The plan before it lists each node it will change: the worker added,
// the RETIRING worker's taint and label, every other node's label, said
// in one line; the history entry of the write lists them all.
func TestTakeoverTellsEveryChange(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Small(t, now, nil)
	st, store := site.Storage, sitetest.StoreOf(site.Storage)
	ctx := context.Background()
	leader := site.Lead(t, "d", 0)
	step := tick.New(st, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	step.Run(ctx, leader, nil, nil)

	// The cluster as an integration wrote it that renders no retire-year.
	c, rev, err := store.GetCluster(ctx)
	must(t, err)
	for _, n := range c.Nodes {
		delete(n.Labels, labels.RetireYear)
	}
	data, err := json.Marshal(c)
	must(t, err)
	_, tmplRev, err := store.GetTemplate(ctx)
	must(t, err)
	_, err = st.PutCluster(ctx, leader, data, rev, tmplRev)
	must(t, err)
	o, err := store.Ownership(ctx)
	must(t, err)
	must(t, store.Takeover(ctx, o))
	var worker *machine.Machine
	for i, m := range site.Machines {
		if slices.ContainsFunc(c.Nodes, func(n *cluster.Node) bool { return n.Address == m.Spec.IPv4[0] && !n.ControlPlane }) {
			worker = &site.Machines[i]
			break
		}
	}
	if _, err := site.Store.SetState(worker.Spec.Serial, machine.StateRetiring); err != nil {
		t.Fatal(err)
	}

	d, err := NewReader(st, Options{Now: func() time.Time { return now }}).Decide(ctx, Preview{})
	must(t, err)
	if len(d.Plan.Steps) == 0 {
		t.Fatalf("no plan: %s", d.Plan.Result)
	}
	first := d.Plan.Steps[0]
	told := map[string]generator.Change{}
	for _, ch := range first.Changes {
		told[ch.Address] = ch
	}
	retiring := told[worker.Spec.IPv4[0]]
	if first.Op != generator.OpIncreaseWorker || len(told) != len(c.Nodes)+1 || retiring.Action != generator.ActionRerender ||
		retiring.Reason != "labels cke.cybozu.com/retire-year added; taints cke.cybozu.com/state added" {
		t.Errorf("the plan's first step (%s) tells %d of %d nodes: %v", first.Op, len(told), len(c.Nodes)+1, told)
	}
	text := string(Document(d).Text())
	want := fmt.Sprintf("  - re-rendered %d nodes: labels cke.cybozu.com/retire-year added (", len(c.Nodes)-1)
	if !strings.Contains(text, "  - re-render "+worker.Spec.IPv4[0]+" (serial "+worker.Spec.Serial+"): labels cke.cybozu.com/retire-year added; taints cke.cybozu.com/state added\n") {
		t.Errorf("the plan's text lacks the RETIRING worker's line:\n%s", text)
	}
	if !strings.Contains(text, want) {
		t.Errorf("the plan's text lacks %q:\n%s", want, text)
	}
	if s := Document(d).Summary; s.Relabelled.Nodes != len(c.Nodes) || s.Retainted.Nodes != 1 || s.Added.Nodes != 1 {
		t.Errorf("the summary: re-labelled %d, re-tainted %d, added %d, want %d, 1 and 1", s.Relabelled.Nodes, s.Retainted.Nodes, s.Added.Nodes, len(c.Nodes))
	}

	r := step.Run(ctx, leader, nil, nil)
	if r.Err != nil || r.Decision.Step == nil {
		t.Fatalf("the first write after the takeover: %v", r.Err)
	}
	h, err := st.History(ctx)
	must(t, err)
	e := h[len(h)-1]
	if e.ChangeCount != len(c.Nodes)+1 || len(e.Changes) != len(c.Nodes)+1 {
		t.Errorf("the history entry of %s tells %d changes (%d kept), want %d", e.Op, e.ChangeCount, len(e.Changes), len(c.Nodes)+1)
	}
	if got, want := planreport.Changes(first.Changes), e.Changes; len(got) != len(want) {
		t.Errorf("the plan's step and the history entry differ: %d and %d changes", len(got), len(want))
	}
	for i, ch := range e.Changes {
		if p := first.Changes[i]; p.Action != ch.Action || p.Address != ch.Address || p.Reason != ch.Reason {
			t.Errorf("change %d: plan %s %s %q, history %s %s %q", i, p.Action, p.Address, p.Reason, ch.Action, ch.Address, ch.Reason)
		}
	}
}
