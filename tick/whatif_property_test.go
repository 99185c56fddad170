package tick

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clientv3 "go.etcd.io/etcd/client/v3"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// whatIfWorlds is how many random worlds TestWhatIfIsTheLoop checks
// (-rapid.checks=N, or RAPID_CHECKS, for more or fewer).
const whatIfWorlds = 200

// Timings of the worlds: the leader's interval, the quiet time when
// one is set, the retire wait, which a worker the edit makes RETIRED
// waits out during the loop, and how long ago an edit says a machine
// took its state, when it says so (longer than the retire wait).
const (
	whatIfInterval   = time.Minute
	whatIfQuietTime  = 5 * time.Minute
	whatIfRetireWait = 10 * time.Minute
	whatIfLongAgo    = 48 * time.Hour
	// whatIfMaxSteps bounds the what-if's plan, and so the loop.
	whatIfMaxSteps = 20
)

// TestWhatIfIsTheLoop: what `ckegenctl sabakan plan --assume WHICH:STATE`
// says the leader would do (liveview.Reader.Rehearse) is what the
// leader's own loop does once sabakan says so. On random small data
// centers (machines in every state, mostly HEALTHY; racks; retire dates),
// random settings (constraints of either model, max-unhealthy as a count
// or a percentage, query variables that leave states out, a quiet time,
// the trigger), a cluster built by a random number of ticks or none, and
// a random edit of sabakan's inventory (a serial, an address, a rack or a
// label assumed into a state, sometimes for long):
//
//  1. the what-if rehearses the edit: its plan P;
//  2. with the trigger in planning, P is the plan the what-if makes once
//     the trigger is schedule (the loop runs in schedule: in planning it
//     writes nothing);
//  3. the edit is made in sabakan (the compatible server, through its
//     lifecycle);
//  4. the leader's step ticks on the real etcd, the clock moved on by
//     the interval before each tick, until P's next step (or its last)
//     is due, past what it waits out, and an interval has passed, and a
//     tick writes nothing;
//
// and the ticks' writes are P's steps in order, op by op and change by
// change (the tick's decision, the history entry each write recorded),
// each written when P says (once the quiet time or the retire wait it
// waits out is over, and by the tick after), the cluster they leave is
// P's, and the status after the last one says how P ends: settled, ok
// with nothing to do; held, failing with TOO_MANY_UNHEALTHY; refused,
// failing with P's reason and message.
func TestWhatIfIsTheLoop(t *testing.T) {
	rapidChecks(t, whatIfWorlds)
	site := sitetest.Start(t, sitetest.Options{Machines: []machine.Machine{whatIfMachine(0, 0, 1, 0, "compute", machine.StateHealthy)}})
	leader := site.Lead(t, "test", 2)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		clearKeys(t, site.Storage)
		w := drawWhatIfWorld(rt)
		clk := &testClock{t: testNow}
		sb := sitetest.StartSabakan(t, sitetest.Options{Now: testNow, Clock: clk.now, Machines: w.machines})
		st := sitetest.StoreOf(site.Storage)
		mustR(rt, st.SetTemplate(ctx, []byte(w.template[0])))
		mustR(rt, st.SetURL(ctx, sb.URL))
		mustR(rt, st.SetConstraints(ctx, w.buildConstraints))
		if w.variables != "" {
			mustR(rt, st.SetQueryVariables(ctx, []byte(w.variables)))
		}
		if w.maxUnhealthy != nil {
			mustR(rt, st.SetMaxUnhealthy(ctx, *w.maxUnhealthy))
		}
		sabakanOpts := sabakan.Options{Timeout: 5 * time.Second, Retries: -1}
		step := New(site.Storage, decision.Config{
			Name: "test", RetireWait: storage.Duration(whatIfRetireWait), Interval: storage.Duration(whatIfInterval),
			Sabakan: sabakanOpts, Now: clk.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		tick := func() Result {
			r := step.Run(ctx, leader, nil, nil)
			if r.Decision == nil {
				rt.Fatalf("a tick was cut short: %v", r.Err)
			}
			record(r.Status.Reason, r.Status.Result)
			return r
		}

		// The cluster as a random number of ticks leave it; with none, a
		// tick in planning, so that the what-if decides with the leader's
		// configuration (its memory) as a view does once a leader ran.
		if w.built == 0 {
			mustR(rt, st.SetTrigger(ctx, intake.TriggerPlanning))
		}
		for range max(w.built, 1) {
			clk.add(whatIfInterval)
			tick()
		}
		mustR(rt, st.SetConstraints(ctx, w.constraints))
		if w.template[1] != w.template[0] {
			mustR(rt, st.SetTemplate(ctx, []byte(w.template[1])))
		}
		mustR(rt, st.SetTrigger(ctx, w.trigger))
		if w.quiet {
			mustR(rt, st.SetQuietTime(ctx, whatIfQuietTime))
		}

		// 1. The what-if.
		w.edit = drawEdit(rt, w.machines, storedCluster(rt, st))
		edit, err := assume.ParseAll(w.edit)
		mustR(rt, err)
		rehearse := func() *generator.Plan {
			r := liveview.NewReader(site.Storage, liveview.Options{Sabakan: sabakanOpts, Now: clk.now})
			d, _, err := r.Rehearse(ctx, liveview.Preview{Assume: edit, MaxSteps: whatIfMaxSteps})
			if err != nil {
				rt.Fatalf("the what-if of %s: %v", strings.Join(w.edit, " "), err)
			}
			return d.Plan
		}
		p := rehearse()
		rt.Logf("the what-if's plan: %s", describePlan(p))

		// 2. The loop runs in schedule: the plan in planning is the plan,
		// its first step waiting for the trigger set to schedule (unless
		// it waits for the quiet time's end).
		if w.trigger == intake.TriggerPlanning {
			mustR(rt, st.SetTrigger(ctx, intake.TriggerSchedule))
			again := rehearse()
			if !samePlan(withoutOperatorWait(p), again) {
				rt.Fatalf("the what-if in planning and in schedule differ:\nplanning: %s\nschedule: %s", describePlan(p), describePlan(again))
			}
			if len(p.Steps) > 0 && p.Steps[0].Wait == nil {
				rt.Fatalf("in planning, the what-if's first step does not wait for the trigger: %s", describePlan(p))
			}
			p = again
		}

		// 3. The edit, in sabakan.
		makeReal(rt, sb.Store, edit, w, clk.now())

		// 4. The loop: a tick every interval, until the plan's next step
		// (or its last) is due and an interval has passed, and a tick
		// writes nothing.
		start := clk.now()
		due := dueTimes(p, start)
		var wrote []generator.Step
		var wroteAt []time.Time
		var history []storage.HistoryEntry
		var last Result
		// A machine the edit retires just now makes its worker wait out
		// the retire wait: the loop runs past it, and finds a write the
		// plan did not wait for.
		horizon := start
		for _, a := range edit {
			if a.State == machine.StateRetired && a.For == nil {
				horizon = start.Add(whatIfRetireWait + 2*whatIfInterval)
			}
		}
		for range whatIfMaxTicks(append(due, horizon), start, len(p.Steps)) {
			clk.add(whatIfInterval)
			before := clusterRevision(rt, st)
			last = tick()
			rev := clusterRevision(rt, st)
			if rev == before {
				next := start
				if len(due) > 0 {
					next = due[min(len(wrote), len(due)-1)]
				}
				if h := last.Decision.Hold; h != nil && h.Rung == decision.RungQuiet {
					// The quiet time holds: a plan with no step to
					// wait says when it ends only in the leader's
					// status.
					continue
				}
				if !clk.now().Before(maxTime(next.Add(whatIfInterval), horizon)) {
					break
				}
				continue
			}
			s := last.Decision.Step
			if s == nil {
				rt.Fatalf("the cluster was written (revision %d, then %d) by a tick that decided no step (%s %s)", before, rev, last.Status.Result, last.Status.Reason)
			}
			wrote = append(wrote, generator.Step{Op: s.Op, Changes: s.Changes, Warnings: s.Warnings})
			wroteAt = append(wroteAt, clk.now())
			if last.Decision.Unchanged {
				// A regenerate that renders every node as before: its
				// write records the template revision, and no history.
				history = append(history, storage.HistoryEntry{Op: s.Op, Changes: []storage.Change{}})
			} else {
				history = append(history, historyAt(rt, st, rev))
			}
			if len(wrote) > len(p.Steps) {
				break
			}
		}
		rt.Logf("the loop wrote: %s", describeSteps(wrote))

		// The writes are the plan's steps.
		want := p.Steps
		if p.Result == generator.PlanMaxSteps && len(wrote) > len(want) {
			wrote, history = wrote[:len(want)], history[:len(want)]
		}
		if len(wrote) != len(want) {
			rt.Fatalf("the loop wrote %s, the what-if planned %d (%s)\nwhat-if: %s\nloop:    %s",
				words.Count(len(wrote), "step", "steps"), len(want), p.Result, describeSteps(want), describeSteps(wrote))
		}
		for i := range want {
			if wrote[i].Op != want[i].Op {
				rt.Fatalf("step %d: the loop wrote %s, the what-if planned %s\nwhat-if: %s\nloop:    %s",
					i+1, wrote[i].Op, want[i].Op, describeSteps(want), describeSteps(wrote))
			}
			if diff := cmp.Diff(want[i].Changes, wrote[i].Changes, timeless); diff != "" {
				rt.Fatalf("step %d (%s): the loop's changes are not the what-if's (-what-if +loop):\n%s", i+1, want[i].Op, diff)
			}
			if diff := cmp.Diff(want[i].Warnings, wrote[i].Warnings); diff != "" {
				rt.Fatalf("step %d (%s): the loop's warnings are not the what-if's (-what-if +loop):\n%s", i+1, want[i].Op, diff)
			}
			// It is written when the plan says: at the first tick once
			// its wait (if any) is over and the step before it written,
			// or the tick after, when the leader saw the edit only at
			// its first tick after it (the quiet time counts the set of
			// machines still from then).
			prev := start
			if i > 0 {
				prev = wroteAt[i-1]
			}
			if latest := maxTime(due[i], prev.Add(whatIfInterval)).Add(whatIfInterval); wroteAt[i].Before(due[i]) || wroteAt[i].After(latest) {
				rt.Fatalf("step %d (%s): written %s after the edit; the what-if says from %s after it (%s), so at the latest %s after it",
					i+1, want[i].Op, wroteAt[i].Sub(start), due[i].Sub(start), describeWait(want[i].Wait), latest.Sub(start))
			}
			h := history[i]
			if h.Op != want[i].Op || h.ChangeCount != len(want[i].Changes) {
				rt.Fatalf("step %d: the history says %s with %d changes, the what-if planned %s with %d", i+1, h.Op, h.ChangeCount, want[i].Op, len(want[i].Changes))
			}
			if diff := cmp.Diff(planreport.StoredChanges(want[i].Changes), h.Changes, timeless); diff != "" {
				rt.Fatalf("step %d (%s): the history's changes are not the what-if's (-what-if +history):\n%s", i+1, want[i].Op, diff)
			}
		}
		if p.Result == generator.PlanMaxSteps {
			return
		}
		if diff := cmp.Diff(p.Cluster, storedCluster(rt, st)); diff != "" {
			rt.Fatalf("the cluster the loop left is not the what-if's (-what-if +loop):\n%s", diff)
		}

		// The status says where the plan ends.
		status, err := site.Storage.GetStatus(ctx)
		mustR(rt, err)
		switch p.Result {
		case generator.PlanSettled:
			if diff := cmp.Diff(p.Warnings, status.Warnings, cmpopts.EquateEmpty()); diff != "" {
				rt.Fatalf("the what-if settles with warnings the loop's status does not say (-what-if +status):\n%s", diff)
			}
			if status.Result != reason.OK || status.Reason != "" || last.Decision.Step != nil || status.Pending == nil || status.Pending.Steps != 0 {
				rt.Fatalf("the what-if settles; the loop's last tick: %s %s %q, step %v, pending %+v",
					status.Result, status.Reason, status.Message, last.Decision.Step != nil, status.Pending)
			}
		case generator.PlanHeld, generator.PlanRefused:
			if status.Result != reason.Failing || status.Reason != p.Reason || status.Message != p.Message {
				rt.Fatalf("the what-if ends %s %s %q; the loop's status: %s %s %q",
					p.Result, p.Reason, p.Message, status.Result, status.Reason, status.Message)
			}
		default:
			rt.Fatalf("the what-if's plan ends %q", p.Result)
		}
	})
}

