package tick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// hostileSabakan answers the daemon's query with what the test scripts:
// by default the compatible server's inventory, whole and well formed;
// once told, one bad answer as a broken proxy or an impostor would give.
type hostileSabakan struct {
	t     *testing.T
	f     *fixture
	mu    sync.Mutex
	bad   http.HandlerFunc
	srv   *httptest.Server
	calls atomic.Int32
}

func newHostileSabakan(t *testing.T, f *fixture) *hostileSabakan {
	h := &hostileSabakan{t: t, f: f}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		h.mu.Lock()
		bad := h.bad
		h.mu.Unlock()
		if bad != nil {
			bad(w, r)
			return
		}
		writeAnswer(w, h.machines())
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// machines is the compatible server's inventory as sabakan answers it.
func (h *hostileSabakan) machines() []machine.Machine { return h.f.store.Search(nil, nil) }

// answer makes every later query get what edit makes of the inventory.
func (h *hostileSabakan) answer(edit func([]machine.Machine) []machine.Machine) {
	h.script(func(w http.ResponseWriter, r *http.Request) { writeAnswer(w, edit(h.machines())) })
}

func (h *hostileSabakan) script(bad http.HandlerFunc) {
	h.mu.Lock()
	h.bad = bad
	h.mu.Unlock()
}

func writeAnswer(w http.ResponseWriter, ms []machine.Machine) {
	data, err := json.Marshal(map[string]any{"data": map[string]any{"searchMachines": ms}})
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

func writeRaw(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// spare is a machine of the inventory that is not a node, so that
// ignoring it changes nothing in the cluster.
func spare(t *testing.T, f *fixture, ms []machine.Machine) int {
	t.Helper()
	nodes := map[string]bool{}
	for _, n := range f.cluster(t).Nodes {
		nodes[n.Address] = true
	}
	for i := range ms {
		if !nodes[ms[i].Address()] && ms[i].Status.State == machine.StateHealthy {
			return i
		}
	}
	t.Fatal("the test data center has no spare machine")
	return -1
}

// cpFirst puts an UNREACHABLE copy of a control plane's machine first:
// trusted, it would re-taint the control plane on the copy's word.
func cpFirst(t *testing.T, f *fixture) func([]machine.Machine) []machine.Machine {
	return func(ms []machine.Machine) []machine.Machine {
		cp := f.cluster(t).Nodes[0]
		for _, m := range ms {
			if m.Address() == cp.Address {
				m.Status.State = machine.StateUnreachable
				return append([]machine.Machine{m}, ms...)
			}
		}
		t.Error("no machine for the first control plane")
		return ms
	}
}

// TestHostileSabakan: after a good cluster exists, each bad answer, one
// at a time, fails the tick with its reason (or is ignored with a
// warning), writes no cluster, leaves a status that fits, and the next
// good answer recovers.
func TestHostileSabakan(t *testing.T) {
	f := newFixture(t)
	h := newHostileSabakan(t, f)
	ctx := context.Background()
	must(t, f.st.SetURL(ctx, h.srv.URL+"/graphql"))
	leader := f.lead(t)
	d := f.step("d", func(c *testConfig) {
		c.Sabakan = sabakan.Options{Timeout: 2 * time.Second, Retries: -1, MaxBodyBytes: 8 << 20}
	})
	settle := func() {
		t.Helper()
		for range 20 {
			_, before, _ := f.st.GetCluster(ctx)
			must(t, d.runOnce(ctx, leader))
			if _, after, _ := f.st.GetCluster(ctx); after == before && before != 0 {
				return
			}
		}
		t.Fatal("the good inventory did not settle in 20 ticks")
	}
	settle()

	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a redirect to another host was followed")
		writeAnswer(w, nil)
	}))
	defer elsewhere.Close()
	huge := strings.Repeat("x", 5<<20)

	cases := []struct {
		name   string
		serve  func()
		reason string // "" for a tick that goes on with a warning
		want   string // in the status message, or in a warning
	}{
		{"a serial twice", func() { h.answer(cpFirst(t, f)) }, reason.QueryError, "is also machines["},
		{"no data", func() { h.script(writeRaw(`{"data":{}}`)) }, reason.QueryError, "data.searchMachines is missing or null"},
		{"null data", func() { h.script(writeRaw(`{"data":null}`)) }, reason.QueryError, "data.searchMachines is missing or null"},
		{"not a list", func() { h.script(writeRaw(`{"data":{"searchMachines":{}}}`)) }, reason.QueryError, "malformed response"},
		{"not JSON", func() { h.script(writeRaw(`<html>`)) }, reason.QueryError, "malformed response"},
		{"GraphQL errors", func() { h.script(writeRaw(`{"errors":[{"message":"boom"}]}`)) }, reason.QueryError, "GraphQL error: boom"},
		{"a wrong type", func() {
			h.script(writeRaw(`{"data":{"searchMachines":[{"spec":{"serial":"a","rack":"one"},"status":{"state":"HEALTHY"}}]}}`))
		}, reason.QueryError, "malformed response"},
		{"a date that does not parse", func() {
			h.script(writeRaw(`{"data":{"searchMachines":[{"spec":{"serial":"a","retireDate":"tomorrow"},"status":{"state":"HEALTHY"}}]}}`))
		}, reason.QueryError, `parsing time "tomorrow"`},
		{"HTTP 502", func() {
			h.script(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) })
		},
			reason.SabakanUnreachable, "HTTP 502: bad gateway"},
		{"a redirect elsewhere", func() {
			h.script(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/graphql", http.StatusTemporaryRedirect)
			})
		}, reason.QueryError, strings.TrimPrefix(elsewhere.URL, "http://")},
		{"an answer over the limit", func() {
			h.script(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"data":{"searchMachines":[`)
				for range 10 << 10 {
					_, _ = io.WriteString(w, `{"spec":{"serial":"`+strings.Repeat("s", 1000)+`"}},`)
				}
			})
		}, reason.QueryError, "answer larger than 8 MiB (--sabakan-max-bytes)"},
		{"a negative rack", func() {
			h.answer(func(ms []machine.Machine) []machine.Machine {
				i := spare(t, f, ms)
				ms[i].Spec.Rack = -3
				return ms
			})
		}, "", "spec.rack -3 is negative: ignored"},
		{"a year-1 date", func() {
			h.answer(func(ms []machine.Machine) []machine.Machine {
				i := spare(t, f, ms)
				ms[i].Spec.RetireDate = time.Time{}
				return ms
			})
		}, "", "spec.retireDate is the zero time (year 1): ignored"},
		{"a 5 MiB label", func() {
			h.answer(func(ms []machine.Machine) []machine.Machine {
				i := spare(t, f, ms)
				ms[i].Spec.Labels = append(ms[i].Spec.Labels, machine.Label{Name: "x", Value: huge})
				return ms
			})
		}, "", `label "x" skipped`},
		{"300 machines without an address", func() {
			h.answer(func(ms []machine.Machine) []machine.Machine {
				for i := range 300 {
					m := ms[0]
					m.Spec.Serial, m.Spec.IPv4 = fmt.Sprintf("zz%03d", i), nil
					ms = append(ms, m)
				}
				return ms
			})
		}, "", "and 200 more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, rev, err := f.st.GetCluster(ctx)
			must(t, err)
			c.serve()
			err = d.runOnce(ctx, leader)
			var te *reason.Error
			switch {
			case c.reason == "" && err != nil:
				t.Errorf("tick failed: %v; want it to go on with a warning", err)
			case c.reason != "" && (!errors.As(err, &te) || te.Reason != c.reason):
				t.Errorf("tick error %v, want reason %s", err, c.reason)
			}
			st, err := f.st.GetStatus(ctx)
			must(t, err)
			raw, err := f.st.Client.Get(ctx, f.st.Key(storage.KeySabakanStatus))
			must(t, err)
			if n := len(raw.Kvs[0].Value); n > storage.MaxStatusBytes {
				t.Errorf("status of %d bytes", n)
			}
			seen := st.Message
			if c.reason == "" {
				seen = strings.Join(st.Warnings, "\n")
			}
			if st.Reason != c.reason || !strings.Contains(seen, c.want) {
				t.Errorf("status %s %s %.300q, want %q in it", st.Result, st.Reason, seen, c.want)
			}
			for _, w := range append(st.Warnings, st.Message) {
				if len(w) > 3<<10 {
					t.Errorf("a status line of %d bytes: echoes are bounded", len(w))
				}
			}
			if _, after, _ := f.st.GetCluster(ctx); after != rev {
				t.Errorf("the cluster was written (mod revision %d -> %d)", rev, after)
			}

			// The next good answer recovers, with nothing to change.
			h.script(nil)
			must(t, d.runOnce(ctx, leader))
			if st, _ := f.st.GetStatus(ctx); st.Result != reason.OK || len(st.Warnings) != 0 {
				t.Errorf("after a good answer: %s %s %q %q", st.Result, st.Reason, st.Message, st.Warnings)
			}
			if _, after, _ := f.st.GetCluster(ctx); after != rev {
				t.Errorf("the good answer after a bad one wrote the cluster")
			}
		})
	}
}
