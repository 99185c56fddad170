package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// rack4Site is the bundled data center served by the compatible server
// (on a fixed clock), with the bundled template and constraints and
// examples/cluster-rack4.yml stored, as a daemon finds them: two of the
// three control planes in rack 4.
type rack4Site struct {
	t         *testing.T
	site      *sitetest.Site
	dir       string
	noDefault string
}

func newRack4Site(t *testing.T) *rack4Site {
	t.Helper()
	return newRack4SiteOf(t, sitetest.ReadMachines(t, "../../examples/machines.json"))
}

// newRack4SiteOf is newRack4Site serving machines.
func newRack4SiteOf(t *testing.T, machines []machine.Machine) *rack4Site {
	t.Helper()
	site := sitetest.Start(t, sitetest.Options{Machines: machines, StoreURL: true})
	s := &rack4Site{t: t, site: site, dir: t.TempDir()}
	s.noDefault = filepath.Join(s.dir, "no-default.yml")
	if _, errOut, code := s.run("sabakan", "set-template", "../../examples/template.yml"); code != 0 {
		t.Fatal(errOut)
	}
	ctx := context.Background()
	st := site.Storage
	cons, err := os.ReadFile("../../examples/constraints.json")
	must(t, err)
	_, err = st.Client.Put(ctx, st.Key(storage.KeyConstraints), string(cons))
	must(t, err)
	data, err := os.ReadFile("../../examples/cluster-rack4.yml")
	must(t, err)
	c, err := cluster.Parse(data)
	must(t, err)
	js, err := json.Marshal(c)
	must(t, err)
	_, err = st.Client.Put(ctx, st.Key(storage.KeyCluster), string(js))
	must(t, err)
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *rack4Site) run(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	return runCLIWithConfig(s.t, s.noDefault, append([]string{"--endpoints", s.site.EtcdURL}, args...)...)
}

// served writes what the daemon's query returns (the default query
// variables) to a machines file, with the machines of rack (>= 0) turned
// to state as sabakan reports them right after the change, and returns
// its path.
func (s *rack4Site) served(rack int, state machine.State) string {
	s.t.Helper()
	cl, err := sabakan.NewClient(s.site.URL, sabakan.Options{Timeout: 10 * time.Second})
	must(s.t, err)
	ms, err := cl.SearchMachines(context.Background(), sabakan.Variables{})
	must(s.t, err)
	for i := range ms {
		if ms[i].Spec.Rack == rack {
			if ms[i].Status.State != state {
				ms[i].Status.Duration = 0
			}
			ms[i].Status.State = state
		}
	}
	data, err := json.Marshal(ms)
	must(s.t, err)
	return writeFileIn(s.t, s.dir, "served.json", string(data))
}

// offline are the flags of the offline command on the same input as the
// site's, with machines and the time of the decision.
func offline(machines string, now time.Time) []string {
	return []string{"--template", "../../examples/template.yml", "--machines", machines, "--constraints", "../../examples/constraints.json",
		"--current", "../../examples/cluster-rack4.yml", "--now", now.UTC().Format(time.RFC3339)}
}

// reportOf decodes a resilience JSON document without what says how it
// was made (view, assumed).
func reportOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	delete(m, "view")
	delete(m, "assumed")
	return m
}