// whatIfWorld is a random world of TestWhatIfIsTheLoop.
type whatIfWorld struct {
	machines []machine.Machine
	// buildConstraints are the constraints the cluster is built with,
	// constraints those in force at the edit.
	buildConstraints, constraints constraints.Constraints
	// template is the template the cluster is built with, then the one
	// in force at the edit.
	template     [2]string
	maxUnhealthy *intake.MaxUnhealthy
	variables    string // "" for none stored
	trigger      string
	quiet        bool
	// built is how many ticks build the cluster before the edit (0: no
	// cluster).
	built int
	// edit is the assumptions, as given to --assume.
	edit []string
}

// whatIfRoles are the machines' roles: the roles templates name, and
// one none does.
var whatIfRoles = []string{"compute", "compute", "storage", "gpu"}

// whatIfTemplates are templates a cluster is built with and changed to:
// a worker template of any role, one that labels its nodes, and one by
// role with weights.
var whatIfTemplates = []string{
	testTemplate,
	strings.Replace(testTemplate, `"user":"u"}]`, `"user":"u","labels":{"example.com/x":"y"}}]`, 1),
	`{"name":"t","nodes":[{"user":"u","control_plane":true},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"compute","cke.cybozu.com/weight":"2"}},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"storage"}}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`,
}

