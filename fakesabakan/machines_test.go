package fakesabakan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/fakesabakan/internal/graph"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// pair serves one store twice over HTTP: machines written by marshal.go,
// and by the generated code alone. writes counts the fields whose
// machines marshal.go wrote.
type pair struct {
	writes                atomic.Int64
	writerURL, generated  string
	closeWriter, closeGen func()
}

func servePair(t interface{ Fatalf(string, ...any) }, store *Store) *pair {
	p := &pair{}
	a := httptest.NewServer(newServer(store, countWrites(&p.writes)).Handler())
	b := httptest.NewServer(newServer(store, nil).Handler())
	p.writerURL, p.generated, p.closeWriter, p.closeGen = a.URL, b.URL, a.Close, b.Close
	return p
}

// countWrites is writeMachines, New's field middleware, adding one to n
// for each field whose machines it wrote (rather than leaving them to the
// generated code).
func countWrites(n *atomic.Int64) graphql.FieldMiddleware {
	return func(ctx context.Context, next graphql.Resolver) (any, error) {
		res, err := writeMachines(ctx, next)
		if _, ok := res.(*machinesJSON); ok {
			n.Add(1)
		}
		return res, err
	}
}

func (p *pair) Close() { p.closeWriter(); p.closeGen() }

// answer is an HTTP answer as a client sees it.
type answer struct {
	code        int
	contentType string
	body        string
}

func postGraphQL(t interface{ Fatalf(string, ...any) }, url, body string) answer {
	resp, err := http.Post(url+"/graphql", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(data)}
}

// TestMachineWriterEqualsGenerated: on random inventories, queries (fields
// in any order, aliases, repeated fields, fragments, @skip and @include,
// searchMachines, machine and __typename at the root) and variables (as
// variables or literals, null, empty and single values, enum values in any
// case, big Ints, invalid ones), the server that writes machines itself
// (marshal.go) answers byte for byte what the generated code alone
// answers: status, Content-Type and body.
func TestMachineWriterEqualsGenerated(t *testing.T) {
	var checks, written int
	rapid.Check(t, func(t *rapid.T) {
		store := NewStore(func() time.Time { return now })
		ms := drawInventory(t, true)
		if err := store.Load(ms); err != nil {
			t.Fatalf("%v", err)
		}
		p := servePair(t, store)
		defer p.Close()
		g := &queryGen{t: t, serials: serialsOf(ms)}
		body, err := json.Marshal(g.request())
		if err != nil {
			t.Fatalf("%v", err)
		}
		checks++
		before := p.writes.Load()
		got := postGraphQL(t, p.writerURL, string(body))
		if p.writes.Load() > before {
			written++
		}
		want := postGraphQL(t, p.generated, string(body))
		if got != want {
			t.Fatalf("request %s\nwriter: HTTP %d %s %q\ngenerated: HTTP %d %s %q",
				body, got.code, got.contentType, got.body, want.code, want.contentType, want.body)
		}
	})
	// The comparison means something only if the writer answers many
	// requests and the generated code the others (odd machines, errors).
	t.Logf("the writer wrote machines in %d of %d requests", written, checks)
	if written < checks/5 || written == checks {
		t.Errorf("the writer wrote machines in %d of %d requests: the generator no longer covers both ways", written, checks)
	}
}