// TestResilienceOnline: without --machines, resilience reports on the
// leader's input read from etcd and sabakan: the same report as offline
// on the files of the same inventory and cluster, text and JSON; with
// --assume rack=4:RETIRING, the same as offline on the inventory edited
// that way, saying first what was assumed and what it matched. Offline
// flags without --machines, and online flags with it, are usage errors;
// an assumption that matches no machine prints nothing on stdout.
func TestResilienceOnline(t *testing.T) {
	s := newRack4Site(t)
	text, errOut, code := s.run("sabakan", "resilience")
	now := time.Now()
	if code != 0 || errOut != "" {
		t.Fatalf("online: exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(text, "\n")
	if lines[0] != strings.TrimSuffix(noView, "\n\n") || lines[1] != "" ||
		lines[2] != "failure domain: rack; 3 control planes, quorum 2; count model, minimum-workers 20" ||
		lines[3] != "at risk: rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum" {
		t.Errorf("online text:\n%s", text)
	}
	files := offline(s.served(-1, ""), now)
	offText, _, code := s.run(append([]string{"sabakan", "resilience"}, files...)...)
	if code != 0 || strings.Join(lines[2:], "\n") != offText {
		t.Errorf("online text:\n%s\nwant, after the view's line, the offline report:\n%s", text, offText)
	}
	onJSON, _, _ := s.run("sabakan", "resilience", "-o", "json")
	offJSON, _, _ := s.run(append([]string{"sabakan", "resilience", "-o", "json"}, files...)...)
	if on, off := reportOf(t, onJSON), reportOf(t, offJSON); !reflect.DeepEqual(on, off) {
		t.Errorf("online JSON:\n%s\nwant offline's:\n%s", onJSON, offJSON)
	}
	if !strings.Contains(onJSON, `"view": "Kubernetes view: none`) {
		t.Errorf("online JSON without its view:\n%s", onJSON)
	}

	// Rack 4 retiring, online and on the edited inventory.
	text, _, code = s.run("sabakan", "resilience", "--assume", "rack=4:RETIRING")
	now = time.Now()
	edited := offline(s.served(4, machine.StateRetiring), now)
	offText, _, _ = s.run(append([]string{"sabakan", "resilience"}, edited...)...)
	lines = strings.Split(text, "\n")
	if code != 0 || lines[1] != "assume rack=4:RETIRING: 19 machines" || lines[2] != "" || strings.Join(lines[3:], "\n") != offText {
		t.Errorf("online with --assume:\n%s\nwant the view, the assumption, then the report on the edited inventory:\n%s", text, offText)
	}
	if !strings.HasPrefix(offText, "the cluster has a pending plan of 3 steps: ") || !strings.Contains(offText, "\nrack 4   19        -  ") {
		t.Errorf("the edited inventory's report:\n%s", offText)
	}
	onJSON, _, _ = s.run("sabakan", "resilience", "-o", "json", "--assume", "rack=4:RETIRING")
	offJSON, _, _ = s.run(append([]string{"sabakan", "resilience", "-o", "json"}, edited...)...)
	if on, off := reportOf(t, onJSON), reportOf(t, offJSON); !reflect.DeepEqual(on, off) || !strings.Contains(onJSON, `"assumed": [
    {
      "assume": "rack=4:RETIRING",
      "machines": 19
    }
  ]`) {
		t.Errorf("online JSON with --assume:\n%s\nwant offline's on the edited inventory:\n%s", onJSON, offJSON)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--assume", "rack=99:RETIRING"}, 1, "ckegenctl: --assume rack=99:RETIRING: no machine has rack 99\n"},
		{[]string{"--assume", "rack=4:RETIRNG"}, 2, `--assume "rack=4:RETIRNG": unknown machine state "RETIRNG"`},
		{[]string{"--template", "../../examples/template.yml"}, 2, "--template needs --machines (online, the settings and the cluster come from etcd, the machines from sabakan)"},
		{append(files, "--sabakan-timeout", "1s"), 2, "--sabakan-timeout reads the live state: leave out --machines"},
	} {
		out, errOut, code := s.run(append([]string{"sabakan", "resilience"}, tc.args...)...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, tc.want)
		}
	}
}

// TestPlanOnlineAssume: sabakan plan --assume rack=4:RETIRING is the plan
// the leader would make on the inventory edited that way: the same steps
// and end as generate --plan on the edited files. The text says what was
// assumed after the view's line; the JSON document is the plan's own, and
// stderr says it. An assumption that matches no machine, or does not
// parse, prints nothing on stdout; --stored takes none.
func TestPlanOnlineAssume(t *testing.T) {
	s := newRack4Site(t)
	text, errOut, code := s.run("sabakan", "plan", "--assume", "rack=4:RETIRING")
	now := time.Now()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := noView[:len(noView)-2] + "\nassume rack=4:RETIRING: 19 machines\n\nstep 1: replace control plane\n"
	if !strings.HasPrefix(text, want) {
		t.Errorf("plan text:\n%s\nwant it to begin\n%s", text, want)
	}

	js, errOut, code := s.run("sabakan", "plan", "-o", "json", "--assume", "rack=4:RETIRING")
	if code != 0 || !strings.Contains(errOut, "assume rack=4:RETIRING: 19 machines\n") || strings.Contains(js, "assume") {
		t.Errorf("-o json: exit %d, stderr %q, stdout\n%s", code, errOut, js)
	}
	var on, off planreport.Document
	must(t, json.Unmarshal([]byte(js), &on))
	edited := offline(s.served(4, machine.StateRetiring), now)
	offJSON, offErr, code := s.run(append([]string{"sabakan", "generate", "--plan", "-o", "json"}, edited...)...)
	if code != 0 {
		t.Fatalf("generate --plan: exit %d, %s", code, offErr)
	}
	must(t, json.Unmarshal([]byte(offJSON), &off))
	if on.Result != off.Result || len(on.Steps) != 3 || !reflect.DeepEqual(on.Steps, off.Steps) || !reflect.DeepEqual(on.Cluster, off.Cluster) {
		t.Errorf("online plan with --assume:\n%s\nwant generate --plan's on the edited inventory:\n%s", js, offJSON)
	}
	if plain, _, _ := s.run("sabakan", "plan", "-o", "json"); plain == js {
		t.Error("the plan without --assume is the plan with it")
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--assume", "rack=99:RETIRING"}, 1, "ckegenctl: --assume rack=99:RETIRING: no machine has rack 99\n"},
		{[]string{"--assume", "S000092"}, 2, `--assume "S000092": want WHICH:STATE`},
		{[]string{"--stored", "--assume", "rack=4:RETIRING"}, 1, "--assume: --stored prints the daemon's plan"},
	} {
		out, errOut, code := s.run(append([]string{"sabakan", "plan"}, tc.args...)...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, tc.want)
		}
	}
}

