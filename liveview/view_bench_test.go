package liveview

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// BenchmarkMapView20000 reads the page's view of a 20,000-machine data
// center (500 racks of 40) whose cluster a tick wrote: a decision made
// anew at each read (sabakan asked, every machine fetched besides), the
// map built from it.
func BenchmarkMapView20000(b *testing.B) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Start(b, sitetest.Options{
		Now:        now,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack = 500, 40 },
		Template:   sitetest.Template, StoreURL: true, Constraints: sitetest.Counts(5, 2000),
	})
	ctx := context.Background()
	step := tick.New(site.Storage, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if res := step.Run(ctx, site.Lead(b, "d", 0), nil, nil); res.Err != nil {
		b.Fatal(res.Err)
	}
	c := &clock{t: now}
	r := NewReader(site.Storage, Options{Now: c.now})
	b.ReportAllocs()
	for b.Loop() {
		c.add(DefaultCacheTTL) // a decision of its own at each read
		s, err := r.View(ctx)
		if err != nil || s.Map == nil {
			b.Fatalf("%v, %v", err, s.MapErr)
		}
	}
}
