package sabakan_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/testutil/testpki"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func startServer(t testing.TB, ms []machine.Machine) (*httptest.Server, *fakesabakan.Store) {
	t.Helper()
	s := sitetest.StartSabakan(t, sitetest.Options{Now: now, Machines: ms})
	return s.Server, s.Store
}

func inventory() []machine.Machine {
	m := func(serial, role string, state machine.State, labels ...machine.Label) machine.Machine {
		return machine.Machine{
			Spec: machine.Spec{Serial: serial, Role: role, Rack: 1, IPv4: []string{"10.0.0." + serial[1:]},
				Labels: labels, RegisterDate: now, RetireDate: now.AddDate(5, 0, 0), BMC: machine.BMC{BMCType: "IPMI-2.0"}},
			Status: machine.Status{State: state},
		}
	}
	return []machine.Machine{
		m("s1", "boot", machine.StateHealthy),
		m("s2", "cs", machine.StateHealthy, machine.Label{Name: "dc", Value: "ty3"}),
		m("s3", "cs", machine.StateRetired),
		m("s4", "ss", machine.StateUnhealthy, machine.Label{Name: "dc", Value: "ty4"}),
	}
}

// TestVariablesAgainstServer: each form of the user's variables, sent by
// the real client to the compatible server over HTTP.
func TestVariablesAgainstServer(t *testing.T) {
	ts, _ := startServer(t, inventory())
	c, err := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ vars, want string }{
		{`{}`, "s2 s4"}, // defaults: no boot, no RETIRED
		{`{"having": {"roles": ["cs", "boot"]}}`, "s2"},          // notHaving default still applies
		{`{"notHaving": null}`, "s1 s2 s3 s4"},                   // explicit null: no filter
		{`{"notHaving": {}}`, "s1 s2 s3 s4"},                     // empty object: no filter
		{`{"having": null, "notHaving": null}`, "s1 s2 s3 s4"},   // both null
		{`{"notHaving": {"states": ["UNHEALTHY"]}}`, "s1 s2 s3"}, // replaces the default
		{`{"having": {"labels": [{"name": "dc", "value": "ty3"}]}}`, "s2"},
		{`{"having": {"racks": [1], "minDaysBeforeRetire": 1000}, "notHaving": {"roles": ["ss"]}}`, "s1 s2 s3"},
		{`{"having": {"racks": [2]}, "notHaving": null}`, ""},
	}
	for _, cs := range cases {
		v, err := sabakan.ParseVariables([]byte(cs.vars))
		if err != nil {
			t.Fatalf("%s: %v", cs.vars, err)
		}
		ms, err := c.SearchMachines(context.Background(), v)
		if err != nil {
			t.Fatalf("%s: %v", cs.vars, err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Spec.Serial)
		}
		if g := strings.Join(got, " "); g != cs.want {
			t.Errorf("%s: got %q, want %q", cs.vars, g, cs.want)
		}
	}
	// Machines come back whole.
	v, _ := sabakan.ParseVariables([]byte(`{"having": {"labels": [{"name": "dc", "value": "ty3"}]}}`))
	ms, err := c.SearchMachines(context.Background(), v)
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	m := ms[0]
	if m.Spec.IPv4[0] != "10.0.0.2" || m.Spec.Role != "cs" || !m.Spec.RetireDate.Equal(now.AddDate(5, 0, 0)) ||
		m.Spec.BMC.BMCType != "IPMI-2.0" || len(m.Spec.Labels) != 1 || m.Status.State != machine.StateHealthy || m.Status.Timestamp == nil {
		t.Errorf("machine = %+v", m)
	}
}

