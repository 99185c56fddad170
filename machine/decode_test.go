package machine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// jsonList is encoding/json's reading of a machine list, the reference of
// DecodeList: json.Unmarshal into []Machine, or, with envelope, into the
// searchMachines answer (Parse's graphQLResponse), which must have the
// list.
func jsonList(data []byte, envelope bool) ([]Machine, error) {
	if !envelope {
		var ms []Machine
		err := json.Unmarshal(data, &ms)
		return ms, err
	}
	var resp graphQLResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	if resp.Data == nil || resp.Data.SearchMachines == nil {
		return nil, fmt.Errorf("no list")
	}
	return *resp.Data.SearchMachines, nil
}

// checkDecodeList fails when DecodeList accepts data and encoding/json
// refuses it or reads other machines.
func checkDecodeList(t interface {
	Fatalf(string, ...any)
}, data []byte, envelope bool) bool {
	got, ok := DecodeList(data, envelope)
	if !ok {
		return false
	}
	want, err := jsonList(data, envelope)
	if err != nil {
		t.Fatalf("DecodeList accepted what encoding/json refuses (%v):\n%s", err, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeList read\n%#v\nencoding/json\n%#v\nfrom\n%s", got, want, data)
	}
	return true
}

// TestDecodeListAcceptsPlain: the lists sabakan and ckegen write, compact
// or indented, bare or in the answer's envelope, take the fast path.
func TestDecodeListAcceptsPlain(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", 9*3600))
	ms := []Machine{
		mk("s1", "10.0.0.1"),
		{Spec: Spec{Serial: "s2", Labels: []Label{{"product", "R630"}, {"datacenter", "東京"}}, Rack: 3, IndexInRack: 7, Role: "cs",
			IPv4: []string{"10.0.0.2", "10.1.0.2"}, RegisterDate: ts, RetireDate: ts.AddDate(5, 0, 0), BMC: BMC{BMCType: "IPMI-2.0", IPv4: "10.9.0.2"}},
			Status: Status{State: StateUnreachable, Timestamp: &ts, Duration: 1234.5}},
		{Spec: Spec{Serial: "s3", Labels: []Label{}, IPv4: []string{}, Rack: -1}, Status: Status{State: StateRetired, Duration: -0.25}},
	}
	compact, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(ms, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{"compact": compact, "indented": indented, "empty": []byte("[]"), "empty, spaced": []byte(" [ \n] \n")}
	if data, err := os.ReadFile("../examples/machines.json"); err == nil {
		inputs["examples/machines.json"] = data
	}
	for name, data := range inputs {
		for _, envelope := range []bool{false, true} {
			in := data
			if envelope {
				in = []byte(`{"data":{"searchMachines":` + string(data) + "}}\n")
			}
			if !checkDecodeList(t, in, envelope) {
				t.Errorf("%s (envelope %v): DecodeList gave up", name, envelope)
			}
		}
	}
}

// TestDecodeListMatchesJSON: on lists written with every variation the
// fast path must either read as encoding/json does or leave to it
// (escapes, nulls, keys in another case or twice, unknown keys, numbers
// of every form, dates that do not parse, non-UTF-8, trailing data, bad
// syntax), DecodeList never reads other machines than encoding/json, and
// it reads every list without those variations.
func TestDecodeListMatchesJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := &jsonGen{t: t, odd: rapid.IntRange(0, 3).Draw(t, "oddness") > 0}
		envelope := rapid.Bool().Draw(t, "envelope")
		data := g.document(envelope)
		if !checkDecodeList(t, data, envelope) && !g.varied {
			t.Fatalf("DecodeList gave up on a plain list:\n%s", data)
		}
	})
}

// FuzzDecodeList: on any input, DecodeList reads what encoding/json reads
// or leaves it to encoding/json.
func FuzzDecodeList(f *testing.F) {
	f.Add([]byte("["+one+"]"), false)
	f.Add([]byte(`{"data":{"searchMachines":[`+one+`]}}`), true)
	f.Add([]byte(`[{"spec":{"serial":"a","rack":1e2,"labels":[{"name":"\u0041","value":""}]},"status":{"state":"HEALTHY","timestamp":null}}]`), false)
	if data, err := os.ReadFile("../examples/machines.json"); err == nil {
		f.Add(data, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, envelope bool) {
		checkDecodeList(t, data, envelope)
	})
}

// jsonGen writes machine lists as JSON text. With odd, it varies what it
// writes in the ways the fast path must leave to encoding/json, and
// varied records whether it did.
type jsonGen struct {
	t      *rapid.T
	odd    bool
	varied bool
	b      strings.Builder
}

// vary reports, when odd, whether to vary this spot (1 in 12).
func (g *jsonGen) vary(label string) bool {
	if !g.odd || rapid.IntRange(0, 11).Draw(g.t, label) != 0 {
		return false
	}
	g.varied = true
	return true
}

