package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	yamlv2 "go.yaml.in/yaml/v2"
	"pgregory.net/rapid"
	sigsyaml "sigs.k8s.io/yaml"
)

// trickyStrings need quotes, a special style or yaml.v2 in YAML, or look like
// they might.
var trickyStrings = []string{
	"", "yes", "Yes", "no", "on", "OFF", "y", "n", "true", "False", "null", "Null", "~",
	"1", "-1", "+1", "0", "007", "0x1F", "0o17", "0b101", "-0b101", "0b-1", "0b+1", "-0b-1", "0b", "1_000", "1e3", "1E+3", ".5", "5.", "-.5e-3",
	".nan", ".inf", "-.Inf", "+.INF", "nan", "inf", "Infinity", ".infinity",
	"1:30", "-1:30:05.5", "190:20:30", "1:60", "12:5", "fd00::1", "2001:db8::1", "a:", ":", ":a", "a:b",
	"2024-01-01", "2024-01-01T00:00:00Z", "2031-08-01T05:00:00+09:00", "2024-1-1", "2024-01", "2024-01-01 10:00:00", "20240-01-01",
	"-", "--", "---", "---a", "...", "..a", "-a", "a-", "/", "./x", "+", "_", "__", "1.2.3", "10.0.1.1", "1.", "1.e5",
	"#", "a #b", "a#b", "#a", "&a", "*a", "!a", "|", ">", "%", "@", "`", "'", "\"", "a'b", `a"b`, `a\b`,
	"?", "? a", "- a", "a: b", ",", "[a]", "{a}", "a,b",
	" a", "a ", "a  b", "\ta", "a\tb", "a\n", "a\nb", "a\n\n", "\na", "a\n b", "a \nb", "\n", "\n\n",
	"é", "日本語", "a\u00a0b", "\ufeffa", "\x00", "\x7f", "a\rb", "\u2028", "a\u2028b", "a\u2029",
	strings.Repeat("word ", 30), strings.Repeat("x", 130), strings.Repeat("long words ", 12) + "\n" + strings.Repeat("y ", 50),
	"cke.cybozu.com/role", "node-role.kubernetes.io/cs", "rack1", "cs", "cybozu",
}

var simpleChars = []rune("abcyYnNtTfFoOeEx019_.-+/:")

func drawString(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 3).Draw(t, label+"-kind") {
	case 0:
		return rapid.SampledFrom(trickyStrings).Draw(t, label)
	case 1:
		return rapid.StringOf(rapid.SampledFrom(simpleChars)).Draw(t, label)
	case 2:
		// yaml.v2 writes NEL (U+0085) unquoted and reads it back as a
		// space, as sigs.k8s.io/yaml does: left out here.
		return strings.ReplaceAll(rapid.StringN(0, 12, -1).Draw(t, label), "\u0085", "")
	}
	return rapid.SampledFrom([]string{"10.0.1.1", "cybozu", "true", "cs", "rack3", "2031-01-01T00:00:00Z"}).Draw(t, label)
}

// drawKey draws a map key. yaml.v2 writes the key << unquoted and reads it
// back as a merge, as sigs.k8s.io/yaml does: left out here (no Kubernetes
// label or annotation key starts with '<').
func drawKey(t *rapid.T, label string) string {
	if k := drawString(t, label); k != "<<" {
		return k
	}
	return "<"
}

func drawMap(t *rapid.T, label string) map[string]string {
	n := rapid.IntRange(0, 6).Draw(t, label+"-len")
	m := map[string]string{}
	for i := range n {
		m[drawKey(t, fmt.Sprintf("%s-key%d", label, i))] = drawString(t, fmt.Sprintf("%s-value%d", label, i))
	}
	if len(m) == 0 && rapid.Bool().Draw(t, label+"-nil") {
		return nil
	}
	return m
}

