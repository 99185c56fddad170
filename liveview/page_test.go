package liveview

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// pageFixture: an etcd with a URL, template, cluster, status and history,
// and the compatible server with 3 racks of 5 machines.
type pageFixture struct {
	st      storage.Storage
	sabakan *httptest.Server
}

func newPageFixture(t *testing.T) *pageFixture {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 3, 5, 0 },
		Template:   `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` + sitetest.CKEOptions + `}`,
		StoreURL:   true,
	})
	st := s.Storage
	_, err := s.Store.SetState("S000009", machine.StateUnreachable)
	must(t, err)
	ctx := context.Background()
	leader := st.Key(storage.KeyLeader + "1")
	_, err = st.Client.Put(ctx, leader, "daemon-1")
	must(t, err)
	_, err = st.Client.Put(ctx, st.Key(storage.KeyCluster),
		`{"name":"demo<1>","nodes":[{"address":"10.0.0.2","user":"u","control_plane":true},{"address":"10.0.1.4","user":"u","control_plane":false}],"service_subnet":"10.68.0.0/16"}`)
	must(t, err)
	must(t, st.PutStatus(ctx, leader, storage.Status{Result: "failing", Reason: "NOT_ENOUGH_MACHINES", Message: "need 5 workers, 3 candidates",
		Since: now.Add(-time.Hour), Time: now, LastOp: "new", LastChangeCount: 2, ConsecutiveFailures: 4, Leader: "daemon-1",
		Kubernetes: &storage.KubernetesStatus{Read: true, Nodes: 2, Intolerable: 1},
		Placements: []storage.PlacementStatus{{Placement: "control-plane", ObservedGroup: "any",
			Groups: []storage.GroupNodes{{Group: "dedicated", Nodes: 0}, {Group: "any", Nodes: 1}, {Group: "", Nodes: 0}}}}}, nil))
	must(t, st.AddHistory(ctx, leader, storage.HistoryEntry{Time: now.Add(-2 * time.Hour), Op: "new", ChangeCount: 2, ClusterRevision: 7,
		Changes: []storage.Change{{Action: "generate", Address: "10.0.0.2"}, {Action: "generate", Address: "10.0.1.4"}}}))
	return &pageFixture{st: st, sabakan: s.Server}
}

// reader decides anew at every read (a CacheTTL of 1ns): the tests
// change the settings between two pages.
func (f *pageFixture) reader() *Reader {
	return NewReader(f.st, Options{Sabakan: sabakan.Options{Timeout: 2 * time.Second, Retries: -1}, EtcdTimeout: time.Second, CacheTTL: time.Nanosecond})
}

func (f *pageFixture) handler() http.Handler {
	return NewHandler(f.reader(), PageOptions{Refresh: 15 * time.Second, Log: quietLog})
}

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

var rectRE = regexp.MustCompile(`<rect x="\d+" y="\d+" class="([^"]*)"><title>([^<]*)</title></rect>`)