func (g *jsonGen) ws() {
	if !rapid.Bool().Draw(g.t, "ws?") {
		return
	}
	g.b.WriteString(rapid.SampledFrom([]string{" ", "\n  ", "\t", "\r\n", " \n\t "}).Draw(g.t, "ws"))
	if g.vary("bad ws") {
		g.b.WriteString(rapid.SampledFrom([]string{"\v", "\f", "\u00a0", "\x00"}).Draw(g.t, "bad ws"))
	}
}

func (g *jsonGen) document(envelope bool) []byte {
	g.ws()
	if envelope {
		data := "data"
		if g.vary("data key") {
			data = rapid.SampledFrom([]string{"Data", "DATA", "errors", "extensions", "d\\u0061ta"}).Draw(g.t, "data key")
		}
		g.b.WriteString(`{"` + data + `":`)
		g.ws()
		if g.vary("null data") {
			g.b.WriteString("null}")
			return []byte(g.b.String())
		}
		list := "searchMachines"
		if g.vary("list key") {
			list = rapid.SampledFrom([]string{"searchmachines", "SearchMachines", "machines"}).Draw(g.t, "list key")
		}
		g.b.WriteString(`{"` + list + `":`)
		g.ws()
		g.list()
		g.ws()
		g.b.WriteString("}")
		g.ws()
		if g.vary("more members") {
			g.b.WriteString(rapid.SampledFrom([]string{`,"errors":[{"message":"x"}]`, `,"extensions":{}`, `,"data":{"searchMachines":[]}`, `,"errors":null`}).Draw(g.t, "more members"))
		}
		g.b.WriteString("}")
	} else {
		g.list()
	}
	g.ws()
	if g.vary("trailing") {
		g.b.WriteString(rapid.SampledFrom([]string{"x", "[]", "{}", ",", "]", "\x00"}).Draw(g.t, "trailing"))
	}
	return []byte(g.b.String())
}

func (g *jsonGen) list() {
	if g.vary("null list") {
		g.b.WriteString("null")
		return
	}
	g.b.WriteString("[")
	for i := range rapid.IntRange(0, 4).Draw(g.t, "machines") {
		if i > 0 {
			g.ws()
			g.b.WriteString(",")
		}
		g.ws()
		if g.vary("null machine") {
			g.b.WriteString("null")
			continue
		}
		g.object(map[string]func(){
			"spec":   g.spec,
			"status": g.status,
		})
	}
	g.ws()
	if g.vary("trailing comma") {
		g.b.WriteString(",")
	}
	g.b.WriteString("]")
}

// object writes some of members, in some order, with the variations.
func (g *jsonGen) object(members map[string]func()) {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	// Map order is random: draw from the sorted keys.
	keys = sortedStrings(keys)
	keys = rapid.Permutation(keys).Draw(g.t, "order")
	keys = keys[:rapid.IntRange(0, len(keys)).Draw(g.t, "members")]
	if g.vary("twice") && len(keys) > 0 {
		keys = append(keys, keys[0])
	}
	g.b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			g.ws()
			g.b.WriteString(",")
		}
		g.ws()
		name := k
		if g.vary("key") {
			name = rapid.SampledFrom([]string{strings.ToUpper(k), strings.ToUpper(k[:1]) + k[1:], k + "x", "other", k[:1] + `\u00` + fmt.Sprintf("%x", k[1]) + k[2:], "", strings.ReplaceAll(k, "s", "ſ"), strings.ReplaceAll(k, "k", "\u212a")}).Draw(g.t, "key")
		}
		g.b.WriteString(`"` + name + `"`)
		g.ws()
		g.b.WriteString(":")
		g.ws()
		if g.vary("value type") {
			g.b.WriteString(rapid.SampledFrom([]string{"null", "true", "1", `"1"`, "[]", "{}", `[null]`, `{"x":1}`}).Draw(g.t, "odd value"))
		} else {
			members[k]()
		}
		g.ws()
	}
	if g.vary("trailing member comma") {
		g.b.WriteString(",")
	}
	g.b.WriteString("}")
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func (g *jsonGen) str(plain []string) {
	s := rapid.SampledFrom(plain).Draw(g.t, "string")
	if g.vary("string") {
		s = rapid.SampledFrom([]string{`a\"b`, `\u0041`, `\n`, `\\`, "\xff", "a\xc3", "\x01", "\xed\xa0\x80"}).Draw(g.t, "odd string")
	} else if rapid.IntRange(0, 5).Draw(g.t, "utf-8?") == 0 {
		s += rapid.SampledFrom([]string{"é", "東京", "\U0001F600", "\u007f"}).Draw(g.t, "utf-8")
	}
	g.b.WriteString(`"` + s + `"`)
}

