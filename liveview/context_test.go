package liveview

import (
	"context"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// TestGatherContext: a gather asks sabakan once, with the stored query,
// unless asked for the context too (decision.Ask.Context, the map's):
// then every machine of sabakan comes besides, raw, in one more request,
// and the decision's machines stay the query's.
func TestGatherContext(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	gr := decision.NewGatherer(f.st, sabakan.Options{Timeout: 2 * time.Second, Retries: -1}, f.clock.now)
	o := decision.Config{RetireWait: storage.Duration(time.Minute)}.WithDefaults()

	g := gr.Gather(ctx, "", decision.Ask{Config: o})
	if g.Failure != nil || g.Context != nil || len(g.Machines) != 12 || f.requests.Load() != 1 {
		t.Fatalf("without context: failure %v, %d context machines, %d machines, %d requests; want none, 12 and 1",
			g.Failure, len(g.Context), len(g.Machines), f.requests.Load())
	}
	g = gr.Gather(ctx, "", decision.Ask{Config: o, Context: true})
	if g.Failure != nil || len(g.Context) != 15 || len(g.Machines) != 12 || f.requests.Load() != 3 {
		t.Errorf("with context: failure %v, %d context machines, %d machines, %d requests in all; want 15, 12 and 3",
			g.Failure, len(g.Context), len(g.Machines), f.requests.Load())
	}
}
