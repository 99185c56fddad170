package mtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/reason"
)

// The runbooks of docs/alerts.md (TOO_MANY_NONEXISTENT_CONTROL_PLANES) and
// docs/change-management.md (Retiring control planes), run as written:
// the sh block after each "<!-- runbook: NAME -->" marker, its "$ "
// lines in bash, with sabactl's machines set-state as sabakan's own REST
// call and ckegenctl on the test's etcd.

// runbookModel is a model of the workers, with what the tests store for
// it: the constraints, written as they are into etcd, and the template.
type runbookModel struct {
	name        string
	rate        bool
	constraints string
	template    string
}

var (
	countModel = runbookModel{name: "count", constraints: `{"control-plane-count": 3, "minimum-workers": 20, "maximum-workers": 40}`,
		template: "../examples/template.yml"}
	rateModel = runbookModel{name: "rate", rate: true, constraints: `{"control-plane-count": 3, "minimum-workers-rate": 80}`,
		template: "../examples/template-rate.yml"}
)

// runbook returns the "$ " lines, without the prompt, of the sh block
// that follows "<!-- runbook: name -->" in doc.
func runbook(doc, name string) ([]string, error) {
	marker := "<!-- runbook: " + name + " -->\n"
	i := strings.Index(doc, marker)
	if i < 0 {
		return nil, fmt.Errorf("no %q", strings.TrimSpace(marker))
	}
	m := regexp.MustCompile("(?s)\\A```sh\n(.*?)\n```\n").FindStringSubmatch(doc[i+len(marker):])
	if m == nil {
		return nil, fmt.Errorf("%q is not followed by a sh block", strings.TrimSpace(marker))
	}
	var lines []string
	for _, l := range strings.Split(m[1], "\n") {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			lines = append(lines, cmd)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("the block after %q has no $ line", strings.TrimSpace(marker))
	}
	return lines, nil
}

// TestRunbookExtraction: the lines are the "$ " lines of the block right
// after the marker, and only those.
func TestRunbookExtraction(t *testing.T) {
	doc := "<!-- runbook: a -->\n```sh\n$ one\noutput\n$ two # c\n```\n```sh\n$ not this\n```\n<!-- runbook: b -->\ntext\n```sh\n$ x\n```\n"
	if got, err := runbook(doc, "a"); err != nil || !slices.Equal(got, []string{"one", "two # c"}) {
		t.Errorf("lines %q, %v; want one, two # c", got, err)
	}
	for _, name := range []string{"b", "c"} {
		if _, err := runbook(doc, name); err == nil {
			t.Errorf("runbook %s: no error", name)
		}
	}
}

// runbookEnv is the bundled data center (examples/machines.json) with
// examples/cluster-rack4.yml stored (3 control planes, two of them,
// S000092 and S000094, in rack 4), the model's constraints and template,
// and ckegen: its two daemons, or CKE's server with ckegen inside under
// --debug-sabakan.
type runbookEnv struct {
	*env
	model runbookModel
	tools string // a directory holding the binaries the runbooks call
}

func newRunbookEnv(t *testing.T, model runbookModel, inside bool) *runbookEnv {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the runbooks need %s: install it (apt-get install -y %s)", tool, tool)
			}
			t.Skipf("the runbooks need %s: install it (apt-get install -y %s) (under CI this fails)", tool, tool)
		}
	}
	var k *ckeSite
	e := newEnv(t, withoutDaemons())
	if inside {
		// As insideServer with debug, without CKE's own ckecli, which
		// the runbooks do not call.
		k = newCKESite(e, cketest.Inside(t), "")
		k.server.name = "cke-inside"
		k.server.args = []string{"--config", k.config, "--debug-sabakan"}
	}
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
	// The model's constraints, stored as they are: whatever the default.
	if _, err := e.cli.Put(e.ctx, "/cke/constraints", model.constraints); err != nil {
		t.Fatal(err)
	}
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("sabakan", "set-template", model.template)
	if inside {
		k.server.start(t)
	} else {
		e.startDaemons()
	}
	r := &runbookEnv{env: e, model: model, tools: t.TempDir()}
	if err := os.Symlink(filepath.Join(binDir, "ckegenctl"), filepath.Join(r.tools, "ckegenctl")); err != nil {
		t.Fatal(err)
	}
	r.settled()
	return r
}

// settled waits until ckegen has written everything: a successful tick,
// no cluster write for a while, and a plan with nothing to do.
func (r *runbookEnv) settled() {
	r.t.Helper()
	since := time.Now()
	var st status
	r.eventually("a tick", 30*time.Second, func() bool {
		var err error
		st, err = r.status()
		return err == nil && st.Time.After(since)
	})
	if st.Reason == reason.TooManyNonExistent {
		r.t.Fatalf("refused: %s", st.Message)
	}
	r.converge(60 * time.Second)
	if out := r.mustCtl("sabakan", "plan"); !strings.Contains(out, "plan: settled: nothing to do") {
		r.t.Fatalf("converged, but the plan is not settled:\n%s", out)
	}
}

