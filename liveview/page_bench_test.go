package liveview

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

var benchNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const benchTemplate = `{"name":"big","nodes":[
 {"user":"u","control_plane":true,"labels":{"cke.cybozu.com/role":"compute"}},
 {"user":"u","labels":{"cke.cybozu.com/role":"compute","cke.cybozu.com/weight":"6"}},
 {"user":"u","labels":{"cke.cybozu.com/role":"storage","cke.cybozu.com/weight":"3"}},
 {"user":"u","labels":{"cke.cybozu.com/role":"gpu"}}],"service_subnet":"10.68.0.0/16"}`

// builtSource draws the map of a fixed input on every call, as
// Reader does with sabakan's cached answer: the page is rendered
// from data made by the real generator and rackmap, without etcd or
// sabakan.
type builtSource struct {
	s  View
	in MapInput
}

func (b *builtSource) View(context.Context) (*View, error) {
	s := b.s
	s.Map = BuildMap(b.in)
	return &s, nil
}

// bigSource is a data center of racks x perRack machines with a cluster
// generated on half of them, a status and a full history.
func bigSource(tb testing.TB, racks, perRack int) *builtSource {
	tb.Helper()
	o := dcgen.Default(benchNow)
	o.Racks, o.PerRack = racks, perRack
	ms := dcgen.Machines(o)
	tmpl, err := template.Parse([]byte(benchTemplate))
	if err != nil {
		tb.Fatal(err)
	}
	kept, _, _ := intake.Sanitize(ms)
	cons := constraints.CountDefaults()
	cons.ControlPlaneCount, cons.MinimumWorkers = 5, len(ms)/2
	res, err := generator.Generate(generator.Input{Template: tmpl, Constraints: cons, Machines: kept, Now: benchNow})
	if err != nil {
		tb.Fatal(err)
	}
	in := MapInput{Machines: kept, Context: ms, LeftOut: leftOutOnline, Current: res.Cluster, Template: tmpl,
		Rebooting: map[string]bool{res.Cluster.Nodes[7].Address: true}}
	st := &storage.Status{Result: "ok", Since: benchNow.Add(-time.Hour), Time: benchNow, LastSuccess: benchNow, LastOp: res.Op, LastChangeCount: len(res.Changes), Leader: "host-1"}
	var hist []storage.HistoryEntry
	for i := range storage.HistoryLimit {
		hist = append(hist, storage.HistoryEntry{ID: "x", Time: benchNow.Add(-time.Duration(i) * time.Minute), Op: generator.OpIncreaseWorker,
			Changes: []storage.Change{{Action: generator.ActionAddWorker, Address: "10.0.0.1", Serial: "S1", Reason: "r"}}, ChangeCount: 1})
	}
	return &builtSource{in: in, s: View{Time: benchNow, ClusterName: res.Cluster.Name, Status: st, History: hist[:DefaultHistoryLimit]}}
}

// BenchmarkMapPage20000 serves the page of a 20,000-machine data center
// (500 racks of 40): the map drawn from sabakan's (cached) answer, the
// HTML rendered and sent.
func BenchmarkMapPage20000(b *testing.B) {
	h := NewHandler(bigSource(b, 500, 40), PageOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var size int
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}
