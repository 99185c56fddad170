package fakesabakan

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testServer serves store over real HTTP for the length of the test.
type testServer struct {
	t   *testing.T
	url string
}

func serve(t *testing.T, store *Store) *testServer {
	t.Helper()
	srv, err := New(store)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &testServer{t: t, url: ts.URL}
}

type reply struct {
	code   int
	body   string
	header http.Header
}

// do sends a request with the body exactly as given.
func (s *testServer) do(method, path, contentType, body string) reply {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return reply{code: resp.StatusCode, body: string(data), header: resp.Header}
}

// machines returns GET /api/v1/machines?query, decoded.
func (s *testServer) machines(query string) []restMachine {
	s.t.Helper()
	r := s.do("GET", "/api/v1/machines?"+query, "", "")
	if r.code != 200 {
		s.t.Fatalf("GET machines?%s: %d %s", query, r.code, r.body)
	}
	var ms []restMachine
	if err := json.Unmarshal([]byte(r.body), &ms); err != nil {
		s.t.Fatalf("GET machines?%s: %v", query, err)
	}
	return ms
}

// checkErrorBody checks sabakan's REST error body: exactly error,
// request_id and status, the status being the HTTP one, the error
// containing want.
func checkErrorBody(t *testing.T, r reply, want string) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Errorf("error body %q is not JSON: %v", r.body, err)
		return
	}
	if len(body) != 3 {
		t.Errorf("error body %s: want exactly error, request_id and status", r.body)
	}
	if msg, _ := body["error"].(string); !strings.Contains(msg, want) {
		t.Errorf("error %q does not contain %q", msg, want)
	}
	if id, _ := body["request_id"].(string); id == "" {
		t.Errorf("error body %s: no request_id", r.body)
	}
	if st, _ := body["status"].(float64); int(st) != r.code {
		t.Errorf("error body %s: status %v, HTTP status %d", r.body, body["status"], r.code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
}

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time             { return c.t }
func (c *clock) advance(d time.Duration)    { c.t = c.t.Add(d) }
func newClock(t time.Time) (*clock, *Store) { c := &clock{t}; return c, NewStore(c.now) }