// whatIfVariables are query variables: none stored (the default query
// leaves RETIRED machines out), variables that leave other states out,
// and variables that keep RETIRED machines (whose workers wait out the
// retire wait).
var whatIfVariables = []string{
	"",
	`{"notHaving":{"roles":["boot"],"states":["RETIRED","UNREACHABLE"]}}`,
	`{"having":{"states":["HEALTHY","UNHEALTHY","UNREACHABLE","RETIRING"]}}`,
	`{"notHaving":null}`,
	`{"notHaving":{"roles":["boot"]}}`,
	`{"having":{"states":["HEALTHY","RETIRED","UNREACHABLE"]}}`,
}

// whatIfEditStates are the states edits assume, the likely ones more
// often.
var whatIfEditStates = append(slices.Clone(machine.States),
	machine.StateUnreachable, machine.StateRetired, machine.StateRetired, machine.StateRetired, machine.StateRetiring, machine.StateUnhealthy, machine.StateHealthy)

func drawWhatIfWorld(t *rapid.T) whatIfWorld {
	var w whatIfWorld
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	n := rapid.IntRange(10, 40).Draw(t, "machines")
	perRack := make([]int, racks)
	for i := range n {
		r := rapid.IntRange(0, racks-1).Draw(t, "rack")
		perRack[r]++
		state := machine.StateHealthy
		if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
			state = rapid.SampledFrom(machine.States).Draw(t, "state")
		}
		w.machines = append(w.machines, whatIfMachine(i+1, r, perRack[r], rapid.IntRange(-400, 2500).Draw(t, "retire in days"),
			rapid.SampledFrom(whatIfRoles).Draw(t, "role"), state))
	}

	w.built = rapid.IntRange(0, 4).Draw(t, "ticks before")
	w.buildConstraints = drawWhatIfConstraints(t, n)
	w.constraints = w.buildConstraints
	if rapid.Bool().Draw(t, "constraints changed") {
		w.constraints = drawWhatIfConstraints(t, n)
	}
	w.template[0] = rapid.SampledFrom(whatIfTemplates).Draw(t, "template")
	w.template[1] = w.template[0]
	if rapid.IntRange(0, 3).Draw(t, "template changed") == 0 {
		w.template[1] = rapid.SampledFrom(whatIfTemplates).Draw(t, "new template")
	}
	switch rapid.IntRange(0, 3).Draw(t, "max-unhealthy") {
	case 2:
		w.maxUnhealthy = &intake.MaxUnhealthy{Value: rapid.IntRange(0, 4).Draw(t, "max-unhealthy count")}
	case 3:
		w.maxUnhealthy = &intake.MaxUnhealthy{Value: rapid.SampledFrom([]int{0, 10, 30, 60}).Draw(t, "max-unhealthy %"), Percent: true}
	}
	w.variables = rapid.SampledFrom(whatIfVariables).Draw(t, "query variables")
	w.trigger = rapid.SampledFrom([]string{intake.TriggerSchedule, intake.TriggerSchedule, intake.TriggerPlanning}).Draw(t, "trigger")
	w.quiet = rapid.Bool().Draw(t, "quiet time")

	return w
}