// TestMapPageSections: the page has one rect per machine with its tooltip,
// the status, the next step of the leader's decision (highlighted on the
// map), the history and a refresh.
func TestMapPageSections(t *testing.T) {
	f := newPageFixture(t)
	d, err := f.reader().Decide(context.Background(), Preview{})
	must(t, err)
	if d.Plan == nil || len(d.Plan.Steps) == 0 || d.Plan.Steps[0].Changes[0].Action != generator.ActionAddWorker {
		t.Fatalf("the fixture's plan: %+v, want a first step that adds a worker first", d.Plan)
	}
	step := d.Plan.Steps[0]
	add := step.Changes[0]
	h := f.handler()
	rec := get(t, h, http.MethodGet, "/")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q\n%s", rec.Code, rec.Header().Get("Content-Type"), body)
	}
	for k, v := range map[string]string{"Content-Security-Policy": ContentSecurityPolicy, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("GET /: %s %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(ContentSecurityPolicy, "default-src 'none'") || !strings.Contains(ContentSecurityPolicy, "frame-ancestors 'none'") {
		t.Errorf("CSP %q lets more than the page's style in", ContentSecurityPolicy)
	}
	rects := rectRE.FindAllStringSubmatch(body, -1)
	if len(rects) != 15 {
		t.Errorf("machine rects: got %d, want 15", len(rects))
	}
	titles := map[string]string{}
	for _, r := range rects {
		titles[r[2]] = r[1]
	}
	// next is what a rect says of the step's change of addr, if any.
	next := func(addr, class string) (string, string) {
		for _, ch := range step.Changes {
			if ch.Address == addr {
				return "; next: " + ch.Action, class + " nx"
			}
		}
		return "", class
	}
	cpNext, cpClass := next("10.0.0.2", "c")
	wNext, wClass := next("10.0.1.4", "w unreachable")
	for title, class := range map[string]string{
		"S000002 10.0.0.2: HEALTHY, role " + roleOf(t, body, "S000002") + ", control plane, rack 0 #2" + cpNext: cpClass,
		"S000009 10.0.1.4: UNREACHABLE, role " + roleOf(t, body, "S000009") + ", worker, rack 1 #4" + wNext:     wClass,
		fmt.Sprintf("%s %s: HEALTHY, role %s, unused candidate, rack %s #%s; next: %s", add.Serial, add.Address, roleOf(t, body, add.Serial),
			strings.Split(add.Address, ".")[2], strings.Split(add.Address, ".")[3], add.Action): "u nx",
		"S000001 10.0.0.1: HEALTHY, role boot, not usable, rack 0 #1; " + leftOutOnline: "x",
	} {
		if got, ok := titles[title]; !ok || got != class {
			t.Errorf("no rect of class %q with tooltip %q (class %q)", class, title, got)
		}
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="15">`,
		`<title>ckegen: demo&lt;1&gt;</title>`,
		`<span class="err">failing</span> <code>NOT_ENOUGH_MACHINES</code>`,
		`<td>need 5 workers, 3 candidates</td>`,
		`<tr><th>failures in a row</th><td>4</td></tr>`,
		`<tr><th>last tick's leader</th><td>daemon-1 <span class="muted">`,
		`<tr><th>kubernetes</th><td>2 nodes, 1 with a taint control planes do not tolerate</td></tr>`,
		`<tr><th>placement control-plane</th><td>observed group <code>any</code>; nodes: dedicated 0, any 1, in no group 0</td></tr>`,
		fmt.Sprintf(`Next step: <b>%s</b>, %s; %s pending`, html.EscapeString(step.Op), words.Count(len(step.Changes), "change", "changes"),
			words.Count(len(d.Plan.Steps), "step", "steps")),
		fmt.Sprintf(`<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>`, add.Action, add.Address, add.Serial),
		`<td>new</td><td class="num">2</td><td>generate <code>10.0.0.2</code>, generate <code>10.0.1.4</code></td>`,
		`15 machines in 3 racks: 1 control plane`,
		`<p id="runway-line" class="muted">` + html.EscapeString(NoForecast) + `</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	if rec := get(t, h, http.MethodHead, "/"); rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("HEAD /: %d, %d bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
	if rec := get(t, h, http.MethodPost, "/"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", rec.Code)
	}
	if rec := get(t, h, http.MethodGet, "/metrics-typo"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /metrics-typo: %d", rec.Code)
	}
}

// roleOf reads a machine's role from its tooltip (dcgen deals roles at
// random).
func roleOf(t *testing.T, body, serial string) string {
	t.Helper()
	m := regexp.MustCompile(serial + ` [0-9.]+: [A-Z]+, role ([a-z]+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no tooltip for %s", serial)
	}
	return m[1]
}

// TestMapPageFailures: sabakan down still shows the status and history
// with the reason there is no map; etcd down is a 503 that says so.
func TestMapPageFailures(t *testing.T) {
	f := newPageFixture(t)
	f.sabakan.Close()
	rec := get(t, f.handler(), http.MethodGet, "/")
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `<p class="err">No rack map: sabakan at `) ||
		!strings.Contains(body, "NOT_ENOUGH_MACHINES") || !strings.Contains(body, "No pending plan.") || strings.Contains(body, "<rect x=") {
		t.Errorf("sabakan down: %d\n%s", rec.Code, body)
	}

	f.st.Client.Close()
	rec = get(t, f.handler(), http.MethodGet, "/")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `<p class="err">Cannot read the state: etcd: status: `) ||
		!strings.Contains(rec.Body.String(), `<meta http-equiv="refresh" content="15">`) {
		t.Errorf("etcd down: %d\n%s", rec.Code, rec.Body.String())
	}
}

