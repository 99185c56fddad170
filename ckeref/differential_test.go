package ckeref

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// TestDifferential runs CKE v1.35.4's generator and ckegen's rate model
// (docs/models.md) on the same random data centers, tick after tick, and compares
// every decision: the kind of result (a cluster, nothing to do, an error),
// the operation, the control planes, the workers, and each node's taints,
// labels and annotations. Every difference must be one that docs/models.md makes
// deliberately, recognised as exactly that case; each is counted by class.
// The sequence goes on with ckegen's cluster.
//
// DIFFERENTIAL_SEED=N runs the one world of seed N (a failure names it);
// DIFFERENTIAL_WORLDS and DIFFERENTIAL_TICKS change the size.
func TestDifferential(t *testing.T) {
	worlds, ticks := envInt(t, "DIFFERENTIAL_WORLDS", 600), envInt(t, "DIFFERENTIAL_TICKS", 60)
	first := uint64(envInt(t, "DIFFERENTIAL_FIRST_SEED", 1))
	if s := os.Getenv("DIFFERENTIAL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DIFFERENTIAL_SEED: %v", err)
		}
		first, worlds = n, 1
	}
	st := &stats{classes: map[string]int{}, ops: map[string]int{}}
	start := time.Now()
	for seed := first; seed < first+uint64(worlds); seed++ {
		if !runWorld(t, seed, ticks, st) {
			break
		}
	}
	t.Logf("%d worlds, %d ticks compared in %s: %d identical decisions, %d with deliberate differences",
		worlds, st.ticks, time.Since(start).Round(time.Millisecond), st.same, st.ticks-st.same)
	t.Logf("ckegen operations: %s", countsText(st.ops))
	t.Logf("differences by class (ticks):\n%s", classesText(st.classes))
	t.Logf("nodes compared with a template's weight label, the same in both: %d", st.weighted)
	if st.ticks >= 200 && st.weighted == 0 {
		t.Errorf("no node with a weight label was compared: the worlds' templates must have weights")
	}
	if st.ticks-st.same > st.ticks/2 {
		t.Errorf("more than half of the ticks differ: the worlds are too far from what the comparison can check")
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

type stats struct {
	ticks, same int
	// weighted counts the nodes compared that carry a template's weight.
	weighted int
	classes  map[string]int
	ops      map[string]int
}

func countsText(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func classesText(m map[string]int) string {
	if len(m) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "  %6d  %s\n", m[k], k)
	}
	return b.String()
}

// runWorld runs one world's ticks; false when the test failed.
func runWorld(t *testing.T, seed uint64, ticks int, st *stats) bool {
	t.Helper()
	w := newWorld(seed)
	for n := range ticks {
		tk, err := newTick(w, seed, n)
		if err != nil {
			t.Errorf("seed %d tick %d: setting up: %v", seed, n, err)
			return false
		}
		tk.run()
		classes, err := tk.compare()
		if err != nil {
			t.Errorf("seed %d tick %d: ckegen and CKE v1.35.4 differ in a way docs/models.md does not list: %v\n%s\nrerun: DIFFERENTIAL_SEED=%d go test -run TestDifferential -v ./",
				seed, n, err, tk.dump(), seed)
			return false
		}
		st.ticks++
		st.weighted += tk.weighted
		if len(classes) == 0 {
			st.same++
		}
		for _, c := range slices.Compact(slices.Sorted(slices.Values(classes))) {
			st.classes[c]++
		}
		op := tk.genKind()
		if tk.gen != nil && tk.gen.Cluster != nil {
			op = tk.gen.Op
		}
		st.ops[op]++
		if tk.gen != nil && tk.gen.Cluster != nil {
			w.current = tk.gen.Cluster
			w.templateChanged = false
		}
		w.event()
	}
	return true
}

// tick is one decision made by both generators.
type tick struct {
	seed uint64
	n    int

	tmpl     *template.Template
	in       generator.Input
	changed  bool
	ckeIn    ckeInput
	machines map[string]*machine.Machine // by address
	cur      *cluster.Cluster
	curCPs   set
	curWs    set

	gen      *generator.Result
	genErr   error
	genPanic string
	cke      ckeOutcome

	// CKE's next membership, from its cluster or from its log record when
	// its own validation refused the cluster; ckeNodes are CKE's nodes.
	ckeCPs, ckeWs set
	ckeNodes      map[string]*cke.Node
	// weighted counts the nodes compareNode found equal with a weight label.
	weighted int
}

type set map[string]bool

func (s set) sorted() []string { return slices.Sorted(maps.Keys(s)) }

func (s set) minus(o set) set {
	out := set{}
	for k := range s {
		if !o[k] {
			out[k] = true
		}
	}
	return out
}

func (s set) union(o set) set {
	out := maps.Clone(s)
	if out == nil {
		out = set{}
	}
	maps.Copy(out, o)
	return out
}

func newTick(w *world, seed uint64, n int) (*tick, error) {
	tk := &tick{seed: seed, n: n, changed: w.templateChanged, cur: w.current}
	// The template as stored by set-template, with CKE's two defaults.
	tmpl, err := template.Parse([]byte(w.templates[w.tmpl]))
	if err != nil {
		return nil, err
	}
	if err := template.FillDefaults(tmpl.Cluster); err != nil {
		return nil, err
	}
	tk.tmpl = tmpl
	cons, err := constraints.Parse(fmt.Appendf(nil, `{"control-plane-count":%d,"minimum-workers-rate":%d}`, w.cpc, w.rate))
	if err != nil {
		return nil, err
	}
	if !cons.RateModel() {
		return nil, errors.New("constraints: not the rate model")
	}
	data := w.machinesJSON()
	raw, err := machine.Parse(data)
	if err != nil {
		return nil, err
	}
	ms, warnings := machine.Sanitize(raw, labels.ValidateSabakanLabel)
	if len(warnings) > 0 {
		// CKE is given the same machines as they are.
		return nil, fmt.Errorf("the world's machines are not clean: %q", warnings)
	}
	tk.in = generator.Input{
		Template: tmpl, Constraints: cons, Machines: ms, Current: w.current,
		NodeTaints: w.taintsOfNodes(), Now: w.now, RetireWait: generator.DefaultRetireWait,
		InventoryRoles: machine.Roles(raw),
	}
	tk.machines = map[string]*machine.Machine{}
	for _, m := range ms {
		tk.machines[m.Address()] = m
	}
	ckeTmpl := toCKECluster(tmpl.Cluster)
	if err := ckesabakan.ValidateTemplate(ckeTmpl); err != nil {
		return nil, fmt.Errorf("CKE refuses the template ckegen accepts: %w", err)
	}
	tk.ckeIn = ckeInput{
		tmpl:     ckeTmpl,
		cstr:     &cke.Constraints{ControlPlaneCount: w.cpc, MinimumWorkersRate: w.rate},
		machines: toCKEMachines(data),
		status:   toCKEStatus(tk.in.NodeTaints),
		now:      w.now,
		current:  toCKECluster(w.current),
	}
	tk.curCPs, tk.curWs = set{}, set{}
	if w.current != nil {
		for _, nd := range w.current.Nodes {
			if nd.ControlPlane {
				tk.curCPs[nd.Address] = true
			} else {
				tk.curWs[nd.Address] = true
			}
		}
	}
	return tk, nil
}