// drawJSON draws a JSON object of tricky keys and values, as a template's
// options might hold.
func drawJSON(t *rapid.T, label string, depth int) any {
	switch k := rapid.IntRange(0, 6).Draw(t, label); {
	case k == 0 && depth < 3:
		m := map[string]any{}
		for i := range rapid.IntRange(0, 4).Draw(t, label+"-len") {
			m[drawKey(t, fmt.Sprintf("%s-k%d", label, i))] = drawJSON(t, fmt.Sprintf("%s-%d", label, i), depth+1)
		}
		return m
	case k == 1 && depth < 3:
		var a []any
		for i := range rapid.IntRange(0, 3).Draw(t, label+"-len") {
			a = append(a, drawJSON(t, fmt.Sprintf("%s-%d", label, i), depth+1))
		}
		return a
	case k == 2:
		return rapid.SampledFrom([]any{1, -5, 1.5, 1e21, 0.000001, 123456789012, true, false, nil}).Draw(t, label+"-lit")
	}
	return drawString(t, label+"-s")
}

func drawRaw(t *rapid.T, label string) json.RawMessage {
	if rapid.Bool().Draw(t, label+"-absent") {
		return nil
	}
	m := map[string]any{}
	for i := range rapid.IntRange(0, 3).Draw(t, label+"-len") {
		m[drawKey(t, fmt.Sprintf("%s-k%d", label, i))] = drawJSON(t, fmt.Sprintf("%s-%d", label, i), 1)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func drawCluster(t *rapid.T) *Cluster {
	c := &Cluster{
		Name:              drawString(t, "name"),
		ServiceSubnet:     drawString(t, "subnet"),
		DNSService:        drawString(t, "dns_service"),
		TaintControlPlane: rapid.Bool().Draw(t, "taint_cp"),
		Options:           drawRaw(t, "options"),
		Reboot:            drawRaw(t, "reboot"),
		Sabakan:           drawRaw(t, "sabakan"),
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "tolerations") {
		c.ControlPlaneTolerations = append(c.ControlPlaneTolerations, drawString(t, fmt.Sprintf("toleration%d", i)))
	}
	if rapid.Bool().Draw(t, "trusted") {
		c.TrustedRESTMappings = json.RawMessage(`[{"group":"g","version":"v1","kind":"K","resource":"ks","namespaced":true}]`)
	}
	switch rapid.IntRange(0, 5).Draw(t, "nodes-kind") {
	case 0:
		c.Nodes = nil
	case 1:
		c.Nodes = []*Node{}
	default:
		for i := range rapid.IntRange(1, 5).Draw(t, "nodes") {
			n := &Node{
				Address:      drawString(t, fmt.Sprintf("address%d", i)),
				Hostname:     drawString(t, fmt.Sprintf("hostname%d", i)),
				User:         drawString(t, fmt.Sprintf("user%d", i)),
				ControlPlane: rapid.Bool().Draw(t, fmt.Sprintf("cp%d", i)),
				Labels:       drawMap(t, fmt.Sprintf("labels%d", i)),
				Annotations:  drawMap(t, fmt.Sprintf("annotations%d", i)),
			}
			for j := range rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("taints%d", i)) {
				n.Taints = append(n.Taints, Taint{
					Key:    drawString(t, fmt.Sprintf("taint%d-%d-key", i, j)),
					Value:  drawString(t, fmt.Sprintf("taint%d-%d-value", i, j)),
					Effect: drawString(t, fmt.Sprintf("taint%d-%d-effect", i, j)),
				})
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	return c
}

// keysTotallyOrdered reports whether yaml.v2's key order is transitive on
// every map of c, so that yaml.v2's own output does not depend on map order.
func keysTotallyOrdered(c *Cluster) bool {
	var maps [][]string
	for _, n := range c.Nodes {
		for _, m := range []map[string]string{n.Labels, n.Annotations} {
			maps = append(maps, slices.Collect(func(yield func(string) bool) {
				for k := range m {
					if !yield(k) {
						return
					}
				}
			}))
		}
	}
	for _, raw := range []json.RawMessage{c.Options, c.Reboot, c.Sabakan} {
		var v any
		_ = json.Unmarshal(raw, &v)
		collectKeys(v, &maps)
	}
	for _, keys := range maps {
		for _, a := range keys {
			for _, b := range keys {
				for _, x := range keys {
					if yamlKeyLess(a, b) && yamlKeyLess(b, x) && !yamlKeyLess(a, x) {
						return false
					}
				}
			}
		}
	}
	return true
}

func collectKeys(v any, maps *[][]string) {
	switch v := v.(type) {
	case map[string]any:
		var keys []string
		for k, e := range v {
			keys = append(keys, k)
			collectKeys(e, maps)
		}
		*maps = append(*maps, keys)
	case []any:
		for _, e := range v {
			collectKeys(e, maps)
		}
	}
}

// TestMarshalYAMLAsSigsYAML: MarshalYAML writes the bytes sigs.k8s.io/yaml
// writes (where those do not depend on map order), the same bytes on every
// run, and YAML that Parse reads back as the same cluster.
func TestMarshalYAMLAsSigsYAML(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t)
		got, err := c.MarshalYAML()
		want, wantErr := sigsyaml.Marshal(c)
		if err != nil || wantErr != nil {
			// yaml.v2 refuses some control characters (\x7f) on both ways.
			if err == nil || wantErr == nil {
				t.Fatalf("MarshalYAML error %v, sigs.k8s.io/yaml error %v", err, wantErr)
			}
			return
		}
		if keysTotallyOrdered(c) {
			if string(got) != string(want) {
				t.Fatalf("MarshalYAML differs from sigs.k8s.io/yaml (-want +got):\n%s", cmp.Diff(string(want), string(got)))
			}
		}
		again, _ := c.MarshalYAML()
		if string(again) != string(got) {
			t.Fatalf("MarshalYAML is not deterministic:\n%s\n%s", got, again)
		}
		back, err := Parse(got)
		if err != nil {
			t.Fatalf("Parse(MarshalYAML) = %v\n%s", err, got)
		}
		if diff := cmp.Diff(normalized(t, c), normalized(t, back), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the YAML does not read back as the same cluster (-want +got):\n%s\n%s", diff, got)
		}
	})
}

// normalized returns c with the JSON-carried fields decoded, for comparing
// clusters whose JSON fields went through YAML (where key order and number
// spelling change).
func normalized(t interface{ Fatal(...any) }, c *Cluster) any {
	type plain Cluster
	p := plain(*c)
	var raws [5]any
	for i, raw := range []json.RawMessage{p.Reboot, p.Repair, p.Sabakan, p.TrustedRESTMappings, p.Options} {
		if raw != nil {
			if err := json.Unmarshal(raw, &raws[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.Reboot, p.Repair, p.Sabakan, p.TrustedRESTMappings, p.Options = nil, nil, nil, nil, nil
	return struct {
		C    plain
		Raws [5]any
	}{p, raws}
}

// TestScalarAsYAMLv2: every string scalar writes itself writes as yaml.v2
// does, as a value and as a key.
func TestScalarAsYAMLv2(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		w := newYAMLWriter()
		for _, key := range []bool{false, true} {
			got, ok := w.scalar(nil, s, key)
			if !ok {
				continue
			}
			doc := map[string]string{"k": s}
			prefix, suffix := "k: ", "\n"
			if key {
				doc = map[string]string{s: "v"}
				prefix, suffix = "", ": v\n"
			}
			b, err := yamlv2.Marshal(doc)
			if err != nil {
				t.Fatalf("yaml.v2: %v", err)
			}
			if want := strings.TrimSuffix(strings.TrimPrefix(string(b), prefix), suffix); string(got) != want {
				t.Fatalf("scalar(%q, key %v) = %s, yaml.v2 writes %s", s, key, got, want)
			}
		}
	}
	for _, s := range trickyStrings {
		check(t, s)
	}
	rapid.Check(t, func(t *rapid.T) {
		check(t, rapid.StringOf(rapid.SampledFrom(simpleChars)).Draw(t, "s"))
	})
}

// TestScalarHandlesCommonValues: the strings of a generated cluster are
// written without yaml.v2, which is what makes MarshalYAML fast.
func TestScalarHandlesCommonValues(t *testing.T) {
	w := newYAMLWriter()
	for _, s := range []string{"10.0.1.1", "cybozu", "cke.cybozu.com/retire-date", "2031-08-01T05:00:00+09:00",
		"2024-01", "true", "1", "rack12", "NoSchedule", "S000123", "fd00::1", strings.Repeat("k", 128)} {
		if _, ok := w.scalar(nil, s, true); !ok {
			t.Errorf("scalar(%q) leaves it to yaml.v2", s)
		}
	}
	for _, s := range []string{"a b", "é", "a\nb", "#", strings.Repeat("k", 129)} {
		if _, ok := w.scalar(nil, s, true); ok {
			t.Errorf("scalar(%q) writes it itself", s)
		}
	}
}

// TestKeyOrderAsYAMLv2: yamlKeyLess orders two keys as yaml.v2 does.
func TestKeyOrderAsYAMLv2(t *testing.T) {
	keyChars := []rune("aAbz09015_./-é٣")
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringOf(rapid.SampledFrom(keyChars)).Draw(t, "a")
		b := rapid.StringOf(rapid.SampledFrom(keyChars)).Draw(t, "b")
		if a == b {
			return
		}
		out, err := yamlv2.Marshal(map[string]int{a: 1, b: 2})
		if err != nil {
			t.Fatal(err)
		}
		var ms yamlv2.MapSlice
		if err := yamlv2.Unmarshal(out, &ms); err != nil {
			t.Fatal(err)
		}
		v2First := fmt.Sprint(ms[0].Key) == a
		if got := yamlKeyLess(a, b); got != v2First {
			t.Fatalf("yamlKeyLess(%q, %q) = %v; yaml.v2 writes %q first", a, b, got, ms[0].Key)
		}
	})
}

func TestNumberSyntaxAsRegexp(t *testing.T) {
	float := regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	base60 := regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
	chars := []rune("0123456789+-.eE:_x")
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom(chars)).Draw(t, "s")
		if got, want := isYAMLFloat(s), float.MatchString(s); got != want {
			t.Fatalf("isYAMLFloat(%q) = %v, want %v", s, got, want)
		}
		if got, want := isSexagesimal(s), base60.MatchString(s); got != want {
			t.Fatalf("isSexagesimal(%q) = %v, want %v", s, got, want)
		}
	})
}