// TestSearchFollowsMatchingRules: the daemon's query returns the machines
// sabakan's matching rules select (every condition of having holds, none
// of notHaving's does; a null or empty list is no condition), sorted by
// serial, with their fields as stored.
func TestSearchFollowsMatchingRules(t *testing.T) {
	query := daemonQuery(t)
	rapid.Check(t, func(t *rapid.T) {
		store := NewStore(func() time.Time { return now })
		ms := drawInventory(t, false)
		for i := range ms {
			ms[i].Status.State = machine.State(strings.ToUpper(string(ms[i].Status.State)))
			if !ms[i].Status.State.Valid() {
				ms[i].Status.State = machine.StateHealthy
			}
		}
		if err := store.Load(ms); err != nil {
			t.Fatalf("%v", err)
		}
		var writes atomic.Int64
		ts := httptest.NewServer(newServer(store, countWrites(&writes)).Handler())
		defer ts.Close()
		g := &queryGen{t: t}
		having, notHaving := g.params("having", false), g.params("notHaving", false)
		vars := map[string]any{}
		for name, v := range map[string]any{"having": having, "notHaving": notHaving} {
			if v != absent {
				vars[name] = v
			}
		}
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		before := writes.Load()
		got := postGraphQL(t, ts.URL, string(body))
		if writes.Load() == before {
			t.Fatalf("the daemon's query with %s: machines not written by marshal.go", body)
		}
		var resp struct {
			Data struct {
				SearchMachines []struct {
					Spec struct {
						Serial string
						Rack   int
						Labels *[]machine.Label
					}
					Status struct{ State string }
				}
			}
		}
		if err := json.Unmarshal([]byte(got.body), &resp); err != nil || got.code != 200 {
			t.Fatalf("HTTP %d %s: %v", got.code, got.body, err)
		}
		var gotSerials []string
		for _, m := range resp.Data.SearchMachines {
			gotSerials = append(gotSerials, m.Spec.Serial)
		}
		// The variables left out take the query's defaults.
		if _, ok := vars["notHaving"]; !ok {
			notHaving = map[string]any{"roles": []any{"boot"}, "states": []any{"RETIRED"}}
		}
		var wantSerials []string
		for _, m := range ms {
			if specHaving(&m, having) && !specNotHaving(&m, notHaving) {
				wantSerials = append(wantSerials, m.Spec.Serial)
			}
		}
		slices.Sort(wantSerials)
		if !slices.Equal(gotSerials, wantSerials) {
			t.Fatalf("variables %s\ngot  %q\nwant %q", vars, gotSerials, wantSerials)
		}
	})
}

// specHaving is sabakan's having: every condition given holds; a null
// params object, a null or empty list is no condition.
func specHaving(m *machine.Machine, params any) bool {
	q, _ := params.(map[string]any)
	for _, l := range list(q["labels"]) {
		l := l.(map[string]any)
		if !slices.Contains(m.Spec.Labels, machine.Label{Name: l["name"].(string), Value: l["value"].(string)}) {
			return false
		}
	}
	if rs := list(q["racks"]); len(rs) > 0 && !slices.ContainsFunc(rs, func(r any) bool { return r.(int64) == int64(m.Spec.Rack) }) {
		return false
	}
	if rs := list(q["roles"]); len(rs) > 0 && !slices.Contains(rs, any(m.Spec.Role)) {
		return false
	}
	if ss := list(q["states"]); len(ss) > 0 && !slices.ContainsFunc(ss, func(s any) bool { return strings.EqualFold(s.(string), string(m.Status.State)) }) {
		return false
	}
	if d, ok := q["minDaysBeforeRetire"].(int64); ok && int64(days(m)) < d {
		return false
	}
	return true
}

// specNotHaving is sabakan's notHaving: any condition given excludes.
func specNotHaving(m *machine.Machine, params any) bool {
	q, _ := params.(map[string]any)
	for _, l := range list(q["labels"]) {
		l := l.(map[string]any)
		if slices.Contains(m.Spec.Labels, machine.Label{Name: l["name"].(string), Value: l["value"].(string)}) {
			return true
		}
	}
	if slices.ContainsFunc(list(q["racks"]), func(r any) bool { return r.(int64) == int64(m.Spec.Rack) }) ||
		slices.Contains(list(q["roles"]), any(m.Spec.Role)) ||
		slices.ContainsFunc(list(q["states"]), func(s any) bool { return strings.EqualFold(s.(string), string(m.Status.State)) }) {
		return true
	}
	d, ok := q["minDaysBeforeRetire"].(int64)
	return ok && int64(days(m)) >= d
}

// days is int((retireDate - now)/24h), truncated.
func days(m *machine.Machine) int64 {
	return int64(m.Spec.RetireDate.Sub(now) / (24 * time.Hour))
}

// list is a list value; a single value is a list of one.
func list(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	return []any{v}
}