// drawEdit draws the edit: one or two assumptions, each naming a
// machine of ms or, often, of the cluster c (nil: none).
func drawEdit(t *rapid.T, ms []machine.Machine, c *cluster.Cluster) []string {
	var members, workers []machine.Machine
	if c != nil {
		at := map[string]*cluster.Node{}
		for _, n := range c.Nodes {
			at[n.Address] = n
		}
		for _, m := range ms {
			if n := at[m.Spec.IPv4[0]]; n != nil {
				members = append(members, m)
				if !n.ControlPlane {
					workers = append(workers, m)
				}
			}
		}
	}
	var edit []string
	if len(workers) > 0 && rapid.Bool().Draw(t, "a worker retires") {
		// It waits out the retire wait, when the query keeps it.
		edit = append(edit, rapid.SampledFrom(workers).Draw(t, "retired worker").Spec.Serial+":"+string(machine.StateRetired))
	}
	for range rapid.IntRange(1, 2).Draw(t, "assumptions") {
		from := ms
		if len(members) > 0 && rapid.Bool().Draw(t, "a node's machine") {
			from = members
		}
		edit = append(edit, drawAssumption(t, from))
	}
	return edit
}

// drawAssumption draws an assumption as --assume takes it: a serial,
// an address, a rack or a label of one of ms, in a state, sometimes
// for long.
func drawAssumption(t *rapid.T, ms []machine.Machine) string {
	m := rapid.SampledFrom(ms).Draw(t, "edited machine")
	var which string
	switch rapid.IntRange(0, 3).Draw(t, "edit names") {
	case 0:
		which = m.Spec.Serial
	case 1:
		which = m.Spec.IPv4[0]
	case 2:
		which = "rack=" + strconv.Itoa(m.Spec.Rack)
	default:
		which = "product=" + m.Spec.Labels[0].Value
	}
	a := which + ":" + string(rapid.SampledFrom(whatIfEditStates).Draw(t, "edit state"))
	if rapid.IntRange(0, 3).Draw(t, "long ago") == 0 {
		a += "@" + whatIfLongAgo.String()
	}
	return a
}

