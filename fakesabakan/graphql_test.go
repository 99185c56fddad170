package fakesabakan

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
)

const searchQuery = `query($h: MachineParams, $n: MachineParams) { searchMachines(having: $h, notHaving: $n) { spec { serial } } }`

// gql posts a GraphQL request.
func (s *testServer) gql(query string, vars any) reply {
	s.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.do("POST", "/graphql", "application/json", string(body))
}

func serials(t *testing.T, r reply) string {
	t.Helper()
	var resp struct {
		Data struct {
			SearchMachines []struct {
				Spec struct{ Serial string }
			}
		}
		Errors []any
	}
	if r.code != 200 {
		t.Fatalf("HTTP %d %s", r.code, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &resp); err != nil || resp.Errors != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	var out []string
	for _, m := range resp.Data.SearchMachines {
		out = append(out, m.Spec.Serial)
	}
	return strings.Join(out, " ")
}

// TestGraphQLDatesKeepOffset: dates come back in the offset they were given
// in, with their fractional seconds.
func TestGraphQLDatesKeepOffset(t *testing.T) {
	_, store := newClock(now)
	m := mk("x1", 1, "cs", machine.StateHealthy, 100)
	var err error
	if m.Spec.RegisterDate, err = time.Parse(time.RFC3339Nano, "2026-11-22T12:46:12.604070862Z"); err != nil {
		t.Fatal(err)
	}
	if m.Spec.RetireDate, err = time.Parse(time.RFC3339Nano, "2027-12-21T22:33:31+09:00"); err != nil {
		t.Fatal(err)
	}
	if err := store.Load([]machine.Machine{m}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, store)
	runSteps(t, s, []restStep{
		{"a registered retire date keeps its offset", "POST", "/api/v1/machines",
			`[{"serial":"x2","rack":1,"role":"cs","bmc":{"type":"x"},"retire-date":"2030-04-05T06:07:08.25-05:00"}]`, 201, ""},
		{"a retire date set later keeps its offset", "PUT", "/api/v1/retire-date/x1", "2031-08-01T05:00:00+09:00", 200, ""},
	})
	r := s.gql(`{ searchMachines { spec { serial registerDate retireDate } } }`, nil)
	want := `{"data":{"searchMachines":[` +
		`{"spec":{"serial":"x1","registerDate":"2026-11-22T12:46:12.604070862Z","retireDate":"2031-08-01T05:00:00+09:00"}},` +
		`{"spec":{"serial":"x2","registerDate":"2026-01-01T12:00:00Z","retireDate":"2030-04-05T06:07:08.25-05:00"}}]}}`
	if got := strings.TrimSpace(r.body); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestGraphQLEnumsAnyCase: enum values in variables are accepted in any
// case, as sabakan does.
func TestGraphQLEnumsAnyCase(t *testing.T) {
	s := serve(t, testStore(t))
	for _, c := range []struct {
		vars map[string]any
		want string
	}{
		{map[string]any{"h": map[string]any{"states": []string{"healthy"}}}, "a1 c1 e3"},
		{map[string]any{"h": map[string]any{"states": []string{"Unreachable", "RETIRED"}}}, "b2 d2"},
		{map[string]any{"n": map[string]any{"states": []string{"retired"}, "roles": []string{"boot"}}}, "c1 d2 e3"},
		// A single value where a list is expected is a list of one.
		{map[string]any{"h": map[string]any{"states": "healthy"}}, "a1 c1 e3"},
	} {
		if got := serials(t, s.gql(searchQuery, c.vars)); got != c.want {
			t.Errorf("%v: %q, want %q", c.vars, got, c.want)
		}
	}
	r := s.gql(`mutation($s: MachineState!) { setMachineState(serial: "e3", state: $s) { state } }`, map[string]any{"s": "unhealthy"})
	if got := strings.TrimSpace(r.body); r.code != 200 || got != `{"data":{"setMachineState":{"state":"UNHEALTHY"}}}` {
		t.Errorf("setMachineState with a lower-case variable: %d %s", r.code, got)
	}
}

// TestGraphQLBigInts: an Int above 2^31 in variables is accepted, as
// sabakan's 64-bit Ints are.
func TestGraphQLBigInts(t *testing.T) {
	s := serve(t, testStore(t))
	for _, c := range []struct {
		vars map[string]any
		want string
	}{
		{map[string]any{"h": map[string]any{"racks": []int64{3000000000, 1}}}, "a1 c1"},
		{map[string]any{"h": map[string]any{"minDaysBeforeRetire": int64(3000000000)}}, ""},
		{map[string]any{"h": map[string]any{"minDaysBeforeRetire": int64(-3000000000)}}, "a1 b2 c1 d2 e3"},
		{map[string]any{"n": map[string]any{"minDaysBeforeRetire": int64(3000000000)}}, "a1 b2 c1 d2 e3"},
		{map[string]any{"n": map[string]any{"racks": []int64{1, 1 << 40}}}, "b2 d2 e3"},
	} {
		if got := serials(t, s.gql(searchQuery, c.vars)); got != c.want {
			t.Errorf("%v: %q, want %q", c.vars, got, c.want)
		}
	}
	r := s.gql(`query($r: Int!) { searchMachines(having: {racks: [$r]}) { spec { serial } } }`, map[string]any{"r": int64(1) << 40})
	if got := serials(t, r); got != "" {
		t.Errorf("a top-level 2^40 Int: %q", got)
	}
}

// TestGraphQLRequestErrors: errors of the request are HTTP 422 with
// {"errors":[{"message", "extensions":{"code"}}],"data":null}.
func TestGraphQLRequestErrors(t *testing.T) {
	s := serve(t, testStore(t))
	cases := []struct {
		name, body, code, want string
	}{
		{"a bad enum value", `{"query":"query($s: [MachineState!]) { searchMachines(having: {states: $s}) { spec { serial } } }","variables":{"s":["BROKEN"]}}`,
			codeValidationFailed, "BROKEN is not a valid MachineState"},
		{"an unknown input field", `{"query":"query($h: MachineParams) { searchMachines(having: $h) { spec { serial } } }","variables":{"h":{"rackz":[1]}}}`,
			codeValidationFailed, "unknown field"},
		{"an unknown field", `{"query":"{ searchMachines { spec { nope } } }"}`, codeValidationFailed, `Cannot query field "nope"`},
		{"a syntax error", `{"query":"{ searchMachines { spec { serial } }"}`, codeParseFailed, "Expected Name"},
		{"an unknown operationName", `{"query":"query a { searchMachines { spec { serial } } }","operationName":"b"}`, codeValidationFailed, "operation b not found"},
		{"a float where an Int is expected", `{"query":"query($d: Int) { searchMachines(having: {minDaysBeforeRetire: $d}) { spec { serial } } }","variables":{"d":1.5}}`,
			codeValidationFailed, "as Int"},
		{"a float in a list of Ints", `{"query":"query($h: MachineParams) { searchMachines(having: $h) { spec { serial } } }","variables":{"h":{"racks":[1.5]}}}`,
			codeValidationFailed, "as Int"},
		{"a missing required variable", `{"query":"query($s: ID!) { machine(serial: $s) { spec { serial } } }"}`, codeValidationFailed, "must be defined"},
		{"an enum literal in lower case", `{"query":"mutation { setMachineState(serial: \"e3\", state: healthy) { state } }"}`, codeValidationFailed, "healthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.do("POST", "/graphql", "application/json", c.body)
			if r.code != 422 {
				t.Fatalf("HTTP %d %s, want 422", r.code, r.body)
			}
			checkRequestError(t, r, c.code, c.want)
		})
	}
}

func checkRequestError(t *testing.T, r reply, code, want string) {
	t.Helper()
	var resp map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &resp); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	if string(resp["data"]) != "null" || len(resp) != 2 {
		t.Errorf("body %s: want errors and \"data\":null", r.body)
	}
	var errs []struct {
		Message    string
		Extensions struct{ Code string }
	}
	if err := json.Unmarshal(resp["errors"], &errs); err != nil || len(errs) == 0 {
		t.Fatalf("errors %s: %v", resp["errors"], err)
	}
	if !strings.Contains(errs[0].Message, want) || errs[0].Extensions.Code != code {
		t.Errorf("error %+v, want a message with %q and code %s", errs[0], want, code)
	}
}