func daemonQuery(t *testing.T) string {
	data, err := os.ReadFile("../sabakan/queries.graphql")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestNewWritesMachines: New's server writes the machines of the daemon's
// query with marshal.go, not with the generated code: on a data center of
// 240 machines it allocates a small fraction of what the generated code
// alone does (about 250 allocations per machine).
func TestNewWritesMachines(t *testing.T) {
	store := NewStore(func() time.Time { return now })
	if err := store.Load(dcgen.Machines(dcgen.Default(now))); err != nil {
		t.Fatal(err)
	}
	srv, err := New(store)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"query": ` + strconv.Quote(daemonQuery(t)) + `, "variables": {}}`
	allocs := func(h http.Handler) float64 {
		return testing.AllocsPerRun(5, func() {
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := &countingWriter{header: http.Header{}}
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK || w.n < 240*100 {
				t.Fatalf("HTTP %d, %d bytes", w.status, w.n)
			}
		})
	}
	got, generated := allocs(srv.Handler()), allocs(newServer(store, nil).Handler())
	t.Logf("allocations per answer: New's server %.0f, the generated code alone %.0f", got, generated)
	if got*4 > generated {
		t.Errorf("New's server allocates %.0f times per answer, the generated code alone %.0f: its machines are not written by marshal.go", got, generated)
	}
}

// TestDaemonQuery: the daemon's query on a generated data center is
// written by marshal.go, as the generated code writes it.
func TestDaemonQuery(t *testing.T) {
	o := dcgen.Default(now)
	o.UnhealthyPct = 30
	store := NewStore(func() time.Time { return now })
	if err := store.Load(dcgen.Machines(o)); err != nil {
		t.Fatal(err)
	}
	p := servePair(t, store)
	defer p.Close()
	for _, vars := range []string{`{}`, `{"having": null, "notHaving": null}`, `{"notHaving": {"states": ["retired", "unreachable"]}}`,
		`{"having": {"labels": [{"name": "product", "value": "R610"}], "minDaysBeforeRetire": 30}}`} {
		body := `{"query": ` + strconv.Quote(daemonQuery(t)) + `, "variables": ` + vars + `}`
		before := p.writes.Load()
		got, want := postGraphQL(t, p.writerURL, body), postGraphQL(t, p.generated, body)
		if p.writes.Load() == before {
			t.Errorf("variables %s: machines not written by marshal.go", vars)
		}
		if got != want {
			t.Errorf("variables %s:\nwriter: %d %.300s\ngenerated: %d %.300s", vars, got.code, got.body, want.code, want.body)
		}
		if !strings.Contains(got.body, `"serial"`) {
			t.Errorf("variables %s: no machines in %.300s", vars, got.body)
		}
	}
}

// drawInventory draws up to 10 machines: mostly plain, sometimes with
// strings JSON must escape or Go quotes differently, labels null or empty,
// racks beyond 32 bits, dates in any offset, states outside the enum.
func drawInventory(t *rapid.T, oddOK bool) []machine.Machine {
	odd := func(t *rapid.T, label string, plain []string) string {
		if oddOK {
			return oddString(t, label, plain)
		}
		return rapid.SampledFrom(plain).Draw(t, label)
	}
	n := rapid.IntRange(0, 10).Draw(t, "machines")
	ms := make([]machine.Machine, n)
	for i := range ms {
		ms[i] = machine.Machine{
			Spec: machine.Spec{
				Serial:       odd(t, "serial", []string{"s", "a", "B", "m-"}) + strconv.Itoa(i),
				Labels:       drawLabels(t, odd),
				Rack:         rapid.SampledFrom([]int{0, 1, 1, 2, 2, 3, 1<<32 + 1, -1}).Draw(t, "rack"),
				IndexInRack:  rapid.SampledFrom([]int{1, 2, 3, 1 << 31}).Draw(t, "index"),
				Role:         odd(t, "role", roles),
				IPv4:         rapid.SampledFrom([][]string{nil, {}, {"10.0.0.1"}, {"10.0.0.2", "fd00::1"}}).Draw(t, "ipv4"),
				RegisterDate: drawTime(t, "register"),
				RetireDate:   drawTime(t, "retire"),
				BMC:          machine.BMC{BMCType: odd(t, "bmcType", []string{"IPMI-2.0", "iDRAC-9"}), IPv4: odd(t, "bmcIPv4", []string{"10.1.0.1"})},
			},
			Status: machine.Status{State: rapid.SampledFrom([]machine.State{
				machine.StateUninitialized, machine.StateHealthy, machine.StateHealthy, machine.StateUnhealthy, machine.StateUnreachable,
				machine.StateUpdating, machine.StateRetiring, machine.StateRetired, machine.StateRetired, "", "healthy", "BROKEN",
			}).Draw(t, "state")},
		}
		if rapid.Bool().Draw(t, "timestamp") {
			ts := drawTime(t, "changed")
			ms[i].Status.Timestamp = &ts
		} else {
			ms[i].Status.Duration = rapid.Float64Range(0, 1e8).Draw(t, "duration")
		}
	}
	return ms
}

var (
	roles      = []string{"cs", "ss", "boot", "gpu"}
	labelNames = []string{"dc", "gpu", "cke.cybozu.com/role"}
	labelVals  = []string{"ty3", "ty4", "yes", "", "x/y", "😀"}
	// oddStrings are strings encoding/json escapes, strconv.Quote quotes
	// differently, or neither can write as JSON.
	oddStrings = []string{"a<b", "b>a", "r&d", `q"`, `b\`, "é", "\u2028", "\x01", "\x7f", "\xff", "x/y", "\t"}
)