// run runs the runbook name of the doc file as written, its serials
// replaced as serials says (old, new, ...: S000092 and S000094 of the
// bundled data center by the control planes of the moment). sabactl is a shell
// function that does what sabactl machines set-state does (sabakan's
// PUT /api/v1/state/SERIAL), ckegenctl the built one on the test's
// etcd, and sleep polls faster.
func (r *runbookEnv) run(file, name string, serials ...string) {
	r.t.Helper()
	lines, err := runbook(readFile(r.t, file), name)
	if err != nil {
		r.t.Fatalf("%s: %v", file, err)
	}
	script := `set -x
sabactl() {
	if [ "$#" -ne 4 ] || [ "$1" != machines ] || [ "$2" != set-state ]; then
		echo "sabactl: the test's knows only machines set-state SERIAL STATE" >&2
		return 2
	fi
	curl -sSf -X PUT --data "$4" "http://$SABAKAN/api/v1/state/$3"
}
ckegenctl() { command ckegenctl --endpoints "$ENDPOINTS" "$@"; }
sleep() { command sleep 0.2; }
`
	rename := strings.NewReplacer(serials...)
	for _, l := range lines {
		script += rename.Replace(l) + "\n"
	}
	ctx, cancel := context.WithTimeout(r.ctx, 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+r.tools+":"+os.Getenv("PATH"), "SABAKAN="+r.sabAddr, "ENDPOINTS="+strings.Join(r.clients, ","))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	r.t.Logf("%s runbook %q (%s model) took %s", file, name, r.model.name, time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		r.t.Fatalf("%s runbook %q failed (%v); its output:\n%s", file, name, err, out.String())
	}
}

// cpLoss is a cluster write that took control planes away: its op in the
// history and the serials of those it took.
type cpLoss struct {
	op   string
	gone []string
}