// TestGraphQLTransport: POST needs a JSON Content-Type (400 otherwise), GET
// serves queries from the URL, OPTIONS says what is allowed.
func TestGraphQLTransport(t *testing.T) {
	s := serve(t, testStore(t))
	q := `{"query":"{ searchMachines(having: {racks: [1]}) { spec { serial } } }"}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx"} {
		r := s.do("POST", "/graphql", ct, q)
		if r.code != 400 || strings.TrimSpace(r.body) != `{"errors":[{"message":"transport not supported"}],"data":null}` {
			t.Errorf("Content-Type %q: HTTP %d %s, want 400 transport not supported", ct, r.code, r.body)
		}
	}
	if r := s.do("POST", "/graphql", "application/json; charset=utf-8", q); serials(t, r) != "a1 c1" {
		t.Errorf("application/json with a charset: %s", r.body)
	}
	if r := s.do("POST", "/graphql", "application/json", "not json"); r.code != 400 || !strings.Contains(r.body, "json request body could not be decoded: line 1, column 2: invalid character") {
		t.Errorf("a body that is not JSON: HTTP %d %s", r.code, r.body)
	}
	// JSON of the wrong shape: encoding/json named the Go types
	// (graphQLParams, map[string]interface {}).
	for body, want := range map[string]string{
		`[]`:                                  "json request body could not be decoded: line 1, column 1: want an object, got an array",
		`{"query": 1}`:                        "json request body could not be decoded: line 1, column 11: query: want a string, got the number 1",
		`{"query": "{ x }", "variables": []}`: "json request body could not be decoded: line 1, column 33: variables: want an object, got an array",
		`{"query": "{ x }"} {}`:               "json request body could not be decoded: line 1, column 20: trailing data after the JSON value",
	} {
		r := s.do("POST", "/graphql", "application/json", body)
		if want, _ := json.Marshal(want); r.code != 400 || !strings.Contains(r.body, string(want)) {
			t.Errorf("%s: HTTP %d %s, want 400 and %s", body, r.code, r.body, want)
		}
	}

	get := func(params url.Values) reply { return s.do("GET", "/graphql?"+params.Encode(), "", "") }
	if got := serials(t, get(url.Values{"query": {`{ searchMachines(having: {racks: [1]}) { spec { serial } } }`}})); got != "a1 c1" {
		t.Errorf("GET: %q", got)
	}
	if got := serials(t, get(url.Values{
		"query":         {`query a { x: machine(serial: "a1") { spec { serial } } } query b($h: MachineParams) { searchMachines(having: $h) { spec { serial } } }`},
		"operationName": {"b"},
		"variables":     {`{"h": {"states": ["unreachable"]}}`},
	})); got != "d2" {
		t.Errorf("GET with operationName and variables: %q", got)
	}
	r := get(url.Values{"query": {`mutation { setMachineState(serial: "e3", state: UNHEALTHY) { state } }`}})
	if r.code != 406 || !strings.Contains(r.body, "GET requests only allow query operations") {
		t.Errorf("a mutation over GET: HTTP %d %s", r.code, r.body)
	}
	if m, _ := s.do("GET", "/api/v1/state/e3", "", ""), 0; m.body != "healthy" {
		t.Errorf("a mutation over GET changed the state to %s", m.body)
	}
	r = get(url.Values{"query": {`{ searchMachines { spec { serial } } }`}, "variables": {"{"}})
	if r.code != 400 || !strings.Contains(r.body, "variables could not be decoded") {
		t.Errorf("GET with bad variables: HTTP %d %s", r.code, r.body)
	}
	r = get(url.Values{"query": {`{ searchMachines { spec { nope } } }`}})
	if r.code != 422 {
		t.Errorf("GET with an invalid query: HTTP %d %s", r.code, r.body)
	}
	checkRequestError(t, r, codeValidationFailed, "nope")
	if r := s.do("OPTIONS", "/graphql", "", ""); r.code != 200 || r.header.Get("Allow") != "OPTIONS, GET, POST" {
		t.Errorf("OPTIONS: HTTP %d, Allow %q", r.code, r.header.Get("Allow"))
	}
}

// TestGraphQLResolverErrors: an error of a resolver is HTTP 200 with an
// errors array naming the path, as sabakan's graphql.md shows.
func TestGraphQLResolverErrors(t *testing.T) {
	s := serve(t, testStore(t))
	cases := []struct{ query, want string }{
		{`{ machine(serial: "zz") { spec { serial } } }`,
			`{"errors":[{"message":"not found","path":["machine"],"extensions":{"serial":"zz","type":"MACHINE_NOT_FOUND"}}],"data":null}`},
		{`mutation { setMachineState(serial: "e3", state: RETIRED) { state } }`,
			`{"errors":[{"message":"transition from [ healthy ] to [ retired ] is forbidden","path":["setMachineState"],"extensions":{"serial":"e3","type":"INVALID_STATE_TRANSITION"}}],"data":null}`},
		{`mutation { setMachineState(serial: "zz", state: HEALTHY) { state } }`,
			`{"errors":[{"message":"not found","path":["setMachineState"],"extensions":{"serial":"zz","type":"MACHINE_NOT_FOUND"}}],"data":null}`},
		{`{ machine(serial: "c1") { spec { labels { name value } } status { state } } }`,
			`{"data":{"machine":{"spec":{"labels":[{"name":"dc","value":"ty3"},{"name":"gpu","value":"yes"}]},"status":{"state":"HEALTHY"}}}}`},
	}
	for _, c := range cases {
		r := s.gql(c.query, nil)
		if r.code != 200 || strings.TrimSpace(r.body) != c.want {
			t.Errorf("%s:\n got HTTP %d %s\nwant HTTP 200 %s", c.query, r.code, r.body, c.want)
		}
		if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) {
			t.Errorf("%s: Content-Length %q, body of %d bytes", c.query, cl, len(r.body))
		}
	}
}
