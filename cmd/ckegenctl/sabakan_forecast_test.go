package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/world"
)

// forecastArgs are the arguments of an offline forecast of the bundled
// data center on 2026-11-28, in the count model (minimum-workers 20).
func forecastArgs(extra ...string) []string {
	return append([]string{"sabakan", "forecast",
		"--template", "../../examples/template.yml",
		"--machines", "../../examples/machines.json",
		"--constraints", "../../examples/constraints.json",
		"--now", "2026-11-28T00:00:00Z"}, extra...)
}

// TestForecastExample: the bundled data center meets minimum-workers 20
// until 2030-04-30; the text's first line says so and why, a table
// follows; the same run gives the same bytes.
func TestForecastExample(t *testing.T) {
	out, errOut, code := runCLI(t, forecastArgs("--until", "2031-12-31")...)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if want := "runway: the cluster meets its constraints until 2030-04-30; on 2030-05-01, 5 machines retire and 18 HEALTHY workers remain (needed 20)"; lines[0] != want {
		t.Errorf("first line %q\nwant %q", lines[0], want)
	}
	if want := "from 2026-11-28 to 2031-12-31 by month, RETIRING 30 days before the retire date; needed workers 20; failure domain: rack"; lines[1] != want {
		t.Errorf("second line %q\nwant %q", lines[1], want)
	}
	if !strings.HasPrefix(lines[3], "DATE        RETIRING  RETIRED  PLAN") || !strings.HasPrefix(lines[4], "2026-11-28  5         39       1 step (23 changes): new") {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(out, "\n2030-05-01  ") || !strings.Contains(out, "18 / 20 (") {
		t.Errorf("no event of the runway's end:\n%s", out)
	}
	again, _, _ := runCLI(t, forecastArgs("--until", "2031-12-31")...)
	if again != out {
		t.Error("two runs differ")
	}
	js1, _, _ := runCLI(t, forecastArgs("--until", "2031-12-31", "-o", "json")...)
	js2, _, _ := runCLI(t, forecastArgs("--until", "2031-12-31", "-o", "json")...)
	if js1 != js2 {
		t.Error("two JSON runs differ")
	}
}

// keysOf are the keys of a JSON object, sorted.
func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %v", v)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestForecastJSON: -o json is the documented contract: now, until, the
// runway (until, reason, message; until absent when nothing fails) and
// the events with their fields.
func TestForecastJSON(t *testing.T) {
	out, errOut, code := runCLI(t, forecastArgs("--until", "2031-12-31", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keysOf(t, doc), " "); got != "events failureDomain needWorkers now resolution retireLead runway until" {
		t.Errorf("keys: %s", got)
	}
	if doc["now"] != "2026-11-28T00:00:00Z" || doc["until"] != "2031-12-31T00:00:00Z" || doc["needWorkers"] != 20.0 || doc["retireLead"] != "720h0m0s" {
		t.Errorf("document: %v", doc)
	}
	runway := doc["runway"].(map[string]any)
	if runway["until"] != "2030-04-30" || runway["reason"] != "WORKERS_BELOW_NEED" ||
		runway["message"] != "the cluster meets its constraints until 2030-04-30; on 2030-05-01, 5 machines retire and 18 HEALTHY workers remain (needed 20)" {
		t.Errorf("runway: %v", runway)
	}
	events := doc["events"].([]any)
	if len(events) != 50 {
		t.Errorf("%d events", len(events))
	}
	first := events[0].(map[string]any)
	if got := strings.Join(keysOf(t, first), " "); got != "atRisk belowMinimum changes controlPlanes date ops result retired retiring steps warnings workers workersRate" {
		t.Errorf("event keys: %s", got)
	}
	if first["date"] != "2026-11-28" || first["retiring"] != 5.0 || first["retired"] != 39.0 || first["steps"] != 1.0 || first["workers"] != 20.0 ||
		first["belowMinimum"] != false || first["result"] != "settled" {
		t.Errorf("first event: %v", first)
	}
	cp := first["controlPlanes"].([]any)[0].(map[string]any)
	if got := strings.Join(keysOf(t, cp), " "); got != "address domain" || len(first["controlPlanes"].([]any)) != 3 {
		t.Errorf("control planes: %v", first["controlPlanes"])
	}
	if !strings.Contains(out, `"date": "2030-05-01"`) || !strings.Contains(out, `"belowMinimum": true`) {
		t.Errorf("no event below the need")
	}

	// Nothing fails within 3 years (the default end): no runway.until.
	out, _, _ = runCLI(t, forecastArgs("-o", "json")...)
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	runway = doc["runway"].(map[string]any)
	if got := strings.Join(keysOf(t, runway), " "); got != "message reason" || runway["reason"] != "NONE" || doc["until"] != "2029-11-28T00:00:00Z" {
		t.Errorf("runway without an end: %v, until %v", runway, doc["until"])
	}
}

// TestForecastFlagsRefused: an end before now, a bad resolution, lead or
// need are usage errors naming the flag, with nothing on stdout.
func TestForecastFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--until", "2026-11-27"}, "--until: 2026-11-27T00:00:00Z is before now (2026-11-28T00:00:00Z)"},
		{[]string{"--until", "2026-11-27T23:00:00+09:00"}, "--until: "},
		{[]string{"--until", "next year"}, "--until: want a date (2029-12-31) or RFC3339"},
		{[]string{"--resolution", "year"}, `--resolution: want month, week or day, got "year"`},
		{[]string{"--retire-lead", "-1d"}, `--retire-lead: must not be negative, got "-1d"`},
		{[]string{"--retire-lead", "a month"}, `--retire-lead: want days (30d) or a duration (12h), got "a month"`},
		{[]string{"--need-workers", "0"}, "--need-workers: must be at least 1, got 0"},
		{[]string{"-o", "yaml"}, "--output: must be one of [text json csv]"},
		{[]string{"-o", "csv"}, "--output csv: the CSV is the purchases: give --buy"},
		{[]string{"--lead-time", "30d"}, "--lead-time needs --buy"},
		{[]string{"--buy", "--lead-time", "soon"}, `--lead-time: want days (30d) or a duration (12h), got "soon"`},
		{[]string{"--buy", "--rack-size", "-1"}, "--rack-size: must be at least 1, got -1"},
		{[]string{"--lifetime", "0"}, `--lifetime: must be positive, got "0"`},
		{[]string{"--assume-new", "rack=1,role=cs,count=0,from=2027-03-01"}, `--assume-new "rack=1,role=cs,count=0,from=2027-03-01": count: want 1 to 10000, got 0`},
		{[]string{"--assume-new", "rack=1,role=cs,count=2"}, "from is missing"},
		{[]string{"--assume", "rack=99:RETIRED"}, "--assume rack=99:RETIRED: no machine has rack 99"},
	} {
		out, errOut, code := runCLI(t, forecastArgs(tc.args...)...)
		if code == 0 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want %q)", tc.args, code, out, errOut, tc.want)
		}
		if code != 2 && tc.args[0] != "--assume" {
			t.Errorf("%v: exit %d, want 2 (usage)", tc.args, code)
		}
	}
}

