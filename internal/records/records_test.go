package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/records"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// releasesDir holds a directory of records per release.
var releasesDir = filepath.Join("..", "..", "testdata", "records")

// releases are the releases whose records are kept, oldest first.
func releases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(releasesDir)
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, e := range entries {
		if e.IsDir() {
			vs = append(vs, e.Name())
		}
	}
	if len(vs) == 0 {
		t.Fatalf("%s keeps no release's records", releasesDir)
	}
	sort.Slice(vs, func(i, j int) bool { return versionLess(vs[i], vs[j]) })
	return vs
}

// versionLess orders v0.MINOR.PATCH names.
func versionLess(a, b string) bool {
	var x, y [3]int
	fmt.Sscanf(a, "v%d.%d.%d", &x[0], &x[1], &x[2])
	fmt.Sscanf(b, "v%d.%d.%d", &y[0], &y[1], &y[2])
	return slices.Compare(x[:], y[:]) < 0
}

// loaded is a release's records in a real etcd, with today's storage.
func loaded(t *testing.T, version string) (storage.Storage, records.Records) {
	t.Helper()
	recs, err := records.Read(filepath.Join(releasesDir, version))
	if err != nil {
		t.Fatal(err)
	}
	st := storage.New(etcdtest.Client(t), "")
	if err := records.Load(context.Background(), st, recs); err != nil {
		t.Fatal(err)
	}
	return st, recs
}

// kinds are the records every release keeps: a capture that lost one
// fails here.
var kinds = []string{
	storage.KeySabakanStatus, storage.KeyCKEGenMemory, storage.KeySabakanPlan, storage.KeySabakanHistory,
	storage.KeySabakanURL, storage.KeySabakanTemplate, storage.KeySabakanQueryVariables, storage.KeyConstraints,
	storage.KeySabakanPolicy, storage.KeySabakanQuietTime, storage.KeySabakanMaxUnhealthy, storage.KeySabakanTrigger,
	storage.KeySabakanDisabled, storage.KeyCKEGenDisabled, storage.KeyOwner, storage.KeyCluster,
}

// TestReleasesReadToday: today's code reads every kept release's records
// as a leader and ckegenctl read them: the status, the memory, the
// history, the stored plan and every setting, each with its meaning
// (the status says the tick's result and its hold, the history names the
// nodes its writes changed, the settings are the scenario's values).
func TestReleasesReadToday(t *testing.T) {
	for _, version := range releases(t) {
		t.Run(version, func(t *testing.T) {
			st, recs := loaded(t, version)
			for _, k := range kinds {
				if !slices.ContainsFunc(recs.Keys(), func(key string) bool { return key == k || strings.HasPrefix(key, k) && strings.HasSuffix(k, "/") }) {
					t.Errorf("%s's records lack %s", version, k)
				}
			}
			checkStatus(t, st)
			checkHistory(t, st)
			ctx := context.Background()
			if _, err := liveview.ReadMemory(ctx, st); err != nil {
				t.Errorf("the memory: %v", err)
			}
			plan, err := planreport.ReadStored(ctx, st)
			if err != nil || plan == nil || plan.ComputedAt.IsZero() {
				t.Errorf("the stored plan: %+v, %v", plan, err)
			}
			checkSettings(t, st)
		})
	}
}

func checkStatus(t *testing.T, st storage.Storage) {
	t.Helper()
	s, err := st.GetStatus(context.Background())
	if err != nil {
		t.Fatalf("the status: %v", err)
	}
	// The capture ends on a tick held by the quiet time and the trigger.
	if s.Result != "planning" || s.Reason == "" || s.Time.IsZero() || s.Owner != "ckegen" || s.Model == "" || s.Inventory == nil {
		t.Errorf("the status reads as %s %s at %v, owner %q, model %q, inventory %v: want a tick held by change management, ckegen owning",
			s.Result, s.Reason, s.Time, s.Owner, s.Model, s.Inventory)
	}
}

func checkHistory(t *testing.T, st storage.Storage) {
	t.Helper()
	h, err := st.History(context.Background())
	if err != nil {
		t.Fatalf("the history: %v", err)
	}
	if len(h) < 2 {
		t.Fatalf("the history has %d entries, want the cluster's build and a taint", len(h))
	}
	for _, e := range h {
		if e.ID == "" || e.Time.IsZero() || e.Op == "" || len(e.Changes) == 0 || e.ChangeCount < len(e.Changes) || e.ClusterRevision == 0 {
			t.Errorf("history entry %+v: want an id, a time, an op and the nodes it changed", e)
		}
		for _, c := range e.Changes {
			if c.Address == "" {
				t.Errorf("history entry %s: a change names no node: %+v", e.ID, c)
			}
		}
	}
}

// checkSettings reads every setting as a tick does: none is refused.
func checkSettings(t *testing.T, st storage.Storage) {
	t.Helper()
	var r intake.Reader
	snap, err := st.Read(context.Background(), r.Request(""))
	if err != nil {
		t.Fatal(err)
	}
	s, refused := r.ReadEach(snap, intake.WhatIf{})
	for setting, refusal := range refused {
		t.Errorf("setting %s refused: %v", setting, refusal)
	}
	if s == nil {
		t.Fatal("no settings read")
	}
	if s.URL == "" || s.Template == nil || s.Policy == nil {
		t.Errorf("settings read: URL %q, template %v, policy %v: want each as stored", s.URL, s.Template != nil, s.Policy != nil)
	}
}

