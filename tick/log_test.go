package tick

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestLogSaysWhatChanged: the log tells what changed, not every tick.
// "Nothing to do" once when it becomes true; a warning once when it
// appears and once when it clears; a failure at error when it starts, at
// warning on each retry, at info on recovery; a settled integration
// logs nothing at info per tick.
func TestLogSaysWhatChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	var logs lockedBuffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	count := func(s string) int { return strings.Count(logs.String(), s) }
	for range 4 {
		d.run(ctx, leader)
	}
	if n := count(`msg="cluster updated"`); n != 1 {
		t.Errorf("%d writes logged, want 1 (the first cluster):\n%s", n, logs.String())
	}
	if n := count(`msg="nothing to do"`); n != 1 {
		t.Errorf(`"nothing to do" logged %d times over 3 settled ticks, want once:\n%s`, n, logs.String())
	}
	before := len(logs.String())
	d.run(ctx, leader)
	if settled := logs.String()[before:]; settled != "" {
		t.Errorf("a settled tick logged:\n%s", settled)
	}

	// A warning: logged when it appears, not again, and when it clears.
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 4
	must(t, f.st.SetConstraints(ctx, c))
	for range 3 {
		d.run(ctx, leader)
	}
	if n := count(`level=WARN msg="tick warning" warning="constraints: control-plane-count is even (4)`); n != 1 {
		t.Errorf("the even count's warning logged %d times over 3 ticks, want once:\n%s", n, logs.String())
	}
	c.ControlPlaneCount = 3
	must(t, f.st.SetConstraints(ctx, c))
	for range 3 {
		d.run(ctx, leader)
	}
	if n := count(`level=INFO msg="tick warning cleared" warning="constraints: control-plane-count is even (4)`); n != 1 {
		t.Errorf("the warning's end logged %d times, want once:\n%s", n, logs.String())
	}

	// A failure: at error when it starts, at warning on each retry, at
	// info on recovery.
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	for range 3 {
		d.run(ctx, leader)
	}
	if n, m := count(`level=ERROR msg="tick failed" reason=SABAKAN_UNREACHABLE`), count(`level=WARN msg="tick failed again" reason=SABAKAN_UNREACHABLE`); n != 1 || m != 2 {
		t.Errorf("3 failed ticks: %d at error, %d at warning, want 1 and 2:\n%s", n, m, logs.String())
	}
	must(t, f.st.SetURL(ctx, f.url))
	d.run(ctx, leader)
	if n := count(`level=INFO msg="tick recovered" failed_with=SABAKAN_UNREACHABLE result=ok`); n != 1 {
		t.Errorf("the recovery logged %d times, want once:\n%s", n, logs.String())
	}
}