// drawWhatIfConstraints draws constraints of either model for n
// machines.
func drawWhatIfConstraints(t *rapid.T, n int) constraints.Constraints {
	cp := rapid.SampledFrom([]int{1, 3, 3, 5}).Draw(t, "control planes")
	if rapid.Bool().Draw(t, "rate model") {
		rate := rapid.SampledFrom([]int{0, 0, 50, 80, 100}).Draw(t, "rate")
		c := constraints.Default()
		c.ControlPlaneCount, c.MinimumWorkersRate, c.Implicit = cp, &rate, false
		return c
	}
	most := n
	if rapid.IntRange(0, 3).Draw(t, "many workers") > 0 {
		most = n / 2
	}
	c := *sitetest.Counts(cp, rapid.IntRange(0, most).Draw(t, "minimum workers"))
	if rapid.Bool().Draw(t, "maximum workers") {
		c.MaximumWorkers = c.MinimumWorkers + rapid.IntRange(0, 5).Draw(t, "more workers")
	}
	return c
}

// whatIfMachine is machine n, the index-th of rack, retiring days (and
// a half) from testNow, in state for long: longer than the quiet time
// and the retire wait.
func whatIfMachine(n, rack, index, days int, role string, state machine.State) machine.Machine {
	return machine.Machine{
		Spec: machine.Spec{
			Serial:      fmt.Sprintf("S%03d", n),
			Labels:      []machine.Label{{Name: "product", Value: fmt.Sprintf("R%d", 600+10*(n%2))}},
			Rack:        rack,
			IndexInRack: index,
			Role:        role,
			IPv4:        []string{fmt.Sprintf("10.0.%d.%d", rack, index)},
			// Half a day off midnight: a lifetime in days does not change
			// while the loop's clock moves on.
			RegisterDate: testNow.AddDate(-3, 0, 0),
			RetireDate:   testNow.Add(time.Duration(days)*24*time.Hour + 12*time.Hour),
			BMC:          machine.BMC{BMCType: "IPMI-2.0"},
		},
		Status: machine.Status{State: state, Duration: (10 * 24 * time.Hour).Seconds()},
	}
}

