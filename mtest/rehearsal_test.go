package mtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/world"
)

// move is what the daemon does next, or what a rehearsal says it will
// do: the first step's op and changes ("action address", in order), or
// the reason code of the refusal.
type move struct {
	Op      string
	Changes []string
	Refused string
}

func (m move) String() string {
	if m.Refused != "" {
		return "refused " + m.Refused
	}
	return fmt.Sprintf("%s %v", m.Op, m.Changes)
}

// refusals are the reason codes of the generator's refusals, by their
// error: what a plan refused at its first step tells the tick.
var refusals = map[string]string{
	generator.ErrTooManyNonExistent.Error(): reason.TooManyNonExistent,
	generator.ErrNotEnoughMachines.Error():  reason.NotEnoughMachines,
}

// rehearsal is a plan in JSON (sabakan plan, generate --plan): its
// result, the reason and message of a held or refused plan, the error
// of a refused one, and each step's move.
type rehearsal struct {
	Result, Reason, Message, Error string
	Steps                          []move
}

func parsePlan(t *testing.T, out string) rehearsal {
	t.Helper()
	var p struct {
		Result  string `json:"result"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Error   string `json:"error"`
		Steps   []struct {
			Op      string `json:"op"`
			Changes []struct {
				Action  string `json:"action"`
				Address string `json:"address"`
			} `json:"changes"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	r := rehearsal{Result: p.Result, Reason: p.Reason, Message: p.Message, Error: p.Error}
	for _, s := range p.Steps {
		m := move{Op: s.Op}
		for _, c := range s.Changes {
			m.Changes = append(m.Changes, c.Action+" "+c.Address)
		}
		r.Steps = append(r.Steps, m)
	}
	return r
}

// planMove is the next move of a plan in JSON (sabakan plan, generate
// --plan).
func planMove(t *testing.T, out string) move {
	t.Helper()
	p := parsePlan(t, out)
	if len(p.Steps) == 0 {
		for prefix, code := range refusals {
			if p.Result == generator.PlanRefused && strings.HasPrefix(p.Error, prefix) {
				return move{Refused: code}
			}
		}
		t.Fatalf("a plan without a first step, nor a refusal of the generator's: %s", out)
	}
	return p.Steps[0]
}

// rehearsalEnv is the bundled data center (examples/) with
// examples/cluster-rack4.yml stored as the current cluster, the bundled
// template and constraints, and the label power-feed=b on a control
// plane (S000239) and three workers, settled by the daemons.
type rehearsalEnv struct {
	*env
	constraints string
	client      *sabakan.Client
}

func newRehearsalEnv(t *testing.T) *rehearsalEnv {
	e := newEnv(t, withoutDaemons())
	e.sabakan.stop(syscall.SIGKILL)
	e.sabakan = &proc{name: "fakesabakan", log: filepath.Join(e.dir, "sabakan-examples.log"),
		args: []string{"--listen", e.sabAddr, "--machines", "../examples/machines.json"}}
	e.sabakan.start(t)
	e.eventually("the bundled data center to be served", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + e.sabAddr + "/api/v1/state/S000092")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for _, s := range []string{"S000239", "S000156", "S000130", "S000119"} {
		e.rest(http.MethodPut, "/api/v1/labels/"+s+"/power-feed", "b")
	}
	data, err := os.ReadFile("../examples/cluster-rack4.yml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Put(e.ctx, "/cke/cluster", string(js)); err != nil {
		t.Fatal(err)
	}
	e.startDaemons()
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("constraints", "set", "maximum-workers", "40")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	r := &rehearsalEnv{env: e, constraints: filepath.Join(e.dir, "constraints.json")}
	if err := writeFile(r.constraints, `{"control-plane-count": 3, "minimum-workers": 20, "maximum-workers": 40}`); err != nil {
		t.Fatal(err)
	}
	if r.client, err = sabakan.NewClient("http://"+e.sabAddr+"/graphql", sabakan.Options{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.converge(90 * time.Second)
	return r
}

// search is sabakan's answer to variables (JSON).
func (r *rehearsalEnv) search(variables string) []machine.Machine {
	r.t.Helper()
	v, err := sabakan.ParseVariables([]byte(variables))
	if err != nil {
		r.t.Fatal(err)
	}
	ms, err := r.client.SearchMachines(r.ctx, v)
	if err != nil {
		r.t.Fatal(err)
	}
	return ms
}

// online is the leader's plan with the assumptions, as ckegenctl sabakan
// plan says it.
func (r *rehearsalEnv) online(assume []string) move {
	args := []string{"sabakan", "plan", "-o", "json"}
	for _, a := range assume {
		args = append(args, "--assume", a)
	}
	return planMove(r.t, r.mustCtl(args...))
}

// offline is generate --plan with the assumptions, on files of what the
// daemon reads: sabakan's answer to the default query, the stored
// cluster, the template and the constraints, now, and the daemons'
// retire wait.
func (r *rehearsalEnv) offline(assume []string) move {
	r.t.Helper()
	answer, err := json.Marshal(r.search(`{}`))
	if err != nil {
		r.t.Fatal(err)
	}
	machines, current := filepath.Join(r.dir, "answer.json"), filepath.Join(r.dir, "current.json")
	if err := writeFile(machines, string(answer)); err != nil {
		r.t.Fatal(err)
	}
	if err := writeFile(current, r.mustCtl("cluster", "get", "-o", "json")); err != nil {
		r.t.Fatal(err)
	}
	args := []string{"sabakan", "generate", "--plan", "-o", "json", "--template", "../examples/template.yml", "--machines", machines,
		"--constraints", r.constraints, "--current", current, "--now", time.Now().UTC().Format(time.RFC3339), "--retire-wait", retireWait.String()}
	for _, a := range assume {
		args = append(args, "--assume", a)
	}
	return planMove(r.t, r.mustCtl(args...))
}

// setStates makes sabakan hold state for every machine match takes (boot
// servers and machines the query leaves out included), each through the
// transitions sabakan allows, as an operator would with sabactl.
func (r *rehearsalEnv) setStates(match func(m *machine.Machine) bool, state machine.State) int {
	r.t.Helper()
	n := 0
	for _, m := range r.search(`{"having": null, "notHaving": null}`) {
		if !match(&m) {
			continue
		}
		n++
		for _, st := range sitetest.StatePath(m.Status.State, state) {
			r.setState(m.Spec.Serial, strings.ToLower(string(st)))
		}
	}
	if n == 0 {
		r.t.Fatal("the change matches no machine")
	}
	return n
}

// nextMove makes the change in sabakan with the daemons' switch off, then
// turns it on and returns their next move: their first cluster write
// (its history entry's op and changes), or the refusal their status
// records.
func (r *rehearsalEnv) nextMove(change func()) move {
	r.t.Helper()
	r.mustCtl("sabakan", "disable")
	change()
	before := r.rec.count()
	since := time.Now()
	r.mustCtl("sabakan", "enable")
	var m move
	r.eventually("the daemon's next move", 30*time.Second, func() bool {
		if r.rec.count() > before {
			m = r.written(before)
			return true
		}
		st, err := r.status()
		if err == nil && st.Time.After(since) && st.Result == reason.Failing {
			m = move{Refused: st.Reason}
			return true
		}
		return false
	})
	return m
}

// written is the move of the write the recorder saw after before writes.
func (r *rehearsalEnv) written(before int) move {
	r.t.Helper()
	r.rec.mu.Lock()
	rev := r.rec.writes[before].rev
	r.rec.mu.Unlock()
	var h []struct {
		Op      string `json:"op"`
		Changes []struct {
			Action  string `json:"action"`
			Address string `json:"address"`
		} `json:"changes"`
		ChangeCount     int   `json:"changeCount"`
		ClusterRevision int64 `json:"clusterRevision"`
	}
	var found bool
	m := move{}
	r.eventually("the write's history entry", 10*time.Second, func() bool {
		if err := json.Unmarshal([]byte(r.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
			r.t.Fatal(err)
		}
		for _, x := range h {
			if x.ClusterRevision == rev {
				m.Op, found = x.Op, true
				for _, c := range x.Changes {
					m.Changes = append(m.Changes, c.Action+" "+c.Address)
				}
			}
		}
		return found
	})
	return m
}

// healthy is the first of nodes whose machine is HEALTHY.
func (r *rehearsalEnv) healthy(nodes []node) node {
	r.t.Helper()
	states := map[string]machine.State{}
	for _, m := range r.search(`{}`) {
		states[m.Spec.Serial] = m.Status.State
	}
	for _, n := range nodes {
		if states[n.serial()] == machine.StateHealthy {
			return n
		}
	}
	r.t.Fatal("no node of a HEALTHY machine")
	return node{}
}

// TestRehearsalIsTheNextMove: on the bundled data center, for each kind
// of change (rack 4's two control planes RETIRED, a control plane
// UNREACHABLE, a worker RETIRING, a whole rack RETIRING, a label value
// UNHEALTHY), the rehearsal online (sabakan plan --assume) and offline
// (generate --plan --assume on files of the daemon's input) say what the
// daemons do once the same change is made in sabakan: the same first
// step, op and changes, or the same refusal. Rack 4's control planes
// RETIRED together are refused (TOO_MANY_NONEXISTENT_CONTROL_PLANES),
// the rehearsal saying which order would not be; the runbook's way back
// (RETIRED -> UNINITIALIZED -> RETIRING, the machines still running)
// then lets the daemons replace them one per tick and settle, quorum
// kept at every write.
func TestRehearsalIsTheNextMove(t *testing.T) {
	r := newRehearsalEnv(t)
	bySerial := func(serials ...string) func(m *machine.Machine) bool {
		return func(m *machine.Machine) bool { return slices.Contains(serials, m.Spec.Serial) }
	}
	check := func(name string, assume []string, match func(m *machine.Machine) bool, state machine.State) move {
		t.Helper()
		r.converge(90 * time.Second)
		on, off := r.online(assume), r.offline(assume)
		got := r.nextMove(func() { r.setStates(match, state) })
		t.Logf("%s %v: the daemons' next move %s", name, assume, got)
		if on.String() != got.String() || off.String() != got.String() {
			t.Errorf("%s %v: rehearsed online %s, offline %s; the daemons' next move %s", name, assume, on, off, got)
		}
		return got
	}

	// Rack 4's control planes RETIRED at once.
	rack4 := []string{"S000092:RETIRED", "S000094:RETIRED"}
	text := r.mustCtl("sabakan", "plan", "--assume", rack4[0], "--assume", rack4[1])
	for _, want := range []string{
		"assume S000092:RETIRED: 1 machine left out of the query's answer (the default query leaves out RETIRED machines)\n",
		"note: to avoid it, set S000092, S000094 RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED",
		"plan: refused at step 1: too many non-existent control plane nodes: 2 of 3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan --assume %v: no %q in\n%s", rack4, want, text)
		}
	}
	got := check("control planes RETIRED", rack4, bySerial("S000092", "S000094"), machine.StateRetired)
	if got.Refused != reason.TooManyNonExistent {
		t.Fatalf("rack 4's control planes RETIRED: the daemons' next move %s, want refused %s", got, reason.TooManyNonExistent)
	}
	if st, _ := r.status(); !strings.Contains(st.Message, generator.TooManyNonExistentWayOut(false, 2, 3)) {
		t.Errorf("the refusal's message %q does not say the way out", st.Message)
	}
	// The runbook: the way back to RETIRING, one machine after the
	// other, the daemons running.
	for _, s := range []string{"S000092", "S000094"} {
		r.setState(s, "uninitialized")
		r.setState(s, "retiring")
	}
	r.converge(90 * time.Second)
	r.rec.check()
	for _, n := range r.cluster().cps() {
		if s := n.serial(); s == "S000092" || s == "S000094" {
			t.Errorf("after the runbook, %s is still a control plane", s)
		}
	}

	cp := r.healthy(r.cluster().cps())
	check("a control plane UNREACHABLE", []string{cp.serial() + ":UNREACHABLE"}, bySerial(cp.serial()), machine.StateUnreachable)

	w := r.healthy(r.cluster().workers())
	check("a worker RETIRING", []string{w.Address + ":retiring"}, bySerial(w.serial()), machine.StateRetiring)

	cp = r.healthy(r.cluster().cps())
	rack := cp.Labels["cke.cybozu.com/rack"]
	check("a whole rack RETIRING", []string{"rack=" + rack + ":RETIRING"},
		func(m *machine.Machine) bool { return fmt.Sprint(m.Spec.Rack) == rack }, machine.StateRetiring)

	check("a label value UNHEALTHY", []string{"power-feed=b:UNHEALTHY"}, func(m *machine.Machine) bool {
		return slices.Contains(m.Spec.Labels, machine.Label{Name: "power-feed", Value: "b"})
	}, machine.StateUnhealthy)
	r.rec.check()
}

// breakerRack is the rack of the cluster whose loss takes it over the
// circuit breaker's limit: the first, in order, with a worker, fewer than
// half the control planes and every node's machine sound; its nodes'
// addresses; and the max-unhealthy that the cluster is under now and
// over once every node of that rack is unhealthy (the nodes unhealthy
// now and all but one of the rack's). nodes is the cluster's node count.
func (r *rehearsalEnv) breakerRack() (rack string, addresses []string, limit, nodes int) {
	r.t.Helper()
	c := r.cluster()
	states := map[string]machine.State{}
	for _, m := range r.search(`{}`) {
		states[m.Spec.Serial] = m.Status.State
	}
	type census struct {
		addresses    []string
		cps, workers int
		unsound      int
	}
	racks := map[string]*census{}
	now := 0
	for _, n := range c.Nodes {
		k := n.Labels["cke.cybozu.com/rack"]
		if racks[k] == nil {
			racks[k] = &census{}
		}
		x := racks[k]
		x.addresses = append(x.addresses, n.Address)
		if n.ControlPlane {
			x.cps++
		} else {
			x.workers++
		}
		if !states[n.serial()].Sound() {
			x.unsound++
			now++
		}
	}
	names := slices.Sorted(maps.Keys(racks))
	for _, k := range names {
		if x := racks[k]; x.workers > 0 && 2*x.cps < len(c.cps()) && x.unsound == 0 {
			return k, x.addresses, now + len(x.addresses) - 1, len(c.Nodes)
		}
	}
	r.t.Fatalf("no rack of %v has a worker, fewer than half the control planes and only sound machines", names)
	return "", nil, 0, 0
}

// heldAfter makes the change in sabakan with the daemons' switch off,
// turns it on, and waits until their status holds as the rehearsal p
// does (result failing, p's reason and message); then it checks that
// four more ticks write nothing and keep the hold. It returns the moves
// of the daemons' writes, in order, and their failing statuses since the
// switch was turned on ("REASON: message"), in order, each once.
func (r *rehearsalEnv) heldAfter(change func(), p rehearsal) ([]move, []string) {
	r.t.Helper()
	r.mustCtl("sabakan", "disable")
	change()
	before := r.rec.count()
	since := time.Now()
	r.mustCtl("sabakan", "enable")
	var messages []string
	var held status
	r.eventually("the daemons' hold "+p.Message, 30*time.Second, func() bool {
		st, err := r.status()
		if err != nil || !st.Time.After(since) || st.Result != reason.Failing {
			return false
		}
		if m := st.Reason + ": " + st.Message; len(messages) == 0 || messages[len(messages)-1] != m {
			messages = append(messages, m)
		}
		held = st
		return st.Reason == p.Reason && st.Message == p.Message
	})
	writes := r.rec.count()
	var moves []move
	for i := before; i < writes; i++ {
		moves = append(moves, r.written(i))
	}
	tick, err := time.ParseDuration(interval)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eventually("four more ticks", 10*time.Second, func() bool {
		st, err := r.status()
		if err != nil {
			return false
		}
		if st.Result != held.Result || st.Reason != held.Reason || st.Message != held.Message {
			r.t.Fatalf("after the hold, the status is %s %s %q", st.Result, st.Reason, st.Message)
		}
		return st.Time.After(held.Time.Add(4 * tick))
	})
	if n := r.rec.count(); n != writes {
		r.t.Errorf("%d cluster writes while held", n-writes)
	}
	return moves, messages
}

// TestRehearsalOfABreakerHeldLoss: with max-unhealthy set so that the
// cluster is under it and the loss of a rack (one with workers and fewer
// than half the control planes) takes it over, the rehearsal of the loss
// (sabakan plan --assume rack=R:UNREACHABLE) says what the daemons do once
// the rack is UNREACHABLE in sabakan: the same steps (the state taints
// alone, the plan's later ticks going through the breaker's hold), then
// the same hold (the plan held; the status failing, TOO_MANY_UNHEALTHY,
// the same message), and nothing more written. The status of the tick
// that writes the taints says so after the hold's words ("; state taints
// written (N changes)"). With query variables that leave UNREACHABLE
// machines out, the same loss, rehearsed and made again, is held too: the
// daemons write what the rehearsal says.
func TestRehearsalOfABreakerHeldLoss(t *testing.T) {
	r := newRehearsalEnv(t)
	rack, addresses, limit, nodes := r.breakerRack()
	inRack := func(m *machine.Machine) bool { return fmt.Sprint(m.Spec.Rack) == rack }
	r.mustCtl("sabakan", "set-max-unhealthy", strconv.Itoa(limit))
	assume := "rack=" + rack + ":UNREACHABLE"
	p := parsePlan(t, r.mustCtl("sabakan", "plan", "--assume", assume, "-o", "json"))
	t.Logf("rack %s, max-unhealthy %d: rehearsed %s %v, %s %q", rack, limit, p.Result, p.Steps, p.Reason, p.Message)
	if p.Result != generator.PlanHeld || p.Reason != reason.TooManyUnhealthy ||
		!strings.HasPrefix(p.Message, fmt.Sprintf("%d of %d nodes are unhealthy (", limit+1, nodes)) || !strings.HasSuffix(p.Message, world.BreakerHolds) {
		t.Errorf("the rehearsal of rack %s's loss: %s %s %q, want held %s, %d of %d nodes unhealthy",
			rack, p.Result, p.Reason, p.Message, reason.TooManyUnhealthy, limit+1, nodes)
	}
	tainted := map[string]bool{}
	for _, s := range p.Steps {
		if s.Op != generator.OpTaintNodes {
			t.Errorf("the rehearsal of rack %s's loss plans %s: over max-unhealthy only state taints change", rack, s)
		}
		for _, c := range s.Changes {
			tainted[c] = true
		}
	}
	for _, a := range addresses {
		if !tainted[generator.ActionChangeTaint+" "+a] {
			t.Errorf("the rehearsal of rack %s's loss does not taint its node %s: %v", rack, a, p.Steps)
		}
	}
	moves, messages := r.heldAfter(func() { r.setStates(inRack, machine.StateUnreachable) }, p)
	t.Logf("the daemons wrote %v; their failing statuses %q", moves, messages)
	if fmt.Sprint(moves) != fmt.Sprint(p.Steps) {
		t.Errorf("rack %s lost: the daemons wrote %v, the rehearsal said %v", rack, moves, p.Steps)
	}
	hold := p.Reason + ": " + p.Message
	for _, m := range messages {
		ok := m == hold
		for _, s := range p.Steps {
			ok = ok || m == hold+"; state taints written ("+words.Count(len(s.Changes), "change", "changes")+")"
		}
		if !ok {
			t.Errorf("rack %s lost: the daemons' status %q, neither the rehearsal's hold %q nor its taints written", rack, m, hold)
		}
	}

	// The rack back, and UNREACHABLE machines left out of the query's
	// answer: the rack's nodes have no machine, and the loss is held
	// still.
	r.setStates(inRack, machine.StateHealthy)
	r.converge(60 * time.Second)
	r.mustCtl("sabakan", "set-variables", writeVars(t, r.env, `{"notHaving": {"roles": ["boot"], "states": ["RETIRED", "UNREACHABLE"]}}`))
	if text := r.mustCtl("sabakan", "plan", "--assume", assume); !strings.Contains(text, "left out of the query's answer (the query variables' notHaving leaves out UNREACHABLE machines)") {
		t.Errorf("plan --assume %s with UNREACHABLE machines left out does not say so:\n%s", assume, text)
	}
	p = parsePlan(t, r.mustCtl("sabakan", "plan", "--assume", assume, "-o", "json"))
	t.Logf("UNREACHABLE left out: rehearsed %s %v, %s %q", p.Result, p.Steps, p.Reason, p.Message)
	if p.Result != generator.PlanHeld || p.Reason != reason.TooManyUnhealthy {
		t.Errorf("the rehearsal of rack %s's loss, UNREACHABLE left out: %s %s %q, want held %s", rack, p.Result, p.Reason, p.Message, reason.TooManyUnhealthy)
	}
	moves, messages = r.heldAfter(func() { r.setStates(inRack, machine.StateUnreachable) }, p)
	t.Logf("the daemons wrote %v; their failing statuses %q", moves, messages)
	if fmt.Sprint(moves) != fmt.Sprint(p.Steps) {
		t.Errorf("rack %s lost, UNREACHABLE left out: the daemons wrote %v, the rehearsal said %v", rack, moves, p.Steps)
	}
	r.rec.check()
}