// TestResilienceIsTheRehearsal: each rack's recovery in the resilience
// report is what rehearsing its loss says (plan --assume
// rack=N:UNREACHABLE: its steps, how it ends, its reason), on the
// bundled data center with the circuit breaker set (max-unhealthy 1:
// the daemon taints, then holds) and with query variables that leave
// UNREACHABLE machines out (the loss removes them from the answer).
func TestResilienceIsTheRehearsal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
		// held, when not "", is a rack whose rehearsal the breaker holds.
		held string
	}{
		{name: "breaker", setup: []string{"sabakan", "set-max-unhealthy", "1"}, held: "0"},
		{name: "unreachable left out", setup: []string{"sabakan", "set-variables", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRack4Site(t)
			if tc.setup[1] == "set-variables" {
				tc.setup[2] = writeFileIn(t, s.dir, "v.json", `{"notHaving": {"roles": ["boot"], "states": ["RETIRED", "UNREACHABLE"]}}`)
			}
			if _, errOut, code := s.run(tc.setup...); code != 0 {
				t.Fatal(errOut)
			}
			out, errOut, code := s.run("sabakan", "resilience", "-o", "json")
			if code != 0 {
				t.Fatalf("resilience: exit %d: %s", code, errOut)
			}
			var r struct {
				Domains []struct {
					Domain   string
					Recovery struct {
						Steps                            int
						Result, Planned, Reason, Message string
					}
				}
			}
			must(t, json.Unmarshal([]byte(out), &r))
			if len(r.Domains) != 12 {
				t.Fatalf("%d domains:\n%s", len(r.Domains), out)
			}
			for _, d := range r.Domains {
				out, errOut, code := s.run("sabakan", "plan", "--assume", "rack="+d.Domain+":UNREACHABLE", "-o", "json")
				if code != 0 {
					t.Fatalf("plan --assume rack=%s: exit %d: %s", d.Domain, code, errOut)
				}
				var p planreport.Document
				must(t, json.Unmarshal([]byte(out), &p))
				rec := d.Recovery
				result := rec.Result
				if rec.Planned != "" {
					result = rec.Planned // no quorum: the planner's end
				}
				if rec.Steps != len(p.Steps) || result != p.Result || rec.Reason != p.Reason || rec.Message != p.Message {
					t.Errorf("rack %s: resilience %+v; the rehearsal: %d steps, %s, reason %q, message %q", d.Domain, rec, len(p.Steps), p.Result, p.Reason, p.Message)
				}
				if d.Domain == tc.held && (p.Result != generator.PlanHeld || p.Reason != reason.TooManyUnhealthy) {
					t.Errorf("rack %s: the rehearsal is %s (%s), want held by the breaker", d.Domain, p.Result, p.Reason)
				}
			}
		})
	}
}

// TestRehearsalRefusalHasItsReason: rehearsing both of rack 4's control
// planes RETIRED (they leave the default query's answer at once), the
// plan is refused with the daemon's code and words at the top of the
// JSON, as the status would say them, beside the error.
func TestRehearsalRefusalHasItsReason(t *testing.T) {
	s := newRack4Site(t)
	out, errOut, code := s.run("sabakan", "plan", "--assume", "10.0.4.12:RETIRED", "--assume", "10.0.4.14:RETIRED", "-o", "json")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	var p planreport.Document
	must(t, json.Unmarshal([]byte(out), &p))
	if p.Result != generator.PlanRefused || p.Reason != reason.TooManyNonExistent || p.Message == "" || p.Message != p.Error {
		t.Errorf("result %s, reason %q, message %q, error %q", p.Result, p.Reason, p.Message, p.Error)
	}
}