// TestVariablesOnTheWire: a left-out variable is not sent; null is sent as
// an empty MachineParams object.
func TestVariablesOnTheWire(t *testing.T) {
	var last map[string]json.RawMessage
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Variables map[string]json.RawMessage `json:"variables"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last = req.Variables
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"searchMachines":[]}}`)
	}))
	defer ts.Close()
	c, _ := sabakan.NewClient(ts.URL, sabakan.Options{})
	cases := []struct{ vars, want string }{
		{`{}`, `{}`},
		{`{"having": {"roles": ["cs"]}}`, `{"having":{"racks":null,"roles":["cs"],"states":null,"minDaysBeforeRetire":null}}`},
		{`{"notHaving": null}`, `{"notHaving":{"racks":null,"roles":null,"states":null,"minDaysBeforeRetire":null}}`},
	}
	for _, cs := range cases {
		v, err := sabakan.ParseVariables([]byte(cs.vars))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SearchMachines(context.Background(), v); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(last)
		if last == nil {
			got = []byte(`{}`)
		}
		if string(got) != cs.want {
			t.Errorf("%s sent %s, want %s", cs.vars, got, cs.want)
		}
	}
}

func TestParseVariablesErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"having": {"roles": ["cs"]}, "nothaving": {}}`, `unknown field "nothaving"; did you mean notHaving?`},
		{`{"having": {"states": ["BROKEN"]}}`, `having.states[0]: unknown state "BROKEN"`},
		{`{"having": {"states": ["healthy"]}}`, `unknown state "healthy"`},
		{`{"notHaving": {"racks": ["1"]}}`, `notHaving.racks[0]: want an integer, got the string "1"`},
		{`{"having": {"minDaysBeforeRetire": 1.5}}`, `having.minDaysBeforeRetire: want an integer, got the number 1.5`},
		{`{"having": {"role": ["cs"]}}`, `having: unknown field "role"`},
		{`{"having": {"labels": [{"name": "a"}]}}`, `having.labels[0]: want {"name": ..., "value": ...}`},
		{`{"having": []}`, `having: want an object (MachineParams, or null), got an array`},
		{`[]`, `want an object ({"having": ..., "notHaving": ...}), got an array`},
		{`null`, `want an object ({"having": ..., "notHaving": ...}), got null`},
	}
	for _, c := range cases {
		_, err := sabakan.ParseVariables([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseVariables(%s) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

// TestFaults: each failure of sabakan gives its documented error, never a
// panic, with retries only where they can help.
func TestFaults(t *testing.T) {
	ok := `{"data":{"searchMachines":[]}}`
	cases := []struct {
		name     string
		handler  func(n int32, w http.ResponseWriter)
		opts     sabakan.Options
		want     string
		kind     error
		requests int32
	}{
		{"slow response", func(n int32, w http.ResponseWriter) { time.Sleep(300 * time.Millisecond) },
			sabakan.Options{Timeout: 50 * time.Millisecond, Retries: -1}, "timeout after 50ms", sabakan.ErrUnreachable, 1},
		{"500 then success", func(n int32, w http.ResponseWriter) {
			if n == 1 {
				http.Error(w, "busy", 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, ok)
		}, sabakan.Options{Backoff: time.Millisecond}, "", nil, 2},
		{"503 every time", func(n int32, w http.ResponseWriter) {
			http.Error(w, strings.Repeat("x", 500), http.StatusServiceUnavailable)
		},
			sabakan.Options{Backoff: time.Millisecond, Retries: 2}, "HTTP 503: " + strings.Repeat("x", 200), sabakan.ErrUnreachable, 3},
		{"400 is not retried", func(n int32, w http.ResponseWriter) { http.Error(w, "bad query", 400) },
			sabakan.Options{Backoff: time.Millisecond}, "HTTP 400: bad query", sabakan.ErrUnreachable, 1},
		{"422 is not retried", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(422)
			_, _ = io.WriteString(w, `{"errors":[{"message":"invalid"}]}`)
		}, sabakan.Options{Backoff: time.Millisecond}, `HTTP 422: {"errors":[{"message":"invalid"}]}`, sabakan.ErrUnreachable, 1},
		{"GraphQL errors", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"errors":[{"message":"boom"},{"message":"bang"}],"data":null}`)
		}, sabakan.Options{}, "GraphQL error: boom; bang", sabakan.ErrQuery, 1},
		{"truncated JSON", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":`)
		}, sabakan.Options{}, "malformed response: line 1, column 36: unexpected end of input: the JSON value is not complete", sabakan.ErrQuery, 1},
		{"wrong content type", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>")
		}, sabakan.Options{}, `malformed response: content type "text/html"`, sabakan.ErrQuery, 1},
		{"oversized body", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[]},"x":"`+strings.Repeat("y", 4096)+`"}`)
		}, sabakan.Options{MaxBodyBytes: 1024}, "answer larger than 1024 bytes (--sabakan-max-bytes)", sabakan.ErrQuery, 1},
		{"oversized body announced", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			_, _ = io.WriteString(w, strings.Repeat(" ", 4096))
		}, sabakan.Options{MaxBodyBytes: 1024}, "answer larger than 1024 bytes", sabakan.ErrQuery, 1},
		{"no data", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{}}`)
		}, sabakan.Options{}, "data.searchMachines is missing or null (an empty data center is [])", sabakan.ErrQuery, 1},
		{"null data", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":null}`)
		}, sabakan.Options{}, "data.searchMachines is missing or null", sabakan.ErrQuery, 1},
		{"null list", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":null}}`)
		}, sabakan.Options{}, "data.searchMachines is missing or null", sabakan.ErrQuery, 1},
		{"not a list", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":{"spec":{}}}}`)
		}, sabakan.Options{}, "malformed response: line 1, column 27: data.searchMachines: want an array of objects, got an object", sabakan.ErrQuery, 1},
		{"a date that does not parse", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":{"serial":"a","retireDate":"tomorrow"},"status":{"state":"HEALTHY"}}]}}`)
		}, sabakan.Options{}, `malformed response: parsing time "tomorrow"`, sabakan.ErrQuery, 1},
		{"a wrong type", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":{"serial":"a","rack":"one"},"status":{"state":"HEALTHY"}}]}}`)
			// encoding/json named the Go struct field and its type.
		}, sabakan.Options{}, `malformed response: line 1, column 57: data.searchMachines[0].spec.rack: want an integer, got the string "one"`, sabakan.ErrQuery, 1},
		{"a serial twice", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":{"serial":"cp1"},"status":{"state":"UNREACHABLE"}},{"spec":{"serial":"cp1"},"status":{"state":"HEALTHY"}}]}}`)
		}, sabakan.Options{}, "spec.serial: cp1 is also machines[0]'s", sabakan.ErrQuery, 1},
		{"an empty data center", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[]}}`)
		}, sabakan.Options{}, "", nil, 1},
		{"not a searchMachines result", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":{"serial":"a"},"status":{"state":"ODD"}}]}}`)
		}, sabakan.Options{}, `malformed response: machines[0] (serial a): status.state: unknown state "ODD"`, sabakan.ErrQuery, 1},
		// Echoes are bounded: the server's words are cut to 1 KiB each.
		{"a huge GraphQL error", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"errors":[{"message":"`+strings.Repeat("m", 1<<20)+`"}]}`)
		}, sabakan.Options{}, "GraphQL error: " + strings.Repeat("m", 1024) + "…(1047552 bytes more)", sabakan.ErrQuery, 1},
		{"many GraphQL errors", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"errors":[`+strings.Repeat(`{"message":"e"},`, 9999)+`{"message":"e"}]}`)
		}, sabakan.Options{}, "GraphQL error: e; e; e; e; e; and 9995 more", sabakan.ErrQuery, 1},
		{"a huge date", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[{"spec":{"serial":"a","retireDate":"`+strings.Repeat("9", 1<<20)+`"},"status":{"state":"HEALTHY"}}]}}`)
		}, sabakan.Options{}, "bytes more)", sabakan.ErrQuery, 1},
		{"a huge content type", func(n int32, w http.ResponseWriter) {
			w.Header().Set("Content-Type", strings.Repeat("t", 100<<10))
		}, sabakan.Options{}, "bytes more)", sabakan.ErrQuery, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.handler(n.Add(1), w)
			}))
			defer ts.Close()
			cl, err := sabakan.NewClient(ts.URL+"/graphql", c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.SearchMachines(context.Background(), sabakan.Variables{})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			case c.kind != nil && !errors.Is(err, c.kind):
				t.Errorf("error %v is not %v", err, c.kind)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "sabakan at "+ts.URL+"/graphql: ") {
				t.Errorf("error %q does not name the URL", err)
			}
			if err != nil && len(err.Error()) > 2048 {
				t.Errorf("error of %d bytes: an echo is not bounded", len(err.Error()))
			}
			if got := n.Load(); got != c.requests {
				t.Errorf("%d requests, want %d", got, c.requests)
			}
		})
	}
}

func TestConnectionRefusedRetriesThenFails(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	cl, _ := sabakan.NewClient(url+"/graphql", sabakan.Options{Backoff: time.Millisecond, Retries: 2})
	start := time.Now()
	_, err := cl.SearchMachines(context.Background(), sabakan.Variables{})
	if !errors.Is(err, sabakan.ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %v, want unreachable: connection refused", err)
	}
	if time.Since(start) < 3*time.Millisecond {
		t.Error("no backoff between retries")
	}
}

func TestContextCancelled(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer ts.Close()
	defer close(release)
	cl, _ := sabakan.NewClient(ts.URL, sabakan.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := cl.SearchMachines(ctx, sabakan.Variables{}); !errors.Is(err, sabakan.ErrUnreachable) {
		t.Errorf("error %v, want unreachable", err)
	}
}

// TestTLSOptionsErrors: TLS settings that cannot work are refused when the
// client is made, naming what is wrong.
func TestTLSOptionsErrors(t *testing.T) {
	pki := testpki.New(t)
	notPEM := t.TempDir() + "/not.pem"
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts sabakan.Options
		want string
	}{
		{"missing CA file", sabakan.Options{CAFile: "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
		{"CA file without PEM", sabakan.Options{CAFile: notPEM}, "no PEM certificate found"},
		{"missing client certificate", sabakan.Options{CertFile: "/nonexistent/c.pem", KeyFile: pki.ClientKeyFile}, "/nonexistent/c.pem"},
		{"certificate without key", sabakan.Options{CertFile: pki.ClientCertFile}, "both the certificate and the key file"},
		{"key without certificate", sabakan.Options{KeyFile: pki.ClientKeyFile}, "both the certificate and the key file"},
		{"key of another certificate", sabakan.Options{CertFile: pki.ClientCertFile, KeyFile: pki.ServerKeyFile}, "private key does not match"},
	} {
		_, err := sabakan.NewClient("https://x/graphql", c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// startTLS serves an empty searchMachines result over HTTPS with the
// test CA's server certificate, asking for a client certificate signed by
// that CA when clientAuth is set.
func startTLS(t *testing.T, pki *testpki.PKI, clientAuth bool) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"searchMachines":[]}}`)
	}))
	cert, err := tls.X509KeyPair([]byte(pki.ServerCert), []byte(pki.ServerKey))
	if err != nil {
		t.Fatal(err)
	}
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientAuth {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(pki.CA))
		ts.TLS.ClientCAs, ts.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	// Handshake failures are the point of some cases, not news.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTPSWithCustomCA(t *testing.T) {
	pki := testpki.New(t)
	ts := startTLS(t, pki, false)
	cl, err := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{CAFile: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SearchMachines(context.Background(), sabakan.Variables{}); err != nil {
		t.Errorf("HTTPS with the server's CA: %v", err)
	}
	plain, _ := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{Retries: -1})
	if _, err := plain.SearchMachines(context.Background(), sabakan.Variables{}); err == nil {
		t.Error("HTTPS without the CA succeeded")
	}
}

