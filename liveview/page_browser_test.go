package liveview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/daemon"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

var screenshot = flag.String("screenshot", "", "write the browser test's screenshot of the page to this PNG file (relative to the repository root, e.g. docs/png)")

// chromium finds Debian's chromium (or another Chrome). Without one the
// test skips, except under CI, where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary in PATH: CI must install it (apt-get install -y chromium)")
	}
	t.Skip("no chromium binary in PATH: install Debian's chromium (apt-get install -y chromium) to run the browser test")
	return ""
}

// TestMapPageInBrowser: a daemon converges a cluster on a data center served
// by the compatible server; the page, loaded in headless chromium, has one
// SVG element per machine, the control planes' tooltips, and draws
// something.
func TestMapPageInBrowser(t *testing.T) {
	chrome := chromium(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := sitetest.Start(t, sitetest.Options{ // 12 racks of 20
		Now: now, Template: exampleTemplate(t, nil), StoreURL: true, Constraints: sitetest.Counts(3, 100),
	})
	st, store, ms, cli := site.Storage, site.Store, site.Machines, site.Storage.Client
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	stopDaemon := runDaemon(t, ctx, site, "browser-test", now)

	first := waitCluster(t, ctx, st, func(c *cluster.Cluster) bool { return len(c.Nodes) == 103 })
	// The inventory moves: a control plane becomes UNREACHABLE (the daemon
	// replaces it) and a worker RETIRING (the daemon taints it); CKE
	// reboots another worker.
	var cp, retiring, rebooting string
	for _, n := range first.Nodes {
		switch {
		case n.ControlPlane && cp == "":
			cp = n.Address
		case !n.ControlPlane && retiring == "":
			retiring = n.Address
		case !n.ControlPlane && rebooting == "":
			rebooting = n.Address
		}
	}
	bySerial := map[string]*machine.Machine{}
	byAddr := map[string]*machine.Machine{}
	for i := range ms {
		bySerial[ms[i].Spec.Serial] = &ms[i]
		byAddr[ms[i].Address()] = &ms[i]
	}
	_, err := store.SetState(byAddr[cp].Spec.Serial, machine.StateUnreachable)
	must(t, err)
	_, err = store.SetState(byAddr[retiring].Spec.Serial, machine.StateRetiring)
	must(t, err)
	_, err = cli.Put(ctx, st.Key(storage.KeyRebootsData+"0000000000000001"), fmt.Sprintf(`{"index":1,"node":%q,"status":"rebooting"}`, rebooting))
	must(t, err)

	final := waitCluster(t, ctx, st, func(c *cluster.Cluster) bool {
		cps := 0
		tainted := false
		for _, n := range c.Nodes {
			if n.ControlPlane {
				if n.Address == cp {
					return false
				}
				cps++
			}
			if n.Address == retiring && len(n.Taints) > 0 {
				tainted = true
			}
		}
		return cps == 3 && tainted
	})
	// The leader forecasts after its first tick.
	var runway storage.ForecastSummary
	for runway.At.IsZero() {
		runway, err = st.GetForecast(ctx)
		if err != nil && !errors.Is(err, storage.ErrNotFound) || ctx.Err() != nil {
			t.Fatalf("no forecast stored: %v (%v)", err, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The page is compared with the cluster: nothing may change it now.
	if err := stopDaemon(); err != nil {
		t.Fatalf("daemon: %v", err)
	}

	page := httptest.NewServer(liveview.NewHandler(liveview.NewReader(st, liveview.Options{Now: func() time.Time { return now.Add(2 * time.Minute) }}), liveview.PageOptions{Log: quiet}))
	t.Cleanup(page.Close)

	bctx := browser(t, ctx, chrome)
	if err := chromedp.Do(bctx, chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rackmap"))); err != nil {
		t.Fatalf("chromium: loading the page: %v", err)
	}
	cells := eval[int](t, bctx, `document.querySelectorAll("#rackmap #machines > rect").length`)
	cpTitles := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#machines > rect.c > title")).map(e => e.textContent)`)
	reboot := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#machines > rect.rb > title")).map(e => e.textContent)`)
	unreachable := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#machines > rect.unreachable > title")).map(e => e.textContent)`)
	statusText := eval[string](t, bctx, `document.querySelector("#status + table").innerText`)
	historyRows := eval[int](t, bctx, `document.querySelectorAll("#history + table tbody tr").length`)
	historyFirst := eval[string](t, bctx, `document.querySelector("#history + table tbody tr td:nth-child(2)").innerText + "\t"`)
	model := eval[string](t, bctx, `document.querySelector("#model")?.dataset.model ?? "(no #model)"`)
	risks := eval[int](t, bctx, `document.querySelectorAll("#domains > rect, #racks > text.risk, #quorum-at-risk").length`)
	allTitles := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#machines > rect > title")).map(e => e.textContent)`)
	rowLabels := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#rows > text")).map(e => e.firstChild.textContent)`)
	// The map's width against the page's, its height against the window's.
	layout := eval[[]float64](t, bctx, `(() => { const r = document.querySelector("#rackmap").getBoundingClientRect();
		return [r.width, document.body.clientWidth, r.height, window.innerHeight] })()`)
	runwayText := eval[string](t, bctx, `document.querySelector("#runway-line").innerText`)
	runwayEvents := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#runway-events > li")).map(e => e.innerText)`)
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}

	if cells != len(ms) {
		t.Errorf("SVG machine elements: got %d, want %d (one per machine)", cells, len(ms))
	}
	var want []string
	for _, n := range final.Nodes {
		if n.ControlPlane {
			m := byAddr[n.Address]
			want = append(want, fmt.Sprintf("%s %s: HEALTHY, role %s, control plane, rack %d #%d",
				m.Spec.Serial, m.Address(), m.Spec.Role, m.Spec.Rack, m.Spec.IndexInRack))
		}
	}
	slices.Sort(want)
	slices.Sort(cpTitles)
	if !slices.Equal(cpTitles, want) {
		t.Errorf("control planes' tooltips:\n got %q\nwant %q", cpTitles, want)
	}
	if len(reboot) != 1 || !strings.HasPrefix(reboot[0], byAddr[rebooting].Spec.Serial+" "+rebooting+": ") || !strings.HasSuffix(reboot[0], "; rebooting") {
		t.Errorf("rebooting cells: got %q, want the one of %s", reboot, rebooting)
	}
	cpSerial := byAddr[cp].Spec.Serial
	if !slices.ContainsFunc(unreachable, func(s string) bool { return strings.HasPrefix(s, cpSerial+" "+cp+": UNREACHABLE") }) {
		t.Errorf("UNREACHABLE cells %q do not include the former control plane %s", unreachable, cp)
	}
	for _, title := range allTitles {
		// The state and rebooting are said once.
		if strings.Contains(title, "; state ") || strings.Count(title, "rebooting") > 1 {
			t.Errorf("a tooltip repeats itself: %q", title)
		}
	}
	// 20 machines a rack: "rack", then the index in rack of each row.
	if len(rowLabels) != 21 || rowLabels[0] != "rack" || rowLabels[1] != "1" || rowLabels[20] != "20" {
		t.Errorf("row labels %q, want rack and 1 to 20", rowLabels)
	}
	if w, page, h, win := layout[0], layout[1], layout[2], layout[3]; w < 0.95*page || w > page+1 || h > win || h < 0.2*win {
		t.Errorf("the rack map is %.0fx%.0f in a page %.0f wide and a window %.0f high: want the page's width, and the window's height at most", w, h, page, win)
	}
	if model != "count" {
		t.Errorf("model of the workers: %q, want count (minimum-workers stored)", model)
	}
	if risks != 0 {
		t.Errorf("%d marks of a failure domain at risk, with the control planes in three racks", risks)
	}
	if !strings.Contains(statusText, "ok") || !strings.Contains(statusText, "browser-test") {
		t.Errorf("status section: %q", statusText)
	}
	hist, err := st.History(ctx)
	must(t, err)
	if historyRows != len(hist) || len(hist) < 2 || !strings.HasPrefix(historyFirst, hist[len(hist)-1].Op+"\t") {
		t.Errorf("history: %d rows, the newest %q; etcd has %d entries, the newest %+v", historyRows, historyFirst, len(hist), hist[len(hist)-1])
	}
	// The runway panel: the stored forecast's answer, its age at the
	// page's time, and its first events.
	if want := runway.RunwayMessage + " (forecast made 2m ago, " + runway.At.Format(time.RFC3339) + ")"; runwayText != want {
		t.Errorf("runway panel: %q, want %q", runwayText, want)
	}
	if len(runwayEvents) != len(runway.Events) || len(runwayEvents) == 0 || len(runwayEvents) > 3 ||
		!strings.HasPrefix(runwayEvents[0], runway.Events[0].Date+": ") {
		t.Errorf("runway events on the page %q, stored %+v", runwayEvents, runway.Events)
	}
	checkScreenshot(t, shot)
	if *screenshot != "" {
		path := *screenshot
		if !filepath.IsAbs(path) {
			path = filepath.Join("..", path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", path)
	}
}

// browser starts headless chromium for the test; it stops at the end of
// the test or when ctx ends.
func browser(t *testing.T, ctx context.Context, chrome string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	return bctx
}

// TestRateModelPageInBrowser: with the rate model's constraints stored and
// the cluster the rate model generates (every HEALTHY machine the query
// returns), the page in headless chromium says the model and the figure:
// the cluster's workers against the machines the daemon's query returns
// (boot servers and RETIRED machines left out), recounted here from the
// inventory and the cluster; after constraints set minimum-workers, the
// reloaded page says the count model.
func TestRateModelPageInBrowser(t *testing.T) {
	chrome := chromium(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const tmplJSON = `{"name":"rate","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16"}`
	cons := constraints.CountDefaults()
	must(t, cons.Set(constraints.ControlPlaneCount, 3))
	must(t, cons.Set(constraints.MinimumWorkersRate, 80))
	site := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack = 4, 10 },
		Template:   tmplJSON, StoreURL: true, Constraints: &cons,
	})
	st, ms := site.Storage, site.Machines

	// The machines the daemon's query returns: not boot servers, not
	// RETIRED (the query's default); the rate model's first cluster.
	var queried []*machine.Machine
	for i := range ms {
		if ms[i].Spec.Role != "boot" && ms[i].Status.State != machine.StateRetired {
			queried = append(queried, &ms[i])
		}
	}
	tmpl, err := template.Parse([]byte(tmplJSON))
	must(t, err)
	res, err := generator.Generate(generator.Input{Template: tmpl, Constraints: cons, Machines: queried, Now: now, RetireWait: time.Minute})
	must(t, err)
	data, err := json.Marshal(res.Cluster)
	must(t, err)
	_, err = st.Client.Put(ctx, st.Key(storage.KeyCluster), string(data))
	must(t, err)
	workers := 0
	for _, n := range res.Cluster.Nodes {
		if !n.ControlPlane {
			workers++
		}
	}
	wantRate := fmt.Sprintf("workers %.1f%% ((%d workers - 1) / %d machines), minimum-workers-rate 80%%",
		float64(workers-1)/float64(len(queried))*100, workers, len(queried))

	// A clock that moves a second at each reading, and a CacheTTL of 1ns:
	// every load decides anew (the constraints change).
	var ticks atomic.Int64
	clock := func() time.Time { return now.Add(time.Duration(ticks.Add(1)) * time.Second) }
	page := httptest.NewServer(liveview.NewHandler(liveview.NewReader(st, liveview.Options{Now: clock, CacheTTL: time.Nanosecond}),
		liveview.PageOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(page.Close)
	bctx := browser(t, ctx, chrome)
	load := func() (model, text string, visible bool) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rackmap"))); err != nil {
			t.Fatalf("chromium: loading the page: %v", err)
		}
		model = eval[string](t, bctx, `document.querySelector("#model")?.dataset.model ?? "(no #model)"`)
		text = eval[string](t, bctx, `document.querySelector("#model")?.innerText ?? ""`)
		visible = eval[bool](t, bctx, `(() => { const e = document.querySelector("#model"); if (!e) return false; const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 })()`)
		return
	}
	model, text, visible := load()
	if model != "rate" || !visible || !strings.Contains(text, wantRate) || !strings.HasPrefix(text, "Model of the workers: rate: every HEALTHY machine") {
		t.Errorf("rate model: data-model %q, visible %v, text %q; want the figure %q", model, visible, text, wantRate)
	}
	// Every HEALTHY machine the query returns is a node: the rate is
	// (HEALTHY - 3 control planes - 1) / queried, below 80% only when
	// more than a fifth is not HEALTHY.
	healthy := 0
	for _, m := range queried {
		if m.Status.State == machine.StateHealthy {
			healthy++
		}
	}
	if workers != healthy-3 {
		t.Fatalf("the rate model's cluster has %d workers, want every HEALTHY machine but the 3 control planes (%d)", workers, healthy-3)
	}

	must(t, cons.Set(constraints.MinimumWorkers, 5))
	must(t, sitetest.StoreOf(st).SetConstraints(ctx, cons))
	if model, text, _ := load(); model != "count" || strings.Contains(text, "workers -") {
		t.Errorf("after constraints set minimum-workers: data-model %q, text %q", model, text)
	}
}

// checkScreenshot: the PNG is a page with a drawing, not a blank or an
// error page: many colours, and the control planes' fill over at least
// three cells' area.
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colors := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[(r>>8)<<16|(g>>8)<<8|bl>>8]++
		}
	}
	if len(colors) < 8 {
		t.Errorf("screenshot %v has %d colours: blank?", b.Size(), len(colors))
	}
	const controlPlaneFill = 0x1e3a8a
	if n := colors[controlPlaneFill]; n < 3*liveview.CellW*liveview.CellH {
		t.Errorf("screenshot has %d pixels of the control planes' colour #%06x: the map is not drawn", n, controlPlaneFill)
	}
	if b.Dx() < 1000 || b.Dy() < 600 {
		t.Errorf("screenshot size %v", b.Size())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("chromium: %s: %v", expr, err)
	}
	return v
}