// makeReal makes the edit in sabakan at now, one assumption after the
// other: each machine an assumption names moves to its state through
// sabakan's lifecycle (every move at now, so that it has been in the
// state for 0 s, as the assumption says); one assumed in its state for
// long is deleted once RETIRED and registered again with the state since
// then.
func makeReal(t *rapid.T, store *fakesabakan.Store, edit []assume.Assumption, w whatIfWorld, now time.Time) {
	for _, a := range edit {
		makeOneReal(t, store, a, w, now)
	}
}

func makeOneReal(t *rapid.T, store *fakesabakan.Store, a assume.Assumption, w whatIfWorld, now time.Time) {
	for _, m := range w.machines {
		if _, matches, err := assume.Inventory([]machine.Machine{m}, []assume.Assumption{a}, sabakan.StateFilter{}); err != nil || matches[0].Machines == 0 {
			continue
		}
		serial := m.Spec.Serial
		if a.For == nil {
			walk(t, store, serial, a.State)
			continue
		}
		walk(t, store, serial, machine.StateRetired)
		held, err := store.Get(serial)
		if err != nil {
			t.Fatalf("%s: %v", serial, err)
		}
		if err := store.Delete(serial); err != nil {
			t.Fatalf("%s: %v", serial, err)
		}
		since := now.Add(-*a.For)
		held.Status = machine.Status{State: a.State, Timestamp: &since}
		if err := store.Load([]machine.Machine{held}); err != nil {
			t.Fatalf("%s: %v", serial, err)
		}
	}
}

// walk moves a machine to state by the shortest way sabakan's lifecycle
// allows.
func walk(t *rapid.T, store *fakesabakan.Store, serial string, to machine.State) {
	m, err := store.Get(serial)
	if err != nil {
		t.Fatalf("%s: %v", serial, err)
	}
	path := sitetest.StatePath(m.Status.State, to)
	if len(path) == 0 && m.Status.State != to {
		t.Fatalf("%s: sabakan allows no way from %s to %s", serial, m.Status.State, to)
	}
	for _, s := range path {
		if _, err := store.SetState(serial, s); err != nil {
			t.Fatalf("%s to %s on the way to %s: %v", serial, s, to, err)
		}
	}
}