func (g *jsonGen) number(plain []string, odd []string) {
	n := rapid.SampledFrom(plain).Draw(g.t, "number")
	if g.vary("number") {
		n = rapid.SampledFrom(odd).Draw(g.t, "odd number")
	}
	g.b.WriteString(n)
}

var (
	oddNumbers = []string{"01", "-", "1.", ".5", "1e", "1e+", "+1", "1.5", "1e2", "1E2", "-0.0", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1e400", "-1e400", "4.9e-324", "1e-400", "0x10", "NaN", "Infinity"}
	plainInts   = []string{"0", "-0", "1", "7", "-3", "40", "255", "123456789012345678", "-123456789012345678"}
	plainFloats = []string{"0", "-0", "12", "68348", "12.5", "-0.25", "1e3", "1E-3", "2.5e+2", "999999999999999", "9999999999999999", "123456789012345678901"}
	dates       = []string{"2024-01-01T00:00:00Z", "2030-06-30T23:59:59+09:00", "2024-02-29T12:00:00.123456789Z", "0001-01-01T00:00:00Z", "2024-01-01T00:00:00-00:30"}
	oddDates    = []string{"tomorrow", "2024-02-30T00:00:00Z", "2024-01-01T00:00:00z", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00+24:00", ""}
	plainStates = []string{"HEALTHY", "UNREACHABLE", "RETIRED", "healthy", "ODD", ""}
)

func (g *jsonGen) date() {
	if g.vary("date") {
		g.b.WriteString(`"` + rapid.SampledFrom(oddDates).Draw(g.t, "odd date") + `"`)
		return
	}
	g.b.WriteString(`"` + rapid.SampledFrom(dates).Draw(g.t, "date") + `"`)
}

func (g *jsonGen) array(elem func()) {
	g.b.WriteString("[")
	for i := range rapid.IntRange(0, 3).Draw(g.t, "elements") {
		if i > 0 {
			g.ws()
			g.b.WriteString(",")
		}
		g.ws()
		if g.vary("null element") {
			g.b.WriteString("null")
			continue
		}
		elem()
	}
	g.ws()
	g.b.WriteString("]")
}

func (g *jsonGen) spec() {
	g.object(map[string]func(){
		"serial": func() { g.str([]string{"s1", "s2", "S000001", "a", ""}) },
		"labels": func() {
			g.array(func() {
				g.object(map[string]func(){
					"name":  func() { g.str([]string{"product", "datacenter", "x", ""}) },
					"value": func() { g.str([]string{"R630", "dc1", "", strings.Repeat("v", 70)}) },
				})
			})
		},
		"rack":         func() { g.number(plainInts, oddNumbers) },
		"indexInRack":  func() { g.number(plainInts, oddNumbers) },
		"role":         func() { g.str([]string{"cs", "ss", "boot", ""}) },
		"ipv4":         func() { g.array(func() { g.str([]string{"10.0.0.1", "10.0.0.2", "x"}) }) },
		"registerDate": g.date,
		"retireDate":   g.date,
		"bmc": func() {
			g.object(map[string]func(){
				"bmcType": func() { g.str([]string{"IPMI-2.0", "iDRAC-9"}) },
				"ipv4":    func() { g.str([]string{"10.9.0.1", ""}) },
			})
		},
	})
}

func (g *jsonGen) status() {
	g.object(map[string]func(){
		"state":     func() { g.str(plainStates) },
		"timestamp": g.date,
		"duration":  func() { g.number(plainFloats, oddNumbers) },
	})
}

// TestDecodeListSharesBlocks: labels and addresses carved from shared
// blocks do not overlap: appending to one machine's does not change
// another's.
func TestDecodeListSharesBlocks(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"spec":{"serial":"s%d","labels":[{"name":"a","value":"%d"},{"name":"b","value":"x"}],"ipv4":["10.0.%d.%d"]},"status":{"state":"HEALTHY","timestamp":"2024-01-01T00:00:%02dZ"}}`, i, i, i/256, i%256, i%60)
	}
	b.WriteString("]")
	ms, ok := DecodeList(b.Bytes(), false)
	if !ok || len(ms) != 3000 {
		t.Fatalf("DecodeList: %v, %d machines", ok, len(ms))
	}
	for i := range ms {
		ms[i].Spec.Labels = append(ms[i].Spec.Labels, Label{"c", "y"})
		ms[i].Spec.IPv4 = append(ms[i].Spec.IPv4, "x")
	}
	for i, m := range ms {
		if len(m.Spec.Labels) != 3 || m.Spec.Labels[0].Value != fmt.Sprint(i) || m.Spec.Labels[1].Name != "b" ||
			m.Spec.IPv4[0] != fmt.Sprintf("10.0.%d.%d", i/256, i%256) || m.Status.Timestamp.Second() != i%60 {
			t.Fatalf("machine %d: %+v %+v", i, m.Spec, m.Status)
		}
	}
}