func (tk *tick) run() {
	func() {
		defer func() {
			if r := recover(); r != nil {
				tk.genPanic = fmt.Sprint(r)
			}
		}()
		tk.gen, tk.genErr = generator.Tick(tk.in, tk.changed)
	}()
	tk.cke = runCKE(tk.ckeIn, tk.changed, generator.DefaultRetireWait.Seconds())
}

func (tk *tick) genKind() string {
	switch {
	case tk.genPanic != "":
		return "panic"
	case errors.Is(tk.genErr, generator.ErrNothingToDo):
		return "nothing to do"
	case tk.genErr != nil:
		return "error"
	}
	return "cluster"
}

func (tk *tick) ckeKind() string {
	switch {
	case tk.cke.panic != "":
		return "panic"
	case tk.cke.err != nil:
		return "error"
	case tk.cke.cluster == nil:
		return "nothing to do"
	}
	return "cluster"
}

// Facts about the template in force, as both generators read it.
func (tk *tick) cpRole() string { return tk.tmpl.ControlPlane.Role }

// accepts reports whether a worker template takes machines of role (ckegen's
// rule).
func (tk *tick) accepts(role string) bool { return tk.tmpl.WorkerFor(role) != nil }

func (tk *tick) healthy(addr string) bool {
	m := tk.machines[addr]
	return m != nil && m.Status.State == machine.StateHealthy
}

// genSets returns ckegen's next control planes and workers.
func (tk *tick) genSets() (set, set) {
	cps, ws := set{}, set{}
	for _, nd := range tk.gen.Cluster.Nodes {
		if nd.ControlPlane {
			cps[nd.Address] = true
		} else {
			ws[nd.Address] = true
		}
	}
	return cps, ws
}

// compare returns the classes of the deliberate differences between the
// two decisions (none when they agree), or an error for any other
// difference.
func (tk *tick) compare() ([]string, error) {
	if tk.genPanic != "" {
		return nil, fmt.Errorf("ckegen panicked: %s", tk.genPanic)
	}
	if tk.gen != nil && tk.gen.Cluster != nil && tk.gen.Op == generator.OpRemoveUnmatchedRole {
		return tk.rule2()
	}
	if tk.genErr != nil && strings.HasPrefix(tk.genErr.Error(), generator.OpRemoveUnmatchedRole+": ") {
		return tk.rule2StarvesFill()
	}
	if tk.cke.panic != "" {
		return tk.ckePanic()
	}
	gk, ck := tk.genKind(), tk.ckeKind()
	if gk == "nothing to do" && (ck == "cluster" || ck == "error") && tk.typoGuardKeeps() {
		// ckegen's Regenerate does not apply a template that cannot place
		// every member, and ckegen writes such a worker back as it was,
		// state taint included; CKE renders it with its only worker
		// template.
		if tk.changed && tk.cke.op == generator.OpRegenerate {
			return []string{classTypoGuard}, nil
		}
		if tk.changed && !tk.cke.logged && tk.cke.err != nil && tk.cke.err.Error() == "no healthy machine is available" &&
			!tk.ckeWorkerLoop(tk.curCPs, tk.curWs, false) {
			// CKE's Regenerate failed in its fill's template choice.
			return []string{classTypoGuard, classStallFail}, nil
		}
		if tk.cke.op == generator.OpTaintNodes && tk.onlyUnmatchedTainted() {
			return []string{classTypoGuardTaint}, nil
		}
		if !tk.cke.logged && tk.cke.err != nil && tk.cke.err.Error() == "no healthy machine is available" &&
			tk.unmatchedStateTaintDiffers() && !tk.ckeWorkerLoop(tk.curCPs, tk.curWs, false) {
			// CKE's rule 8 re-taints such a worker, and its fill fails.
			return []string{classTypoGuardTaint, classStallFail}, nil
		}
	}
	if ck == "error" && tk.cke.logged && strings.Contains(tk.cke.err.Error(), "node-role.kubernetes.io/") {
		// CKE decided, then its own validation refused the cluster.
		c, err := tk.emptyRoleRefused()
		if err != nil {
			return nil, err
		}
		classes, err := tk.compareClusters()
		return append(c, classes...), err
	}
	switch {
	case gk == "nothing to do" && ck == "nothing to do":
		return nil, nil
	case gk == "error" && ck == "error":
		return tk.compareErrors()
	case gk == "cluster" && ck == "cluster":
		if err := tk.ckeSetsFromCluster(); err != nil {
			return nil, err
		}
		// What the empty-role case reads from CKE's log must be what
		// CKE's cluster is.
		cps, ws := tk.ckeCPs, tk.ckeWs
		if err := tk.membershipFromLog(); err != nil {
			return nil, err
		}
		if !maps.Equal(cps, tk.ckeCPs) || !maps.Equal(ws, tk.ckeWs) {
			return nil, fmt.Errorf("CKE's log says CPs %v workers %v, its cluster CPs %v workers %v", tk.ckeCPs.sorted(), tk.ckeWs.sorted(), cps.sorted(), ws.sorted())
		}
		return tk.compareClusters()
	case gk == "cluster" && ck == "error" && tk.cke.err.Error() == "no healthy machine is available":
		if tk.gen.Op == generator.OpIncreaseWorker {
			// CKE skipped rule 6 and a later rule's fill failed, or
			// CKE's rule 6 applied and its fill failed.
			if c, err := tk.ckeSkippedRule6(); err == nil {
				return c, nil
			}
			if !tk.ckeWorkerLoop(tk.curCPs, tk.curWs, true) {
				return []string{classStallFail}, nil
			}
		}
		return tk.fillTargetUnreachable()
	case gk == "cluster" && tk.gen.Op == generator.OpIncreaseWorker && (ck == "nothing to do" || ck == "cluster"):
		// CKE's rule 6 did not apply, and a later rule (or none) did.
		return tk.ckeSkippedRule6()
	}
	return nil, fmt.Errorf("result: ckegen %s, CKE %s", tk.genResultText(), tk.ckeResultText())
}

