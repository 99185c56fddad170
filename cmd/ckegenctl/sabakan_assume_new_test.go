package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
)

// newSpecs are the --assume-new of the tests: 3 compute machines in
// rack 4 and 2 storage machines in a rack that has none yet.
var newSpecs = []string{"rack=4,role=compute,count=3,from=2027-01-01", "rack=20,role=storage,count=2,from=2027-01-01,product=R9"}

// withNew writes the machines of file and those newSpecs make up to a
// new file, and returns its path.
func withNew(t *testing.T, dir, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	must(t, err)
	var ms []machine.Machine
	must(t, json.Unmarshal(data, &ms))
	news, err := assume.ParseNews(newSpecs)
	must(t, err)
	made, _ := assume.MakeUp(news, assume.DefaultLifetime)
	out, err := json.Marshal(append(ms, made...))
	must(t, err)
	return writeFileIn(t, dir, "with-new.json", string(out))
}

func assumeNewArgs(args ...string) []string {
	for _, s := range newSpecs {
		args = append(args, "--assume-new", s)
	}
	return args
}

// TestAssumeNewIsTheEditedInventory: plan --assume-new online, and
// generate --plan and resilience --assume-new offline, answer what they
// answer on a machines file with the made-up machines in it (HEALTHY,
// 240.0.0.0/4, made-up serials), and say first what was made up; with
// --assume rack=4:RETIRING the plan takes the new machines as the
// workers that replace rack 4's. generate without --plan refuses it, as
// it refuses a bad spec, with nothing on stdout.
func TestAssumeNewIsTheEditedInventory(t *testing.T) {
	s := newRack4Site(t)
	now := time.Now()
	text, errOut, code := s.run(assumeNewArgs("sabakan", "plan", "--assume", "rack=4:RETIRING")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"\nassume new rack=4,role=compute,count=3,from=2027-01-01: 3 machines made up (made-up-20270101-compute-r0004-00001 to made-up-20270101-compute-r0004-00003), HEALTHY now\n",
		"\nassume new rack=20,role=storage,count=2,from=2027-01-01,product=R9: 2 machines made up (made-up-20270101-storage-r0020-00001 to made-up-20270101-storage-r0020-00002), HEALTHY now\n",
		" 240.0.0.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan text lacks %q:\n%s", want, text)
		}
	}
	js, errOut, code := s.run(assumeNewArgs("sabakan", "plan", "-o", "json", "--assume", "rack=4:RETIRING")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	edited := withNew(t, s.dir, s.served(4, machine.StateRetiring))
	offJSON, offErr, code := s.run(append([]string{"sabakan", "generate", "--plan", "-o", "json"}, offline(edited, now)...)...)
	if code != 0 {
		t.Fatalf("generate --plan: exit %d, %s", code, offErr)
	}
	var on, off planreport.Document
	must(t, json.Unmarshal([]byte(js), &on))
	must(t, json.Unmarshal([]byte(offJSON), &off))
	if on.Result != off.Result || !reflect.DeepEqual(on.Steps, off.Steps) || !reflect.DeepEqual(on.Cluster, off.Cluster) {
		t.Errorf("online plan with --assume-new:\n%s\nwant generate --plan's on the inventory with the machines:\n%s", js, offJSON)
	}
	if !strings.Contains(js, `"made-up-20270101-compute-r0004-00001"`) {
		t.Errorf("the plan does not take the new machines:\n%s", js)
	}
	// Offline: the same flag on the served files.
	served := s.served(4, machine.StateRetiring)
	flagJSON, _, code := s.run(assumeNewArgs(append([]string{"sabakan", "generate", "--plan", "-o", "json"}, offline(served, now)...)...)...)
	if code != 0 || flagJSON != offJSON {
		t.Errorf("generate --plan --assume-new: exit %d:\n%s\nwant\n%s", code, flagJSON, offJSON)
	}
	resFlag, _, code1 := s.run(assumeNewArgs(append([]string{"sabakan", "resilience", "-o", "json"}, offline(served, now)...)...)...)
	resFile, _, code2 := s.run(append([]string{"sabakan", "resilience", "-o", "json"}, offline(edited, now)...)...)
	if code1 != 0 || code2 != 0 || !reflect.DeepEqual(reportOf(t, resFlag), reportOf(t, resFile)) {
		t.Errorf("resilience --assume-new: exit %d, %d:\n%s\nwant\n%s", code1, code2, resFlag, resFile)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{assumeNewArgs(append([]string{"sabakan", "generate"}, offline(served, now)...)...), "--assume-new needs --plan"},
		{[]string{"sabakan", "plan", "--assume-new", "rack=4,role=compute,count=3"}, "from is missing"},
		{[]string{"sabakan", "plan", "--assume-new", "rack=4,role=compute,count=3,from=2027-01-01,color=red"}, `unknown key "color"`},
	} {
		out, errOut, code := s.run(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestAssumeNewInItsRacksFeed: under a policy whose failure domain is a
// label (feed), the online plan's made-up machines of rack 4, all of
// whose machines are on feed a, are on feed a too (their nodes carry
// sabakan's label): failuredomain.Key.Racked, the rule world.World.Add
// applies offline and in the forecast (world's TestAddInItsRacksDomain).
func TestAssumeNewInItsRacksFeed(t *testing.T) {
	ms := sitetest.ReadMachines(t, "../../examples/machines.json")
	for i := range ms {
		feed := "b"
		if ms[i].Spec.Rack == 4 {
			feed = "a"
		}
		ms[i].Spec.Labels = append(ms[i].Spec.Labels, machine.Label{Name: "feed", Value: feed})
	}
	s := newRack4SiteOf(t, ms)
	pol := writeFileIn(t, s.dir, "policy.yml", "failureDomain: {label: feed}\n")
	args := []string{"sabakan", "plan", "-o", "json", "--policy", pol, "--assume", "rack=4:RETIRING", "--assume-new", "rack=4,role=compute,count=3,from=2027-01-01"}
	js, errOut, code := s.run(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var on planreport.Document
	must(t, json.Unmarshal([]byte(js), &on))
	made := 0
	for _, n := range on.Cluster.Nodes {
		if machine.IsMadeUpAddress(n.Address) {
			made++
			if n.Labels["sabakan.cke.cybozu.com/feed"] != "a" {
				t.Errorf("made-up node %s: labels %v, want feed a (rack 4's)", n.Address, n.Labels)
			}
		}
	}
	if made == 0 {
		t.Fatalf("no made-up machine in the plan's cluster:\n%s", js)
	}
}