// TestPreviousReadsToday: the last kept release must read what today's
// code writes. Each JSON record of that release, read with today's code
// and written again, keeps every field the release wrote with the same
// JSON type: a field removed or renamed today (today's read skips it as
// unknown, and the release would read it as missing) or retyped (the
// release could not parse it) fails here, naming the field. Fields
// today adds are fine: every release skips what it does not know
// (TestUnknownFieldsSkipped).
func TestPreviousReadsToday(t *testing.T) {
	vs := releases(t)
	version := vs[len(vs)-1]
	st, recs := loaded(t, version)
	ctx := context.Background()
	rewritten := map[string]func() (any, error){
		storage.KeySabakanStatus: func() (any, error) { return st.GetStatus(ctx) },
		storage.KeyCKEGenMemory:  func() (any, error) { m, err := liveview.ReadMemory(ctx, st); return &m, err },
		storage.KeySabakanPlan:   func() (any, error) { return planreport.ReadStored(ctx, st) },
	}
	h, err := st.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h {
		rewritten[storage.KeySabakanHistory+e.ID] = func() (any, error) { return e, nil }
	}
	for key, read := range rewritten {
		v, err := read()
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		today, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := recs[key]; !ok {
			t.Errorf("%s's records lack %s", version, key)
			continue
		}
		for _, p := range lostFields(t, recs[key], today) {
			t.Errorf("%s: %s of %s is %s: %s could not read today's", key, p.path, version, p.why, version)
		}
	}
}

// lost is a field of a release's record that today's record loses.
type lost struct{ path, why string }

// lostFields compares a release's JSON with today's: every path of old
// must be in new with the same JSON type.
func lostFields(t *testing.T, old, today []byte) []lost {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(old, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(today, &b); err != nil {
		t.Fatal(err)
	}
	var out []lost
	walk("", a, b, &out)
	return out
}

func walk(path string, a, b any, out *[]lost) {
	if a == nil {
		return
	}
	if b == nil {
		*out = append(*out, lost{path, "gone today"})
		return
	}
	if ta, tb := fmt.Sprintf("%T", a), fmt.Sprintf("%T", b); ta != tb {
		*out = append(*out, lost{path, fmt.Sprintf("%s today, was %s", jsonType(b), jsonType(a))})
		return
	}
	switch a := a.(type) {
	case map[string]any:
		bm := b.(map[string]any)
		for k, v := range a {
			w, ok := bm[k]
			if !ok {
				*out = append(*out, lost{path + "." + k, "gone today"})
				continue
			}
			walk(path+"."+k, v, w, out)
		}
	case []any:
		bs := b.([]any)
		for i := range min(len(a), len(bs)) {
			walk(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i], out)
		}
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// TestUnknownFieldsSkipped: today's code reads each JSON record of every
// release with fields it does not know added, as a later release may
// write them.
func TestUnknownFieldsSkipped(t *testing.T) {
	for _, version := range releases(t) {
		recs, err := records.Read(filepath.Join(releasesDir, version))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range recs.Keys() {
			var v any
			if !strings.HasPrefix(key, "sabakan/") || json.Unmarshal(recs[key], &v) != nil {
				continue
			}
			if _, ok := v.(map[string]any); !ok {
				continue
			}
			recs[key] = mustJSON(t, addUnknown(v))
		}
		st := storage.New(etcdtest.Client(t), "")
		if err := records.Load(context.Background(), st, recs); err != nil {
			t.Fatal(err)
		}
		t.Run(version, func(t *testing.T) {
			checkStatus(t, st)
			checkHistory(t, st)
			if _, err := liveview.ReadMemory(context.Background(), st); err != nil {
				t.Errorf("the memory with unknown fields: %v", err)
			}
			if _, err := planreport.ReadStored(context.Background(), st); err != nil {
				t.Errorf("the plan with unknown fields: %v", err)
			}
		})
	}
}

// addUnknown adds a field to a record's object and to each object in an
// array of its (records list structs in arrays); the objects under a key
// may be maps (counts by state), where a key is data, not a field.
func addUnknown(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, w := range v {
			if arr, ok := w.([]any); ok {
				v[k] = addUnknown(arr)
			}
		}
		v["fieldOfALaterRelease"] = map[string]any{"n": 1}
	case []any:
		for i, w := range v {
			v[i] = addUnknown(w)
		}
	}
	return v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestWalkFindsLostFields: the comparison of TestPreviousReadsToday sees
// a field removed, renamed or retyped, and nothing else.
func TestWalkFindsLostFields(t *testing.T) {
	old := []byte(`{"result":"ok","n":1,"changes":[{"address":"10.0.0.1"}],"since":"x"}`)
	for today, want := range map[string][]string{
		`{"result":"ok","n":1,"changes":[{"address":"10.0.0.1"}],"since":"x","added":true}`: nil,
		`{"result":"ok","n":1,"changes":[{"address":"10.0.0.1"}]}`:                          {".since"},
		`{"result":"ok","n":"1","changes":[{"address":"10.0.0.1"}],"since":"x"}`:            {".n"},
		`{"result":"ok","n":1,"changes":[{"addr":"10.0.0.1"}],"since":"x"}`:                 {".changes[0].address"},
	} {
		var got []string
		for _, l := range lostFields(t, old, []byte(today)) {
			got = append(got, l.path)
		}
		if !slices.Equal(got, want) {
			t.Errorf("today %s: lost %q, want %q", today, got, want)
		}
	}
}
