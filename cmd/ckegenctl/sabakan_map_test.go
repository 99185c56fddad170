package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/goldentest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// TestMapGolden runs every testdata/map/*.txtar case through `ckegenctl
// sabakan map`: the "args" flags plus, for each line of "runs", that run's
// flags; each run twice. want/NAME holds stdout, want/NAME.stderr stderr
// and the exit status.
func TestMapGolden(t *testing.T) {
	for _, file := range goldentest.Cases(t, "../../testdata/map/*.txtar") {
		t.Run(goldentest.Name(file), func(t *testing.T) {
			runMapGolden(t, file)
		})
	}
}

func runMapGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var base []string
	var runs [][]string
	want := map[string]string{}
	for _, f := range ar.Files {
		switch {
		case strings.HasPrefix(f.Name, "want/"):
			want[strings.TrimPrefix(f.Name, "want/")] = string(f.Data)
		case f.Name == "args":
			base = strings.Fields(string(f.Data))
		case f.Name == "runs":
			for _, line := range strings.Split(strings.TrimSpace(string(f.Data)), "\n") {
				runs = append(runs, strings.Fields(line))
			}
		case f.Name == "machines.txt":
			data, err := machinesJSON(f.Data)
			if err != nil {
				t.Fatalf("machines.txt: %v", err)
			}
			writeFile(t, filepath.Join(dir, "machines.json"), data)
		default:
			writeFile(t, filepath.Join(dir, f.Name), f.Data)
		}
	}
	if len(runs) == 0 {
		t.Fatal(`no "runs" section`)
	}
	got := map[string]string{}
	for _, r := range runs {
		args := append([]string{"sabakan", "map"}, base...)
		args = append(args, r[1:]...)
		for i, a := range args {
			if strings.Contains(a, ".") && !strings.HasPrefix(a, "-") {
				if _, err := os.Stat(filepath.Join(dir, a)); err == nil {
					args[i] = filepath.Join(dir, a)
				}
			}
		}
		var outs [2][2]string
		for i := range outs {
			var stdout, stderr bytes.Buffer
			code := run(args, strings.NewReader(""), &stdout, &stderr)
			outs[i] = [2]string{stdout.String(), strings.ReplaceAll(stderr.String(), dir+"/", "") + "exit " + strconv.Itoa(code) + "\n"}
		}
		if outs[0] != outs[1] {
			t.Fatalf("run %s: two runs differ (nondeterminism):\n%s", r[0], cmp.Diff(outs[0], outs[1]))
		}
		got[r[0]] = showEscapes(outs[0][0])
		got[r[0]+".stderr"] = outs[0][1]
	}

	var sections []txtar.File
	for _, r := range runs {
		for _, name := range []string{r[0], r[0] + ".stderr"} {
			sections = append(sections, txtar.File{Name: "want/" + name, Data: []byte(got[name])})
		}
	}
	goldentest.Check(t, file, ar, sections)
}

// showEscapes writes ESC as \e, so that golden files read as text.
func showEscapes(s string) string { return strings.ReplaceAll(s, "\x1b", `\e`) }