// TestForecastAssume: --assume makes the forecast start from the
// rehearsed inventory: a rack assumed RETIRED leaves it, as the same
// forecast on a machines file without that rack; the text says what was
// assumed after its first line.
func TestForecastAssume(t *testing.T) {
	out, errOut, code := runCLI(t, forecastArgs("--assume", "rack=11:RETIRED", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile("../../examples/machines.json")
	must(t, err)
	var ms []machine.Machine
	must(t, json.Unmarshal(data, &ms))
	ms = slices.DeleteFunc(ms, func(m machine.Machine) bool { return m.Spec.Rack == 11 })
	data, err = json.Marshal(ms)
	must(t, err)
	path := writeFileIn(t, t.TempDir(), "machines.json", string(data))
	args := forecastArgs("-o", "json")
	args[slices.Index(args, "../../examples/machines.json")] = path
	want, _, _ := runCLI(t, args...)
	var got, exp map[string]any
	must(t, json.Unmarshal([]byte(out), &got))
	must(t, json.Unmarshal([]byte(want), &exp))
	assumed := got["assumed"]
	delete(got, "assumed")
	if !jsonEqual(got, exp) {
		t.Errorf("with --assume rack=11:RETIRED:\n%s\nwant the forecast without rack 11:\n%s", out, want)
	}
	if a, _ := json.Marshal(assumed); string(a) != `[{"assume":"rack=11:RETIRED","leftOut":20,"leftOutBecause":"the default query leaves out RETIRED machines","machines":20}]` {
		t.Errorf("assumed: %s", a)
	}
	text, _, _ := runCLI(t, forecastArgs("--assume", "rack=11:RETIRED")...)
	if lines := strings.Split(text, "\n"); !strings.HasPrefix(lines[0], "runway: ") || lines[1] != "assume rack=11:RETIRED: 20 machines left out of the query's answer (the default query leaves out RETIRED machines)" {
		t.Errorf("text:\n%s", text)
	}
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// TestForecastOnline: without --machines, the forecast is made on the
// leader's input read from etcd and sabakan (the compatible server on
// embedded etcd): the same as offline on the files of the same inventory
// and cluster, text and JSON, --assume included. Here the stored cluster
// has two control planes in rack 4: the runway ends now. Offline flags
// without --machines are usage errors.
func TestForecastOnline(t *testing.T) {
	s := newRack4Site(t)
	onJSON, errOut, code := s.run("sabakan", "forecast", "-o", "json", "--until", "2029-06-30")
	now := time.Now()
	if code != 0 {
		t.Fatalf("online: exit %d: %s", code, errOut)
	}
	files := offline(s.served(-1, ""), now)
	offJSON, _, code := s.run(append([]string{"sabakan", "forecast", "-o", "json", "--until", "2029-06-30"}, files...)...)
	on, off := forecastOf(t, onJSON), forecastOf(t, offJSON)
	if code != 0 || !jsonEqual(on, off) {
		t.Errorf("online:\n%s\nwant offline's:\n%s", onJSON, offJSON)
	}
	if r := on["runway"].(map[string]any); r["reason"] != "QUORUM_AT_RISK" || !strings.HasSuffix(r["message"].(string), "rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum") {
		t.Errorf("runway: %v", r)
	}

	text, _, code := s.run("sabakan", "forecast", "--until", "2029-06-30", "--assume", "rack=7:RETIRING")
	now = time.Now()
	offText, _, _ := s.run(append([]string{"sabakan", "forecast", "--until", "2029-06-30", "--assume", "rack=7:RETIRING"}, offline(s.served(-1, ""), now)...)...)
	if code != 0 || text != offText || !strings.Contains(text, "\nassume rack=7:RETIRING: 19 machines\n") {
		t.Errorf("online with --assume:\n%s\nwant offline's:\n%s", text, offText)
	}

	for _, args := range [][]string{{"--template", "../../examples/template.yml"}, {"--now", "2026-11-28T00:00:00Z"}} {
		out, errOut, code := s.run(append([]string{"sabakan", "forecast"}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, args[0]+" needs --machines") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// forecastOf decodes a forecast JSON document without the times, which
// an online run takes from the clock.
func forecastOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	delete(m, "now")
	return m
}

// TestForecastOnlineHolds: online, the forecast's events are the
// leader's plans with its holds: with max-unhealthy 1 stored, an event
// whose retirements take more than one node out of health plans the
// state taints, then says held with the breaker's code and words, as
// the status would; without it, no event is held.
func TestForecastOnlineHolds(t *testing.T) {
	s := newRack4Site(t)
	events := func() []map[string]any {
		t.Helper()
		out, errOut, code := s.run("sabakan", "forecast", "-o", "json", "--until", "2031-06-30")
		if code != 0 {
			t.Fatalf("forecast: exit %d: %s", code, errOut)
		}
		var evs []map[string]any
		for _, e := range forecastOf(t, out)["events"].([]any) {
			evs = append(evs, e.(map[string]any))
		}
		return evs
	}
	for _, ev := range events() {
		if ev["result"] == generator.PlanHeld {
			t.Fatalf("held without max-unhealthy: %v", ev)
		}
	}
	if _, errOut, code := s.run("sabakan", "set-max-unhealthy", "1"); code != 0 {
		t.Fatal(errOut)
	}
	held := 0
	for _, ev := range events() {
		if ev["result"] != generator.PlanHeld {
			continue
		}
		held++
		if ev["reason"] != reason.TooManyUnhealthy || !strings.HasSuffix(ev["message"].(string), world.BreakerHolds) {
			t.Errorf("held event: %v", ev)
		}
		for _, op := range ev["ops"].([]any) {
			if op != generator.OpTaintNodes {
				t.Errorf("held event %s plans %s, not only state taints", ev["date"], op)
			}
		}
	}
	if held == 0 {
		t.Error("no event held with max-unhealthy 1")
	}
}

// TestForecastBuy: --buy on the bundled data center to 2031 begins with
// the purchases and the runway if nothing is bought, then the forecast
// with them reaching the end; -o csv is the purchases with a header; -o
// json has purchases, unbought and the made-up machines, each of whose
// serials says it is made up.
func TestForecastBuy(t *testing.T) {
	out, errOut, code := runCLI(t, forecastArgs("--until", "2031-12-31", "--buy")...)
	if code != 0 || !strings.HasPrefix(out, "purchases: 17 purchases, first order by 2030-01-31\n") ||
		!strings.Contains(out, "\nif nothing is bought: the cluster meets its constraints until 2030-04-30;") ||
		!strings.Contains(out, "\nrunway: the cluster meets its constraints until 2031-12-31, the end of the forecast") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	csvOut, _, code := runCLI(t, forecastArgs("--until", "2031-12-31", "--buy", "-o", "csv")...)
	rows := strings.Split(strings.TrimSpace(csvOut), "\n")
	if code != 0 || len(rows) != 18 || rows[0] != "order_by,overdue,needed,role,product,count,racks,reason" ||
		rows[1] != "2030-01-31,false,2030-05-01,compute,R620,1,0:1,18 HEALTHY workers remain (needed 20)" {
		t.Errorf("csv: exit %d:\n%s", code, csvOut)
	}
	jsonOut, _, _ := runCLI(t, forecastArgs("--until", "2031-12-31", "--buy", "-o", "json")...)
	var doc struct {
		Purchases []map[string]any `json:"purchases"`
		Unbought  map[string]any   `json:"unbought"`
		MadeUp    []struct {
			First  string `json:"firstSerial"`
			Bought bool   `json:"bought"`
		} `json:"madeUp"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Purchases) != 17 || doc.Unbought["until"] != "2030-04-30" || len(doc.MadeUp) == 0 {
		t.Fatalf("json: %d purchases, unbought %v, %d made up", len(doc.Purchases), doc.Unbought, len(doc.MadeUp))
	}
	for _, m := range doc.MadeUp {
		if !m.Bought || !strings.HasPrefix(m.First, "made-up-") {
			t.Errorf("made up %+v", m)
		}
	}
}

// TestForecastOnlineOrders: online, what is on order is assumed as the
// leader's forecast assumes it: the same forecast as offline with the
// order given as --assume-new, and the text says the order first.
func TestForecastOnlineOrders(t *testing.T) {
	s := newRack4Site(t)
	spec := "rack=3,role=compute,count=4,from=2028-01-01"
	if _, errOut, code := s.run("sabakan", "order", "add", spec); code != 0 {
		t.Fatal(errOut)
	}
	onJSON, errOut, code := s.run("sabakan", "forecast", "-o", "json", "--until", "2030-06-30")
	now := time.Now()
	if code != 0 {
		t.Fatalf("online: exit %d: %s", code, errOut)
	}
	offJSON, _, _ := s.run(append([]string{"sabakan", "forecast", "-o", "json", "--until", "2030-06-30", "--assume-new", spec}, offline(s.served(-1, ""), now)...)...)
	on, off := forecastOf(t, onJSON), forecastOf(t, offJSON)
	delete(on, "assumed")
	if !jsonEqual(on, off) || off["madeUp"] == nil {
		t.Errorf("online with an order:\n%s\nwant offline's with it assumed new:\n%s", onJSON, offJSON)
	}
	text, _, _ := s.run("sabakan", "forecast", "--until", "2030-06-30")
	if !strings.Contains(text, "\nassume order 1: "+spec+": 4 machines\n") || !strings.Contains(text, "\nassumed new: 4 machines of role compute in rack 3 from 2028-01-01") {
		t.Errorf("text:\n%s", text)
	}
}