func (tk *tick) genResultText() string {
	switch tk.genKind() {
	case "cluster":
		return "cluster by " + strconv.Quote(tk.gen.Op)
	case "error":
		return "error: " + tk.genErr.Error()
	}
	return tk.genKind()
}

func (tk *tick) ckeResultText() string {
	switch tk.ckeKind() {
	case "cluster":
		return "cluster by " + strconv.Quote(tk.cke.op)
	case "error":
		return "error: " + tk.cke.err.Error()
	case "panic":
		return "panic: " + tk.cke.panic
	}
	return tk.ckeKind()
}

// Class names, as the summary prints them. The docs/models.md item each one is
// follows the colon.
const (
	classRule2          = "rule 2: ckegen removes workers of a role no template takes; CKE v1.35 has no rule 2"
	classRule2Panic     = "rule 2: ... where CKE panics in getWorkerTmpl (no panic where CKE panics)"
	classPanic          = "no panic where CKE panics: a worker of a role no template takes (getWorkerTmpl), kept by the typo guard or a template change"
	classPanicDemote    = "no panic where CKE panics: demoting a control plane of a role no worker template takes (ckegen removes it)"
	classEmptyRole      = "rendering: empty role, no node-role.kubernetes.io/ label (CKE's own validation refuses its cluster)"
	classTargetCPs      = "every HEALTHY machine used: CKE's rule 6 aims at HEALTHY machines minus all control planes (a non-HEALTHY CP leaves a HEALTHY machine unused)"
	classFillAll        = "every HEALTHY machine used: CKE's fill aims at HEALTHY machines minus all CPs and compares with all workers (a non-HEALTHY CP or worker leaves a HEALTHY machine unused)"
	classStall          = "every HEALTHY machine used: CKE's chooseWorkerTmpl picks a template with no unused machine and stops"
	classFillOverCount  = "every HEALTHY machine used: CKE's fill target counts machines no worker can take, CKE fails (errNotAvailable)"
	classOneCP          = "one CP per tick: CKE demotes every excess control plane at once; ckegen's one is the lowest removal score"
	classTieCP          = "deterministic choice: CKE chose another control plane of the same score profile"
	classSpare          = "spare nodes: ckegen promotes a spare worker before adding an unused candidate; CKE v1.35 looks for spares among unused machines first"
	classTypoGuard      = "rule 2's typo guard: ckegen keeps a worker of a role no template takes as it was (and does not regenerate); CKE renders it with its only worker template"
	classTypoGuardTaint = "rule 2's typo guard: ckegen writes a worker of a role no template takes back as it was, state taint included; CKE re-taints it"
	classRule2Starves   = "CKEGEN DEFECT (reported): rule 2 removes the workers fill needed to promote to control planes, then fill fails, every tick; CKE promotes them"
	classWrittenBack    = "rule 2: a worker of a role no template takes (kept by the typo guard, or left while an earlier rule applies) is written back as it was; CKE renders it with its only worker template"
	classStallFail      = "every HEALTHY machine used: CKE's chooseWorkerTmpl picks a template with no unused machine, and its fill fails (errNotAvailable)"
	classSingleRoleTmpl = "rule 4: a control plane of a role no worker template takes: ckegen removes it; CKE demotes it and renders it with its only worker template"
)

// typoGuardKeeps reports whether rule 2's typo guard holds (a worker
// template's role matches no machine of the inventory, and ckegen warns
// about it) while a current worker has a role no worker template takes.
func (tk *tick) typoGuardKeeps() bool {
	warned := false
	for _, w := range tk.gen.Warnings {
		warned = warned || strings.HasPrefix(w, "template role ") && strings.Contains(w, " matches no machine; inventory roles: ")
	}
	if !warned {
		return false
	}
	for a := range tk.curWs {
		if m := tk.machines[a]; m != nil && !tk.accepts(m.Spec.Role) {
			return true
		}
	}
	return false
}

// unmatchedStateTaintDiffers reports whether a current worker of a role no
// worker template takes has state taints other than its machine's state
// calls for.
func (tk *tick) unmatchedStateTaintDiffers() bool {
	for _, n := range tk.cur.Nodes {
		m := tk.machines[n.Address]
		if n.ControlPlane || m == nil || tk.accepts(m.Spec.Role) {
			continue
		}
		var want []cluster.Taint
		if st := taints.ForState(m.Status.State, false); st != nil {
			want = append(want, *st)
		}
		if !taints.StateTaintsEqual(n.Taints, want) {
			return true
		}
	}
	return false
}

// onlyUnmatchedTainted reports whether CKE's taint changes are all on
// current workers of a role no worker template takes.
func (tk *tick) onlyUnmatchedTainted() bool {
	chs, err := parseCKEChanges(tk.cke.changes)
	if err != nil || len(chs) == 0 {
		return false
	}
	for _, c := range chs {
		m := tk.machines[c.address]
		if c.action != "taint" || !tk.curWs[c.address] || m == nil || tk.accepts(m.Spec.Role) {
			return false
		}
	}
	return true
}

// rule2StarvesFill: ckegen's rule 2 removed the workers of a role no
// worker template takes, and its fill then found no control plane: the
// workers it had just removed were the only machines of the control plane
// template's role, and a removed node is not re-added in the same tick. The
// tick fails, and so does every next one while the template stays. CKE has
// no rule 2 and promotes those workers. A ckegen defect (reported), counted
// apart so that it stays visible.
func (tk *tick) rule2StarvesFill() ([]string, error) {
	if tk.ckeKind() == "error" && !tk.cke.logged {
		// Both fail (CKE has no candidate to promote either).
		return tk.compareErrors()
	}
	if !errors.Is(tk.genErr, generator.ErrNotEnoughMachines) {
		return nil, fmt.Errorf("ckegen failed after rule 2: %v", tk.genErr)
	}
	starved := false
	for a := range tk.curWs {
		m := tk.machines[a]
		if m != nil && m.Status.State == machine.StateHealthy && (tk.cpRole() == "" || m.Spec.Role == tk.cpRole()) && !tk.accepts(m.Spec.Role) &&
			slices.Contains(tk.cke.changes, "promote a worker: "+a) {
			starved = true
		}
	}
	if !starved {
		return nil, fmt.Errorf("ckegen failed after rule 2 with no unmatched worker of the control plane's role: %v", tk.genErr)
	}
	return []string{classRule2Starves}, nil
}