// TestHTTPSWithClientCertificate: a sabakan that asks for a client
// certificate gets the one in CertFile and KeyFile, and refuses a client
// without one.
func TestHTTPSWithClientCertificate(t *testing.T) {
	pki := testpki.New(t)
	ts := startTLS(t, pki, true)
	cl, err := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SearchMachines(context.Background(), sabakan.Variables{}); err != nil {
		t.Errorf("HTTPS with a client certificate: %v", err)
	}
	anon, err := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{CAFile: pki.CAFile, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.SearchMachines(context.Background(), sabakan.Variables{}); !errors.Is(err, sabakan.ErrUnreachable) {
		t.Errorf("HTTPS without the client certificate: error %v, want sabakan unreachable", err)
	}
}

// BenchmarkSearch20000: one searchMachines call returning 20,000 machines,
// from HTTP to []machine.Machine.
func BenchmarkSearch20000(b *testing.B) {
	o := dcgen.Default(now)
	o.Racks, o.PerRack = 500, 40
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(map[string]any{"data": map[string]any{"searchMachines": dcgen.Machines(o)}}); err != nil {
		b.Fatal(err)
	}
	body := buf.Bytes()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer ts.Close()
	cl, _ := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ms, err := cl.SearchMachines(context.Background(), sabakan.Variables{})
		if err != nil || len(ms) != 20000 {
			b.Fatal(len(ms), err)
		}
	}
}