// TestMapPageEscapes: inventory text is escaped everywhere it appears.
func TestMapPageEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>`
	ms := []machine.Machine{{Spec: machine.Spec{Serial: `S"1` + evil, Rack: 0, IndexInRack: 1, Role: evil, IPv4: []string{"10.0.0.1"}},
		Status: machine.Status{State: machine.StateHealthy}}}
	src := &builtSource{in: rawIn(ms, MapInput{Next: []generator.Change{{Action: evil, Address: "10.0.0.1"}}}),
		s: View{ClusterName: evil, Notes: []string{evil}, NextStep: &NextStep{Op: evil, Changes: []generator.Change{{Action: evil, Address: evil}}}}}
	body := get(t, NewHandler(src, PageOptions{Log: quietLog}), http.MethodGet, "/").Body.String()
	if strings.Contains(body, "<script>") {
		t.Errorf("unescaped inventory text:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("escaped text missing:\n%s", body)
	}
	if n := len(rectRE.FindAllString(body, -1)); n != 1 {
		t.Errorf("rects: %d, want 1", n)
	}
}

// TestMapPageSize20000: at 20,000 machines the page has a rect per machine
// and stays under 5 MB.
func TestMapPageSize20000(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 20,000-machine data center")
	}
	rec := get(t, NewHandler(bigSource(t, 500, 40), PageOptions{Log: quietLog}), http.MethodGet, "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if n := strings.Count(rec.Body.String(), "<rect x="); n != 20000 {
		t.Errorf("rects: %d, want 20000", n)
	}
	if size := rec.Body.Len(); size >= 5<<20 {
		t.Errorf("page of %d bytes, over 5 MB", size)
	} else {
		t.Logf("page of %d bytes", size)
	}
}

// TestMapPageModel: the page says the model of the stored constraints
// under the rack summary: the count model, or the rate model (also when
// none are stored: CKE's defaults) with the figure of the cluster as the decision's step
// leaves it, (workers - 1) / machines against minimum-workers-rate, and
// whether a RETIRED worker may leave; invalid constraints leave no map,
// and say why.
func TestMapPageModel(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	h := f.handler()
	// rateLine is the rate model's line of the decision: the workers of
	// the cluster as its step leaves it; 12 machines: the 15 less the 3
	// boot servers the default query leaves out (the UNREACHABLE one
	// counts).
	rateLine := func(minimum int) string {
		d, err := f.reader().Decide(ctx, Preview{})
		must(t, err)
		after := d.Gathered.Settings.Current
		if d.Step != nil {
			after = d.Step.Cluster
		}
		w := 0
		for _, n := range after.Nodes {
			if !n.ControlPlane {
				w++
			}
		}
		r := &generator.WorkerRate{Workers: w, Machines: 12, Percent: constraints.Rate(w, 12), Minimum: minimum}
		class, verdict := ` class="note"`, ": RETIRED workers stay."
		if r.CanRemove() {
			class, verdict = "", ": a RETIRED worker past the retire wait may leave."
		}
		return `<p id="model" data-model="rate"` + class + `>Model of the workers: rate: every HEALTHY machine a worker template accepts is a worker; workers ` +
			html.EscapeString(r.String()) + verdict + `</p>`
	}
	for _, tc := range []struct {
		stored string // "" for none
		want   func() string
	}{
		// None stored: CKE v1.35.4's defaults, the rate model at 80.
		{"", func() string { return rateLine(80) }},
		{`{"control-plane-count":1,"minimum-workers-rate":80}`, func() string { return rateLine(80) }},
		{`{"control-plane-count":1,"minimum-workers-rate":0}`, func() string { return rateLine(0) }},
		{`{"control-plane-count":1,"minimum-workers":3,"maximum-workers":5}`, func() string { return `<p id="model" data-model="count">Model of the workers: count: ` }},
		{`{"minimum-workers":3,"minimum-workers-rate":80}`, func() string { return `<p class="err">No rack map: the stored constraints are invalid` }},
	} {
		if tc.stored != "" {
			_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyConstraints), tc.stored)
			must(t, err)
		}
		body := get(t, h, http.MethodGet, "/").Body.String()
		if want := tc.want(); !strings.Contains(body, want) {
			t.Errorf("constraints %s: the page lacks\n%s\n%s", tc.stored, want, body)
		}
		if strings.Contains(tc.stored, `"minimum-workers":3,"minimum-workers-rate"`) && strings.Contains(body, `id="model"`) {
			t.Errorf("constraints %s (invalid): the page shows a model", tc.stored)
		}
	}
}

