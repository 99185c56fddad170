package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// ckeV135Doc is what CKE v1.35.4's `ckecli constraints set` stores: its
// Constraints struct marshalled, all five keys in its field order
// (github.com/cybozu-go/cke@v1.35.4, constraints.go). CKE v1.35.4 is not a
// dependency of this module, so the bytes are written out.
func ckeV135Doc(cpCount, rate, reboot, repairs, repairWait int) string {
	return `{"control-plane-count":` + strconv.Itoa(cpCount) + `,"minimum-workers-rate":` + strconv.Itoa(rate) +
		`,"maximum-unreachable-nodes-for-reboot":` + strconv.Itoa(reboot) + `,"maximum-repair-queue-entries":` + strconv.Itoa(repairs) +
		`,"wait-seconds-to-repair-rebooting":` + strconv.Itoa(repairWait) + `}`
}

// TestConstraintsModels: `constraints set` switches a stored document
// between the count model and the rate model in one write, storing the
// keys of one model only, byte for byte what CKE v1.35.4's ckecli stores
// for a document it wrote; a rate outside 0..100 stores nothing; `show`
// prints the keys of the model in force as JSON that --constraints reads
// back, and names the model on stderr. Real etcd.
func TestConstraintsModels(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	ctx := context.Background()
	noDefault := filepath.Join(t.TempDir(), "no-default.yml")
	cliRun := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLIWithConfig(t, noDefault, append([]string{"--endpoints", url}, args...)...)
	}
	const key = "/cke/constraints"
	// stored is the document and its version (how many writes made it).
	stored := func() (string, int64) {
		t.Helper()
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>", 0
		}
		return string(resp.Kvs[0].Value), resp.Kvs[0].Version
	}
	put := func(doc string) {
		t.Helper()
		if _, err := cli.Put(ctx, key, doc); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing stored: set starts from CKE v1.35.4's defaults, the rate
	// model at 80, and says so (TestConstraintsSetFromCKEDefaults).
	if _, errOut, code := cliRun("constraints", "set", "minimum-workers-rate", "80"); code != 0 || !strings.Contains(errOut, "CKE v1.35.4's defaults") {
		t.Fatalf("set minimum-workers-rate 80 on nothing: exit %d, stderr %q", code, errOut)
	}
	if doc, _ := stored(); doc != `{"control-plane-count":1,"minimum-workers-rate":80}` {
		t.Errorf("set minimum-workers-rate 80 on nothing stored %s", doc)
	}

	// A count-model document with CKE's queue settings: the rate replaces
	// minimum-workers and maximum-workers in one write, and the result is
	// the document CKE v1.35.4 stores for the same values.
	put(`{"control-plane-count":3,"minimum-workers":5,"maximum-workers":10,"maximum-unreachable-nodes-for-reboot":1,"maximum-repair-queue-entries":2,"wait-seconds-to-repair-rebooting":30}`)
	_, before := stored()
	if _, errOut, code := cliRun("constraints", "set", "minimum-workers-rate", "70"); code != 0 || errOut != "" {
		t.Fatalf("set minimum-workers-rate 70: exit %d, stderr %q", code, errOut)
	}
	doc, after := stored()
	if want := ckeV135Doc(3, 70, 1, 2, 30); doc != want {
		t.Errorf("count -> rate stored\n%s\nwant (CKE v1.35.4's)\n%s", doc, want)
	}
	if after != before+1 {
		t.Errorf("count -> rate took %d writes, want 1", after-before)
	}
	out, errOut, code := cliRun("constraints", "show")
	wantShow := "{\n    \"control-plane-count\": 3,\n    \"minimum-workers-rate\": 70,\n    \"maximum-unreachable-nodes-for-reboot\": 1,\n    \"maximum-repair-queue-entries\": 2,\n    \"wait-seconds-to-repair-rebooting\": 30\n}\n"
	if code != 0 || out != wantShow || !strings.HasPrefix(errOut, "model: rate (") {
		t.Errorf("show in the rate model: exit %d, stdout\n%s\nstderr %q; want\n%s", code, out, errOut, wantShow)
	}
	// What show prints is a constraints file, of the same model.
	if c, err := constraints.Parse([]byte(out)); err != nil || !c.RateModel() || *c.MinimumWorkersRate != 70 || c.ControlPlaneCount != 3 {
		t.Errorf("show's JSON read back: %+v, %v", c, err)
	}

	// A rate outside 0..100, or not an integer: refused, naming the key
	// and the range, nothing written.
	for _, bad := range []struct{ value, want string }{
		{"101", "minimum-workers-rate: must be a percentage from 0 to 100, got 101"},
		{"-1", "minimum-workers-rate: must be a percentage from 0 to 100, got -1"},
		{"80%", `minimum-workers-rate: value must be an integer, got "80%"`},
	} {
		_, before := stored()
		out, errOut, code := cliRun("constraints", "set", "minimum-workers-rate", bad.value)
		if code != 1 || out != "" || !strings.Contains(errOut, bad.want) {
			t.Errorf("set minimum-workers-rate %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", bad.value, code, out, errOut, bad.want)
		}
		if _, v := stored(); v != before {
			t.Errorf("set minimum-workers-rate %s wrote the constraints", bad.value)
		}
	}
	// The bounds themselves are rates.
	for _, v := range []string{"0", "100"} {
		if _, errOut, code := cliRun("constraints", "set", "minimum-workers-rate", v); code != 0 {
			t.Errorf("set minimum-workers-rate %s: exit %d, %s", v, code, errOut)
		}
	}
	if doc, _ := stored(); doc != ckeV135Doc(3, 100, 1, 2, 30) {
		t.Errorf("after rates 0 and 100: %s", doc)
	}

	// And back: minimum-workers replaces the rate in one write;
	// maximum-workers takes its default.
	_, before = stored()
	if _, errOut, code := cliRun("constraints", "set", "minimum-workers", "4"); code != 0 || errOut != "" {
		t.Fatalf("set minimum-workers 4: exit %d, stderr %q", code, errOut)
	}
	doc, after = stored()
	if want := `{"control-plane-count":3,"minimum-workers":4,"maximum-workers":0,"maximum-unreachable-nodes-for-reboot":1,"maximum-repair-queue-entries":2,"wait-seconds-to-repair-rebooting":30}`; doc != want || after != before+1 {
		t.Errorf("rate -> count: %s in %d writes, want %s in 1", doc, after-before, want)
	}
	out, errOut, _ = cliRun("constraints", "show")
	if !strings.Contains(out, `"minimum-workers": 4`) || strings.Contains(out, "rate") || !strings.HasPrefix(errOut, "model: count (") {
		t.Errorf("show in the count model: stdout\n%s\nstderr %q", out, errOut)
	}
	// maximum-workers switches too; minimum-workers takes its default.
	cliRun("constraints", "set", "minimum-workers-rate", "50")
	if _, errOut, code := cliRun("constraints", "set", "maximum-workers", "9"); code != 0 {
		t.Fatalf("set maximum-workers 9: %s", errOut)
	}
	if doc, _ := stored(); doc != `{"control-plane-count":3,"minimum-workers":1,"maximum-workers":9,"maximum-unreachable-nodes-for-reboot":1,"maximum-repair-queue-entries":2,"wait-seconds-to-repair-rebooting":30}` {
		t.Errorf("rate -> count by maximum-workers: %s", doc)
	}

	// CKE v1.35.4's own document, written by CKE: another key keeps the
	// document exactly as CKE would write it.
	put(ckeV135Doc(1, 80, 0, 0, 0))
	if _, errOut, code := cliRun("constraints", "set", "control-plane-count", "3"); code != 0 || errOut != "" {
		t.Fatalf("set control-plane-count 3 on CKE's document: exit %d, %s", code, errOut)
	}
	if doc, _ := stored(); doc != ckeV135Doc(3, 80, 0, 0, 0) {
		t.Errorf("CKE's document after control-plane-count 3: %s, want %s", doc, ckeV135Doc(3, 80, 0, 0, 0))
	}

	// Both models' keys (written by hand): the daemon refuses it, and
	// show says why. Setting a key of one model chooses it, keeping the
	// rest; any other key is refused, nothing written.
	const both = `{"control-plane-count":3,"minimum-workers":2,"minimum-workers-rate":80}`
	put(both)
	if out, errOut, code := cliRun("constraints", "show"); code != 1 || out != "" ||
		!strings.Contains(errOut, "minimum-workers-rate cannot be used with minimum-workers") {
		t.Errorf("show with both models: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, before = stored()
	if _, errOut, code := cliRun("constraints", "set", "control-plane-count", "5"); code != 1 ||
		!strings.Contains(errOut, "choose the model first: ckegenctl constraints set minimum-workers-rate N, or ckegenctl constraints set minimum-workers N") {
		t.Errorf("set control-plane-count with both models: exit %d, stderr %q", code, errOut)
	}
	if doc, v := stored(); doc != both || v != before {
		t.Errorf("a refused set wrote %s", doc)
	}
	if _, errOut, code := cliRun("constraints", "set", "minimum-workers-rate", "75"); code != 0 ||
		errOut != "note: the stored constraints hold the keys of both models; minimum-workers-rate replaces minimum-workers\n" {
		t.Errorf("set minimum-workers-rate with both models: exit %d, stderr %q", code, errOut)
	}
	if doc, _ := stored(); doc != `{"control-plane-count":3,"minimum-workers-rate":75}` {
		t.Errorf("both models -> rate: %s", doc)
	}
	put(`{"control-plane-count":3,"minimum-workers":2,"maximum-workers":6,"minimum-workers-rate":80}`)
	if _, errOut, code := cliRun("constraints", "set", "maximum-workers", "7"); code != 0 ||
		errOut != "note: the stored constraints hold the keys of both models; maximum-workers replaces minimum-workers-rate\n" {
		t.Errorf("set maximum-workers with both models: exit %d, stderr %q", code, errOut)
	}
	if doc, _ := stored(); doc != `{"control-plane-count":3,"minimum-workers":2,"maximum-workers":7}` {
		t.Errorf("both models -> count: %s", doc)
	}
}

// TestConstraintsSetHelpModels: `set --help` says how the keys choose the
// model and where set starts when nothing is stored.
func TestConstraintsSetHelpModels(t *testing.T) {
	out, _, code := runCLIWithConfig(t, filepath.Join(t.TempDir(), "missing.yml"), "constraints", "set", "--help")
	for _, want := range []string{
		"minimum-workers-rate replaces minimum-workers and maximum-workers",
		"starts from CKE v1.35.4's defaults, as its ckecli does (control-plane-count 1,\nminimum-workers-rate 80: the rate model)",
		"rate model (CKE v1.35): every HEALTHY machine a worker template accepts is a worker; a RETIRED worker leaves only while (workers - 1) / machines * 100 >= this percentage (0 to 100; 80 when nothing is stored)",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("set --help (exit %d) does not say %q:\n%s", code, want, out)
		}
	}
}

// TestConstraintsSetFromCKEDefaults: with nothing stored, `constraints
// set` starts from CKE v1.35.4's defaults, as CKE's ckecli does (one
// control plane, minimum-workers-rate 80), and says so on stderr; `show`
// prints them; minimum-workers 1 stores the count model's defaults
// exactly, the command the upgrade hold names. Real etcd.
func TestConstraintsSetFromCKEDefaults(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	ctx := context.Background()
	cfg := filepath.Join(t.TempDir(), "no-default.yml")
	cliRun := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLIWithConfig(t, cfg, append([]string{"--endpoints", url}, args...)...)
	}
	const key = "/cke/constraints"
	stored := func() string {
		t.Helper()
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		_, err = cli.Delete(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return string(resp.Kvs[0].Value)
	}
	out, errOut, code := cliRun("constraints", "show")
	if want := "{\n    \"control-plane-count\": 1,\n    \"minimum-workers-rate\": 80,\n    \"maximum-unreachable-nodes-for-reboot\": 0,\n    \"maximum-repair-queue-entries\": 0,\n    \"wait-seconds-to-repair-rebooting\": 0\n}\n"; code != 0 || out != want || !strings.Contains(errOut, "model: rate (no constraints stored: these are CKE v1.35.4's defaults") {
		t.Errorf("show on nothing: exit %d, stdout\n%s\nstderr %q; want CKE's defaults", code, out, errOut)
	}
	for _, c := range []struct {
		name, value, want string
	}{
		{"control-plane-count", "3", `{"control-plane-count":3,"minimum-workers-rate":80}`},
		{"maximum-repair-queue-entries", "2", `{"control-plane-count":1,"minimum-workers-rate":80,"maximum-repair-queue-entries":2}`},
		{"minimum-workers", "1", `{"control-plane-count":1,"minimum-workers":1,"maximum-workers":0}`},
	} {
		_, errOut, code := cliRun("constraints", "set", c.name, c.value)
		if code != 0 || !strings.Contains(errOut, "note: no constraints are stored: setting "+c.name+" on CKE v1.35.4's defaults") {
			t.Errorf("set %s %s on nothing: exit %d, stderr %q", c.name, c.value, code, errOut)
		}
		if doc := stored(); doc != c.want {
			t.Errorf("set %s %s on nothing stored %s, want %s", c.name, c.value, doc, c.want)
		}
	}
	if constraints.CountDefaultsCommand != "ckegenctl constraints set minimum-workers 1" {
		t.Errorf("the command the hold names is %q, tested here as set minimum-workers 1", constraints.CountDefaultsCommand)
	}
}