// oddString draws one of plain, rarely one of oddStrings.
func oddString(t *rapid.T, label string, plain []string) string {
	if rapid.IntRange(0, 4).Draw(t, label+" odd") == 0 {
		return rapid.SampledFrom(oddStrings).Draw(t, label+" odd string")
	}
	return rapid.SampledFrom(plain).Draw(t, label)
}

func drawLabels(t *rapid.T, odd func(*rapid.T, string, []string) string) []machine.Label {
	switch rapid.IntRange(0, 9).Draw(t, "labels kind") {
	case 0:
		return nil
	case 1:
		return []machine.Label{}
	}
	ls := make([]machine.Label, rapid.IntRange(1, 3).Draw(t, "labels"))
	for i := range ls {
		ls[i] = machine.Label{Name: odd(t, "label name", labelNames), Value: odd(t, "label value", labelVals)}
	}
	return ls
}

// drawTime draws a time within a month of now, in some offset, sometimes
// with fractional seconds, sometimes a whole number of days from now (the
// minDaysBeforeRetire boundary), rarely beyond year 9999.
func drawTime(t *rapid.T, label string) time.Time {
	zone := time.FixedZone("", rapid.SampledFrom([]int{0, 9 * 3600, -5 * 3600, 5*3600 + 1800, -12 * 3600}).Draw(t, label+" offset"))
	base := now
	d := time.Duration(rapid.IntRange(-30, 30).Draw(t, label+" days")) * 24 * time.Hour
	switch rapid.IntRange(0, 9).Draw(t, label+" kind") {
	case 0, 1:
	case 2:
		d += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, label+" nanos"))
	case 3:
		base = now.AddDate(8000, 0, 0)
	default:
		d += time.Duration(rapid.IntRange(-23*3600, 23*3600).Draw(t, label+" seconds")) * time.Second
	}
	return base.Add(d).In(zone)
}

func serialsOf(ms []machine.Machine) []string {
	out := []string{"missing"}
	for _, m := range ms {
		out = append(out, m.Spec.Serial)
	}
	return out
}

// queryGen draws a GraphQL request.
type queryGen struct {
	t       *rapid.T
	serials []string
	// varDefs declare the variables used; vars are their values.
	varDefs []string
	vars    map[string]any
	frags   []string
	aliases int
}

// absent marks a variable or argument left out.
var absent = &struct{}{}

type field struct{ name, typ string }

