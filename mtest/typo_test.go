package mtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTypoWarning: the typo guard where people look. On a converged
// cluster, an operator sets a template whose gpu worker template says
// "gpuu", a role no machine has. The daemon keeps the gpu workers and
// warns; the warning is on set-template's stderr (the value is stored
// all the same), in the text of ckegenctl sabakan status, on the leader's
// page and counted in its /metrics. Setting the right template again
// clears all of them.
func TestTypoWarning(t *testing.T) {
	e := newEnv(t)
	e.converge(2 * time.Minute)
	gpuWorkers := func() []string {
		var out []string
		for _, n := range e.cluster().workers() {
			if n.Labels["cke.cybozu.com/role"] == "gpu" {
				out = append(out, n.Address)
			}
		}
		slices.Sort(out)
		return out
	}
	gpu := gpuWorkers()
	if len(gpu) == 0 {
		t.Fatal("no gpu worker to keep")
	}

	data := readFile(t, "../examples/template.yml")
	typo := strings.Replace(data, "cke.cybozu.com/role: gpu\n", "cke.cybozu.com/role: gpuu\n", 1)
	if typo == data {
		t.Fatal("the example template has no gpu role to misspell")
	}
	typoFile := filepath.Join(e.dir, "typo.yml")
	if err := writeFile(typoFile, typo); err != nil {
		t.Fatal(err)
	}
	const warning = `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`

	// set-template: the warning on stderr, exit 0, the template stored.
	out, errOut, err := e.ctlStderr("sabakan", "set-template", typoFile)
	if err != nil || out != "" || errOut != "warning: "+warning+"\n" {
		t.Errorf("set-template of the misspelt template: %v, stdout %q, stderr %q; want success and only the warning", err, out, errOut)
	}
	if got := e.mustCtl("sabakan", "get-template"); !strings.Contains(got, "cke.cybozu.com/role: gpuu") {
		t.Fatalf("the template was not stored:\n%s", got)
	}

	// The daemon's next tick warns and keeps the gpu workers.
	var st struct {
		Leader   string   `json:"leader"`
		Warnings []string `json:"warnings"`
	}
	e.eventually("a tick with the warning", time.Minute, func() bool {
		out, err := e.ctl("sabakan", "status", "-o", "json")
		return err == nil && json.Unmarshal([]byte(out), &st) == nil && slices.Contains(st.Warnings, warning)
	})
	text := e.mustCtl("sabakan", "status")
	if !strings.Contains(text, "\nWARNINGS        "+warning+"\n") {
		t.Errorf("ckegenctl sabakan status has no WARNINGS row with the warning:\n%s", text)
	}
	leader := e.leaderHTTP(t, st.Leader)
	if got := grepLines(e.metrics(leader), "ckegen_tick_warnings "); got != "ckegen_tick_warnings 1" {
		t.Errorf("the leader's /metrics: %q, want ckegen_tick_warnings 1", got)
	}
	page := e.page(t, leader)
	box := `<div id="tick-warnings" class="warnbox" role="alert"><b>1 warning from the last tick</b>`
	if !strings.Contains(page, box) || !strings.Contains(page, "<li>template role &#34;gpuu&#34; matches no machine; inventory roles: compute, gpu, storage</li>") {
		t.Errorf("the leader's page has no warnings box with the warning")
	}
	if got := gpuWorkers(); !slices.Equal(got, gpu) {
		t.Errorf("gpu workers %v, were %v: the typo guard did not hold them", got, gpu)
	}

	// The right template: no warning anywhere.
	out, errOut, err = e.ctlStderr("sabakan", "set-template", "../examples/template.yml")
	if err != nil || out != "" || errOut != "" {
		t.Errorf("set-template of the right template: %v, stdout %q, stderr %q", err, out, errOut)
	}
	e.eventually("a tick without warnings", time.Minute, func() bool {
		out, err := e.ctl("sabakan", "status", "-o", "json")
		st.Warnings = nil
		return err == nil && json.Unmarshal([]byte(out), &st) == nil && len(st.Warnings) == 0
	})
	if text := e.mustCtl("sabakan", "status"); strings.Contains(text, "WARNINGS") {
		t.Errorf("status still shows warnings:\n%s", text)
	}
	leader = e.leaderHTTP(t, st.Leader)
	if got := grepLines(e.metrics(leader), "ckegen_tick_warnings "); got != "ckegen_tick_warnings 0" {
		t.Errorf("the leader's /metrics after the fix: %q, want ckegen_tick_warnings 0", got)
	}
	if strings.Contains(e.page(t, leader), "tick-warnings") {
		t.Error("the leader's page still shows the warnings box")
	}
}

// ctlStderr runs the built ckegenctl and returns its standard output and
// standard error, also when it succeeds.
func (e *env) ctlStderr(args ...string) (stdout, stderr string, err error) {
	c, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, filepath.Join(binDir, "ckegenctl"), append([]string{"--endpoints", strings.Join(e.clients, ",")}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// leaderHTTP is the --http address of the daemon named name.
func (e *env) leaderHTTP(t *testing.T, name string) string {
	t.Helper()
	for i := range e.daemons {
		if name == "ckegen-"+string(rune('0'+i)) {
			return e.dHTTP[i]
		}
	}
	t.Fatalf("no daemon named %q", name)
	return ""
}

// page returns the daemon's page at /.
func (e *env) page(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / of %s: %s %v", addr, resp.Status, err)
	}
	return string(data)
}