// mustR fails the property on an error.
func mustR(t *rapid.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// clearKeys deletes every key but the daemons' election.
func clearKeys(t *testing.T, st storage.Storage) {
	ctx := context.Background()
	for _, k := range keysUnder(t, st) {
		if !strings.HasPrefix(k, st.Key(storage.KeyCKEGenLeader)) {
			_, err := st.Client.Delete(ctx, k)
			must(t, err)
		}
	}
}

func keysUnder(t *testing.T, st storage.Storage) []string {
	resp, err := st.Client.Get(context.Background(), st.Key(""), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	must(t, err)
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = string(kv.Key)
	}
	return keys
}

// clusterRevision is the stored cluster's mod revision, 0 for none.
func clusterRevision(t *rapid.T, st sitetest.Store) int64 {
	_, rev, err := st.GetCluster(context.Background())
	if errors.Is(err, storage.ErrNotFound) {
		return 0
	}
	mustR(t, err)
	return rev
}

// storedCluster is the stored cluster, nil for none.
func storedCluster(t *rapid.T, st sitetest.Store) *cluster.Cluster {
	c, _, err := st.GetCluster(context.Background())
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	mustR(t, err)
	return c
}

// historyAt is the history entry of the cluster write at rev.
func historyAt(t *rapid.T, st sitetest.Store, rev int64) storage.HistoryEntry {
	h, err := st.History(context.Background())
	mustR(t, err)
	for _, e := range h {
		if e.ClusterRevision == rev {
			return e
		}
	}
	t.Fatalf("no history entry for the cluster written at revision %d", rev)
	return storage.HistoryEntry{}
}

// dueTimes are when the plan says its steps come, from start (the
// what-if's time): each when the one before it came, or at the end of
// what it waits out.
func dueTimes(p *generator.Plan, start time.Time) []time.Time {
	due := make([]time.Time, len(p.Steps))
	at := start
	for i, s := range p.Steps {
		if w := s.Wait; w != nil && !w.Until.IsZero() {
			at = maxTime(at, w.Until)
		}
		due[i] = at
	}
	return due
}

// whatIfMaxTicks bounds the loop: a tick each interval until the last
// of due, one for each step, the quiet time's, and a few more.
func whatIfMaxTicks(due []time.Time, start time.Time, steps int) int {
	last := start
	for _, t := range due {
		last = maxTime(last, t)
	}
	return int(last.Sub(start)/whatIfInterval) + steps + int(whatIfQuietTime/whatIfInterval) + 4
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// describeWait says what a step waits out.
func describeWait(w *generator.Wait) string {
	switch {
	case w == nil:
		return "no wait"
	case w.Until.IsZero():
		return "once " + w.Reason
	}
	return "from " + w.Until.UTC().Format(time.RFC3339) + ", the end of " + w.Reason
}

// retiredFor is how a change's reason says how long its machine has
// been RETIRED: at the time of the decision, which the loop makes later
// than the what-if.
var retiredFor = regexp.MustCompile(`RETIRED for [0-9]+s `)

// timeless compares changes' reasons without how long a machine has
// been RETIRED.
var timeless = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "Reason"
}, cmp.Comparer(func(a, b string) bool {
	return retiredFor.ReplaceAllString(a, "RETIRED for some time ") == retiredFor.ReplaceAllString(b, "RETIRED for some time ")
}))

// samePlan reports whether two plans have the same steps and end.
// withoutOperatorWait is p without the wait of its first step when it
// waits for no time (the trigger set to schedule, an operator's).
func withoutOperatorWait(p *generator.Plan) *generator.Plan {
	if len(p.Steps) == 0 || p.Steps[0].Wait == nil || !p.Steps[0].Wait.Until.IsZero() {
		return p
	}
	c := *p
	c.Steps = slices.Clone(p.Steps)
	c.Steps[0].Wait = nil
	return &c
}

func samePlan(a, b *generator.Plan) bool {
	return a.Result == b.Result && a.Reason == b.Reason && a.Message == b.Message &&
		cmp.Equal(a.Steps, b.Steps) && cmp.Equal(a.Cluster, b.Cluster)
}

// describePlan is a plan's steps and its end, in one line.
func describePlan(p *generator.Plan) string {
	s := describeSteps(p.Steps) + "; " + p.Result
	if p.Reason != "" {
		s += " " + p.Reason + ": " + p.Message
	}
	return s
}

// describeSteps is each step's op and its changes as "action address".
func describeSteps(steps []generator.Step) string {
	if len(steps) == 0 {
		return "no step"
	}
	parts := make([]string, len(steps))
	for i, s := range steps {
		cs := make([]string, len(s.Changes))
		for j, c := range s.Changes {
			cs[j] = c.Action + " " + c.Address
		}
		parts[i] = s.Op + " (" + strings.Join(cs, ", ") + ")"
		if s.Wait != nil {
			parts[i] = describeWait(s.Wait) + ": " + parts[i]
		}
	}
	return strings.Join(parts, " | ")
}

// rapidChecks runs the rapid checks of this test n times, unless
// -rapid.checks or RAPID_CHECKS says how many.
func rapidChecks(t *testing.T, n int) {
	given := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if given {
		return
	}
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	must(t, f.Value.Set(strconv.Itoa(n)))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}
