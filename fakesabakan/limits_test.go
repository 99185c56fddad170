package fakesabakan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// quickly is how long a refused request may take: the work the limits
// prevent takes seconds to minutes (a query of 8,000 fields of one name,
// 56 KiB, took 13 s to validate; fragments doubling 30 times would walk
// 2^30 fields), a refusal a few milliseconds.
const quickly = 2 * time.Second

// doubling is a query whose fragment F<levels> spreads F<levels-1> twice,
// down to F0, which selects one field: 2^levels fields once expanded.
func doubling(levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{ searchMachines { spec { ...F%d } } }\nfragment F0 on MachineSpec { serial }", levels)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "\nfragment F%d on MachineSpec { ...F%d ...F%d }", i, i-1, i-1)
	}
	return b.String()
}

// TestGraphQLLimits: a query too big, too long, too deep or too costly is
// refused with a GraphQL request error (HTTP 422, data null, the code and
// a message naming the limit), quickly.
func TestGraphQLLimits(t *testing.T) {
	s := serve(t, testStore(t))
	nested := `{ __type(name: "Machine") { fields { type ` + strings.Repeat("{ ofType ", 18) + "{ name }" + strings.Repeat(" }", 18) + " } } }"
	for _, c := range []struct {
		name, query, code, want string
	}{
		{"a query over 64 KiB", `{ searchMachines { spec { serial } } } # ` + strings.Repeat("x", 1<<20),
			codeParseFailed, fmt.Sprintf("query is %d bytes, over the limit of 65536", 1<<20+41)},
		{"5,000 fields of one name (validation compares them pairwise)", `{ searchMachines { spec { ` + strings.Repeat("serial ", 5000) + `} } }`,
			codeParseFailed, "exceeded token limit of 1000"},
		{"8,000 tokens of inline fragments nested 2,000 deep", `{ searchMachines { spec { ` + strings.Repeat("... { ", 2000) + "serial" + strings.Repeat(" }", 2000) + ` } } }`,
			codeParseFailed, "exceeded token limit of 1000"},
		{"fragments doubling 30 times", doubling(30), codeValidationFailed,
			"operation selects more than 100000 fields with its fragments expanded at every spread"},
		{"fragments doubling 10 times", doubling(10), "COMPLEXITY_LIMIT_EXCEEDED",
			"operation has complexity 1026, which exceeds the limit of 1000"},
		{"fields nested 22 deep", nested, codeValidationFailed, "operation nests fields 22 deep, over the limit of 16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": c.query})
			start := time.Now()
			r := s.do("POST", "/graphql", "application/json", string(body))
			took := time.Since(start)
			if r.code != 422 {
				t.Fatalf("HTTP %d %.300s, want 422", r.code, r.body)
			}
			checkRequestError(t, r, c.code, c.want)
			if took > quickly {
				t.Errorf("refused in %v, want under %v", took, quickly)
			}
		})
	}
}

// introspection asks for the whole schema, as GraphQL tools do.
const introspection = `query Schema {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...Type }
    directives { name description locations args { ...Input } }
  }
}
fragment Type on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...Input } type { ...Ref } isDeprecated deprecationReason }
  inputFields { ...Input }
  interfaces { ...Ref }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...Ref }
}
fragment Input on __InputValue { name description type { ...Ref } defaultValue }
fragment Ref on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

// TestGraphQLWithinLimits: what clients ask stays within the limits: the
// daemon's query, a query of every field of a machine, a whole-schema
// introspection.
func TestGraphQLWithinLimits(t *testing.T) {
	s := serve(t, testStore(t))
	all := `{ searchMachines { spec { serial labels { name value } rack indexInRack role ipv4 registerDate retireDate bmc { bmcType ipv4 } }
		status { state timestamp duration } } machine(serial: "a1") { spec { serial } } }`
	for name, query := range map[string]string{"the daemon's query": daemonQuery(t), "every field": all, "introspection": introspection} {
		r := s.gql(query, nil)
		if r.code != 200 || strings.Contains(r.body, `"errors"`) || !strings.Contains(r.body, `"data":{`) {
			t.Errorf("%s: HTTP %d %.300s", name, r.code, r.body)
		}
	}
}

// TestNewHTTPServer: the server NewHTTPServer returns has the documented
// timeouts, bounds every request body (also of a handler wrapping
// Handler's, as fakesabakan's fault endpoint does) and closes a connection
// whose body does not arrive within the read timeout.
func TestNewHTTPServer(t *testing.T) {
	srv, err := New(testStore(t))
	if err != nil {
		t.Fatal(err)
	}
	api := srv.Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /-/fault", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		}
	})
	mux.Handle("/", api)
	hs := NewHTTPServer(mux)
	if hs.ReadHeaderTimeout != 10*time.Second || hs.ReadTimeout != 30*time.Second || hs.IdleTimeout != 2*time.Minute || hs.MaxHeaderBytes != 64<<10 || hs.WriteTimeout != 0 {
		t.Errorf("timeouts %v %v %v, write %v, header bytes %d", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.IdleTimeout, hs.WriteTimeout, hs.MaxHeaderBytes)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = hs
	ts.Start()
	t.Cleanup(ts.Close)
	s := &testServer{t: t, url: ts.URL}
	big := strings.Repeat("x", maxRequestBytes+1)
	if r := s.do("PUT", "/-/fault", "", big); r.code != 413 || !strings.Contains(r.body, "request body too large") {
		t.Errorf("a fault body over 16 MiB: HTTP %d %.200s", r.code, r.body)
	}
	if r := s.do("POST", "/api/v1/machines", "", `["`+big+`"]`); r.code != 400 || !strings.Contains(r.body, "request body too large") {
		t.Errorf("a machines body over 16 MiB: HTTP %d %.200s", r.code, r.body)
	}
	if r := s.do("GET", "/health", "", ""); r.code != 200 {
		t.Errorf("GET /health: HTTP %d %s", r.code, r.body)
	}

	// The same server with a read timeout short enough for a test.
	short := NewHTTPServer(mux)
	short.ReadTimeout = 300 * time.Millisecond
	ts = httptest.NewUnstartedServer(nil)
	ts.Config = short
	ts.Start()
	t.Cleanup(ts.Close)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "PUT /-/fault HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nslow")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if took := time.Since(start); took < short.ReadTimeout || took > 5*time.Second {
		t.Errorf("a body that never arrives: %q %v after %v, want the connection ended after the read timeout", line, err, took)
	}
}
