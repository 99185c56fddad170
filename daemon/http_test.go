package daemon

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
