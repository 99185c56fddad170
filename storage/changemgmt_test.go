package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// TestChangeManagementDefaults: unset keys mean schedule, no quiet time and
// no limit on unhealthy nodes.
func TestChangeManagementDefaults(t *testing.T) {
	ctx := context.Background()
	s := New(etcdtest.Client(t), "")
	if tr, rev, err := s.GetTriggerRevision(ctx); tr != TriggerSchedule || rev != 0 || err != nil {
		t.Errorf("GetTriggerRevision = %q, %d, %v; want schedule, 0", tr, rev, err)
	}
	if d, err := s.GetQuietTime(ctx); d != 0 || err != nil {
		t.Errorf("GetQuietTime = %s, %v; want 0", d, err)
	}
	if m, err := s.GetMaxUnhealthy(ctx); m != nil || err != nil {
		t.Errorf("GetMaxUnhealthy = %v, %v; want nil (off)", m, err)
	}
	if _, err := s.GetPlan(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPlan error %v, want ErrNotFound", err)
	}
}

// TestChangeManagementValues: what each setter stores, as a plain string
// under its key, and that it reads back.
func TestChangeManagementValues(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "/p/")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetTrigger(ctx, TriggerPlanning))
	must(s.SetQuietTime(ctx, 90*time.Second))
	must(s.SetMaxUnhealthy(ctx, MaxUnhealthy{Value: 40, Percent: true}))
	for key, want := range map[string]string{
		"/p/sabakan/trigger":       "planning",
		"/p/sabakan/quiet-time":    "1m30s",
		"/p/sabakan/max-unhealthy": "40%",
	} {
		if got := raw(t, cli, key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	tr, rev, err := s.GetTriggerRevision(ctx)
	resp, _ := cli.Get(ctx, "/p/sabakan/trigger")
	if tr != TriggerPlanning || err != nil || rev != resp.Kvs[0].ModRevision {
		t.Errorf("GetTriggerRevision = %q, %d, %v; want planning, %d", tr, rev, err, resp.Kvs[0].ModRevision)
	}
	if d, err := s.GetQuietTime(ctx); d != 90*time.Second || err != nil {
		t.Errorf("GetQuietTime = %s, %v", d, err)
	}
	if m, err := s.GetMaxUnhealthy(ctx); m == nil || *m != (MaxUnhealthy{Value: 40, Percent: true}) || err != nil {
		t.Errorf("GetMaxUnhealthy = %v, %v", m, err)
	}
	must(s.SetMaxUnhealthy(ctx, MaxUnhealthy{Value: 3}))
	must(s.SetTrigger(ctx, TriggerSchedule))
	must(s.SetQuietTime(ctx, 0))
	if got := raw(t, cli, "/p/sabakan/max-unhealthy"); got != "3" {
		t.Errorf("max-unhealthy = %q, want 3", got)
	}
	if got := raw(t, cli, "/p/sabakan/quiet-time"); got != "0s" {
		t.Errorf("quiet-time = %q, want 0s", got)
	}
	if tr, _ := s.GetTrigger(ctx); tr != TriggerSchedule {
		t.Errorf("GetTrigger = %q", tr)
	}
}

// TestChangeManagementBadValues: a setter refuses bad values and stores
// nothing; a bad value stored by other means reads as ErrInvalid, with the
// key and the command that fixes it.
func TestChangeManagementBadValues(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	for name, err := range map[string]error{
		"trigger paused":     s.SetTrigger(ctx, "paused"),
		"trigger empty":      s.SetTrigger(ctx, ""),
		"quiet time -1s":     s.SetQuietTime(ctx, -time.Second),
		"max-unhealthy -1":   s.SetMaxUnhealthy(ctx, MaxUnhealthy{Value: -1}),
		"max-unhealthy 140%": s.SetMaxUnhealthy(ctx, MaxUnhealthy{Value: 140, Percent: true}),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, k := range []string{KeySabakanTrigger, KeySabakanQuietTime, KeySabakanMaxUnhealthy} {
		if got := raw(t, cli, s.Key(k)); got != "<none>" {
			t.Errorf("%s = %q after refused sets", k, got)
		}
	}

	for k, v := range map[string]string{
		KeySabakanTrigger:      "Planning",
		KeySabakanQuietTime:    "-5m",
		KeySabakanMaxUnhealthy: "lots",
	} {
		if _, err := cli.Put(ctx, s.Key(k), v); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.GetTrigger(ctx)
	checkInvalid(t, err, `stored sabakan/trigger: invalid stored value: trigger: must be planning (compute and store the plan, change nothing) or schedule (apply it one step per tick), got "Planning" (set it with ckecli sabakan trigger)`)
	_, err = s.GetQuietTime(ctx)
	checkInvalid(t, err, `stored sabakan/quiet-time: invalid stored value: quiet-time: must not be negative (0 turns it off), got -5m (set it with ckecli sabakan set-quiet-time)`)
	_, err = s.GetMaxUnhealthy(ctx)
	checkInvalid(t, err, `stored sabakan/max-unhealthy: invalid stored value: max-unhealthy: want a count of nodes such as 5 or a percentage of the cluster's nodes such as 40%, got "lots" (set it with ckecli sabakan set-max-unhealthy)`)
}

func checkInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) || err.Error() != want {
		t.Errorf("error %v\nwant ErrInvalid: %s", err, want)
	}
}

func TestParseQuietTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"0s", 0, ""},
		{"10m", 10 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"-1s", 0, "quiet-time: must not be negative (0 turns it off), got -1s"},
		{"10", 0, `quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got "10"`},
		{"", 0, `got ""`},
		{"ten minutes", 0, `got "ten minutes"`},
	} {
		got, err := ParseQuietTime(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseMaxUnhealthy(t *testing.T) {
	for _, c := range []struct {
		in    string
		want  MaxUnhealthy
		limit int // of a 10-node cluster
		err   string
	}{
		{"0", MaxUnhealthy{Value: 0}, 0, ""},
		{"5", MaxUnhealthy{Value: 5}, 5, ""},
		{"40%", MaxUnhealthy{Value: 40, Percent: true}, 4, ""},
		{"0%", MaxUnhealthy{Value: 0, Percent: true}, 0, ""},
		{"100%", MaxUnhealthy{Value: 100, Percent: true}, 10, ""},
		{"35%", MaxUnhealthy{Value: 35, Percent: true}, 3, ""}, // rounded down
		{"140%", MaxUnhealthy{}, 0, `(at most 100%), got "140%"`},
		{"-1", MaxUnhealthy{}, 0, `got "-1"`},
		{"+1", MaxUnhealthy{}, 0, `got "+1"`},
		{"%", MaxUnhealthy{}, 0, `got "%"`},
		{"", MaxUnhealthy{}, 0, `got ""`},
		{"4.5%", MaxUnhealthy{}, 0, `got "4.5%"`},
		{"5 ", MaxUnhealthy{}, 0, `got "5 "`},
		{"99999999999999999999", MaxUnhealthy{}, 0, `got "99999999999999999999"`},
	} {
		got, err := ParseMaxUnhealthy(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || got.Limit(10) != c.limit || got.String() != c.in {
			t.Errorf("%q: %+v (limit %d, %q), %v; want %+v (limit %d)", c.in, got, got.Limit(10), got.String(), err, c.want, c.limit)
		}
	}
}
