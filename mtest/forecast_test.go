package mtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestForecastOnline: on the daemons' data center, once the cluster has
// converged, the leader has stored its forecast of the settled cluster;
// `ckegenctl sabakan forecast`, online, answers with the same runway,
// the status shows it, and the leader's gauge is its end.
func TestForecastOnline(t *testing.T) {
	// Every machine retires in 400 days, before the daemons start: the
	// runway ends about a year from now (RETIRING 30 days before).
	e := newEnv(t, withoutDaemons())
	retire := time.Now().UTC().AddDate(0, 0, 400).Truncate(24 * time.Hour).Format(time.RFC3339)
	for _, serial := range e.machines {
		e.rest("PUT", "/api/v1/retire-date/"+serial, retire)
	}
	e.startDaemons()
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	e.converge(90 * time.Second)

	var stored struct {
		At            time.Time `json:"at"`
		Until         time.Time `json:"until"`
		RunwayUntil   string    `json:"runwayUntil"`
		RunwayReason  string    `json:"runwayReason"`
		RunwayMessage string    `json:"runwayMessage"`
		End           time.Time `json:"end"`
		OrderBy       string    `json:"orderBy"`
		Events        []struct {
			Date string `json:"date"`
		} `json:"events"`
	}
	e.eventually("the leader's forecast", 30*time.Second, func() bool {
		resp, err := e.cli.Get(e.ctx, "/cke/sabakan/ckegen/forecast")
		if err != nil || len(resp.Kvs) == 0 {
			return false
		}
		if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
			t.Fatalf("stored forecast: %v: %s", err, resp.Kvs[0].Value)
		}
		return true
	})

	out := e.mustCtl("sabakan", "forecast", "-o", "json")
	var online struct {
		Runway struct {
			Until, Reason, Message string
		} `json:"runway"`
		Events []struct {
			Date string `json:"date"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &online); err != nil {
		t.Fatalf("forecast -o json: %v\n%s", err, out)
	}
	if online.Runway.Until != stored.RunwayUntil || online.Runway.Reason != stored.RunwayReason || online.Runway.Message != stored.RunwayMessage {
		t.Errorf("the leader's runway %q %q %q, the online forecast's %+v", stored.RunwayUntil, stored.RunwayReason, stored.RunwayMessage, online.Runway)
	}
	if len(stored.Events) != min(3, len(online.Events)) || len(stored.Events) == 0 || stored.Events[len(stored.Events)-1].Date != online.Events[len(stored.Events)-1].Date {
		t.Errorf("the leader's events %+v, the online forecast's first %+v", stored.Events, online.Events[:min(3, len(online.Events))])
	}
	if stored.RunwayUntil == "" {
		t.Errorf("every machine retires in 400 days, and the runway does not end: %s", stored.RunwayMessage)
	}
	t.Logf("runway: %s", stored.RunwayMessage)

	// The gauge is the stored end: the day after the runway's last, or
	// the forecast's end.
	want := stored.Until
	if stored.RunwayUntil != "" {
		last, err := time.Parse(time.DateOnly, stored.RunwayUntil)
		if err != nil {
			t.Fatal(err)
		}
		want = last.AddDate(0, 0, 1)
	}
	if !stored.End.Equal(want) {
		t.Errorf("stored end %s, want %s", stored.End, want)
	}
	m := e.metrics(e.dHTTP[leaderIndex(e)])
	if line := fmt.Sprintf("\nckegen_runway_end_timestamp_seconds %g\n", float64(want.Unix())); !strings.Contains(m, line) {
		t.Errorf("the leader's /metrics lack %q:\n%s", strings.TrimSpace(line), grepLines(m, "ckegen_runway"))
	}

	// The leader buys as `forecast --buy` does: the same first order-by
	// date, which it exports at UTC midnight.
	var bought struct {
		Purchases []struct {
			OrderBy string `json:"orderBy"`
		} `json:"purchases"`
	}
	if out := e.mustCtl("sabakan", "forecast", "--buy", "-o", "json"); json.Unmarshal([]byte(out), &bought) != nil || len(bought.Purchases) == 0 {
		t.Fatalf("forecast --buy -o json buys nothing, or is not JSON:\n%s", out)
	}
	if stored.OrderBy != bought.Purchases[0].OrderBy {
		t.Errorf("the leader's order-by date %q, forecast --buy's first %q", stored.OrderBy, bought.Purchases[0].OrderBy)
	}
	if by, err := time.Parse(time.DateOnly, stored.OrderBy); err != nil {
		t.Errorf("the leader's order-by date %q: %v", stored.OrderBy, err)
	} else if line := fmt.Sprintf("\nckegen_capacity_order_by_timestamp_seconds %g\n", float64(by.Unix())); !strings.Contains(m, line) {
		t.Errorf("the leader's /metrics lack %q:\n%s", strings.TrimSpace(line), grepLines(m, "ckegen_capacity"))
	}

	status := e.mustCtl("sabakan", "status")
	if !strings.Contains(status, "\nRUNWAY      "+stored.RunwayMessage+" (forecast made ") {
		t.Errorf("status lacks the runway:\n%s", status)
	}
}