// TestMapPageFailingWarningsAndNotes: the warnings of a tick that failed
// (sabakan down) are not said as if ckegen went on: the box names the
// tick's result instead. The status's notes (a weight of the template in
// the rate model) are listed apart from the warnings, in the status's
// words; no notes box without notes.
func TestMapPageFailingWarningsAndNotes(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	leader := f.st.Key(storage.KeyLeader + "1")
	note := "template nodes[1]: label cke.cybozu.com/weight has no meaning in the rate model (minimum-workers-rate): every HEALTHY machine a worker template accepts is a worker"
	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "failing", Reason: "SABAKAN_UNREACHABLE", Leader: "daemon-1",
		Warnings: []string{"w1", "w2"}, SettingsNotes: []string{note}}, nil))
	body := get(t, f.handler(), http.MethodGet, "/").Body.String()
	want := `<b>2 warnings from the last tick</b>: these need fixing besides the tick's result (failing SABAKAN_UNREACHABLE).`
	if !strings.Contains(body, want) || strings.Contains(body, "went on") {
		t.Errorf("the warnings of a failing tick: want %q and no \"went on\" in\n%s", want, body)
	}
	notes := `<div id="settings-notes" class="note"><b>1 note on the settings</b>: what the settings ask that their model ignores; they stand as long as the settings do.
<ul><li>` + note + `</li></ul></div>`
	if !strings.Contains(body, notes) {
		t.Errorf("the page lacks the notes\n%s\nin\n%s", notes, body)
	}
	if i, j := strings.Index(body, "tick-warnings"), strings.Index(body, note); i < 0 || j < 0 || strings.Contains(body[i:strings.Index(body, "settings-notes")], note) {
		t.Error("the note is listed among the tick's warnings")
	}
	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "ok", Leader: "daemon-1"}, nil))
	if body := get(t, f.handler(), http.MethodGet, "/").Body.String(); strings.Contains(body, "settings-notes") {
		t.Error("a status without notes shows the notes box")
	}
}

// A tick that holds back beside CKE is shown as held (not as an error),
// with its reason, the mode and the owner.
func TestMapPageHeld(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	leader := f.st.Key(storage.KeyLeader + "1")
	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "held", Reason: "OWNED_BY_CKE", Message: "ckegenctl sabakan takeover",
		Mode: "beside-cke", Owner: intake.OwnerCKE, Leader: "daemon-1"}, nil))
	body := get(t, f.handler(), http.MethodGet, "/").Body.String()
	for _, want := range []string{`<span class="note" id="held">held</span> <code>OWNED_BY_CKE</code>`, "<td>beside-cke, owner cke</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, `<span class="err">held`) {
		t.Error("a correct hold is shown as an error")
	}
}

