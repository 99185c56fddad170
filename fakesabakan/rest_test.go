package fakesabakan

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// restStep is one request and what sabakan v3.1.9 answers to it; want is
// the exact success body, or a part of the error message.
type restStep struct {
	fact               string
	method, path, body string
	code               int
	want               string
}

func runSteps(t *testing.T, s *testServer, steps []restStep) {
	t.Helper()
	for _, st := range steps {
		r := s.do(st.method, st.path, "", st.body)
		if r.code != st.code {
			t.Errorf("%s: %s %s %q: HTTP %d %s, want %d", st.fact, st.method, st.path, st.body, r.code, r.body, st.code)
			continue
		}
		if r.code/100 == 2 {
			if r.body != st.want {
				t.Errorf("%s: %s %s: body %q, want %q", st.fact, st.method, st.path, r.body, st.want)
			}
			continue
		}
		t.Run(st.fact, func(t *testing.T) { checkErrorBody(t, r, st.want) })
	}
}

func TestRESTFacts(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	const bmc = `"bmc":{"type":"IPMI-2.0"}`
	runSteps(t, s, []restStep{
		{"POST machines: 201, empty body", "POST", "/api/v1/machines",
			`[{"serial":"s1","labels":{"dc":"ty3"},"rack":2,"role":"cs",` + bmc + `},{"serial":"s2","rack":2,"role":"ss","bmc":{"type":"iDRAC-9"},"retire-date":"2030-01-01T00:00:00+09:00"}]`, 201, ""},
		{"POST machines: a serial already registered is 409", "POST", "/api/v1/machines",
			`[{"serial":"s3","rack":1,"role":"cs",` + bmc + `},{"serial":"s1","rack":1,"role":"cs",` + bmc + `}]`, 409, "conflicted: machines[1]: machine s1 is already registered"},
		{"POST machines: a refused request registers nothing", "GET", "/api/v1/state/s3", "", 404, "requested resource is not found"},
		{"POST machines: an empty role is 400 invalid role", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,` + bmc + `}]`, 400, "invalid request: machines[0] (serial s4): invalid role"},
		{"POST machines: an invalid role is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,"role":"c s",` + bmc + `}]`, 400, "invalid role"},
		{"POST machines: an invalid label name is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,"role":"cs","labels":{"-dc":"ty3"},` + bmc + `}]`, 400, "invalid label name"},
		{"POST machines: an invalid label value is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,"role":"cs","labels":{"dc":"ty 3"},` + bmc + `}]`, 400, "invalid label value"},
		{"POST machines: an empty BMC type is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,"role":"cs","bmc":{"type":""}}]`, 400, "BMC type is empty"},
		{"POST machines: an empty serial is 400", "POST", "/api/v1/machines", `[{"rack":1,"role":"cs",` + bmc + `}]`, 400, "serial is empty"},
		{"POST machines: a negative rack is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":-1,"role":"cs",` + bmc + `}]`, 400, "rack"},
		{"POST machines: a field outside MachineSpec is 400", "POST", "/api/v1/machines", `[{"serial":"s4","rack":1,"role":"cs","extra":1,` + bmc + `}]`, 400, `unknown field "extra"`},
		{"POST machines: a boot server", "POST", "/api/v1/machines", `[{"serial":"b1","rack":5,"role":"boot",` + bmc + `}]`, 201, ""},
		{"POST machines: a second boot server in a rack is 409", "POST", "/api/v1/machines", `[{"serial":"b2","rack":5,"role":"boot",` + bmc + `}]`, 409, "rack 5 already has a boot server"},
		{"POST machines: two boot servers of one rack in one request is 409", "POST", "/api/v1/machines",
			`[{"serial":"b3","rack":6,"role":"boot",` + bmc + `},{"serial":"b4","rack":6,"role":"boot",` + bmc + `}]`, 409, "rack 6 already has a boot server"},
		{"POST machines: a serial twice in one request is 500", "POST", "/api/v1/machines",
			`[{"serial":"d1","rack":1,"role":"cs",` + bmc + `},{"serial":"d1","rack":1,"role":"cs",` + bmc + `}]`, 500, "serial d1 appears more than once in the request: Internal Server Error"},

		{"PUT state: the exact lower-case state, 200, empty body", "PUT", "/api/v1/state/s1", "healthy", 200, ""},
		{"PUT state: upper case is 400", "PUT", "/api/v1/state/s1", "HEALTHY", 400, "invalid request: invalid state"},
		{"PUT state: a trailing newline is 400", "PUT", "/api/v1/state/s1", "unhealthy\n", 400, "invalid state"},
		{"PUT state: an unknown state is 400", "PUT", "/api/v1/state/s1", "broken", 400, "invalid state"},
		{"PUT state: a refused transition is 500", "PUT", "/api/v1/state/s1", "retired", 500, "transition from [ healthy ] to [ retired ] is forbidden"},
		{"PUT state: an unknown machine is 404", "PUT", "/api/v1/state/nope", "healthy", 404, "not found"},
		{"PUT state: the same state again is 200", "PUT", "/api/v1/state/s1", "healthy", 200, ""},
		{"GET state: the lower-case state", "GET", "/api/v1/state/s1", "", 200, "healthy"},
		{"GET state: an unknown machine is 404", "GET", "/api/v1/state/nope", "", 404, "not found"},

		{"PUT retire-date: a bare RFC 3339 time, 200", "PUT", "/api/v1/retire-date/s1", "2031-02-03T04:05:06.5+09:00", 200, ""},
		{"PUT retire-date: a quoted time is 400", "PUT", "/api/v1/retire-date/s1", `"2031-02-03T04:05:06Z"`, 400, "RFC 3339"},
		{"PUT retire-date: not a time is 400", "PUT", "/api/v1/retire-date/s1", "tomorrow", 400, "RFC 3339"},
		{"PUT retire-date: an unknown machine is 404", "PUT", "/api/v1/retire-date/nope", "2031-02-03T04:05:06Z", 404, "not found"},

		{"PUT labels: 200, empty body", "PUT", "/api/v1/labels/s1/product", "R630", 200, ""},
		{"PUT labels: an invalid name is 400", "PUT", "/api/v1/labels/s1/-product", "R630", 400, "invalid label name"},
		{"PUT labels: an invalid value is 400", "PUT", "/api/v1/labels/s1/product", "R 630", 400, "invalid label value"},
		{"PUT labels: the value is the whole body, a newline is invalid", "PUT", "/api/v1/labels/s1/product", "R630\n", 400, "invalid label value"},
		{"PUT labels: an unknown machine is 404", "PUT", "/api/v1/labels/nope/product", "R630", 404, "not found"},
		{"PUT labels: a label to remove", "PUT", "/api/v1/labels/s1/tmp", "x", 200, ""},
		{"DELETE labels: 200, empty body", "DELETE", "/api/v1/labels/s1/tmp", "", 200, ""},
		{"DELETE labels: a label the machine does not have is 404", "DELETE", "/api/v1/labels/s1/tmp", "", 404, "has no label tmp"},
		{"DELETE labels: an unknown machine is 404", "DELETE", "/api/v1/labels/nope/tmp", "", 404, "not found"},
		{"DELETE labels: an invalid name is 400", "DELETE", "/api/v1/labels/s1/-tmp", "", 400, "invalid label name"},

		{"DELETE machines: a machine that is not RETIRED is 500", "DELETE", "/api/v1/machines/s1", "", 500, "non-retired machine cannot be deleted"},
		{"DELETE machines: retiring first", "PUT", "/api/v1/state/s2", "retiring", 200, ""},
		{"DELETE machines: retired", "PUT", "/api/v1/state/s2", "retired", 200, ""},
		{"DELETE machines: a RETIRED machine, 200, empty body", "DELETE", "/api/v1/machines/s2", "", 200, ""},
		{"DELETE machines: an unknown machine is 404", "DELETE", "/api/v1/machines/s2", "", 404, "not found"},

		{"an unsupported method is 405", "PATCH", "/api/v1/state/s1", "healthy", 405, "method not allowed"},
		{"an unknown path is 404", "GET", "/api/v1/nothing", "", 404, "not found"},
		{"GET /version", "GET", "/version", "", 200, `{"version":"devel"}` + "\n"},
		{"GET /health", "GET", "/health", "", 200, `{"health":"healthy"}` + "\n"},
	})

	ms := s.machines("serial=s1")
	if len(ms) != 1 {
		t.Fatalf("%d machines", len(ms))
	}
	sp := ms[0].Spec
	if got := sp.RetireDate.Format(time.RFC3339Nano); got != "2031-02-03T04:05:06.5+09:00" {
		t.Errorf("retire date %s: the offset given is not kept", got)
	}
	if !sp.RegisterDate.Equal(now) || sp.RegisterDate.Location() != time.UTC {
		t.Errorf("register date %s, want now in UTC", sp.RegisterDate)
	}
	if !maps.Equal(sp.Labels, map[string]string{"dc": "ty3", "product": "R630"}) {
		t.Errorf("labels %v", sp.Labels)
	}
	if sp.IndexInRack != 1 || !slices.Equal(sp.IPv4, []string{"10.0.2.1"}) || sp.BMC.Type != "IPMI-2.0" {
		t.Errorf("s1 = %+v", sp)
	}
}

// TestRESTStrictJSON: the bodies of POST machines and PUT ipam are read
// with internal/strictjson, stricter than sabakan: a name in another case
// or given twice is refused, and each refusal says where it is; a time
// that does not parse says why.
func TestRESTStrictJSON(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	const spec = `"rack":1,"role":"cs","bmc":{"type":"IPMI-2.0"}`
	runSteps(t, s, []restStep{
		{"a name in another case is 400", "POST", "/api/v1/machines", `[{"Serial":"s1",` + spec + `}]`, 400, `invalid request: machines: line 1, column 3: [0]: unknown field "Serial"; did you mean serial?`},
		{"a name given twice is 400", "POST", "/api/v1/machines", `[{"serial":"s1","serial":"s2",` + spec + `}]`, 400, `machines: line 1, column 17: [0]: duplicate key "serial" (first at line 1, column 3)`},
		{"a label given twice is 400", "POST", "/api/v1/machines", `[{"serial":"s1","labels":{"a":"1","a":"2"},` + spec + `}]`, 400, `machines: line 1, column 35: [0].labels: duplicate key "a" (first at line 1, column 27)`},
		{"a retire date that is not RFC 3339 is 400, and says what it should be", "POST", "/api/v1/machines", `[{"serial":"s1","retire-date":"2030-01-01",` + spec + `}]`, 400,
			`machines: line 1, column 31: [0].retire-date: want a time such as 2006-01-02T15:04:05Z (RFC 3339), got the string "2030-01-01"`},
		{"a retire date out of range is 400, and says why", "POST", "/api/v1/machines", `[{"serial":"s1","retire-date":"2030-13-01T00:00:00Z",` + spec + `}]`, 400,
			`machines: line 1, column 31: [0].retire-date: want a time such as 2006-01-02T15:04:05Z (RFC 3339), got the string "2030-13-01T00:00:00Z": month out of range`},
		{"an empty body is 400", "POST", "/api/v1/machines", "", 400, "machines: no JSON value"},
		{"trailing data is 400", "POST", "/api/v1/machines", `[] []`, 400, "machines: line 1, column 4: trailing data after the JSON value"},
		{"nothing was registered", "GET", "/api/v1/state/s1", "", 404, "requested resource is not found"},
		{"PUT ipam: trailing data is 400", "PUT", "/api/v1/config/ipam", ipamExample + " {}", 400, "IPAM configuration: line 14, column 3: trailing data after the JSON value"},
	})
}

// TestRESTSameStateKeepsDuration: setting the state a machine already has is
// 200 and does not restart its duration.
func TestRESTSameStateKeepsDuration(t *testing.T) {
	c, store := newClock(now)
	s := serve(t, store)
	runSteps(t, s, []restStep{
		{"register", "POST", "/api/v1/machines", `[{"serial":"s1","rack":1,"role":"cs","bmc":{"type":"x"}}]`, 201, ""},
		{"healthy", "PUT", "/api/v1/state/s1", "healthy", 200, ""},
	})
	c.advance(time.Minute)
	runSteps(t, s, []restStep{{"healthy again", "PUT", "/api/v1/state/s1", "healthy", 200, ""}})
	c.advance(time.Minute)
	st := s.machines("serial=s1")[0].Status
	if st.Duration != 120 || st.State != "healthy" || !st.Timestamp.Equal(now) {
		t.Errorf("status %+v, want healthy for 120 s since %s", st, now)
	}
}

// sabactlBody is what `sabactl machines create -f FILE` sends for a file
// like sabactl.md's example: each entry decoded into sabakan's MachineSpec
// and encoded again, so every field is there, with zero values for those
// the file leaves out (machine.md, api.md#postmachines). The second entry
// also has a retire date in +09:00.
const sabactlBody = `[{"serial":"1234abcd","labels":{"datacenter":"ty3","product":"R630"},"rack":1,"index-in-rack":0,"role":"boot","ipv4":null,"ipv6":null,"register-date":"0001-01-01T00:00:00Z","retire-date":"0001-01-01T00:00:00Z","bmc":{"ipv4":"","ipv6":"","type":"iDRAC-9"}},` +
	`{"serial":"2345bcde","labels":{"datacenter":"ty3","product":"R630"},"rack":1,"index-in-rack":0,"role":"worker","ipv4":null,"ipv6":null,"register-date":"0001-01-01T00:00:00Z","retire-date":"2027-12-21T22:33:31+09:00","bmc":{"ipv4":"","ipv6":"","type":"iDRAC-9"}}]`

func TestSabactlMachinesCreate(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	runSteps(t, s, []restStep{
		{"sabactl machines create's body is accepted", "POST", "/api/v1/machines", sabactlBody, 201, ""},
	})
	ms := s.machines("")
	if len(ms) != 2 {
		t.Fatalf("%d machines registered, want 2", len(ms))
	}
	boot, worker := ms[0].Spec, ms[1].Spec
	if boot.Serial != "1234abcd" || worker.Serial != "2345bcde" {
		t.Fatalf("serials %s %s", boot.Serial, worker.Serial)
	}
	if !boot.RegisterDate.Equal(now) || !boot.RetireDate.Equal(boot.RegisterDate) {
		t.Errorf("boot server: register %s retire %s; a zero retire date must be the register date, now", boot.RegisterDate, boot.RetireDate)
	}
	if got := worker.RetireDate.Format(time.RFC3339Nano); got != "2027-12-21T22:33:31+09:00" {
		t.Errorf("worker retire date %s, want 2027-12-21T22:33:31+09:00", got)
	}
	if boot.IndexInRack == worker.IndexInRack || len(worker.IPv4) != 1 || worker.IPv4[0] == "" || boot.Role != "boot" {
		t.Errorf("indices or addresses not assigned: %+v %+v", boot, worker)
	}
	if !maps.Equal(worker.Labels, map[string]string{"datacenter": "ty3", "product": "R630"}) {
		t.Errorf("labels %v", worker.Labels)
	}
}

// TestRegisterIgnoresAssignedFields: the fields sabakan assigns itself are
// accepted with any value and ignored.
func TestRegisterIgnoresAssignedFields(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	runSteps(t, s, []restStep{{"assigned fields are accepted", "POST", "/api/v1/machines",
		`[{"serial":"x","rack":3,"index-in-rack":9,"role":"cs","ipv4":["192.0.2.1"],"ipv6":["2001:db8::1"],` +
			`"register-date":"2001-01-01T00:00:00Z","bmc":{"type":"IPMI-2.0","ipv4":"192.0.2.2","ipv6":"2001:db8::2"}}]`, 201, ""}})
	sp := s.machines("serial=x")[0].Spec
	if sp.IndexInRack != 1 || !slices.Equal(sp.IPv4, []string{"10.0.3.1"}) || sp.IPv6 != nil ||
		!sp.RegisterDate.Equal(now) || sp.BMC.IPv4 != "" || sp.BMC.IPv6 != "" {
		t.Errorf("assigned fields were taken from the request: %+v", sp)
	}
}

// ipamExample is the IPAM configuration of sabakan's api.md and ipam.md.
const ipamExample = `{
   "max-nodes-in-rack": 28,
   "node-ipv4-pool": "10.69.0.0/16",
   "node-ipv4-range-size": 6,
   "node-ipv4-range-mask": 26,
   "node-ip-per-node": 3,
   "node-index-offset": 3,
   "node-gateway-offset": 1,
   "bmc-ipv4-pool": "10.72.16.0/20",
   "bmc-ipv4-offset": "0.0.1.0",
   "bmc-ipv4-range-size": 5,
   "bmc-ipv4-range-mask": 20,
   "bmc-ipv4-gateway-offset": 1
}`

func register(serial string, rack int, role string) string {
	return fmt.Sprintf(`{"serial":%q,"rack":%d,"role":%q,"bmc":{"type":"IPMI-2.0"}}`, serial, rack, role)
}

// TestIPAMExample registers machines under ipam.md's configuration and
// checks ipam.md's two examples: rack 0 index 4, and rack 1 index 5.
func TestIPAMExample(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	runSteps(t, s, []restStep{
		{"GET ipam before any is set is 404", "GET", "/api/v1/config/ipam", "", 404, "no IPAM configuration"},
		{"PUT ipam: 200, empty body", "PUT", "/api/v1/config/ipam", ipamExample, 200, ""},
		{"register", "POST", "/api/v1/machines", "[" + strings.Join([]string{
			register("r0-boot", 0, "boot"), register("r0-a", 0, "cs"),
			register("r1-boot", 1, "boot"), register("r1-a", 1, "cs"), register("r1-b", 1, "ss"),
		}, ",") + "]", 201, ""},
		{"PUT ipam once machines exist is 500", "PUT", "/api/v1/config/ipam", ipamExample, 500, "cannot be changed"},
	})
	var got, want any
	_ = json.Unmarshal([]byte(s.do("GET", "/api/v1/config/ipam", "", "").body), &got)
	_ = json.Unmarshal([]byte(ipamExample), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GET ipam = %v, want %v", got, want)
	}

	cases := []struct {
		serial string
		index  int
		ipv4   []string
		bmc    string
	}{
		{"r0-boot", 3, []string{"10.69.0.3", "10.69.0.67", "10.69.0.131"}, "10.72.17.3"},
		// ipam.md: "a node whose rack number is 0 and index in rack is 4".
		{"r0-a", 4, []string{"10.69.0.4", "10.69.0.68", "10.69.0.132"}, "10.72.17.4"},
		{"r1-a", 4, []string{"10.69.0.196", "10.69.1.4", "10.69.1.68"}, "10.72.17.36"},
		// ipam.md: "another node whose rack number is 1 and index in rack is 5".
		{"r1-b", 5, []string{"10.69.0.197", "10.69.1.5", "10.69.1.69"}, "10.72.17.37"},
	}
	for _, c := range cases {
		m := s.machines("serial=" + c.serial)[0]
		if m.Spec.IndexInRack != c.index || !slices.Equal(m.Spec.IPv4, c.ipv4) || m.Spec.BMC.IPv4 != c.bmc {
			t.Errorf("%s: index %d, ipv4 %v, bmc %s; want %d, %v, %s", c.serial, m.Spec.IndexInRack, m.Spec.IPv4, m.Spec.BMC.IPv4, c.index, c.ipv4, c.bmc)
		}
	}
	info := s.machines("serial=r1-b")[0].Info
	wantNIC := []NICConfig{
		{"10.69.0.197", "255.255.255.192", 26, "10.69.0.193"},
		{"10.69.1.5", "255.255.255.192", 26, "10.69.1.1"},
		{"10.69.1.69", "255.255.255.192", 26, "10.69.1.65"},
	}
	if !slices.Equal(info.Network.IPv4, wantNIC) || info.BMC.IPv4 != (NICConfig{"10.72.17.37", "255.255.240.0", 20, "10.72.16.1"}) {
		t.Errorf("info %+v", info)
	}
	// GraphQL shows the same addresses.
	r := s.do("POST", "/graphql", "application/json", `{"query":"{ machine(serial: \"r1-b\") { spec { indexInRack ipv4 bmc { ipv4 } } } }"}`)
	if want := `{"data":{"machine":{"spec":{"indexInRack":5,"ipv4":["10.69.0.197","10.69.1.5","10.69.1.69"],"bmc":{"ipv4":"10.72.17.37"}}}}}`; strings.TrimSpace(r.body) != want {
		t.Errorf("GraphQL: %s, want %s", r.body, want)
	}
}

// TestIPAMIndices: a boot server gets node-index-offset, the others the
// smallest free index after it, up to max-nodes-in-rack; a deleted
// machine's index is free again.
func TestIPAMIndices(t *testing.T) {
	_, store := newClock(now)
	s := serve(t, store)
	cfg := strings.Replace(ipamExample, `"max-nodes-in-rack": 28`, `"max-nodes-in-rack": 2`, 1)
	post := func(items ...string) string { return "[" + strings.Join(items, ",") + "]" }
	runSteps(t, s, []restStep{
		{"PUT ipam", "PUT", "/api/v1/config/ipam", cfg, 200, ""},
		{"a worker before the boot server", "POST", "/api/v1/machines", post(register("a", 7, "cs")), 201, ""},
		{"the boot server", "POST", "/api/v1/machines", post(register("boot", 7, "boot")), 201, ""},
		{"a second boot server in the rack is 409", "POST", "/api/v1/machines", post(register("boot2", 7, "boot")), 409, "already has a boot server"},
		{"the last index", "POST", "/api/v1/machines", post(register("b", 7, "cs")), 201, ""},
		{"more machines than max-nodes-in-rack is 500", "POST", "/api/v1/machines", post(register("c", 7, "cs")), 500, "no node index is available"},
		{"a rack beyond node-ipv4-pool is 500", "POST", "/api/v1/machines", post(register("far", 400, "cs")), 500, "outside node-ipv4-pool"},
		{"retiring", "PUT", "/api/v1/state/a", "retiring", 200, ""},
		{"retired", "PUT", "/api/v1/state/a", "retired", 200, ""},
		{"delete", "DELETE", "/api/v1/machines/a", "", 200, ""},
		{"the freed index is taken again", "POST", "/api/v1/machines", post(register("c", 7, "cs")), 201, ""},
	})
	got := map[string]int{}
	for _, m := range s.machines("rack=7") {
		got[m.Spec.Serial] = m.Spec.IndexInRack
	}
	if want := map[string]int{"boot": 3, "b": 5, "c": 4}; !maps.Equal(got, want) {
		t.Errorf("indices %v, want %v", got, want)
	}
}

func TestIPAMValidation(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`"max-nodes-in-rack": 28`, `"max-nodes-in-rack": 0`, "max-nodes-in-rack: must not be zero"},
		{`"node-ipv4-pool": "10.69.0.0/16"`, `"node-ipv4-pool": "10.69.0.1/16"`, "host part must be cleared"},
		{`"node-ipv4-pool": "10.69.0.0/16"`, `"node-ipv4-pool": "fd00::/64"`, "not an IPv4 network"},
		{`"node-ipv4-range-mask": 26`, `"node-ipv4-range-mask": 33`, "node-ipv4-range-mask: 33: must be 8 to 32"},
		{`"node-ip-per-node": 3`, `"node-ip-per-node": 0`, "node-ip-per-node: must not be zero"},
		{`"node-index-offset": 3`, `"node-index-offset": 0`, "node-index-offset: must not be zero"},
		{`"node-gateway-offset": 1`, `"node-gateway-offset": 0`, "node-gateway-offset: must not be zero"},
		{`"bmc-ipv4-offset": "0.0.1.0"`, `"bmc-ipv4-offset": "one"`, "bmc-ipv4-offset"},
		{`"bmc-ipv4-range-size": 5`, `"bmc-ipv4-range-size": 40`, "bmc-ipv4-range-size: 40 bits"},
		{`"bmc-ipv4-gateway-offset": 1`, `"bmc-ipv4-gateway-offset": -1`, "line 13, column 31: bmc-ipv4-gateway-offset: want an integer >= 0, got the number -1"},
		{`"bmc-ipv4-gateway-offset": 1`, `"bmc-ipv4-gateway-offest": 1`, `unknown field "bmc-ipv4-gateway-offest"`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, store := newClock(now)
			s := serve(t, store)
			body := strings.Replace(ipamExample, c.from, c.to, 1)
			r := s.do("PUT", "/api/v1/config/ipam", "", body)
			if r.code != 400 {
				t.Fatalf("HTTP %d %s, want 400", r.code, r.body)
			}
			checkErrorBody(t, r, c.want)
			if _, ok := store.IPAM(); ok {
				t.Error("a refused configuration was stored")
			}
		})
	}
}

// TestRESTSearch: GET /api/v1/machines as api.md describes it, on
// testStore's machines a1 (rack 1, boot, healthy), b2 (rack 2, cs, retired,
// dc=ty3), c1 (rack 1, cs, healthy, dc=ty3 gpu=yes), d2 (rack 2, ss,
// unreachable, dc=ty4), e3 (rack 3, ss, healthy).
func TestRESTSearch(t *testing.T) {
	s := serve(t, testStore(t))
	cases := []struct {
		query string
		code  int
		want  string
	}{
		{"", 200, "a1 b2 c1 d2 e3"},
		{"serial=c1,e3", 200, "c1 e3"},
		{"rack=1", 200, "a1 c1"},
		{"role=ss&state=healthy", 200, "e3"},
		{"state=healthy,unreachable", 200, "a1 c1 d2 e3"},
		{"without-rack=1", 200, "b2 d2 e3"},
		{"labels=dc%3Dty3%2Cgpu%3Dyes", 200, "c1"},
		{"labels=dc%3Dty3", 200, "b2 c1"},
		{"without-labels=dc%3Dty3", 200, "a1 d2 e3"},
		{"without-state=retired&without-role=boot", 200, "c1 d2 e3"},
		{"ipv4=10.0.2.2", 200, "b2 d2"},
		{"bmc-type=IPMI-2.0", 404, "requested resource is not found"},
		{"state=HEALTHY", 404, "requested resource is not found"},
		{"rack=1&without-rack=2", 400, "rack and without-rack are both given"},
		{"racks=1", 400, `unknown query parameter "racks"`},
		{"labels=dc", 400, "want NAME=VALUE"},
	}
	for _, c := range cases {
		r := s.do("GET", "/api/v1/machines?"+c.query, "", "")
		if r.code != c.code {
			t.Errorf("?%s: HTTP %d %s, want %d", c.query, r.code, r.body, c.code)
			continue
		}
		if c.code != 200 {
			checkErrorBody(t, r, c.want)
			continue
		}
		var ms []restMachine
		if err := json.Unmarshal([]byte(r.body), &ms); err != nil {
			t.Fatal(err)
		}
		var serials []string
		for _, m := range ms {
			serials = append(serials, m.Spec.Serial)
		}
		if got := strings.Join(serials, " "); got != c.want {
			t.Errorf("?%s: %q, want %q", c.query, got, c.want)
		}
	}
}

// TestRESTMachineJSON: a machine in sabakan's kebab-case JSON, with
// lower-case states.
func TestRESTMachineJSON(t *testing.T) {
	s := serve(t, testStore(t))
	r := s.do("GET", "/api/v1/machines?serial=c1", "", "")
	var raw []map[string]map[string]any
	if err := json.Unmarshal([]byte(r.body), &raw); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string { return strings.Join(slices.Sorted(maps.Keys(m)), " ") }
	if got := keys(raw[0]["spec"]); got != "bmc index-in-rack ipv4 ipv6 labels rack register-date retire-date role serial" {
		t.Errorf("spec keys %s", got)
	}
	if got := keys(raw[0]["status"]); got != "duration state timestamp" {
		t.Errorf("status keys %s", got)
	}
	if got := keys(raw[0]["info"]); got != "bmc network" {
		t.Errorf("info keys %s", got)
	}
	if raw[0]["status"]["state"] != "healthy" || fmt.Sprint(raw[0]["spec"]["labels"]) != "map[dc:ty3 gpu:yes]" {
		t.Errorf("machine %v", raw[0])
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// TestRequestID: each error carries a request ID, the caller's when it
// sends one.
func TestRequestID(t *testing.T) {
	s := serve(t, testStore(t))
	ids := map[string]bool{}
	for range 3 {
		var body restError
		_ = json.Unmarshal([]byte(s.do("GET", "/api/v1/state/nope", "", "").body), &body)
		ids[body.RequestID] = true
	}
	if len(ids) != 3 {
		t.Errorf("request IDs %v, want 3 different ones", ids)
	}
	req, _ := http.NewRequest("GET", s.url+"/api/v1/state/nope", nil)
	req.Header.Set("X-Cybozu-Request-ID", "my-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body restError
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.RequestID != "my-id" {
		t.Errorf("request ID %q (%v), want the caller's my-id", body.RequestID, err)
	}
}