// rule2: ckegen applied rule 2, which CKE does not have. CKE either panics
// rendering such a worker (several worker templates), keeps it, or finds
// nothing to do.
func (tk *tick) rule2() ([]string, error) {
	removed := set{}
	for _, c := range tk.gen.Changes {
		if c.Action != generator.ActionRemoveUnmatchedWorker {
			continue
		}
		m := tk.machines[c.Address]
		if !tk.curWs[c.Address] || m == nil || tk.accepts(m.Spec.Role) {
			return nil, fmt.Errorf("rule 2 removed %s, which is not a current worker of a role no template takes", c.Address)
		}
		removed[c.Address] = true
	}
	if len(removed) == 0 {
		return nil, errors.New("rule 2 applied without removing a worker")
	}
	if tk.cke.panic != "" {
		if _, err := tk.panicRole(); err != nil {
			return nil, err
		}
		return []string{classRule2Panic}, nil
	}
	switch tk.ckeKind() {
	case "cluster":
		if err := tk.ckeSetsFromCluster(); err != nil {
			return nil, err
		}
		for a := range removed {
			if !tk.ckeWs[a] && !tk.ckeCPs[a] && !slices.Contains(tk.cke.changes, "remove retired worker: "+a) {
				return nil, fmt.Errorf("rule 2: CKE removed %s too", a)
			}
		}
	case "error":
		if !strings.Contains(tk.cke.err.Error(), "node-role.kubernetes.io/") && tk.cke.err.Error() != "no healthy machine is available" {
			return nil, fmt.Errorf("rule 2: CKE failed: %v", tk.cke.err)
		}
	}
	return []string{classRule2}, nil
}

// panicRole checks CKE's panic: getWorkerTmpl asked for a role that no
// worker template takes, with several worker templates.
func (tk *tick) panicRole() (string, error) {
	role, ok := strings.CutPrefix(tk.cke.panic, "BUG: instantiating for invalid role: ")
	if !ok {
		return "", fmt.Errorf("CKE panicked: %s", tk.cke.panic)
	}
	if len(tk.tmpl.Workers) < 2 || tk.accepts(role) {
		return "", fmt.Errorf("CKE panicked for role %q, which a worker template takes: %s", role, tk.cke.panic)
	}
	return role, nil
}