// TestMapPageTickWarnings: the last tick's warnings are in a box under
// the Status heading, before the status table, the first ten listed and
// the rest counted; no box without warnings. The map labels each row with
// its index in rack, and its cells are wider than at the narrowest pitch
// when the racks are few.
func TestMapPageTickWarnings(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	typo := `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`
	warnings := []string{typo}
	for i := range 11 {
		warnings = append(warnings, "warning <"+strconv.Itoa(i)+">")
	}
	leader := f.st.Key(storage.KeyLeader + "1")
	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "ok", Leader: "daemon-1", Warnings: warnings[:1], LastOp: "taint nodes", LastChangeCount: 1}, nil))
	body := get(t, f.handler(), http.MethodGet, "/").Body.String()
	box := `<h2 id="status">Status</h2>
<div id="tick-warnings" class="warnbox" role="alert"><b>1 warning from the last tick</b>: ckegen went on, but this needs fixing.
<ul><li>template role &#34;gpuu&#34; matches no machine; inventory roles: compute, gpu, storage</li></ul></div>
<table>`
	if !strings.Contains(body, box) {
		t.Errorf("the page lacks the warnings box\n%s\nin\n%s", box, body)
	}
	if !strings.Contains(body, "<tr><th>last op</th><td>taint nodes (1 change)</td></tr>") {
		t.Error("last op: not 1 change")
	}

	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "ok", Leader: "daemon-1", Warnings: warnings}, nil))
	body = get(t, f.handler(), http.MethodGet, "/").Body.String()
	if !strings.Contains(body, "<b>10 warnings from the last tick</b>") || !strings.Contains(body, "<li>warning &lt;8&gt;</li><li>and 2 more (ckegenctl sabakan status -o json lists them all)</li></ul>") ||
		strings.Contains(body, "warning &lt;9&gt;") {
		t.Errorf("12 warnings: the box does not list ten and count two more:\n%s", body)
	}

	must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: "ok", Leader: "daemon-1"}, nil))
	body = get(t, f.handler(), http.MethodGet, "/").Body.String()
	if strings.Contains(body, "tick-warnings") {
		t.Error("a status without warnings shows the box")
	}
	// 3 racks of 5: a "rack" label and the indices 1 to 5.
	rows := regexp.MustCompile(`<text x="24" y="\d+">([^<]+)<title>([^<]+)</title></text>`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1])
	}
	if strings.Join(got, " ") != "rack 1 2 3 4 5" || rows[1][2] != "index in rack 1" {
		t.Errorf("row labels %q", rows)
	}
	// One control plane, in rack 0: singular.
	if !strings.Contains(body, "<title>rack 0: 5 machines, 1 control plane, 0 workers, ") {
		t.Error("rack 0's tooltip does not say 1 control plane")
	}
	if !strings.Contains(body, "#machines rect{width:60px;") {
		t.Errorf("3 racks: the cells are not at the widest pitch")
	}
}

// TestMapPageNotErrors: waiting for the settings and planning are not
// errors on the page; failing is.
func TestMapPageNotErrors(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	leader := f.st.Key(storage.KeyLeader + "1")
	for _, c := range []struct{ result, reason, class string }{
		{"waiting", "NO_TEMPLATE", "note"}, {"planning", "QUIET_TIME", "note"}, {"failing", "SABAKAN_UNREACHABLE", "err"},
	} {
		must(t, f.st.PutStatus(ctx, leader, storage.Status{Result: c.result, Reason: c.reason, Leader: "daemon-1"}, nil))
		body := get(t, f.handler(), http.MethodGet, "/").Body.String()
		if want := `class="` + c.class + `"`; !strings.Contains(body, want+` id="held">`+c.result) && !strings.Contains(body, want+`>`+c.result) {
			t.Errorf("%s is not shown with class %s", c.result, c.class)
		}
	}
}

