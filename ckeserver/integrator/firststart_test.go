package integrator

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/sabakan"
)

// TestFirstStartLog: CKE's server with ckegen inside starts on an etcd
// with no cluster: Init (ckegen's Regenerate) and then the first Do.
// The log says what each did, in order: Init that there is no cluster to
// regenerate yet, the first Do its write; never "nothing to do" before
// the first write. A second Do with nothing to do says so, once; a new
// server's Init says the template did not change, and the Do after
// it says nothing to do again.
func TestFirstStartLog(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5, MaximumWorkers: 5})
	var logs strings.Builder
	ig, err := New(Config{Client: f.cke, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(&logs, nil))}})
	must(t, err)
	must(t, ig.Init(ctx, f.leader))
	must(t, ig.Do(ctx, f.leader, nil))
	must(t, ig.Do(ctx, f.leader, nil))
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if i := strings.Index(l, "msg="); i >= 0 {
			m := l[i+len("msg="):]
			if strings.HasPrefix(m, `"`) {
				m = m[1 : strings.Index(m[1:], `"`)+1]
			} else if j := strings.IndexByte(m, ' '); j >= 0 {
				m = m[:j]
			}
			msgs = append(msgs, m)
		}
	}
	want := []string{"no cluster to regenerate: the integration's next tick generates the first", "cluster updated", "nothing to do"}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("first start logged\n%s\nwant, in order,\n%s\n(all of it:\n%s)", strings.Join(msgs, "\n"), strings.Join(want, "\n"), logs.String())
	}
	if !strings.Contains(logs.String(), `msg="cluster updated" op=new`) {
		t.Errorf("the first write is not the new cluster:\n%s", logs.String())
	}

	// A new server's leadership: Init finds the template as the cluster
	// was built.
	logs.Reset()
	ig, err = New(Config{Client: f.cke, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(&logs, nil))}})
	must(t, err)
	must(t, ig.Init(ctx, f.leader))
	must(t, ig.Do(ctx, f.leader, nil))
	if got := logs.String(); !strings.Contains(got, `msg="cluster not regenerated: the template did not change since the cluster was built"`) ||
		!strings.Contains(got, `msg="nothing to do"`) || strings.Index(got, "not regenerated") > strings.Index(got, "nothing to do") {
		t.Errorf("a new leadership's Init and Do logged:\n%s", got)
	}
}