// ckePanic: CKE panicked rendering a worker of a role no worker template
// takes: a current worker (rule 2's typo guard kept it, or CKE has no rule
// 2), or a control plane it demoted.
func (tk *tick) ckePanic() ([]string, error) {
	role, err := tk.panicRole()
	if err != nil {
		return nil, err
	}
	for a := range tk.curWs {
		if m := tk.machines[a]; m != nil && m.Spec.Role == role {
			return []string{classPanic}, nil
		}
	}
	if tk.cke.logged {
		chs, err := parseCKEChanges(tk.cke.changes)
		if err != nil {
			return nil, err
		}
		for _, c := range chs {
			if m := tk.machines[c.address]; c.action == "demote" && m != nil && m.Spec.Role == role {
				// ckegen removes such a control plane instead (rule 4).
				if tk.genKind() == "cluster" && tk.gen.Op == generator.OpDecreaseCP {
					return []string{classPanicDemote}, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("CKE panicked for role %q, which no current worker has", role)
}

// emptyRoleRefused: CKE rendered "node-role.kubernetes.io/": "true" for a
// machine of the empty role, and its own validation refused that label.
// Its decision is still known from its log record: the membership is the
// current one with its changes applied, and its nodes are what its
// MachineToNode renders.
func (tk *tick) emptyRoleRefused() ([]string, error) {
	if err := tk.membershipFromLog(); err != nil {
		return nil, err
	}
	tk.ckeNodes = map[string]*cke.Node{}
	emptyRole := false
	for a := range tk.ckeCPs.union(tk.ckeWs) {
		m := tk.ckeMachine(a)
		if m == nil {
			return nil, fmt.Errorf("CKE's log names %s, which is not a machine", a)
		}
		emptyRole = emptyRole || m.Spec.Role == ""
		tn := tk.ckeTemplateNode(tk.ckeCPs[a], m.Spec.Role)
		if tn == nil {
			return nil, fmt.Errorf("no template renders %s", a)
		}
		tk.ckeNodes[a] = ckesabakan.MachineToNode(m, tn)
	}
	if !emptyRole {
		return nil, fmt.Errorf("CKE's validation failed without a machine of the empty role: %v", tk.cke.err)
	}
	if tk.genKind() != "cluster" {
		return nil, fmt.Errorf("result: ckegen %s, CKE decided %q (its cluster fails its validation: %v)", tk.genResultText(), tk.cke.op, tk.cke.err)
	}
	return []string{classEmptyRole}, nil
}

// membershipFromLog sets CKE's next membership from its log record: the
// current one with CKE's changes applied.
func (tk *tick) membershipFromLog() error {
	chs, err := parseCKEChanges(tk.cke.changes)
	if err != nil {
		return err
	}
	tk.ckeCPs, tk.ckeWs = maps.Clone(tk.curCPs), maps.Clone(tk.curWs)
	for _, c := range chs {
		switch c.action {
		case "add-cp":
			tk.ckeCPs[c.address] = true
		case "add-worker":
			tk.ckeWs[c.address] = true
		case "promote":
			delete(tk.ckeWs, c.address)
			tk.ckeCPs[c.address] = true
		case "demote":
			delete(tk.ckeCPs, c.address)
			tk.ckeWs[c.address] = true
		case "remove":
			delete(tk.ckeCPs, c.address)
			delete(tk.ckeWs, c.address)
		}
	}
	return nil
}

func (tk *tick) ckeMachine(addr string) *ckesabakan.Machine {
	for i := range tk.ckeIn.machines {
		if m := &tk.ckeIn.machines[i]; m.Spec.IPv4[0] == addr {
			return m
		}
	}
	return nil
}

// ckeTemplateNode is the template node CKE renders a node with (its
// getWorkerTmpl: the only worker template, or the one of the role).
func (tk *tick) ckeTemplateNode(cp bool, role string) *cke.Node {
	var workers []*cke.Node
	for _, n := range tk.ckeIn.tmpl.Nodes {
		if n.ControlPlane {
			if cp {
				return n
			}
			continue
		}
		workers = append(workers, n)
	}
	if len(workers) == 1 {
		return workers[0]
	}
	for _, n := range workers {
		if n.Labels["cke.cybozu.com/role"] == role {
			return n
		}
	}
	return nil
}

func (tk *tick) ckeSetsFromCluster() error {
	tk.ckeCPs, tk.ckeWs, tk.ckeNodes = set{}, set{}, map[string]*cke.Node{}
	for _, n := range tk.cke.cluster.Nodes {
		if n.ControlPlane {
			tk.ckeCPs[n.Address] = true
		} else {
			tk.ckeWs[n.Address] = true
		}
		tk.ckeNodes[n.Address] = n
	}
	return nil
}

func (tk *tick) compareErrors() ([]string, error) {
	ce := tk.cke.err.Error()
	switch {
	case ce == "too many non-existent control plane nodes" && errors.Is(tk.genErr, generator.ErrTooManyNonExistent):
		return nil, nil
	case ce == "no healthy machine is available" && errors.Is(tk.genErr, generator.ErrNotEnoughMachines):
		return nil, nil
	}
	return nil, fmt.Errorf("errors differ: ckegen %v; CKE %v", tk.genErr, tk.cke.err)
}

// CKE's worker arithmetic, restated to recognise where it stops short of
// every HEALTHY machine. healthyOfRole counts the HEALTHY machines CKE's
// filterHealthyMachinesByRole returns for a template role ("" = all).
func (tk *tick) healthyOfRole(role string) int {
	n := 0
	for _, m := range tk.machines {
		if m.Status.State == machine.StateHealthy && (role == "" || m.Spec.Role == role) {
			n++
		}
	}
	return n
}

// ckeFillTarget is CKE's fill's numAvailableMachines with cps control
// planes: HEALTHY machines of the worker templates' roles (all of them when
// a template has no role) minus all control planes when a template's role
// is the control plane template's.
func (tk *tick) ckeFillTarget(cps int) int {
	n := 0
	for _, t := range tk.tmpl.Workers {
		if t.Role == "" {
			return tk.healthyOfRole("") - cps
		}
		n += tk.healthyOfRole(t.Role)
		if t.Role == tk.cpRole() {
			n -= cps
		}
	}
	return n
}

// ckeChosenTemplate is the worker template CKE's chooseWorkerTmpl picks
// with control planes cps and workers ws: the lowest workers of the role
// per HEALTHY machine of the role (less all control planes for the control
// plane's role), templates without such machines skipped, the first on
// ties.
func (tk *tick) ckeChosenTemplate(cps, ws set) *template.NodeTemplate {
	count := map[string]int{}
	for a := range ws {
		count[tk.machines[a].Spec.Role]++
	}
	least, idx := math.MaxFloat64, 0
	for i, t := range tk.tmpl.Workers {
		num := tk.healthyOfRole(t.Role)
		if t.Role == tk.cpRole() {
			num -= len(cps)
		}
		if num <= 0 {
			continue
		}
		if w := float64(count[t.Role]) / float64(num); w < least {
			least, idx = w, i
		}
	}
	return &tk.tmpl.Workers[idx]
}

// unusedFor lists the HEALTHY machines outside cps and ws that template t
// takes as CKE filters them (by role; any role without one).
func (tk *tick) unusedFor(t *template.NodeTemplate, cps, ws set) []string {
	var out []string
	for a, m := range tk.machines {
		if m.Status.State == machine.StateHealthy && !cps[a] && !ws[a] && (t.Role == "" || t.Role == m.Spec.Role) {
			out = append(out, a)
		}
	}
	return out
}

func (tk *tick) healthyCount(s set) int {
	n := 0
	for a := range s {
		if tk.healthy(a) {
			n++
		}
	}
	return n
}

// fillTargetUnreachable: CKE failed with errNotAvailable where ckegen made
// a cluster. CKE's fill adds workers until numAvailableMachines; when that
// target exceeds what the machines allow, selectWorker finds nothing and
// fill fails. Recognised when ckegen's cluster, which uses every HEALTHY
// machine a template takes, has fewer workers than CKE's target, or when
// CKE's template choice on ckegen's membership picks a template without an
// unused machine while the target is not met.
func (tk *tick) fillTargetUnreachable() ([]string, error) {
	gCPs, gWs := tk.genSets()
	// CKE's membership at its fill's end: ckegen's nodes, with
	// control-plane-count control planes (CKE demotes every excess one at
	// once).
	cps, ws := len(gCPs), len(gWs)
	if tk.gen.Op == generator.OpDecreaseCP {
		cps, ws = tk.in.Constraints.ControlPlaneCount, cps+ws-tk.in.Constraints.ControlPlaneCount
	}
	if cps < tk.in.Constraints.ControlPlaneCount {
		return nil, fmt.Errorf("CKE failed (%v); ckegen's cluster has %d control planes", tk.cke.err, len(gCPs))
	}
	if target := tk.ckeFillTarget(cps); ws < target {
		return []string{classFillOverCount}, nil
	}
	// CKE's fill adds workers one at a time with the template its
	// chooseWorkerTmpl picks, and fails as soon as that template has no
	// unused machine, though another template has.
	if !tk.ckeWorkerLoop(gCPs, tk.workersBefore(gWs), true) {
		return []string{classStallFail}, nil
	}
	if tk.gen.Op == generator.OpDecreaseCP && len(tk.curCPs)-1 == tk.in.Constraints.ControlPlaneCount {
		// CKE may have demoted another control plane of the same removal
		// score, of another role.
		d := tk.curCPs.minus(gCPs).sorted()[0]
		for c := range tk.curCPs {
			if c == d || tk.removalScore(c, tk.curCPs) != tk.removalScore(d, tk.curCPs) || !tk.accepts(tk.machines[c].Spec.Role) {
				continue
			}
			cps := maps.Clone(tk.curCPs)
			delete(cps, c)
			ws := tk.workersBefore(gWs)
			delete(ws, d)
			ws[c] = true
			if !tk.ckeWorkerLoop(cps, ws, false) {
				return []string{classTieCP, classStallFail}, nil
			}
		}
	}
	// CKE may have chosen, among control planes of the same score, one of
	// a role a worker template takes where ckegen chose one of another
	// role: each such choice is one worker fewer for the same target.
	if alt := tk.tiedCPsOfWorkerRoles(gCPs); alt > 0 && ws-alt < tk.ckeFillTarget(cps) {
		return []string{classFillOverCount}, nil
	}
	return nil, fmt.Errorf("CKE failed (%v) though its fill target %d is met by ckegen's %d workers", tk.cke.err, tk.ckeFillTarget(cps), ws)
}

// workersBefore is ckegen's workers without those it added in this tick:
// the workers CKE's fill starts from.
func (tk *tick) workersBefore(gWs set) set {
	ws := maps.Clone(gWs)
	for _, c := range tk.gen.Changes {
		if c.Action == generator.ActionAddWorker || c.Action == generator.ActionGenerate {
			delete(ws, c.Address)
		}
	}
	return ws
}

// ckeWorkerLoop plays CKE's worker loops on counts by role (what its
// chooseWorkerTmpl reads): increaseWorker's when rule6 (up to HEALTHY
// machines minus all control planes, stopping where the chosen template
// has no unused machine), then fill's (up to its target, failing there).
// It reports whether CKE's fill succeeds.
func (tk *tick) ckeWorkerLoop(cps, ws set, rule6 bool) bool {
	count := map[string]int{}
	for a := range ws {
		count[tk.machines[a].Spec.Role]++
	}
	unused := map[string]int{}
	total := 0
	for a, m := range tk.machines {
		if m.Status.State == machine.StateHealthy && !cps[a] && !ws[a] {
			unused[m.Spec.Role]++
			total++
		}
	}
	healthyWs, nws := tk.healthyCount(ws), len(ws)
	step := func() bool {
		least, idx := math.MaxFloat64, 0
		for i, t := range tk.tmpl.Workers {
			num := tk.healthyOfRole(t.Role)
			if t.Role == tk.cpRole() {
				num -= len(cps)
			}
			if num <= 0 {
				continue
			}
			if w := float64(count[t.Role]) / float64(num); w < least {
				least, idx = w, i
			}
		}
		r := tk.tmpl.Workers[idx].Role
		if r == "" {
			if total == 0 {
				return false
			}
			// A single template without a role: which role does not
			// matter to the choice.
			for role, n := range unused {
				if n > 0 {
					r = role
					break
				}
			}
		}
		if unused[r] == 0 {
			return false
		}
		unused[r]--
		total--
		count[r]++
		healthyWs++
		nws++
		return true
	}
	if rule6 {
		for i := healthyWs; i < tk.healthyOfRole("")-len(cps); i++ {
			if !step() {
				break
			}
		}
	}
	for target := tk.ckeFillTarget(len(cps)); nws < target; {
		if !step() {
			return false
		}
	}
	return true
}

// tiedCPsOfWorkerRoles counts ckegen's new control planes of a role no
// worker template takes for which another HEALTHY candidate of a role a
// worker template takes had the same selection score.
func (tk *tick) tiedCPsOfWorkerRoles(gCPs set) int {
	base := tk.curCPs.minus(tk.curCPs.minus(gCPs))
	inRack := map[int]int{}
	for a := range base {
		inRack[tk.machines[a].Spec.Rack]++
	}
	score := func(m *machine.Machine) int { return (100-inRack[m.Spec.Rack])*10 + lifetimePoints(m, tk.in.Now) }
	n := 0
	for _, c := range tk.gen.Changes {
		if !gCPs[c.Address] || base[c.Address] {
			continue
		}
		g := tk.machines[c.Address]
		if !tk.accepts(g.Spec.Role) {
			for a, m := range tk.machines {
				if !gCPs[a] && m.Status.State == machine.StateHealthy && tk.accepts(m.Spec.Role) &&
					(tk.cpRole() == "" || m.Spec.Role == tk.cpRole()) && score(m) == score(g) {
					n++
					break
				}
			}
		}
		inRack[g.Spec.Rack]++
	}
	return n
}

// ckeSkippedRule6: ckegen added workers by rule 6; CKE did not, and went on
// to a later rule or found nothing to do. Recognised when CKE's increaseWorker
// target (HEALTHY machines minus all control planes) is already met by the
// HEALTHY workers, or when CKE's template choice picks a template without
// an unused machine.
func (tk *tick) ckeSkippedRule6() ([]string, error) {
	if tk.ckeKind() == "cluster" && tk.cke.op == generator.OpIncreaseWorker {
		return nil, errors.New("both applied rule 6 (unreachable)")
	}
	if tk.healthyCount(tk.curWs) >= tk.healthyOfRole("")-len(tk.curCPs) {
		return []string{classTargetCPs}, nil
	}
	t := tk.ckeChosenTemplate(tk.curCPs, tk.curWs)
	if len(tk.unusedFor(t, tk.curCPs, tk.curWs)) == 0 {
		return []string{classStall}, nil
	}
	return nil, fmt.Errorf("ckegen applied rule 6; CKE %s though %d HEALTHY workers are below its target %d and its template %q has unused machines",
		tk.ckeResultText(), tk.healthyCount(tk.curWs), tk.healthyOfRole("")-len(tk.curCPs), t.Role)
}

// compareClusters compares two clusters made by the same rule.
func (tk *tick) compareClusters() ([]string, error) {
	if tk.gen.Op != tk.cke.op {
		if tk.gen.Op == generator.OpIncreaseWorker {
			return tk.ckeSkippedRule6()
		}
		return nil, fmt.Errorf("operation: ckegen %q, CKE %q", tk.gen.Op, tk.cke.op)
	}
	var classes []string
	gCPs, gWs := tk.genSets()
	gN, cN := gCPs.union(gWs), tk.ckeCPs.union(tk.ckeWs)

	// Control planes first: a tie lets the other generator have the
	// machine as a worker, or (when no worker template takes its role)
	// not at all.
	if !maps.Equal(gCPs, tk.ckeCPs) {
		c, err := tk.compareCPs(gCPs)
		if err != nil {
			return nil, err
		}
		classes = append(classes, c...)
	}
	if err := tk.checkCPScores(gCPs); err != nil {
		return nil, err
	}
	tieOnly := func(a string, other set) bool {
		m := tk.machines[a]
		return other[a] && m != nil && !tk.accepts(m.Spec.Role)
	}
	// Nodes that only CKE has.
	if extra := cN.minus(gN); len(extra) > 0 {
		single := false
		for a := range extra {
			m := tk.machines[a]
			switch {
			case tieOnly(a, tk.ckeCPs.minus(gCPs)):
			case tk.gen.Op == generator.OpDecreaseCP && tk.curCPs[a] && m != nil && !tk.accepts(m.Spec.Role) && len(tk.tmpl.Workers) == 1:
				// A control plane ckegen removed because no worker
				// template takes its role (rule 4), which CKE demotes and
				// renders with its only worker template.
				single = true
			default:
				return nil, fmt.Errorf("CKE's cluster has %s, ckegen's does not", strings.Join(extra.sorted(), ", "))
			}
		}
		if single {
			classes = append(classes, classSingleRoleTmpl)
		}
	}
	// Nodes that only ckegen has: HEALTHY machines CKE left unused.
	missing := set{}
	for a := range gN.minus(cN) {
		if tieOnly(a, gCPs.minus(tk.ckeCPs)) {
			continue
		}
		m := tk.machines[a]
		if tk.curCPs[a] || tk.curWs[a] || m == nil || m.Status.State != machine.StateHealthy || !tk.accepts(m.Spec.Role) {
			return nil, fmt.Errorf("ckegen's cluster has %s, CKE's does not", strings.Join(gN.minus(cN).sorted(), ", "))
		}
		missing[a] = true
	}
	if len(missing) > 0 {
		c, err := tk.whyUnused(missing)
		if err != nil {
			return nil, err
		}
		classes = append(classes, c)
	}
	// Rendering of the nodes both have in the same role.
	gNodes := map[string]*cluster.Node{}
	for _, n := range tk.gen.Cluster.Nodes {
		gNodes[n.Address] = n
	}
	for a, gn := range gNodes {
		cn := tk.ckeNodes[a]
		if cn == nil || cn.ControlPlane != gn.ControlPlane {
			continue
		}
		if m := tk.machines[a]; !gn.ControlPlane && m != nil && !tk.accepts(m.Spec.Role) {
			// Kept by rule 2's typo guard, or left for rule 2 while an
			// earlier rule applies: written back as it was. CKE renders it
			// with its only worker template.
			if !slices.ContainsFunc(tk.cur.Nodes, func(n *cluster.Node) bool { return n == gn }) {
				return nil, fmt.Errorf("node %s: a worker of role %q that no template takes, not written back as it was", a, m.Spec.Role)
			}
			classes = append(classes, classWrittenBack)
			continue
		}
		if err := tk.compareNode(gn, cn); err != nil {
			return nil, fmt.Errorf("node %s: %w", a, err)
		}
	}
	return classes, nil
}

// whyUnused explains the HEALTHY machines CKE left unused, from CKE's own
// stopping rules on its resulting membership.
func (tk *tick) whyUnused(missing set) (string, error) {
	cps, ws := tk.ckeCPs, tk.ckeWs
	fillDone := len(ws) >= tk.ckeFillTarget(len(cps))
	t := tk.ckeChosenTemplate(cps, ws)
	stalled := len(tk.unusedFor(t, cps, ws)) == 0
	if tk.cke.op == generator.OpIncreaseWorker {
		// increaseWorker adds up to HEALTHY machines minus all control
		// planes, or stops where the template chosen has no machine; then
		// fill runs.
		if tk.healthyCount(ws) >= tk.healthyOfRole("")-len(cps) && fillDone {
			return classTargetCPs, nil
		}
	} else if fillDone {
		return classFillAll, nil
	}
	if stalled {
		return classStall, nil
	}
	return "", fmt.Errorf("CKE left %s unused: its fill target %d, %d workers; its template %q has unused machines",
		strings.Join(missing.sorted(), ", "), tk.ckeFillTarget(len(cps)), len(ws), t.Role)
}

// checkCPScores checks the selection score ckegen reports for each control
// plane it chose against the selection score's (CKE's scoreMachine), rack counts growing
// with each pick: a score that no longer says what CKE computes would
// otherwise go unseen where it does not change a choice.
func (tk *tick) checkCPScores(gCPs set) error {
	base := tk.curCPs.minus(tk.curCPs.minus(gCPs))
	var order []string
	var scores []int
	for _, c := range tk.gen.Changes {
		if gCPs[c.Address] && !base[c.Address] && c.Score != nil && !slices.Contains(order, c.Address) {
			order = append(order, c.Address)
			scores = append(scores, c.Score.Total)
		}
	}
	for i, p := range tk.cpProfile(base, order) {
		if p.score != scores[i] {
			return fmt.Errorf("control plane %s: ckegen's selection score %d, the selection score's (CKE's) %d", order[i], scores[i], p.score)
		}
	}
	return nil
}

// cpPick is one control plane choice: the kind (add or promote), whether
// the machine is a spare node, and its selection score.
type cpPick struct {
	kind  string
	spare bool
	score int
}

// compareCPs explains different control planes.
func (tk *tick) compareCPs(gCPs set) ([]string, error) {
	if tk.gen.Op == generator.OpDecreaseCP {
		return tk.oneCPPerTick(gCPs)
	}
	// The control planes that left must be the same (they are not a choice).
	if !maps.Equal(tk.curCPs.minus(gCPs), tk.curCPs.minus(tk.ckeCPs)) {
		return nil, fmt.Errorf("control planes that left: ckegen %v, CKE %v", tk.curCPs.minus(gCPs).sorted(), tk.curCPs.minus(tk.ckeCPs).sorted())
	}
	base := tk.curCPs.minus(tk.curCPs.minus(gCPs))
	var gOrder []string
	for _, c := range tk.gen.Changes {
		if gCPs[c.Address] && !base[c.Address] && !slices.Contains(gOrder, c.Address) {
			gOrder = append(gOrder, c.Address)
		}
	}
	chs, err := parseCKEChanges(tk.cke.changes)
	if err != nil {
		return nil, err
	}
	var cOrder []string
	for _, c := range chs {
		if (c.action == "add-cp" || c.action == "promote") && tk.ckeCPs[c.address] && !base[c.address] {
			cOrder = append(cOrder, c.address)
		}
	}
	gp, cp := tk.cpProfile(base, gOrder), tk.cpProfile(base, cOrder)
	if slices.Equal(gp, cp) {
		return []string{classTieCP}, nil
	}
	// ckegen promotes a spare worker first; CKE adds an unused machine
	// first and looks for a spare among the workers only when none is left.
	if tk.spareBeforeCandidate(gp, cp) {
		return []string{classSpare}, nil
	}
	return nil, fmt.Errorf("control planes chosen: ckegen %v %v, CKE %v %v", gOrder, gp, cOrder, cp)
}

// spareBeforeCandidate recognises the spare-first order against CKE's: ckegen
// promotes spare workers first (a prefix of its picks), then adds unused
// candidates; CKE adds unused candidates first and promotes only when none
// is left, so its first pick is an added machine and no promotion comes
// before an addition.
func (tk *tick) spareBeforeCandidate(gp, cp []cpPick) bool {
	if len(gp) != len(cp) || len(gp) == 0 || !gp[0].spare || gp[0].kind != "promote" || cp[0].kind != "add" {
		return false
	}
	for i := 1; i < len(gp); i++ {
		if gp[i].kind == "promote" && gp[i].spare && !(gp[i-1].kind == "promote" && gp[i-1].spare) {
			return false
		}
		if cp[i].kind == "add" && cp[i-1].kind == "promote" {
			return false
		}
	}
	return true
}

// cpProfile scores control plane picks in order (the selection
// score, the rack counts growing with each pick).
func (tk *tick) cpProfile(base set, order []string) []cpPick {
	inRack := map[int]int{}
	for a := range base {
		inRack[tk.machines[a].Spec.Rack]++
	}
	var out []cpPick
	for _, a := range order {
		m := tk.machines[a]
		kind := "add"
		if tk.curWs[a] {
			kind = "promote"
		}
		out = append(out, cpPick{kind: kind, spare: tk.isSpare(a), score: (100-inRack[m.Spec.Rack])*10 + lifetimePoints(m, tk.in.Now)})
		inRack[m.Spec.Rack]++
	}
	return out
}

func (tk *tick) isSpare(addr string) bool {
	if tk.tmpl.SpareNodeTaintKey == "" {
		return false
	}
	for _, t := range tk.in.NodeTaints[addr] {
		if t.Key == tk.tmpl.SpareNodeTaintKey {
			return true
		}
	}
	return false
}

func lifetimePoints(m *machine.Machine, now time.Time) int {
	days := m.LifetimeDays(now)
	p := 0
	for _, t := range []int{250, 500, 1000} {
		if days > t {
			p++
		}
		if days < -t {
			p--
		}
	}
	return p
}

// removalScore is the removal score of a control plane among cps.
func (tk *tick) removalScore(a string, cps set) int {
	m := tk.machines[a]
	n := 0
	for c := range cps {
		if tk.machines[c].Spec.Rack == m.Spec.Rack {
			n++
		}
	}
	s := (100-n)*10 + lifetimePoints(m, tk.in.Now)
	if m.Status.State == machine.StateHealthy {
		s += 1000
	}
	return s
}

// oneCPPerTick: CKE demoted every excess control plane in one tick; ckegen
// demoted (or removed) one, whose removal score must be CKE's first
// choice's.
func (tk *tick) oneCPPerTick(gCPs set) ([]string, error) {
	gOut := tk.curCPs.minus(gCPs)
	cOut := tk.curCPs.minus(tk.ckeCPs)
	want := len(tk.curCPs) - tk.in.Constraints.ControlPlaneCount
	if len(gOut) != 1 || len(cOut) != want || len(tk.ckeCPs) != tk.in.Constraints.ControlPlaneCount {
		return nil, fmt.Errorf("decrease control plane: ckegen took out %v, CKE %v, from %d to %d", gOut.sorted(), cOut.sorted(), len(tk.curCPs), tk.in.Constraints.ControlPlaneCount)
	}
	chs, err := parseCKEChanges(tk.cke.changes)
	if err != nil {
		return nil, err
	}
	var first string
	for _, c := range chs {
		if c.action == "demote" {
			first = c.address
			break
		}
	}
	g := gOut.sorted()[0]
	if tk.removalScore(g, tk.curCPs) != tk.removalScore(first, tk.curCPs) {
		return nil, fmt.Errorf("decrease control plane: ckegen took out %s (removal score %d), CKE first %s (%d)",
			g, tk.removalScore(g, tk.curCPs), first, tk.removalScore(first, tk.curCPs))
	}
	if want == 1 {
		return []string{classTieCP}, nil
	}
	return []string{classOneCP}, nil
}

// compareNode compares the rendering of one node: user, taints, labels and
// annotations, with the one rendering difference of docs/models.md taken
// out: ckegen renders no node-role.kubernetes.io/ label for the empty
// role. Every other label is CKE's, key for key (a template's weight
// included; no failure-domain.beta.kubernetes.io/zone, which CKE v1.35.4
// does not render).
func (tk *tick) compareNode(g *cluster.Node, c *cke.Node) error {
	if g.User != c.User {
		return fmt.Errorf("user: ckegen %q, CKE %q", g.User, c.User)
	}
	var ct []cluster.Taint
	for _, t := range c.Taints {
		ct = append(ct, cluster.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	if !slices.Equal(g.Taints, ct) {
		return fmt.Errorf("taints: ckegen %v, CKE %v", g.Taints, ct)
	}
	gl := g.Labels
	cl := maps.Clone(c.Labels)
	if m := tk.machines[g.Address]; m != nil && m.Spec.Role == "" {
		if cl["node-role.kubernetes.io/"] != "true" {
			return errors.New(`labels: CKE has no "node-role.kubernetes.io/" label for the empty role`)
		}
		delete(cl, "node-role.kubernetes.io/")
	}
	if !maps.Equal(gl, cl) {
		return fmt.Errorf("labels: ckegen %v, CKE %v", sortedMap(gl), sortedMap(cl))
	}
	if !maps.Equal(g.Annotations, c.Annotations) {
		return fmt.Errorf("annotations: ckegen %v, CKE %v", sortedMap(g.Annotations), sortedMap(c.Annotations))
	}
	if _, ok := gl[labels.Weight]; ok {
		tk.weighted++
	}
	return nil
}

func sortedMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// dump shows a failing tick.
func (tk *tick) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, tick %d, now %s, template changed %v, control-plane-count %d, minimum-workers-rate %d\n",
		tk.seed, tk.n, tk.in.Now.Format(time.RFC3339), tk.changed, tk.in.Constraints.ControlPlaneCount, *tk.in.Constraints.MinimumWorkersRate)
	fmt.Fprintf(&b, "template: %s\n", mustJSON(tk.tmpl.Cluster))
	fmt.Fprintf(&b, "current: CPs %v, workers %v\n", tk.curCPs.sorted(), tk.curWs.sorted())
	fmt.Fprintf(&b, "ckegen: %s\n", tk.genResultText())
	if tk.gen != nil && tk.gen.Cluster != nil {
		cps, ws := tk.genSets()
		fmt.Fprintf(&b, "  CPs %v\n  workers %v\n", cps.sorted(), ws.sorted())
		for _, c := range tk.gen.Changes {
			fmt.Fprintf(&b, "  %s %s: %s\n", c.Action, c.Address, c.Reason)
		}
	}
	if tk.gen != nil {
		for _, wn := range tk.gen.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", wn)
		}
	}
	fmt.Fprintf(&b, "CKE: %s\n", tk.ckeResultText())
	if tk.ckeCPs != nil {
		fmt.Fprintf(&b, "  CPs %v\n  workers %v\n", tk.ckeCPs.sorted(), tk.ckeWs.sorted())
	}
	if tk.cke.logged {
		fmt.Fprintf(&b, "  op %q, changes %q\n", tk.cke.op, tk.cke.changes)
	}
	b.WriteString("machines:\n")
	addrs := slices.Collect(maps.Keys(tk.machines))
	sort.Strings(addrs)
	for _, a := range addrs {
		m := tk.machines[a]
		node := "-"
		switch {
		case tk.curCPs[a]:
			node = "CP"
		case tk.curWs[a]:
			node = "worker"
		}
		fmt.Fprintf(&b, "  %-10s %s rack %d role %-5q %-13s %6.0fs retire %s (%d days) node %s taints %v\n", a, m.Spec.Serial, m.Spec.Rack, m.Spec.Role,
			m.Status.State, m.Status.Duration, m.Spec.RetireDate.Format(time.RFC3339), m.LifetimeDays(tk.in.Now), node, tk.in.NodeTaints[a])
	}
	return b.String()
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