// TestMapPageSilence: a status older than three of its host's intervals
// is shown under a box that says its host stopped calling (inside CKE:
// CKE's server, with CKE's phase); a fresh one has no box.
func TestMapPageSilence(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	leader := f.st.Key(storage.KeyLeader + "1")
	old := time.Now().Add(-time.Hour)
	st := storage.Status{Result: "ok", Time: old, LastRun: old, Mode: "inside-cke", Interval: storage.Duration(time.Minute), Leader: "cke-1"}
	must(t, f.st.PutStatus(ctx, leader, st, nil))
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyCKEStatus), `{"phase":"upgrade-aborted","timestamp":"2026-01-01T00:00:00Z"}`)
	must(t, err)
	body := get(t, f.handler(), http.MethodGet, "/").Body.String()
	if !strings.Contains(body, `<div id="silence" class="warnbox" role="alert"><b>Not integrating</b>: CKE&#39;s server has not called ckegen since`) ||
		!strings.Contains(body, "CKE&#39;s phase is upgrade-aborted") {
		t.Errorf("the page does not say CKE stopped calling:\n%s", body)
	}
	st.Time = time.Now()
	must(t, f.st.PutStatus(ctx, leader, st, nil))
	if body := get(t, f.handler(), http.MethodGet, "/").Body.String(); strings.Contains(body, `id="silence"`) {
		t.Error("a fresh status has the silence box")
	}
}

// TestPageSaysWhoLeads: the page names who leads now beside the last
// tick's leader (with its age), and the box of a status whose host
// stopped calling names its cause: a CKE server of no record, then no
// server at all.
func TestPageSaysWhoLeads(t *testing.T) {
	f := newPageFixture(t)
	ctx := context.Background()
	leader := f.st.Key(storage.KeyLeader + "1")
	old := time.Now().Add(-time.Hour)
	st := storage.Status{Result: "ok", Time: old, LastRun: old, Mode: "inside-cke", Interval: storage.Duration(time.Minute), Leader: "cke-1"}
	must(t, f.st.PutStatus(ctx, leader, st, nil))
	body := get(t, f.handler(), http.MethodGet, "/").Body.String()
	for _, want := range []string{
		`<tr><th>last tick's leader</th><td>cke-1 <span class="muted">1h ago</span>`,
		`<tr id="leads-now"><th>leads now</th><td>CKE&#39;s server daemon-1 leads; whether ckegen runs inside is not known`,
		`why: CKE&#39;s server daemon-1 leads; whether ckegen runs inside is not known`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	_, err := f.st.Client.Delete(ctx, leader)
	must(t, err)
	body = get(t, f.handler(), http.MethodGet, "/").Body.String()
	for _, want := range []string{
		`<tr id="leads-now"><th>leads now</th><td>nothing leads: no key under leader/ nor sabakan/ckegen/leader/`,
		`why: no server leads: nothing under leader/ nor sabakan/ckegen/leader/`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("with no server, the page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "CKE runs its integration only when it has no operations") {
		t.Error("the box gives the one cause for every case")
	}
}

// TestPageWording: the page speaks of ckegen or CKE's server, never of
// "the daemon": inside CKE's server there is none.
func TestPageWording(t *testing.T) {
	if strings.Contains(strings.ToLower(pageHTML), "daemon") {
		t.Errorf("page.html speaks of a daemon:\n%s", pageHTML)
	}
}

// TestMapPageNextStepWaits: a next step that waits for a hold says when
// it comes, in the plan's words (planreport.WaitWords); one that does
// not says nothing of a wait.
func TestMapPageNextStepWaits(t *testing.T) {
	ms := []machine.Machine{{Spec: machine.Spec{Serial: "S1", Rack: 0, IndexInRack: 1, Role: "cs", IPv4: []string{"10.0.0.1"}},
		Status: machine.Status{State: machine.StateHealthy}}}
	until := time.Date(2026, 1, 1, 0, 5, 1, 0, time.UTC)
	for _, wait := range []string{"", planreport.WaitWords("the retire wait (5m0s)", until)} {
		src := &builtSource{in: rawIn(ms, MapInput{}), s: View{NextStep: &NextStep{Op: "decrease worker", Steps: 1, Wait: wait}}}
		body := get(t, NewHandler(src, PageOptions{Log: quietLog}), http.MethodGet, "/").Body.String()
		got := strings.Contains(body, "<b>decrease worker</b> (from 2026-01-01T00:05:01Z, the end of the retire wait (5m0s)),")
		if got != (wait != "") || (wait == "" && !strings.Contains(body, "<b>decrease worker</b>, 0 changes")) {
			t.Errorf("wait %q: the page's next step:\n%s", wait, body)
		}
	}
}