var objectFields = map[string][]field{
	"Query":   {{"searchMachines", "Machine"}, {"searchMachines", "Machine"}, {"searchMachines", "Machine"}, {"machine", "Machine"}, {"__typename", ""}},
	"Machine": {{"spec", "MachineSpec"}, {"status", "MachineStatus"}, {"__typename", ""}},
	"MachineSpec": {{"serial", ""}, {"labels", "Label"}, {"rack", ""}, {"indexInRack", ""}, {"role", ""}, {"ipv4", ""},
		{"registerDate", ""}, {"retireDate", ""}, {"bmc", "BMC"}, {"__typename", ""}},
	"Label":         {{"name", ""}, {"value", ""}, {"__typename", ""}},
	"BMC":           {{"bmcType", ""}, {"ipv4", ""}, {"__typename", ""}},
	"MachineStatus": {{"state", ""}, {"timestamp", ""}, {"duration", ""}, {"__typename", ""}},
}

func (g *queryGen) request() map[string]any {
	g.vars = map[string]any{}
	root := g.selection("Query", 0)
	q := "query Q"
	if len(g.varDefs) > 0 {
		q += "(" + strings.Join(g.varDefs, ", ") + ")"
	}
	q += " " + root
	for _, f := range g.frags {
		q += "\n" + f
	}
	req := map[string]any{"query": q, "variables": g.vars}
	if rapid.Bool().Draw(g.t, "operationName") {
		req["operationName"] = "Q"
	}
	return req
}

// variable declares a variable of type typ with value v (absent: left
// out) and returns its name.
func (g *queryGen) variable(typ string, v any) string {
	name := fmt.Sprintf("v%d", len(g.varDefs))
	g.varDefs = append(g.varDefs, "$"+name+": "+typ)
	if v != absent {
		g.vars[name] = v
	}
	return "$" + name
}

func (g *queryGen) selection(typ string, depth int) string {
	var parts []string
	for range rapid.IntRange(1, 4-min(depth, 2)).Draw(g.t, "selections") {
		kind := rapid.IntRange(0, 11).Draw(g.t, "selection kind")
		switch {
		case kind == 0 && depth < 3:
			on := rapid.SampledFrom([]string{"", " on " + typ}).Draw(g.t, "on")
			parts = append(parts, "..."+on+g.directives()+" "+g.selection(typ, depth+1))
		case kind == 1 && depth < 3:
			name := fmt.Sprintf("F%d", len(g.frags))
			g.frags = append(g.frags, "") // reserve the name
			g.frags[len(g.frags)-1] = "fragment " + name + " on " + typ + " " + g.selection(typ, depth+1)
			parts = append(parts, "..."+name+g.directives())
		default:
			parts = append(parts, g.field(typ, depth))
		}
	}
	return "{ " + strings.Join(parts, " ") + " }"
}

func (g *queryGen) field(typ string, depth int) string {
	f := rapid.SampledFrom(objectFields[typ]).Draw(g.t, "field")
	// Aliases are mostly the field's own, so that a field repeated under
	// one is merged; rarely one that two fields take (a request error).
	s := f.name
	switch {
	case typ == "Query" && rapid.IntRange(0, 3).Draw(g.t, "unique alias") != 0:
		g.aliases++
		s = fmt.Sprintf("r%d: %s", g.aliases, s)
	case rapid.IntRange(0, 4).Draw(g.t, "aliased") == 0:
		s = rapid.SampledFrom([]string{"x" + f.name, "y" + f.name, "x" + f.name, "y" + f.name, "a"}).Draw(g.t, "alias") + ": " + s
	}
	switch f.name {
	case "searchMachines":
		var args []string
		for _, name := range []string{"having", "notHaving"} {
			if a := g.argument(name); a != "" {
				args = append(args, name+": "+a)
			}
		}
		if len(args) > 0 {
			s += "(" + strings.Join(args, ", ") + ")"
		}
	case "machine":
		serial := rapid.SampledFrom(g.serials).Draw(g.t, "machine serial")
		if rapid.Bool().Draw(g.t, "serial variable") {
			s += "(serial: " + g.variable("ID!", serial) + ")"
		} else {
			s += "(serial: " + strconv.Quote(serial) + ")"
		}
	}
	s += g.directives()
	if f.typ != "" {
		s += " " + g.selection(f.typ, depth+1)
	}
	return s
}