// TestMapOnline: the map from etcd and the compatible server is the
// decision the leader would make: the stored cluster and the next step
// it would take; a missing setting, etcd or sabakan failing is an error
// that says which.
func TestMapOnline(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 3, 4, 0 },
	})
	etcdURL, st := site.EtcdURL, site.Storage
	ctx := context.Background()
	base := []string{"--endpoints", etcdURL, "sabakan", "map"}

	// The map is the decision's: the settings it needs come first.
	var stdout, stderr bytes.Buffer
	if code := run(base, strings.NewReader(""), &stdout, &stderr); code != 1 || stdout.Len() != 0 ||
		stderr.String() != "ckegenctl: no template: set one with ckegenctl sabakan set-template\n" {
		t.Errorf("no template: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	tmpl := `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` + sitetest.CKEOptions + `}`
	if err := sitetest.StoreOf(st).SetTemplate(ctx, []byte(tmpl)); err != nil {
		t.Fatal(err)
	}
	// The count model's defaults, stored: the map below is of that model.
	if err := sitetest.StoreOf(st).SetConstraints(ctx, constraints.CountDefaults()); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(base, strings.NewReader(""), &stdout, &stderr); code != 1 || stdout.Len() != 0 ||
		stderr.String() != "ckegenctl: no sabakan URL: set one with ckegenctl sabakan set-url\n" {
		t.Errorf("no URL: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}

	if err := sitetest.StoreOf(st).SetURL(ctx, site.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client.Put(ctx, st.Key(storage.KeyCluster),
		`{"name":"t","nodes":[{"address":"10.0.1.2","user":"u","control_plane":true},{"address":"10.0.2.3","user":"u","control_plane":false}],"service_subnet":"10.68.0.0/16"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client.Put(ctx, st.Key(storage.KeyRebootsData+"1"), `{"index":1,"node":"10.0.2.3","status":"rebooting"}`); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base, "--width", "40"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// Boot servers (index 1) are left out by the default query: "-".
	// Rack 1 holds the only control plane: losing it loses etcd's
	// quorum (#). The decision's next step re-renders both nodes (the
	// cluster was not built from the template): "*".
	wantGrid := "rack      0  1# 2\n        1 -  -  -\n        2 .  C* .\n        3 .  .  w*\n        4 .  .  .\nC storage 0  1  0\nw compute 0  0  1\n"
	if !strings.HasPrefix(stdout.String(), wantGrid) || stderr.String() != "" ||
		!strings.Contains(stdout.String(), "next step: 2 changes\n  * regenerate 10.0.1.2 (S000006)\n  * regenerate 10.0.2.3 (S000011)\n") {
		t.Errorf("map:\n%s\nstderr:\n%s\nwant the grid:\n%s", stdout.String(), stderr.String(), wantGrid)
	}

	stdout.Reset()
	if code := run(append(base, "-o", "json"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var m liveview.Map
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Totals.Machines != 12 || m.Totals.TotalControlPlanes() != 1 || m.Totals.TotalWorkers() != 1 || m.Totals.Unusable != 3 || m.Totals.Rebooting != 1 {
		t.Errorf("json totals: %+v", m.Totals)
	}

	// A stored plan changes nothing: the step highlighted is the
	// decision's, made now.
	if _, err := st.Client.Put(ctx, st.Key(storage.KeySabakanPlan),
		`{"result":"settled","steps":[{"op":"increase worker","changes":[{"action":"add-worker","address":"10.0.1.3","serial":"x","score":null,"reason":"r"}],"warnings":[]}]}`); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base, "--width", "40", "--color", "never"), strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "10.0.1.3") || strings.Contains(stdout.String(), ".+") || !strings.Contains(stdout.String(), "regenerate 10.0.1.2") {
		t.Errorf("map with a stored plan:\n%s\nwant the decision's next step (regenerate), not the stored plan's (add-worker 10.0.1.3)", stdout.String())
	}

	site.Server.Close()
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base, "--sabakan-timeout", "1s"), strings.NewReader(""), &stdout, &stderr); code != 1 || stdout.Len() != 0 ||
		!strings.HasPrefix(stderr.String(), "ckegenctl: sabakan at "+site.URL+": ") {
		t.Errorf("sabakan down: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}

	stderr.Reset()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	if code := run([]string{"--endpoints", dead, "--timeout", "300ms", "sabakan", "map"}, strings.NewReader(""), &stdout, &stderr); code != 1 ||
		!strings.HasPrefix(stderr.String(), "ckegenctl: etcd at "+dead+": nothing listens there") {
		t.Errorf("etcd down: exit %d, stderr %q", code, stderr.String())
	}
}

// TestMapBadInput: bad flags and files are errors naming the flag, with
// nothing on stdout.
func TestMapBadInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(content))
		return p
	}
	machines := file("m.json", `[{"spec":{"serial":"A","rack":0,"indexInRack":1,"ipv4":["10.0.0.1"]},"status":{"state":"HEALTHY"}}]`)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--machines", machines, "--color", "sometimes"}, `--color: must be auto, always or never, got "sometimes"`, 2},
		{[]string{"--machines", machines, "--width", "-3"}, "--width: must be a number of columns > 0, got -3", 2},
		{[]string{"--machines", machines, "-o", "yaml"}, `--output: must be one of [text json], got "yaml"`, 2},
		{[]string{"--current", machines}, "--current needs --machines", 2},
		{[]string{"--rebooting", "10.0.0.1"}, "--rebooting needs --machines", 2},
		{[]string{"--template", machines}, "--template needs --machines", 2},
		{[]string{"--constraints", machines}, "--constraints needs --machines", 2},
		{[]string{"--machines", machines, "--constraints", file("r.json", `{"minimum-workers-rate": 120, "control-plane-count": 1}`)}, "--constraints " + filepath.Join(dir, "r.json") + ": constraints: line 1, column 26: minimum-workers-rate: must be a percentage from 0 to 100, got 120", 1},
		{[]string{"--machines", machines, "--constraints", file("both.json", `{"minimum-workers": 2, "minimum-workers-rate": 80}`)}, "minimum-workers-rate cannot be used with minimum-workers", 1},
		{[]string{"--machines", filepath.Join(dir, "none.json")}, "--machines: open ", 1},
		{[]string{"--machines", file("bad.json", `[{"spec":{"serial":""}}]`)}, "machines[0]: spec.serial: must not be empty", 1},
		{[]string{"--machines", machines, "--current", file("c.yml", "name: x\nnodes:\n- {adress: 1}\n")}, `unknown field "adress"`, 1},
		{[]string{"--machines", machines, "--template", file("t.yml", "name: x\n")}, "--template ", 1},
		{[]string{"--machines", machines, "--rebooting", "10.0.0.1,,"}, "--rebooting: empty address", 1},
		{[]string{"--machines", machines, "--next", file("n1.json", `not json`)}, "--next " + filepath.Join(dir, "n1.json") + ": line 1, column 2: invalid character", 1},
		{[]string{"--machines", machines, "--next", file("n2.json", `{"changes":[{"action":"add-worker"}]}`)}, "line 1, column 13: changes[0]: action and address must be set", 1},
		{[]string{"--machines", machines, "--next", file("n3.json", "{\"steps\":[{\"changes\":\n  [{\"address\":\"10.0.0.1\"}]}]}")}, "line 2, column 4: steps[0].changes[0]: action and address must be set", 1},
		// encoding/json named the Go struct field and its type.
		{[]string{"--machines", machines, "--next", file("n4.json", `{"op": "x", "changes": [{"action": 1}]}`)}, "line 1, column 36: changes[0].action: want a string, got the number 1\n", 1},
		{[]string{"--machines", machines, "--next", file("n5.json", `[]`)}, `line 1, column 1: want an object (the JSON of an explanation {"op", "changes"} or of a plan {"steps"}), got an array`, 1},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"sabakan", "map"}, c.args...), strings.NewReader(""), &stdout, &stderr)
		if want := c.code; code != want || stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout.String(), stderr.String(), want, c.want)
		}
	}
}

// TestMapNextFromPlan: --next takes the first step of a plan, and the
// --explain json of generate as it is written.
func TestMapNextFromPlan(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"result":"settled","steps":[{"op":"increase worker","changes":[{"action":"add-worker","address":"10.0.0.1","serial":"A","score":990,"reason":"r"}]},{"op":"x","changes":[{"action":"remove-retired-worker","address":"10.0.0.1"}]}],"cluster":{}}`, "add-worker"},
		{`{"op":"taint nodes","changes":[{"action":"change-taint","address":"10.0.0.1","serial":"A","score":null,"reason":"r"}],"warnings":[]}`, "change-taint"},
	} {
		got, err := parseNextStep([]byte(c.json))
		if err != nil || len(got) != 1 || got[0].Action != c.want || got[0].Address != "10.0.0.1" {
			t.Errorf("%s: got %+v, %v; want one %s", c.json, got, err, c.want)
		}
	}
}