// BenchmarkSearch20000Server: the daemon's query against the compatible
// server holding 20,000 machines, over HTTP: the sabakan-ms/op of the
// daemon's tick benchmarks, the server's answer included.
func BenchmarkSearch20000Server(b *testing.B) {
	o := dcgen.Default(now)
	o.Racks, o.PerRack = 500, 40
	ts, _ := startServer(b, dcgen.Machines(o))
	cl, _ := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{})
	b.ReportAllocs()
	for b.Loop() {
		ms, err := cl.SearchMachines(context.Background(), sabakan.Variables{})
		if err != nil || len(ms) != 19500 {
			b.Fatal(len(ms), err)
		}
	}
}

// A redirect is followed only to the same scheme, host and port, at most
// MaxRedirects times; a redirect elsewhere fails the query and nothing is
// sent there.
func TestRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"searchMachines":[]}}`)
	}))
	defer other.Close()
	hops := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/graphql?token=t", http.StatusTemporaryRedirect)
		case "/loop":
			hops++
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/graphql", http.StatusPermanentRedirect)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"searchMachines":[]}}`)
		}
	}))
	defer ts.Close()
	query := func(path string) error {
		cl, err := sabakan.NewClient(ts.URL+path, sabakan.Options{Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.SearchMachines(context.Background(), sabakan.Variables{})
		return err
	}
	if err := query("/moved"); err != nil {
		t.Errorf("a redirect to the same host: %v", err)
	}
	err := query("/away")
	host := strings.TrimPrefix(other.URL, "http://")
	if err == nil || !errors.Is(err, sabakan.ErrQuery) || !strings.Contains(err.Error(), "redirect refused: to http://"+host+", another host") {
		t.Errorf("a redirect elsewhere: %v, want a QUERY error naming %s", err, host)
	}
	if err != nil && strings.Contains(err.Error(), "token") {
		t.Errorf("the error shows the target's query: %v", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d requests reached the other host", n)
	}
	if err := query("/loop"); err == nil || !strings.Contains(err.Error(), "more than 3 redirects") {
		t.Errorf("a redirect loop: %v", err)
	}
	if hops != sabakan.MaxRedirects+1 {
		t.Errorf("%d redirects followed, want %d", hops-1, sabakan.MaxRedirects)
	}
}

// The URL's password never shows in an error or in Redacted().
func TestURLRedacted(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 400) }))
	defer ts.Close()
	u := strings.Replace(ts.URL, "http://", "http://admin:s3cret@", 1) + "/graphql"
	cl, err := sabakan.NewClient(u, sabakan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.SearchMachines(context.Background(), sabakan.Variables{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "admin:xxxxx@") {
		t.Errorf("error %v: want the password masked", err)
	}
	if strings.Contains(cl.Redacted(), "s3cret") || !strings.Contains(cl.Redacted(), "admin:xxxxx@") {
		t.Errorf("Redacted() = %s: want the password masked", cl.Redacted())
	}
}
