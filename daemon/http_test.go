package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/storage"
)

// Secure: every answer says nosniff and no-referrer, and no handler can
// read more than 1 MiB of a request body.
func TestSecure(t *testing.T) {
	var read int64
	var readErr error
	h := Secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read, readErr = io.Copy(io.Discard, r.Body)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/health", strings.NewReader(strings.Repeat("x", 2<<20))))
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", rec.Header())
	}
	var mbe *http.MaxBytesError
	if read > 1<<20 || readErr == nil || !errors.As(readErr, &mbe) {
		t.Errorf("read %d bytes, error %v: want at most 1 MiB and a MaxBytesError", read, readErr)
	}
}

// A tick cut short by shutdown records no failure: not in etcd, not in
// the daemon's own status.
func TestShutdownIsNoFailure(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	hang := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer ts.Close()
	defer close(hang)
	must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
	d := f.daemon("d", func(c *Config) { c.Sabakan.Timeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if err := d.runOnce(ctx, leader).Err; err == nil {
		t.Fatal("a cancelled tick succeeded")
	}
	if st, err := f.st.GetStatus(context.Background()); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("status written for a tick cut short by shutdown: %+v, %v", st, err)
	}
	if st := d.Status(); st.Result != "" {
		t.Errorf("the daemon's status says %s %s", st.Result, st.Reason)
	}
}

// TestBuildInfoAndVersion: over HTTP, the daemon's /metrics has one
// ckegen_build_info series, 1, naming the version and commit of
// internal/version, the CKE release ckegen is built for and the mode
// "daemon"; /version answers the same three.
func TestBuildInfoAndVersion(t *testing.T) {
	oldV, oldR := version.Version, version.Revision
	t.Cleanup(func() { version.Version, version.Revision = oldV, oldR })
	version.Version, version.Revision = "v9.8.7", "0123456789abcdef0123"
	f := newFixture(t)
	ts := httptest.NewServer(f.daemon("d", nil).Handler())
	defer ts.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		must(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}

	want := `ckegen_build_info{cke_version="` + version.CKEVersion + `",commit="0123456789ab",mode="daemon",version="v9.8.7"} 1`
	var got []string
	for _, l := range strings.Split(get("/metrics"), "\n") {
		if strings.HasPrefix(l, "ckegen_build_info") {
			got = append(got, l)
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("/metrics: %q, want the one series %q", got, want)
	}

	var v map[string]string
	must(t, json.Unmarshal([]byte(get("/version")), &v))
	wantV := map[string]string{"version": "v9.8.7", "commit": "0123456789ab", "cke_version": version.CKEVersion}
	if !maps.Equal(v, wantV) {
		t.Errorf("/version: %v, want %v", v, wantV)
	}
}
