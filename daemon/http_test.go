package daemon

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
