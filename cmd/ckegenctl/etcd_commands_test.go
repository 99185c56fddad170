package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// TestEtcdCommands runs every etcd-backed command against a real etcd, in
// order, checking outputs exactly and that refused input stores nothing.
func TestEtcdCommands(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	dir := t.TempDir()
	write := func(name, content string) string { return writeFileIn(t, dir, name, content) }
	goodTemplate := write("t.yml", "name: demo\nnodes:\n- {user: cybozu, control_plane: true}\n- {user: cybozu}\nservice_subnet: 10.68.0.0/16\n")
	badTemplate := write("bad.yml", "name: demo\nnodes:\n- {user: cybozu, contol_plane: true}\n")
	goodVars := write("v.json", `{"having": {"roles": ["cs"]}, "notHaving": null}`)
	badVars := write("badv.json", `{"having": {"states": ["BROKEN"]}}`)

	raw := func(key string) string {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}
	base := []string{"--etcd-endpoints", url}
	// Whatever /etc/cke/config.yml this machine has, these commands do not
	// read it.
	noDefault := filepath.Join(dir, "no-default.yml")
	runCLI := func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		return runCLIWithConfig(t, noDefault, args...)
	}
	const storedTemplate = `{"name":"demo","nodes":[{"address":"","user":"cybozu","control_plane":true},{"address":"","user":"cybozu","control_plane":false}],"service_subnet":"10.68.0.0/16","options":{"etcd":{"volume_name":"etcd-cke"},"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}}`
	const notTried = "note: not tried on the inventory (sabakan at https://s/api/graphql: "
	steps := []struct {
		args       []string
		code       int
		stdout     string // exact, unless contains is set
		contains   string
		stderr     string
		key, value string // etcd key and its value after the step
	}{
		{args: []string{"sabakan", "is-enabled"}, stdout: "true\n", stderr: "read: sabakan/disabled (sabakan/owner is cke (not set)"},
		{args: []string{"sabakan", "disable"}, stderr: "disabled: sabakan/disabled", key: "/cke/sabakan/disabled", value: "true"},
		{args: []string{"sabakan", "is-enabled"}, stdout: "false\n", stderr: "read: sabakan/disabled"},
		{args: []string{"sabakan", "enable"}, stderr: "enabled: sabakan/disabled", key: "/cke/sabakan/disabled", value: "false"},
		{args: []string{"sabakan", "set-url", "http://sabakan.example:10080"}, key: "/cke/sabakan/url", value: "http://sabakan.example:10080/graphql"},
		{args: []string{"sabakan", "set-url", "https://s/api/graphql"}, key: "/cke/sabakan/url", value: "https://s/api/graphql"},
		{args: []string{"sabakan", "set-url", "sabakan:10080"}, code: 1, stderr: "must be an absolute http or https URL", key: "/cke/sabakan/url", value: "https://s/api/graphql"},
		{args: []string{"sabakan", "set-url", "ftp://s/"}, code: 1, stderr: "must be an absolute http or https URL", key: "/cke/sabakan/url", value: "https://s/api/graphql"},
		{args: []string{"sabakan", "get-url"}, stdout: "https://s/api/graphql\n"},
		// A value never stored: what sets it.
		{args: []string{"sabakan", "get-template"}, code: 1, stderr: "ckegenctl: no template: set one with ckegenctl sabakan set-template\n"},
		{args: []string{"sabakan", "get-variables"}, code: 1, stderr: "ckegenctl: no query variables: the daemon queries with the query's defaults (every machine but boot servers and retired ones); set them with ckegenctl sabakan set-variables\n"},
		{args: []string{"sabakan", "set-template", badTemplate}, code: 1, stderr: `nodes[0]: unknown field "contol_plane"`, key: "/cke/sabakan/template", value: "<none>"},
		// With a URL stored, a setting is tried on the inventory first; a
		// sabakan that cannot be reached is a note, and the value is stored.
		{args: []string{"sabakan", "set-template", goodTemplate}, stderr: notTried, key: "/cke/sabakan/template", value: storedTemplate},
		{args: []string{"sabakan", "get-template"}, stdout: "name: demo\nnodes:\n- address: \"\"\n  control_plane: true\n  user: cybozu\n- address: \"\"\n  control_plane: false\n  user: cybozu\noptions:\n  etcd:\n    volume_name: etcd-cke\n  kubelet:\n    cri_endpoint: /run/containerd/containerd.sock\nservice_subnet: 10.68.0.0/16\n"},
		{args: []string{"sabakan", "get-template", "-o", "json"}, contains: `"volume_name": "etcd-cke"`},
		{args: []string{"sabakan", "set-template", badTemplate}, code: 1, stderr: "unknown field", key: "/cke/sabakan/template", value: storedTemplate},
		{args: []string{"sabakan", "set-variables", badVars}, code: 1, stderr: `having.states[0]: unknown state "BROKEN"`, key: "/cke/sabakan/query-variables", value: "<none>"},
		{args: []string{"sabakan", "set-variables", goodVars}, stderr: notTried, key: "/cke/sabakan/query-variables", value: `{"having": {"roles": ["cs"]}, "notHaving": null}`},
		{args: []string{"sabakan", "get-variables"}, stdout: `{"having": {"roles": ["cs"]}, "notHaving": null}`},
		// Every name, indented by four spaces, as CKE's ckecli shows them.
		// Nothing stored: CKE v1.35.4's defaults, as CKE's ckecli has them.
		{args: []string{"constraints", "show"}, stdout: "{\n    \"control-plane-count\": 1,\n    \"minimum-workers-rate\": 80,\n    \"maximum-unreachable-nodes-for-reboot\": 0,\n    \"maximum-repair-queue-entries\": 0,\n    \"wait-seconds-to-repair-rebooting\": 0\n}\n", stderr: "model: rate (no constraints stored: these are CKE v1.35.4's defaults; every HEALTHY machine a worker template accepts is a worker)\n"},
		{args: []string{"constraints", "set", "control-plane-count", "3"}, stderr: notTried, key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers-rate":80}`},
		{args: []string{"constraints", "set", "minimum-workers", "5"}, stderr: notTried, key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "maximum-workers", "2"}, code: 1, stderr: "maximum-workers: must be 0 (unlimited) or >= minimum-workers (5), got 2", key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "control-plane-count", "three"}, code: 1, stderr: `value must be an integer, got "three"`, key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "control-plane-cnt", "3"}, code: 1, stderr: `unknown key "control-plane-cnt"`, key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "control-plane-counts", "3"}, code: 1, stderr: `ckegenctl: constraints: unknown key "control-plane-counts"; did you mean control-plane-count? (known: `, key: "/cke/constraints", value: `{"control-plane-count":3,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "control-plane-count", "4"}, stderr: "warning: constraints: control-plane-count is even (4)", key: "/cke/constraints", value: `{"control-plane-count":4,"minimum-workers":5,"maximum-workers":0}`},
		{args: []string{"constraints", "set", "maximum-repair-queue-entries", "7"}, stderr: "is even (4)", key: "/cke/constraints", value: `{"control-plane-count":4,"minimum-workers":5,"maximum-workers":0,"maximum-repair-queue-entries":7}`},
		// A negative VALUE is a value (validated), not an unknown flag.
		{args: []string{"constraints", "set", "control-plane-count", "-1"}, code: 1, stderr: "control-plane-count: must be >= 1, got -1", key: "/cke/constraints", value: `{"control-plane-count":4,"minimum-workers":5,"maximum-workers":0,"maximum-repair-queue-entries":7}`},
		{args: []string{"constraints", "set", "wait-seconds-to-repair-rebooting", "-30"}, code: 1, stderr: "wait-seconds-to-repair-rebooting: must be >= 0, got -30", key: "/cke/constraints", value: `{"control-plane-count":4,"minimum-workers":5,"maximum-workers":0,"maximum-repair-queue-entries":7}`},
		{args: []string{"constraints", "set", "control-plane-count", "3", "5"}, code: 2, stderr: "want NAME VALUE, got 3 arguments", key: "/cke/constraints", value: `{"control-plane-count":4,"minimum-workers":5,"maximum-workers":0,"maximum-repair-queue-entries":7}`},
		{args: []string{"constraints", "set", "control-plane-count"}, code: 2, stderr: "ckegenctl: constraints set needs VALUE (usage: ckegenctl constraints set NAME VALUE; see --help)\n"},
		// Flags after NAME VALUE still count.
		{args: []string{"constraints", "set", "control-plane-count", "5", "--etcd-prefix", "/other/"}, stderr: "note: no constraints are stored: setting control-plane-count on CKE v1.35.4's defaults", key: "/other/constraints", value: `{"control-plane-count":5,"minimum-workers-rate":80}`},
		{args: []string{"constraints", "set", "control-plane-count", "5", "--no-such-flag"}, code: 2, stderr: "unknown flag: --no-such-flag"},
		{args: []string{"constraints", "set", "control-plane-count", "5", "--etcd-prefx", "/other/"}, code: 2, stderr: "ckegenctl: unknown flag: --etcd-prefx; did you mean --etcd-prefix?\n"},
		// A typo of the older spelling gets the older spelling.
		{args: []string{"constraints", "set", "control-plane-count", "5", "--prefx", "/other/"}, code: 2, stderr: "ckegenctl: unknown flag: --prefx; did you mean --prefix?\n"},
		{args: []string{"constraints", "show"}, stdout: "{\n    \"control-plane-count\": 4,\n    \"minimum-workers\": 5,\n    \"maximum-workers\": 0,\n    \"maximum-unreachable-nodes-for-reboot\": 0,\n    \"maximum-repair-queue-entries\": 7,\n    \"wait-seconds-to-repair-rebooting\": 0\n}\n", stderr: "model: count (minimum-workers and maximum-workers bound the number of workers)\n"},
		// What the daemon writes, before it has: how to see why.
		{args: []string{"cluster", "get"}, code: 1, stderr: "ckegenctl: no cluster yet: the daemon writes one at its first successful tick; ckegenctl sabakan status says why it has not\n"},
		{args: []string{"leader"}, code: 1, stderr: "nothing leads: no ckegen daemon (nothing under /cke/sabakan/ckegen/leader/) and no CKE server (nothing under /cke/leader/)"},
		{args: []string{"sabakan", "status"}, code: 1, stderr: "ckegenctl: no status yet: no ckegen has ticked on this etcd and prefix, neither a daemon nor CKE's server with ckegen inside; ckegenctl leader says whether one leads\n"},
		{args: []string{"sabakan", "history"}, stdout: "TIME  OP  CHANGES  TEMPLATE REV  CLUSTER REV\n"},
		{args: []string{"sabakan", "status", "-o", "xml"}, code: 2, stderr: "--output: must be one of"},
		{args: []string{"sabakan", "status", "-o", "jsn"}, code: 2, stderr: `ckegenctl: --output: must be one of [table yaml json], got "jsn"; did you mean json?` + "\n"},
	}
	for i, st := range steps {
		out, errOut, code := runCLI(t, append(base, st.args...)...)
		if code != st.code {
			t.Fatalf("step %d %v: exit %d, want %d (stderr %q)", i, st.args, code, st.code, errOut)
		}
		if st.contains != "" {
			if !strings.Contains(out, st.contains) {
				t.Errorf("step %d %v: stdout %q does not contain %q", i, st.args, out, st.contains)
			}
		} else if out != st.stdout {
			t.Errorf("step %d %v: stdout\n%q\nwant\n%q", i, st.args, out, st.stdout)
		}
		if !strings.Contains(errOut, st.stderr) || (st.stderr == "" && errOut != "") {
			t.Errorf("step %d %v: stderr %q, want %q", i, st.args, errOut, st.stderr)
		}
		if st.key != "" && st.value != "" {
			if got := raw(st.key); got != st.value {
				t.Errorf("step %d %v: %s = %q, want %q", i, st.args, st.key, got, st.value)
			}
		}
	}

	// A leader, a cluster, a status and history, as the daemon leaves them.
	s := storage.New(cli, "")
	sess, err := concurrency.NewSession(cli)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	elec := concurrency.NewElection(sess, s.Key(storage.KeyCKEGenLeader))
	if err := elec.Campaign(context.Background(), "host-1"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.PutCluster(ctx, elec.Key(), []byte(`{"name":"demo","nodes":[{"address":"10.0.0.1","user":"cybozu","control_plane":true}],"service_subnet":"10.68.0.0/16"}`), 0, 7); err != nil {
		t.Fatal(err)
	}
	score := 1003.0
	if err := s.PutStatus(ctx, elec.Key(), storage.Status{Result: "ok", Leader: "host-1", LastOp: "new", LastChangeCount: 1,
		LastChanges: []storage.Change{{Action: "generate", Address: "10.0.0.1", Serial: "s1", Score: &score, Reason: "control plane"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHistory(ctx, elec.Key(), storage.HistoryEntry{Op: "new", ChangeCount: 1, TemplateRevision: 7, ClusterRevision: 99}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"leader"}, "host-1\n"},
		{[]string{"cluster", "get"}, "name: demo\nnodes:\n- address: 10.0.0.1\n  control_plane: true\n  user: cybozu\nservice_subnet: 10.68.0.0/16\n"},
		{[]string{"sabakan", "status"}, "RESULT          ok\nSINCE           -\nLAST TICK       -\nFAILURES        0\nLAST SUCCESS    -\nLEADER          host-1 (the last tick's, AGE)\n" +
			"LEADS NOW       ckegen's daemon host-1 (of a version not known) leads (EVIDENCE); no CKE server leads (nothing under leader/)\nWRITES CLUSTER  ckegen, standalone (no CKE server holds leader/)\nLAST OP         new (1 change)\n  ACTION    ADDRESS   SERIAL  SCORE  REASON\n  generate  10.0.0.1  s1      1003   control plane\n" +
			"\nRUNWAY  " + liveview.NoForecast + "\n"},
		{[]string{"sabakan", "history"}, "TIME  OP   CHANGES  TEMPLATE REV  CLUSTER REV\n-     new  1        7             99\n"},
	} {
		out, errOut, code := runCLI(t, append(base, st.args...)...)
		if out = liveRows(out); code != 0 || out != st.want {
			t.Errorf("%v: exit %d stdout\n%q\nwant\n%q\nstderr %q", st.args, code, out, st.want, errOut)
		}
	}
	// The leader's forecast, with its age.
	at := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)
	if err := s.PutForecast(ctx, elec.Key(), storage.ForecastSummary{At: at, RunwayUntil: "2027-01-31", RunwayReason: "WORKERS_BELOW_NEED",
		RunwayMessage: "the cluster meets its constraints until 2027-01-31; on 2027-02-01, 20 machines retire and 0 workers remain (needed 5)",
		Events: []storage.ForecastEvent{{Date: "2026-12-01", Workers: 12, Plan: "nothing to do"},
			{Date: "2027-02-01", Retiring: 20, Plan: "REFUSED NOT_ENOUGH_MACHINES", Fails: true}}}); err != nil {
		t.Fatal(err)
	}
	out, _, _ := runCLI(t, append(base, "sabakan", "status")...)
	want := "\nRUNWAY      the cluster meets its constraints until 2027-01-31; on 2027-02-01, 20 machines retire and 0 workers remain (needed 5) (forecast made 3h ago, " + at.Format(time.RFC3339) + ")\n" +
		"NEXT EVENT  2026-12-01: 0 retiring, 0 retired, 12 workers; nothing to do\n" +
		"NEXT EVENT  2027-02-01: 20 retiring, 0 retired, 0 workers; REFUSED NOT_ENOUGH_MACHINES; the runway ends here\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("status with a forecast:\n%s\nwant it to end with\n%s", out, want)
	}
	if out, _, _ := runCLI(t, append(base, "sabakan", "status", "-o", "json")...); !strings.Contains(out, `"lastOp": "new"`) {
		t.Errorf("status -o json: %s", out)
	}
}