// directives draws @skip or @include, rarely both, with a literal or a
// variable.
func (g *queryGen) directives() string {
	s := ""
	for _, name := range []string{"skip", "include"} {
		if rapid.IntRange(0, 7).Draw(g.t, name) != 0 {
			continue
		}
		v := rapid.Bool().Draw(g.t, name+" if")
		if rapid.Bool().Draw(g.t, name+" variable") {
			s += " @" + name + "(if: " + g.variable("Boolean!", v) + ")"
		} else {
			s += " @" + name + "(if: " + strconv.FormatBool(v) + ")"
		}
	}
	return s
}

// argument draws a MachineParams argument: left out, null, a variable or a
// literal object whose fields may be variables.
func (g *queryGen) argument(name string) string {
	switch rapid.IntRange(0, 4).Draw(g.t, name+" form") {
	case 0:
		return ""
	case 1:
		return "null"
	case 2:
		return g.variable("MachineParams", g.params(name, true))
	}
	var fields []string
	for _, f := range []string{"labels", "racks", "roles", "states", "minDaysBeforeRetire"} {
		v := g.paramField(name+"."+f, f, true)
		if v == absent {
			continue
		}
		if rapid.IntRange(0, 3).Draw(g.t, name+"."+f+" variable") == 0 {
			typ := map[string]string{"labels": "[LabelInput!]", "racks": "[Int!]", "roles": "[String!]", "states": "[MachineState!]", "minDaysBeforeRetire": "Int"}[f]
			fields = append(fields, f+": "+g.variable(typ, v))
			continue
		}
		fields = append(fields, f+": "+literal(v))
		if f == "states" && strings.Contains(literal(v), `"`) {
			// An enum literal is written in its case; rarely not.
			fields[len(fields)-1] = f + ": " + strings.ToUpper(strings.ReplaceAll(literal(v), `"`, ""))
			if rapid.IntRange(0, 9).Draw(g.t, name+" lower-case enum literal") == 0 {
				fields[len(fields)-1] = f + ": " + strings.ToLower(fields[len(fields)-1][len(f)+2:])
			}
		}
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// params draws the value of a MachineParams variable; with invalid, rarely
// one sabakan refuses.
func (g *queryGen) params(name string, invalid bool) any {
	switch rapid.IntRange(0, 5).Draw(g.t, name+" params") {
	case 0:
		return absent
	case 1:
		return nil
	}
	m := map[string]any{}
	for _, f := range []string{"labels", "racks", "roles", "states", "minDaysBeforeRetire"} {
		if v := g.paramField(name+"."+f, f, invalid); v != absent {
			m[f] = v
		}
	}
	if invalid && rapid.IntRange(0, 29).Draw(g.t, name+" unknown field") == 0 {
		m["rackz"] = []any{int64(1)}
	}
	return m
}

// paramField draws one field of MachineParams: left out, null, empty, a
// list or a single value.
func (g *queryGen) paramField(label, f string, invalid bool) any {
	switch rapid.IntRange(0, 7).Draw(g.t, label+" kind") {
	case 0, 1, 2:
		return absent
	case 3:
		return nil
	}
	one := func() any {
		switch f {
		case "labels":
			return map[string]any{"name": rapid.SampledFrom(labelNames).Draw(g.t, label+" name"), "value": rapid.SampledFrom(labelVals).Draw(g.t, label+" value")}
		case "racks":
			return rapid.SampledFrom([]int64{0, 1, 2, 3, 1<<32 + 1, -1}).Draw(g.t, label)
		case "roles":
			return rapid.SampledFrom(roles).Draw(g.t, label)
		case "states":
			states := []string{"HEALTHY", "RETIRED", "UNREACHABLE", "UNINITIALIZED", "Retiring"}
			if invalid {
				states = append(states, "healthy", "unhealthy")
				if rapid.IntRange(0, 19).Draw(g.t, label+" invalid") == 0 {
					return "BROKEN"
				}
			}
			return rapid.SampledFrom(states).Draw(g.t, label)
		}
		return rapid.SampledFrom([]int64{-1, 0, 1, 5, 10, 20, 31, 3000000000}).Draw(g.t, label)
	}
	if f == "minDaysBeforeRetire" {
		return one()
	}
	switch rapid.IntRange(0, 4).Draw(g.t, label+" list") {
	case 0:
		return []any{}
	case 1:
		return one()
	}
	var out []any
	for range rapid.IntRange(1, 3).Draw(g.t, label+" length") {
		out = append(out, one())
	}
	return out
}

// literal writes a value as a GraphQL literal: strings quoted, enum
// values (upper-case letters) bare.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		if v != "" && strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			return v
		}
		// Escapes that GraphQL reads as JSON does, and Go does not.
		switch v {
		case "x/y":
			return `"x\/y"`
		case "😀":
			return `"\uD83D\uDE00"`
		}
		return strconv.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = literal(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + literal(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	panic(fmt.Sprintf("literal %T", v))
}

// TestStringLiterals: string literals are read as GraphQL reads them: a
// surrogate pair or a braced escape is one character, "\\/" is "/", a block
// string keeps its spaces and its line breaks become "\\n".
func TestStringLiterals(t *testing.T) {
	store := NewStore(func() time.Time { return now })
	values := []string{"😀", "a\nb", "y/z", " a", "ab"}
	var ms []machine.Machine
	for i, v := range values {
		ms = append(ms, mk(fmt.Sprintf("m%d", i), 1, "cs", machine.StateHealthy, 10, lbl("x", v)))
	}
	if err := store.Load(ms); err != nil {
		t.Fatal(err)
	}
	s := serve(t, store)
	for _, c := range []struct{ literal, want string }{
		{`"\uD83D\uDE00"`, "m0"},
		{`"\u{1F600}"`, "m0"},
		{"\"\"\"a\r\nb\"\"\"", "m1"},
		{`"y\/z"`, "m2"},
		{`""" a"""`, "m3"},
		{`"a\u0062"`, "m4"},
	} {
		q := `{ searchMachines(having: {labels: [{name: "x", value: ` + c.literal + `}]}) { spec { serial } } }`
		if got := serials(t, s.gql(q, nil)); got != c.want {
			t.Errorf("%s: %q, want %s", c.literal, got, c.want)
		}
	}
}

// TestConcurrentSearches: searches answered at once, for different racks,
// while machines change state, each get a whole answer of their own.
func TestConcurrentSearches(t *testing.T) {
	o := dcgen.Default(now)
	store := NewStore(func() time.Time { return now })
	ms := dcgen.Machines(o)
	if err := store.Load(ms); err != nil {
		t.Fatal(err)
	}
	perRack := map[int]int{}
	for _, m := range ms {
		perRack[m.Spec.Rack]++
	}
	s := serve(t, store)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			to := machine.StateUnhealthy
			if i%2 == 1 {
				to = machine.StateHealthy
			}
			if _, err := store.SetState(ms[5].Spec.Serial, to); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			rack := ms[g*len(ms)/8].Spec.Rack
			body := `{"query": ` + strconv.Quote(daemonQuery(t)) + `, "variables": {"having": {"racks": [` + strconv.Itoa(rack) + `]}, "notHaving": null}}`
			var err error
			for range 20 {
				got := postGraphQL(t, s.url, body)
				var resp struct {
					Data struct {
						SearchMachines []struct{ Spec struct{ Rack int } }
					}
				}
				if e := json.Unmarshal([]byte(got.body), &resp); e != nil || len(resp.Data.SearchMachines) != perRack[rack] {
					err = fmt.Errorf("rack %d: HTTP %d, %d machines, want %d, %v: %.200s", rack, got.code, len(resp.Data.SearchMachines), perRack[rack], e, got.body)
					break
				}
				for _, m := range resp.Data.SearchMachines {
					if m.Spec.Rack != rack {
						err = fmt.Errorf("rack %d: a machine of rack %d", rack, m.Spec.Rack)
					}
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

// TestMachineWriterEveryField: every field of a machine, under an alias
// and with __typename at every level, for machines with the values that
// need care (strings JSON escapes, invalid UTF-8, integers beyond 32 bits,
// negative ones, dates in any offset and beyond year 9999, null and empty
// lists, durations in exponent form), is written by marshal.go as the
// generated code writes it.
func TestMachineWriterEveryField(t *testing.T) {
	var ms []machine.Machine
	for i, s := range append([]string{"plain", ""}, oddStrings...) {
		ts := now.Add(time.Duration(i) * 1001 * time.Millisecond).In(time.FixedZone("", (i%5-2)*3600+1800*(i%2)))
		m := machine.Machine{
			Spec: machine.Spec{
				Serial:       fmt.Sprintf("m%02d%s", i, s),
				Rack:         []int{0, -1, 1<<32 + 1, 1<<31 - 1, -1 << 40}[i%5],
				IndexInRack:  []int{1, 1 << 31, -7}[i%3],
				Role:         s,
				IPv4:         [][]string{nil, {}, {s}, {"10.0.0.1", "fd00::1"}}[i%4],
				RegisterDate: ts,
				RetireDate:   ts.AddDate(8000*(i%2), 0, 0),
				BMC:          machine.BMC{BMCType: s, IPv4: s},
				Labels:       [][]machine.Label{nil, {}, {{Name: s, Value: s}, {Name: "dc", Value: "ty3"}}}[i%3],
			},
			Status: machine.Status{State: machine.States[i%len(machine.States)], Duration: []float64{0, 1e-7, 123456.5, 1e21}[i%4]},
		}
		if i%2 == 0 {
			m.Status.Timestamp = &ts
		}
		ms = append(ms, m)
	}
	store := NewStore(func() time.Time { return now })
	if err := store.Load(ms); err != nil {
		t.Fatal(err)
	}
	p := servePair(t, store)
	defer p.Close()
	const fields = `__typename a: __typename
		spec { __typename s: serial serial labels { __typename n: name name value } l: labels { value } rack r: rack indexInRack role ipv4
			registerDate retireDate bmc { __typename bmcType ipv4 } }
		st: status { __typename state timestamp duration } status { duration }`
	for _, q := range []string{
		`{ searchMachines { ` + fields + ` } }`,
		`{ x: machine(serial: "m02a<b") { ` + fields + ` } searchMachines(having: {racks: [-1]}) { ...F } }
		fragment F on Machine { spec { serial } ... on Machine { status { state } } }`,
	} {
		body, _ := json.Marshal(map[string]any{"query": q})
		before := p.writes.Load()
		got, want := postGraphQL(t, p.writerURL, string(body)), postGraphQL(t, p.generated, string(body))
		if p.writes.Load() == before {
			t.Errorf("%s: machines not written by marshal.go", q)
		}
		if got != want || got.code != 200 || strings.Contains(got.body, `"errors"`) {
			t.Errorf("%s:\nwriter:    %d %s\ngenerated: %d %s", q, got.code, got.body, want.code, want.body)
		}
	}
}

// TestAppendDateTime: the machine writer's dates are graph.AppendDateTime's,
// byte for byte: in UTC or not, to the second or not, in years of four
// digits or not.
func TestAppendDateTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.Int64Range(-70000000000, 300000000000).Draw(t, "sec")
		nsec := rapid.SampledFrom([]int64{0, 0, 0, 1, 500000000, 999999999}).Draw(t, "nsec")
		tm := time.Unix(sec, nsec)
		switch rapid.IntRange(0, 3).Draw(t, "zone") {
		case 0, 1:
			tm = tm.UTC()
		case 2:
			tm = tm.In(time.FixedZone("", 9*3600))
		default:
			tm = tm.In(time.FixedZone("UTC", 0))
		}
		if got, want := string(appendDateTime([]byte("x"), tm)), "x"+string(graph.AppendDateTime(nil, tm)); got != want {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
	})
}