// waitCluster waits until the stored cluster satisfies ok.
func waitCluster(t *testing.T, ctx context.Context, st storage.Storage, ok func(*cluster.Cluster) bool) *cluster.Cluster {
	t.Helper()
	for {
		c, _, err := sitetest.StoreOf(st).GetCluster(ctx)
		if err == nil && ok(c) {
			return c
		}
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the daemon did not converge: last cluster %v, error %v", c, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exampleTemplate is examples/template.yml, changed by edit (when not
// nil), as the JSON that set-template stores.
func exampleTemplate(t *testing.T, edit func(yml string) string) string {
	t.Helper()
	data, err := os.ReadFile("../examples/template.yml")
	must(t, err)
	if edit != nil {
		data = []byte(edit(string(data)))
	}
	tmpl, err := template.Parse(data)
	must(t, err)
	tmplJSON, err := json.Marshal(tmpl.Cluster)
	must(t, err)
	return string(tmplJSON)
}

// runDaemon runs a daemon on the site, ticking every 100 ms on the clock
// stopped at now, until stop is called or the test ends.
func runDaemon(t *testing.T, ctx context.Context, site *sitetest.Site, name string, now time.Time) (stop func() error) {
	d := daemon.New(daemon.Config{Storage: site.Storage, SessionTTL: 2 * time.Second, Config: decision.Config{
		Name: name, Interval: storage.Duration(100 * time.Millisecond),
		MinBackoff: storage.Duration(20 * time.Millisecond), RetireWait: storage.Duration(time.Minute),
		Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now:     func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}})
	return sitetest.Go(t, ctx, d.Run)
}

// TestTypoWarningInBrowser: the typo scenario on the page. A daemon works
// from a template whose gpu worker template says "gpuu", a role no
// machine has; the generator warns, and the page, loaded in headless
// chromium, shows the warning in a box under the liveview.Status heading, visible
// without scrolling.
func TestTypoWarningInBrowser(t *testing.T) {
	chrome := chromium(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	site := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack = 6, 10 },
		Template: exampleTemplate(t, func(yml string) string {
			typo := strings.Replace(yml, "cke.cybozu.com/role: gpu\n", "cke.cybozu.com/role: gpuu\n", 1)
			if typo == yml {
				t.Fatal("the example template has no gpu role to misspell")
			}
			return typo
		}),
		StoreURL: true,
	})
	st := site.Storage
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	runDaemon(t, ctx, site, "typo-test", now)
	want := `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`
	for {
		s, err := st.GetStatus(ctx)
		if err == nil && slices.Contains(s.Warnings, want) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no tick warned %q: last status %+v, %v", want, s, err)
		case <-time.After(50 * time.Millisecond):
		}
	}

	page := httptest.NewServer(liveview.NewHandler(liveview.NewReader(st, liveview.Options{Now: func() time.Time { return now }}), liveview.PageOptions{Log: quiet}))
	t.Cleanup(page.Close)
	bctx := browser(t, ctx, chrome)
	if err := chromedp.Do(bctx, chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#tick-warnings"))); err != nil {
		t.Fatalf("chromium: no warnings box: %v", err)
	}
	text := eval[string](t, bctx, `document.querySelector("#tick-warnings").innerText`)
	box := eval[[]float64](t, bctx, `(() => { const r = document.querySelector("#tick-warnings").getBoundingClientRect();
		const s = document.querySelector("#status").getBoundingClientRect(); return [r.top, r.bottom, s.bottom, window.innerHeight] })()`)
	if !strings.Contains(text, want) || !strings.HasPrefix(text, "1 warning from the last tick") {
		t.Errorf("warnings box: %q, want the warning %q", text, want)
	}
	if top, bottom, heading, win := box[0], box[1], box[2], box[3]; top < heading || bottom > win {
		t.Errorf("the warnings box spans %.0f-%.0f px, the liveview.Status heading ends at %.0f, the window is %.0f high: want it under the heading, visible without scrolling", top, bottom, heading, win)
	}
}