// losses checks every write of the cluster since the test began: no write
// takes more than floor((N-1)/2) of the previous write's N control planes
// away, nor leaves fewer than a quorum of N; and returns the writes from
// the first-th on that took control planes away, with their op.
func (r *runbookEnv) losses(first int) []cpLoss {
	r.t.Helper()
	var h []struct {
		Op              string `json:"op"`
		ClusterRevision int64  `json:"clusterRevision"`
	}
	if err := json.Unmarshal([]byte(r.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		r.t.Fatal(err)
	}
	ops := map[int64]string{}
	for _, x := range h {
		ops[x.ClusterRevision] = x.Op
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	var out []cpLoss
	for i := 1; i < len(r.rec.writes); i++ {
		prev, now := r.rec.writes[i-1].c.cps(), r.rec.writes[i].c.cps()
		kept := map[string]bool{}
		for _, n := range now {
			kept[n.Address] = true
		}
		var gone []string
		for _, n := range prev {
			if !kept[n.Address] {
				gone = append(gone, n.serial())
			}
		}
		n := len(prev)
		if len(gone) > (n-1)/2 || len(now) < n/2+1 {
			r.t.Errorf("write %d (%s) takes %v of %d control planes away, leaving %d: etcd's quorum of %d is not kept",
				i, ops[r.rec.writes[i].rev], gone, n, len(now), n/2+1)
		}
		if len(gone) > 0 && i >= first {
			op, ok := ops[r.rec.writes[i].rev]
			if !ok {
				r.t.Errorf("write %d takes %v away and has no history entry", i, gone)
			}
			out = append(out, cpLoss{op: op, gone: gone})
		}
	}
	return out
}

// checkRetired: after a runbook the cluster has its 3 control planes,
// none of them one of serials.
func (r *runbookEnv) checkRetired(what string, serials ...string) {
	r.t.Helper()
	cps := r.cluster().cps()
	if len(cps) != 3 {
		r.t.Errorf("%s: %d control planes, want 3", what, len(cps))
	}
	for _, n := range cps {
		if slices.Contains(serials, n.serial()) {
			r.t.Errorf("%s: %s is still a control plane", what, n.serial())
		}
	}
}

// checkLosses: the control planes left in the writes from first on, one
// per write, by the ops the model's runbook says: ops[i] for the i-th.
// Each of serials left once.
func (r *runbookEnv) checkLosses(what string, first int, serials []string, ops ...[]string) {
	r.t.Helper()
	got := r.losses(first)
	r.t.Logf("%s: the writes that took control planes away: %+v", what, got)
	var left []string
	for i, l := range got {
		left = append(left, l.gone...)
		if i >= len(ops) || len(l.gone) != 1 || !slices.Contains(ops[i], l.op) {
			r.t.Errorf("%s: the write %q took %v; want %v each taken alone, by writes of the ops %v in turn", what, l.op, l.gone, serials, ops)
		}
	}
	slices.Sort(left)
	if want := slices.Sorted(slices.Values(serials)); !slices.Equal(left, want) {
		r.t.Errorf("%s: the control planes taken away were %v, want %v", what, left, want)
	}
}

// runbooks is the whole test of one model: docs/change-management.md's
// retiring of rack 4's control planes, then, on two of the control planes
// of the moment set RETIRED together, the rehearsal's note and the
// refusal's message of the model, and docs/alerts.md's way back. Every
// cluster write keeps etcd's quorum; each runbook's control planes leave
// by the writes the model makes, one per write.
func runbooks(t *testing.T, model runbookModel, inside bool) {
	start := time.Now()
	r := newRunbookEnv(t, model, inside)
	t.Logf("ready after %s", time.Since(start).Round(10*time.Millisecond))

	// docs/change-management.md: rack 4's control planes retired.
	first := r.rec.count()
	r.run("../docs/change-management.md", "retire "+model.name)
	r.settled()
	r.checkRetired("retiring S000092 and S000094", "S000092", "S000094")
	replace, gone := []string{generator.OpReplaceCP}, []string{generator.OpRemoveNonExistent}
	if model.rate {
		// A RETIRING control plane is not replaced: each leaves with the
		// write that removes it once RETIRED.
		r.checkLosses("retiring S000092 and S000094", first, []string{"S000092", "S000094"}, gone, gone)
	} else {
		// Each is replaced while RETIRING, one per tick.
		r.checkLosses("retiring S000092 and S000094", first, []string{"S000092", "S000094"}, replace, replace)
	}

	// Two of the control planes of the moment RETIRED together.
	var serials []string
	for _, n := range r.cluster().cps() {
		serials = append(serials, n.serial())
	}
	slices.Sort(serials)
	a, b := serials[0], serials[1]
	rehearsal := r.mustCtl("sabakan", "plan", "--assume", a+":RETIRED", "--assume", b+":RETIRED")
	notes := map[bool]string{
		false: "note: to avoid it, set " + a + ", " + b + " RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED",
		true:  "note: to avoid it, retire " + a + ", " + b + " one machine at a time, RETIRING then RETIRED, the next only after the write that removes the previous one",
	}
	if !strings.Contains(rehearsal, notes[model.rate]) || strings.Contains(rehearsal, notes[!model.rate]) {
		t.Errorf("the rehearsal does not say the %s model's order:\n%s", model.name, rehearsal)
	}
	r.mustCtl("sabakan", "disable")
	for _, s := range []string{a, b} {
		r.setState(s, "retiring")
		r.setState(s, "retired")
	}
	r.mustCtl("sabakan", "enable")
	st := r.waitStatus("failing", reason.TooManyNonExistent, "", 30*time.Second)
	ways := map[bool]string{
		false: "bring them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED, then RETIRING) and ckegen replaces them one per tick",
		true:  "bring 1 of them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED): the write that removes the other adds its replacement",
	}
	if !strings.Contains(st.Message, generator.TooManyNonExistentWayOut(model.rate, 2, 3)) ||
		!strings.Contains(st.Message, ways[model.rate]) || strings.Contains(st.Message, ways[!model.rate]) {
		t.Errorf("the refusal's message does not give the %s model's way out: %q", model.name, st.Message)
	}

	// docs/alerts.md: the way back, for a and b.
	first = r.rec.count()
	r.run("../docs/alerts.md", "alerts "+model.name, "S000092", a, "S000094", b)
	r.settled()
	r.checkRetired("the way back of "+a+" and "+b, a, b)
	if model.rate {
		// b leaves with its replacement once a is back; then a, once
		// RETIRED, not while RETIRING.
		r.checkLosses("the way back", first, []string{a, b}, gone, gone)
		if l := r.losses(first); len(l) == 2 && (l[0].gone[0] != b || l[1].gone[0] != a) {
			t.Errorf("the way back took %v, then %v; want %s, then %s", l[0].gone, l[1].gone, b, a)
		}
	} else {
		// b leaves with its replacement if a tick comes between a's moves
		// and b's, or is replaced while RETIRING; a is replaced while
		// RETIRING.
		either := []string{generator.OpReplaceCP, generator.OpRemoveNonExistent}
		r.checkLosses("the way back", first, []string{a, b}, either, either)
	}
	t.Logf("the whole test took %s", time.Since(start).Round(10*time.Millisecond))
}

// TestRunbooksCount: the runbooks of the count model, run as written,
// with ckegen's daemons (count model constraints stored).
func TestRunbooksCount(t *testing.T) { runbooks(t, countModel, false) }

// TestRunbooksRate: the runbooks of the rate model, run as written, with
// ckegen's daemons (rate model constraints stored).
func TestRunbooksRate(t *testing.T) { runbooks(t, rateModel, false) }

// TestRunbooksRateInsideCKE: the runbooks of the rate model, run as
// written, with CKE's server with ckegen inside (--debug-sabakan: its
// integration every 5 s and on a watched change, no Vault).
func TestRunbooksRateInsideCKE(t *testing.T) { runbooks(t, rateModel, true) }