// TestNodesWrittenByYAMLv2: nodes with strings the writer leaves to yaml.v2
// (a literal block that keeps its line breaks, spaces) sit in the document
// as in yaml.v2's own, between nodes written directly.
func TestNodesWrittenByYAMLv2(t *testing.T) {
	c := &Cluster{Name: "a", ServiceSubnet: "10.0.0.0/24", Nodes: []*Node{
		{Address: "10.0.0.1", User: "u\n\n"}, {Address: "10.0.0.2", User: "u"},
		{Address: "10.0.0.3", User: "u", Annotations: map[string]string{"note": "two words"}}, {Address: "10.0.0.4", User: "u"},
	}}
	got, err := c.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sigsyaml.Marshal(c)
	if string(got) != string(want) {
		t.Errorf("MarshalYAML (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
}

// TestKeyOrderReusedOnlyForTheSameKeys: the order worked out for one
// node's labels serves the next node only when it has the same keys.
func TestKeyOrderReusedOnlyForTheSameKeys(t *testing.T) {
	c := &Cluster{Name: "a", ServiceSubnet: "10.0.0.0/24"}
	for i, keys := range [][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "d"}, {"a", "d"}, {"b"}, {"a10", "a9", "b"}, {"a", "b", "c"}, {"a", "b"}, {"a", "d"},
		{"1"}, {"2"}, {"3"}, {"4"}, {"5"}, {"6"}, {"7"}, {"8"}, {"9"}, {"a", "b"}, {"9"}, {"a", "c"}} {
		n := &Node{Address: fmt.Sprintf("10.0.0.%d", i), User: "u", Labels: map[string]string{}}
		for _, k := range keys {
			n.Labels[k] = "v"
		}
		c.Nodes = append(c.Nodes, n)
	}
	got, err := c.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sigsyaml.Marshal(c)
	if string(got) != string(want) {
		t.Errorf("MarshalYAML (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
}

// benchCluster is a generated cluster's shape: n nodes in racks of 40.
func benchCluster(n int) *Cluster {
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Cluster{Name: "test", ServiceSubnet: "10.68.0.0/16",
		Options: json.RawMessage(`{"etcd":{"volume_name":"etcd-cke"},"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`)}
	roles := []string{"compute", "storage", "gpu"}
	for i := range n {
		rack := i / 40
		role := roles[rng.IntN(3)]
		reg := fmt.Sprintf("20%02d-%02d-01", 20+rng.IntN(6), 1+rng.IntN(12))
		ret := fmt.Sprintf("20%02d-%s", 30+rng.IntN(6), reg[5:])
		node := &Node{
			Address: fmt.Sprintf("10.%d.%d.%d", rack/256, rack%256, i%40+1), User: "cybozu", ControlPlane: i < 3,
			Annotations: map[string]string{
				"cke.cybozu.com/register-date": reg + "T00:00:00Z",
				"cke.cybozu.com/retire-date":   ret + "T00:00:00Z",
				"cke.cybozu.com/serial":        fmt.Sprintf("S%06d", i),
			},
			Labels: map[string]string{
				"cke.cybozu.com/index-in-rack":           fmt.Sprint(i%40 + 1),
				"cke.cybozu.com/rack":                    fmt.Sprint(rack),
				"cke.cybozu.com/register-month":          reg[:7],
				"cke.cybozu.com/retire-month":            ret[:7],
				"cke.cybozu.com/role":                    role,
				"failure-domain.beta.kubernetes.io/zone": fmt.Sprintf("rack%d", rack),
				"node-role.kubernetes.io/" + role:        "true",
				"topology.kubernetes.io/zone":            fmt.Sprintf("rack%d", rack),
			},
		}
		if i%50 == 7 {
			node.Taints = []Taint{{Key: "cke.cybozu.com/state", Value: "unreachable", Effect: "NoSchedule"}}
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

// TestBenchClusterAsSigsYAML: a generated cluster's shape, large enough
// to be written in two halves at once (parallelYAML), is written as
// sigs.k8s.io/yaml writes it.
func TestBenchClusterAsSigsYAML(t *testing.T) {
	c := benchCluster(parallelYAML + 101)
	got, err := c.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sigsyaml.Marshal(c)
	if string(got) != string(want) {
		t.Errorf("MarshalYAML (-want +got):\n%s", cmp.Diff(string(want), string(got)))
	}
}

// BenchmarkMarshal compares the two output formats of a 10,000-node
// cluster (ckegenctl's -o yaml and -o json).
func BenchmarkMarshal(b *testing.B) {
	c := benchCluster(10000)
	b.Run("format=yaml/nodes=10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.MarshalYAML(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("format=json/nodes=10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.MarshalIndentJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParse reads a 10,000-node cluster as the daemon reads the stored
// one (JSON), and as ckegenctl reads --current (YAML or JSON); the JSON one
// also with the candidate on jsontext's Decoder (impl=jsontext) in place of
// the one-pass scanner (impl=scanner), docs/design.md D18.
func BenchmarkParse(b *testing.B) {
	c := benchCluster(10000)
	js, _ := c.MarshalIndentJSON()
	y, _ := c.MarshalYAML()
	for _, in := range []struct {
		name  string
		data  []byte
		parse func([]byte) (*Cluster, bool)
	}{{"json/impl=scanner", js, parseFast}, {"json/impl=jsontext", js, parseFastText}, {"yaml", y, parseFast}} {
		b.Run("format="+in.name+"/nodes=10000", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.data)))
			for b.Loop() {
				if _, ok := in.parse(in.data); !ok {
					b.Fatal("the fast path gave up")
				}
			}
		})
	}
}