// TestQuorumAtRiskInBrowser: a daemon whose placement policy holds the
// control planes to racks 1 and 2 puts two of three in one of them; the
// page, loaded in headless chromium, outlines that rack's column in red
// (one outline, its title in the status's words), marks its number,
// says it under the map and in the status table's quorum row; the other
// rack with a control plane is not marked; the tick's warnings box does
// not repeat it (a standing condition, not a tick warning).
func TestQuorumAtRiskInBrowser(t *testing.T) {
	chrome := chromium(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 6, 8, 0 },
		Template:   exampleTemplate(t, nil), StoreURL: true, Constraints: sitetest.Counts(3, 10),
	})
	st := site.Storage
	_, err := st.Client.Put(ctx, st.Key(storage.KeySabakanPolicy),
		`{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in (rack1, rack2)"]}}}`)
	must(t, err)
	stop := runDaemon(t, ctx, site, "quorum-test", now)
	var s storage.Status
	for {
		s, err = st.GetStatus(ctx)
		if err == nil && s.Domains != nil && len(s.Domains.AtRisk) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no tick saw a rack at risk: last status %+v, %v", s, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	must(t, stop())
	full, words := s.Domains.AtRisk[0], s.Domains.Warnings[0]
	if want := "rack " + full + " holds 2 of 3 control planes: losing it breaks etcd's quorum"; words != want {
		t.Fatalf("status words %q, want %q", words, want)
	}

	page := httptest.NewServer(liveview.NewHandler(liveview.NewReader(st, liveview.Options{Now: func() time.Time { return now }}), liveview.PageOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(page.Close)
	bctx := browser(t, ctx, chrome)
	if err := chromedp.Do(bctx, chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rackmap"))); err != nil {
		t.Fatalf("chromium: loading the page: %v", err)
	}
	outlines := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#domains > rect.risk")).map(e => e.dataset.rack + "\t" + e.querySelector("title").textContent)`)
	// The outline is drawn, in the page's red, around the column.
	drawn := eval[[]any](t, bctx, `(() => { const e = document.querySelector("#domains > rect.risk"); if (!e) return [0, 0, ""];
		const r = e.getBoundingClientRect(); return [r.width, r.height, getComputedStyle(e).stroke] })()`)
	marked := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#racks > text.risk")).map(e => e.firstChild.textContent + "\t" + e.querySelector("title").textContent)`)
	line := eval[string](t, bctx, `document.querySelector("#quorum-at-risk")?.innerText ?? "(no #quorum-at-risk)"`)
	row := eval[string](t, bctx, `document.querySelector("#status-quorum")?.innerText ?? "(no #status-quorum)"`)
	box := eval[string](t, bctx, `document.querySelector("#tick-warnings")?.innerText ?? ""`)

	if !slices.Equal(outlines, []string{full + "\t" + words}) {
		t.Errorf("outlines %q, want rack %s's with %q", outlines, full, words)
	}
	if w, h, stroke := drawn[0].(float64), drawn[1].(float64), drawn[2]; w < 10 || h < 50 || stroke != "rgb(220, 38, 38)" {
		t.Errorf("the outline is %.0fx%.0f px, stroke %v: want a visible red column", w, h, stroke)
	}
	if len(marked) != 1 || !strings.HasPrefix(marked[0], full+"\track "+full+": ") || !strings.HasSuffix(marked[0], "; "+words) {
		t.Errorf("rack numbers marked %q, want rack %s's", marked, full)
	}
	if want := "Quorum at risk: " + words + " (rack " + full + " outlined in red)."; line != want {
		t.Errorf("under the map: %q, want %q", line, want)
	}
	if !strings.HasPrefix(row, "quorum\t2 of 3 control planes; by rack: ") || !strings.Contains(row, full+" 2 at risk") {
		t.Errorf("status row %q", row)
	}
	if strings.Contains(box, words) {
		t.Errorf("warnings box %q: a domain at risk is the domains row and the map's outline, not a tick warning", box)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var runwayScreenshot = flag.String("runway-screenshot", "", "write the runway browser test's screenshot of the Runway panel to this PNG file (relative to the repository root, e.g. docs/runway.png)")

// TestRunwayChartInBrowser: a forecast summary with points and purchases,
// stored under a leader's key in etcd as the leader stores it; the page,
// loaded in headless chromium, draws the chart in the Runway panel with
// one band per stored point (its data attributes the point's figures), a
// marker per purchase and the table of purchases; the panel's screenshot
// is a PNG with the workers' line drawn. It is written to the test's
// artifacts (go test -artifacts) and, with -runway-screenshot, there.
func TestRunwayChartInBrowser(t *testing.T) {
	chrome := chromium(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := sitetest.Start(t, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack = 3, 5 },
		Template:   exampleTemplate(t, nil), StoreURL: true,
	})
	st := site.Storage
	leader := st.Key(storage.KeyLeader + "1")
	_, err := st.Client.Put(ctx, leader, "runway-test")
	must(t, err)
	sum := chartSummary()
	sum.RunwayMessage = "the cluster meets its constraints until 2028-05-31"
	must(t, st.PutForecast(ctx, leader, *sum))
	stored, err := st.GetForecast(ctx)
	must(t, err)

	page := httptest.NewServer(liveview.NewHandler(liveview.NewReader(st, liveview.Options{Now: func() time.Time { return now.Add(time.Hour) }}),
		liveview.PageOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(page.Close)
	bctx := browser(t, ctx, chrome)
	if err := chromedp.Do(bctx, chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#runway-line"))); err != nil {
		t.Fatalf("chromium: loading the page: %v", err)
	}
	if !eval[bool](t, bctx, `document.querySelector("#runway-panel svg#runway-chart") !== null`) {
		t.Fatalf("no runway chart in the Runway panel: %q", eval[string](t, bctx, `document.querySelector("#runway-panel").innerText`))
	}
	// The chart is in the panel, between its heading and the next one.
	placed := eval[bool](t, bctx, `(() => { const c = document.querySelector("#runway-chart"), h = document.querySelector("#runway"), n = document.querySelector("#plan");
		return !!(h.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING) && !!(c.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_FOLLOWING) })()`)
	points := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#runway-chart .pts > rect")).map(e => { const d = e.dataset;
		return [d.d, d.w, d.c, d.r ?? 0, d.a ?? 0, d.b ?? 0, d.f === "1"].join(" ") })`)
	drawn := eval[[]float64](t, bctx, `(() => { const r = document.querySelector("#runway-chart").getBoundingClientRect(), p = document.querySelector("#runway-chart path.workers").getBoundingClientRect();
		return [r.width, r.height, p.width, p.height, document.body.clientWidth] })()`)
	buys := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#runway-chart #purchases > path.buy")).map(e => e.dataset.needed + " " + e.querySelector("title").textContent)`)
	end := eval[string](t, bctx, `document.querySelector("#runway-chart #runway-end")?.dataset.date ?? "(none)"`)
	rows := eval[[]string](t, bctx, `Array.from(document.querySelectorAll("#purchases-table tbody tr")).map(e => e.innerText)`)
	shot, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("#runway-panel")))
	if err != nil {
		t.Fatalf("chromium: screenshot of the Runway panel: %v", err)
	}

	if !placed {
		t.Error("the runway chart is not between the Runway heading and the next")
	}
	var want []string
	for _, p := range stored.Points {
		want = append(want, fmt.Sprintf("%s %d %d %d %d %d %v", p.Date, p.Workers, p.ControlPlanes, p.Retired, p.Arriving, p.Bought, p.Fails))
	}
	if len(want) == 0 || !slices.Equal(points, want) {
		t.Errorf("the chart's points\n got %q\nwant %q (stored)", points, want)
	}
	if w, h, pw, ph, body := drawn[0], drawn[1], drawn[2], drawn[3], drawn[4]; w < 0.95*body || h < 100 || pw < 0.9*w || ph < 10 {
		t.Errorf("the chart is %.0fx%.0f px in a page %.0f wide, its workers' line %.0fx%.0f: want it drawn across the page", w, h, body, pw, ph)
	}
	var wantBuys []string
	for _, p := range stored.Purchases {
		over := ""
		if p.Overdue {
			over = ", overdue"
		}
		wantBuys = append(wantBuys, fmt.Sprintf("%s buy %d %s (%s) by %s%s; needed %s: %s", p.Needed, p.Count, p.Role, p.Product, p.OrderBy, over, p.Needed, p.Reason))
	}
	wantBuys[1] = strings.Replace(wantBuys[1], " () ", " ", 1) // no product
	if !slices.Equal(buys, wantBuys) {
		t.Errorf("purchase markers\n got %q\nwant %q", buys, wantBuys)
	}
	if end != "2028-06-01" {
		t.Errorf("the runway's end marked at %s, want 2028-06-01 (the first point that fails)", end)
	}
	if want := []string{"2027-03-01\t2026-12-01\tcompute\tr7<x>\t30\track 2: 15, rack 3: 5, rack 10: 10\tworkers below the need",
		"2027-03-01\t2025-12-01 overdue\tstorage\t\t10\track 4: 10\tworkers below the need"}; !slices.Equal(rows, want) {
		t.Errorf("purchases table\n got %q\nwant %q", rows, want)
	}

	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || len(shot) == 0 {
		t.Fatalf("the Runway panel's screenshot (%d bytes) is not a PNG: %v", len(shot), err)
	}
	workersLine := 0 // the workers' line, #2563eb
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 == 0x25 && g>>8 == 0x63 && bl>>8 == 0xeb {
				workersLine++
			}
		}
	}
	if b.Dx() < 800 || b.Dy() < 300 || workersLine < 500 {
		t.Errorf("the Runway panel's screenshot is %v with %d pixels of the workers' line: not drawn", b.Size(), workersLine)
	}
	path := filepath.Join(t.ArtifactDir(), "runway.png")
	must(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot of the Runway panel: %s", path)
	if *runwayScreenshot != "" {
		path := *runwayScreenshot
		if !filepath.IsAbs(path) {
			path = filepath.Join("..", path)
		}
		must(t, os.WriteFile(path, shot, 0o644))
		t.Logf("screenshot written to %s", path)
	}
}
